"""Output paths (benchmeasure/base/files.py: plan_outputs, all_or_nothing, atomic_write) through the command line.

Issue 15, item 1 and the rule "one output-path check used by every command, before any input is read": an
output naming an input, a device, a folder or another output is one error line and nothing changes; a
symlinked output is written through; several outputs appear all or none; a full disk is one error line.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import FULL_DISK, ROOT, assert_rejected, run_script

RESPONSES = "model,item_id,trial,correct\n" + "".join(
    f"m{j},q{i},{t},{(i + j + t) % 2}\n" for j in range(3) for i in range(4) for t in range(2))
MATRIX = "model,q0,q1,q2\na,0,1,2\nb,1,2,2\nc,0,0,1\n"
DIFFICULTY = "item,b_mean\nq0,0.1\nq1,0.5\nq2,1.2\nq3,-0.3\n"


def _digest(folder) -> dict:
    """SHA-256 of every file under ``folder`` (to show nothing changed)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def files(tmp_path):
    (tmp_path / "responses.csv").write_text(RESPONSES)
    (tmp_path / "matrix.csv").write_text(MATRIX)
    (tmp_path / "difficulty.csv").write_text(DIFFICULTY)
    np.savez(tmp_path / "draws.npz", b=np.random.default_rng(0).normal(size=(2, 20, 4)))
    (tmp_path / "pre_post.csv").write_text("model,item_id,trial,correct,condition\n" + "".join(
        f"m,q{i},{t},{(i + t) % 2},{c}\n" for i in range(3) for t in range(2) for c in ("pre", "post")))
    return tmp_path


SAME_AS_INPUT = [
    ("prepare_response_matrix.py", ["responses.csv", "--n-trials", "2", "--output", "responses.csv"]),
    ("prepare_response_matrix.py", ["responses.csv", "--n-trials", "2", "--output", "m.csv"], "m.csv.json"),
    ("posterior_metrics.py", ["draws.npz", "--output", "draws.npz"]),
    ("detect_improvement.py", ["pre_post.csv", "--permutations", "10", "--output", "pre_post.csv"]),
    ("plot_difficulty.py", ["difficulty.csv", "--output", "fig.png", "--output", "difficulty.csv.pdf"],
     "difficulty.csv.pdf"),
    ("check_response_matrix.py", ["checks.md", "--n-trials", "2", "--output-dir", "."], "checks.md"),
    ("rank_flip_bound.py", ["matrix.csv", "rank_flip.json", "--n-trials", "2", "--lipschitz", "1",
                            "--output-dir", "."], "rank_flip.json"),
    ("fit_irt.py", ["difficulty.csv", "--n-trials", "2", "--output-dir", ".", "--method", "map"]),
]


@pytest.mark.parametrize("case", SAME_AS_INPUT, ids=[f"{c[0]}:{c[1][-1]}" for c in SAME_AS_INPUT])
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(files, case):
    script, args, *linked = case
    if linked:  # the input is reached through another output name: a hard link to an input
        source = files / ("matrix.csv" if script == "check_response_matrix.py" else
                          "difficulty.csv" if script == "rank_flip_bound.py" else "responses.csv")
        if script == "plot_difficulty.py":
            source = files / "difficulty.csv"
        if not (files / args[0]).exists():
            os.link(source, files / args[0])
        if not (files / linked[0]).exists():
            os.link(source, files / linked[0])
    before = _digest(files)
    result = run_script(script, *args, cwd=files)
    assert_rejected(result, "input")
    assert _digest(files) == before


@pytest.mark.parametrize("device", ["/dev/stdout", "/dev/null"])
def test_a_device_is_never_replaced(files, device):
    result = run_script("posterior_metrics.py", "draws.npz", "--output", device, cwd=files)
    assert_rejected(result, device, "give the path of a regular file")
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def test_a_named_pipe_is_refused_before_reading(files):
    os.mkfifo(files / "pipe.csv")
    assert_rejected(run_script("prepare_response_matrix.py", "responses.csv", "--n-trials", "2",
                               "--output", "pipe.csv", cwd=files), "named pipe")


def test_a_symlinked_output_is_written_through_and_stays_a_link(files):
    (files / "real").mkdir()
    (files / "real" / "m.csv").write_text("old\n")
    os.symlink(files / "real" / "m.csv", files / "link.csv")
    result = run_script("prepare_response_matrix.py", "responses.csv", "--n-trials", "2", "--output", "link.csv",
                        cwd=files)
    assert result.returncode == 0, result.stderr
    assert (files / "link.csv").is_symlink()
    assert (files / "real" / "m.csv").read_text().startswith("model,q0,q1,q2,q3\n")


