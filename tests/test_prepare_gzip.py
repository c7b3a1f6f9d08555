"""`prepare` reads gzip-compressed responses and, with --n-trials 1, files without a trial column.

The bundled suites (data/mmlu_pro, data/zeroeval) are shipped as ``model,item_id,correct[,benchmark]`` in
``.csv.gz``; a user's first call on them must work, and a damaged archive must be one error line.
"""

import csv
import gzip

from conftest import ROOT, assert_rejected, run_script

ROWS = [("m1", "q1", "1"), ("m1", "q2", "0"), ("m2", "q1", "0"), ("m2", "q2", "0"), ("m3", "q1", "1")]


def _write(path, rows, header=("model", "item_id", "correct"), opener=open):
    with opener(path, "wt", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


def _matrix(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def test_gzip_without_trial_column_equals_the_plain_file_with_one(tmp_path):
    _write(tmp_path / "r.csv.gz", ROWS, opener=gzip.open)
    _write(tmp_path / "plain.csv", [(m, i, "0", c) for m, i, c in ROWS],
           header=("model", "item_id", "trial", "correct"))
    for name in ("r.csv.gz", "plain.csv"):
        result = run_script("prepare_response_matrix.py", tmp_path / name, "--n-trials", "1", "--allow-missing",
                            "--output", tmp_path / f"{name}.matrix.csv")
        assert result.returncode == 0, result.stderr
    gz, plain = _matrix(tmp_path / "r.csv.gz.matrix.csv"), _matrix(tmp_path / "plain.csv.matrix.csv")
    assert gz == plain
    assert gz[0] == ["model", "q1", "q2"] and gz[1] == ["m1", "1", "0"] and gz[3] == ["m3", "1", ""]


def test_the_bundled_mmlu_pro_prepares_as_shipped(tmp_path):
    result = run_script("prepare_response_matrix.py", ROOT / "data" / "mmlu_pro" / "responses.csv.gz",
                        "--n-trials", "1", "--allow-missing", "--output", tmp_path / "m.csv")
    assert result.returncode == 0, result.stderr
    assert "29 models x 12032 items, 1713 absent cells" in result.stdout + result.stderr


def test_several_trials_still_need_the_trial_column(tmp_path):
    _write(tmp_path / "r.csv.gz", ROWS, opener=gzip.open)
    assert_rejected(run_script("prepare_response_matrix.py", tmp_path / "r.csv.gz", "--n-trials", "2",
                               "--output", tmp_path / "m.csv"), "no column 'trial'")
    assert not (tmp_path / "m.csv").exists()


def test_a_damaged_gzip_is_one_error_line(tmp_path):
    _write(tmp_path / "r.csv.gz", ROWS * 50, opener=gzip.open)
    data = (tmp_path / "r.csv.gz").read_bytes()
    (tmp_path / "cut.csv.gz").write_bytes(data[: len(data) // 2])
    (tmp_path / "junk.csv.gz").write_bytes(b"not gzip at all")
    for name in ("cut.csv.gz", "junk.csv.gz"):
        assert_rejected(run_script("prepare_response_matrix.py", tmp_path / name, "--n-trials", "1",
                                   "--output", tmp_path / "m.csv"), name)
        assert not (tmp_path / "m.csv").exists()
