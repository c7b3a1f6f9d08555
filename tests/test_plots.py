"""Tests of the difficulty figures (paper Figures 3, 5, 6) and scripts/plot_difficulty.py."""

import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from benchmeasure.analyses.plots import _ecdf, plot_before_after, plot_benchmarks

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "plot_difficulty.py"


def _is_png(path):
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _is_pdf(path):
    return path.read_bytes()[:5] == b"%PDF-"


def test_ecdf_steps_by_hand():
    fig, ax = plt.subplots()
    _ecdf(ax, [0.5, 0.25])
    line = ax.lines[0]
    assert list(line.get_xdata()) == [0, 0.25, 0.5, 1]
    assert list(line.get_ydata()) == [0, 0.5, 1, 1]
    plt.close(fig)


def test_panels_and_before_after_write_png_and_pdf(tmp_path):
    z = [0.0, 0.1, 0.15, 0.6, 1.0]
    (tmp_path / "f").mkdir()
    paths = plot_benchmarks([("A", z), ("B", [0, 0.5, 1])], [tmp_path / "f" / "fig.png", tmp_path / "f" / "fig.pdf"])
    assert [p.name for p in paths] == ["fig.png", "fig.pdf"]
    assert _is_png(paths[0]) and _is_pdf(paths[1])
    paths = plot_before_after("A", z, [*z, 0.35, 0.8], tmp_path / "fig5.pdf")
    assert [p.name for p in paths] == ["fig5.pdf"] and _is_pdf(paths[0]) and not (tmp_path / "fig5.png").exists()


def _write(path, values):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("item_id,b_mean\n" + "".join(f"{i},{v}\n" for i, v in enumerate(values)))
    return path


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_cli_panels_and_after(tmp_path):
    a = _write(tmp_path / "AIME24" / "difficulty.csv", [-1, 0.2, 0.3, 2])
    b = _write(tmp_path / "AMC23" / "difficulty.csv", [0, 1, 5])
    out = _run(a, b, "--output", tmp_path / "out" / "fig6.png", "--output", tmp_path / "out" / "fig6.pdf",
               "--columns", 2)
    assert out.returncode == 0, out.stderr
    assert _is_png(tmp_path / "out" / "fig6.png") and _is_pdf(tmp_path / "out" / "fig6.pdf")
    after = _write(tmp_path / "AIME24_filled" / "difficulty.csv", [-1, 0.2, 0.3, 2, 1.0])
    out = _run(a, "--after", after, "--output", tmp_path / "fig5.png")
    assert out.returncode == 0, out.stderr
    assert _is_png(tmp_path / "fig5.png")


@pytest.mark.parametrize("extra, fragment", [
    (["--after", "X"], "--after compares one benchmark"),
    (["--top-k", "0"], "--top-k: 0 is outside the allowed range [1, "),
])
def test_cli_rejects(tmp_path, extra, fragment):
    a = _write(tmp_path / "A" / "difficulty.csv", [0, 1, 2])
    out = _run(a, a, "--output", tmp_path / "fig.png", *extra)
    assert out.returncode == 2 and not (tmp_path / "fig.png").exists() and not (tmp_path / "fig.pdf").exists()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0]


def test_cli_rejects_bad_file_and_suffix(tmp_path):
    a = _write(tmp_path / "A" / "difficulty.csv", [1, 1, 1])
    out = _run(a, "--output", tmp_path / "fig.png")
    assert out.returncode == 2 and "min-max normalization is undefined" in out.stderr
    assert not (tmp_path / "fig.png").exists()
    out = _run(tmp_path / "missing.csv", "--output", tmp_path / "fig.png")
    assert out.returncode == 2 and "no such file" in out.stderr
    b = _write(tmp_path / "B" / "difficulty.csv", [0, 1, 2])
    out = _run(b, "--output", tmp_path / "fig.jpg")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
