"""bench/bench_anchored.py prints its side-by-side table on the real ChemBench matrix (quick settings)."""

from conftest import run_script


def test_bench_prints_the_table(tmp_path):
    done = run_script("bench/bench_anchored.py", "--quick", "--folds", 1, "--markdown", tmp_path / "t.md")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "| predictor / anchors | k = 25 | k = 100 |" in lines
    for name in ("raw / random", "IRT / random", "IRT / stratified", "IRT / information", "floor: 1PL exact, random"):
        row = next(line for line in lines if line.startswith(f"| {name} |"))
        cells = [cell.strip().split(" ")[0] for cell in row.strip("|").split("|")[1:]]
        assert all(0.0 <= float(cell) < 30.0 for cell in cells), row   # points of accuracy, finite
    assert (tmp_path / "t.md").read_text().startswith("ChemBench (22 models x 2854 questions")