def test_a_symlink_to_an_input_is_refused(files):
    os.symlink(files / "responses.csv", files / "alias.csv")
    before = _digest(files)
    assert_rejected(run_script("prepare_response_matrix.py", "responses.csv", "--n-trials", "2",
                               "--output", "alias.csv", cwd=files), "input responses.csv")
    assert _digest(files) == before and (files / "alias.csv").is_symlink()


def test_plot_writes_exactly_the_files_named(files):
    (files / "fig.png").write_bytes(b"keep")
    result = run_script("plot_difficulty.py", "difficulty.csv", "--output", "fig.v2.png", cwd=files)
    assert result.returncode == 0, result.stderr
    assert (files / "fig.v2.png").exists() and not (files / "fig.v2.pdf").exists()
    assert (files / "fig.png").read_bytes() == b"keep" and not (files / "fig.pdf").exists()
    both = run_script("plot_difficulty.py", "difficulty.csv", "--output", "f.png", "--output", "f.pdf", cwd=files)
    assert both.returncode == 0 and both.stdout.split() == ["f.png", "f.pdf"], both.stderr
    assert_rejected(run_script("plot_difficulty.py", "difficulty.csv", "--output", "fig", cwd=files),
                    "name the figure .png, .pdf or .svg")


def test_fit_into_the_matrix_folder_is_refused_before_fitting(files):
    (files / "out").mkdir()
    os.replace(files / "matrix.csv", files / "out" / "difficulty.csv")
    before = _digest(files)
    result = run_script("fit_irt.py", "out/difficulty.csv", "--n-trials", "2", "--output-dir", "out", cwd=files)
    assert_rejected(result, "out/difficulty.csv", "input")
    assert _digest(files) == before


def test_robustness_refuses_a_file_as_output_folder_before_the_fit(files):
    (files / "taken").write_text("x")
    result = run_script("irt_robustness.py", "matrix.csv", "--n-trials", "2", "--output-dir", "taken", cwd=files,
                        timeout=60)
    assert_rejected(result, "taken", "not a folder")


def test_a_refit_removes_the_posterior_of_an_earlier_fit(files):
    stale = files / "out" / "posterior.zarr"
    stale.mkdir(parents=True)
    (stale / "zarr.json").write_text("{}")
    result = run_script("fit_irt.py", "matrix.csv", "--n-trials", "2", "--output-dir", "out", "--method", "map",
                        "--quiet", cwd=files)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (files / "out").iterdir()) == ["ability.csv", "check_fit", "diagnostics.json",
                                                                  "difficulty.csv"]




@pytest.mark.parametrize("fail_at", [1, 2])
def test_a_full_disk_is_one_line_and_leaves_nothing(files, fail_at):
    before = _digest(files)
    result = subprocess.run([sys.executable, "-c", FULL_DISK, str(ROOT / "scripts" / "prepare_response_matrix.py"),
                             "responses.csv", "--n-trials", "2", "--output", "out/m.csv"],
                            cwd=files, capture_output=True, text=True, env={**os.environ, "FAIL_AT": str(fail_at)})
    assert_rejected(result, "No space left on device")
    assert _digest(files) == before  # neither the matrix nor its record, no temporary file


def test_two_outputs_leave_nothing_when_the_second_fails(files):
    result = subprocess.run([sys.executable, "-c", FULL_DISK, str(ROOT / "scripts" / "check_response_matrix.py"),
                             "matrix.csv", "--n-trials", "2", "--output-dir", "checks"],
                            cwd=files, capture_output=True, text=True, env={**os.environ, "FAIL_AT": "2"})
    assert_rejected(result, "No space left on device")
    assert not (files / "checks").exists() or list((files / "checks").iterdir()) == []


def test_write_json_refuses_nan(files):
    from benchmeasure.base.errors import InputError
    from benchmeasure.base.files import write_json

    with pytest.raises(InputError, match=r"metrics\.ddm is not a finite number"):
        write_json(files / "x.json", {"metrics": {"ddm": float("nan")}})
    assert not (files / "x.json").exists()
    write_json(files / "x.json", {"a": [1.0, 2]})
    assert json.loads((files / "x.json").read_text()) == {"a": [1.0, 2]}
