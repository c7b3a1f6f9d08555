"""The last hostile inputs of issue 22, each through the command line: one `error:` line, exit 2, nothing written.

Before the fix: compare ended in OverflowError / ZeroDivisionError tracebacks on huge or tiny difficulties,
posterior-metrics in an AttributeError on a zip whose member is no .npy array and in numpy RuntimeWarnings on
draws near the float limit, benchfill sim-data in a FileExistsError for a --folder that is a file, an lmms-eval
log's metric value Infinity was counted as correct, and fit --output-dir '' wrote into the working directory.
"""

from __future__ import annotations

import zipfile

import pytest

from conftest import assert_rejected, run_script

np = pytest.importorskip("numpy")

SMALL = "item_id,b_mean\nq1,1\nq2,2\nq3,4\n"


@pytest.mark.parametrize("values", [("1e308", "-1e308", "1e307"), ("1e-320", "2e-320", "4e-320"),
                                    ("1e200", "2e200", "4e200"), ("1e-200", "2e-200", "4e-200")])
def test_compare_with_extreme_values_gives_finite_correlations(tmp_path, values):
    ref = tmp_path / "ref.csv"
    ref.write_text(SMALL, encoding="utf-8")
    est = tmp_path / "est.csv"
    est.write_text("item_id,b_mean\n" + "".join(f"q{i + 1},{v}\n" for i, v in enumerate(values)), encoding="utf-8")
    for pair in ((est, ref), (ref, est)):
        done = run_script("compare_difficulty.py", *pair, "--json", "--top-k", "2")
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert "Traceback" not in done.stdout and '"pearson"' in done.stdout


def test_posterior_metrics_on_a_zip_member_that_is_not_an_array(tmp_path):
    path = tmp_path / "draws.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("b.npy", "not a numpy file")
    out = tmp_path / "out.json"
    assert_rejected(run_script("posterior_metrics.py", path, "--output", out), "not a NumPy array")
    assert not out.exists()


def test_posterior_metrics_on_draws_at_the_float_limit_prints_no_warning(tmp_path):
    path = tmp_path / "draws.npz"
    np.savez(path, b=np.array([[1e308, -1e308, 0.0], [1e308, -1e308, 5.0], [1.7e308, -1.7e308, 1.0]]))
    done = run_script("posterior_metrics.py", path, "--json", "--top-k", "2")
    assert done.returncode == 0, done.stderr
    assert "RuntimeWarning" not in done.stderr and "Traceback" not in done.stderr


def test_sim_data_folder_that_is_a_file(tmp_path):
    path = tmp_path / "afile"
    path.write_text("keep me", encoding="utf-8")
    assert_rejected(run_script("propose/benchfill.py", "sim-data", "--folder", path, "--truth"), "not a folder")
    assert path.read_text(encoding="utf-8") == "keep me"


def test_lmms_eval_metric_infinity_is_refused(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "20261129_123510_samples_t.jsonl").write_text(
        '{"doc_id": 0, "target": "5", "filtered_resps": ["5"], "exact_match": Infinity}\n'
        '{"doc_id": 1, "target": "5", "filtered_resps": ["5"], "exact_match": 1.0}\n', encoding="utf-8")
    out = tmp_path / "m.csv"
    assert_rejected(run_script("prepare_response_matrix.py", "--from", "lmms-eval", folder, "--metric", "exact_match",
                               "--n-trials", "1", "--output", out), "not a finite number")
    assert not out.exists()


def test_lm_eval_log_naming_one_metric_needs_no_metric_flag(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    lines = [f'{{"doc_id": {i}, "target": "5", "filtered_resps": [["5"]], "filter": "none", '
             f'"metrics": ["exact_match"], "exact_match": {i % 2}.0}}\n' for i in range(3)]
    (folder / "samples_t_2026-11-29T12-35-43.888524.jsonl").write_text("".join(lines), encoding="utf-8")
    out = tmp_path / "m.csv"
    done = run_script("prepare_response_matrix.py", "--from", "lm-eval", folder, "--n-trials", "1", "--output", out)
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8").splitlines()[1].endswith(",0,1,0")


def test_fit_output_dir_empty_is_refused(tmp_path):
    matrix = tmp_path / "m.csv"
    matrix.write_text("model,q1,q2\na,1,0\nb,0,1\n", encoding="utf-8")
    assert_rejected(run_script("fit_irt.py", matrix, "--n-trials", "1", "--output-dir", "", cwd=tmp_path),
                    "empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.csv"]
