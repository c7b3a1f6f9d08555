"""The error contract of the options that use check-fit's flags (issue 51, part 4): ``select-anchors --check-fit``
and ``--keep-misfits``, ``browse query|report --check-fit``, BenchFill's ``[search] misfit_p``. Bad input is one
``error:`` line naming what and where, exit 2, no traceback, nothing written.

Cheap: one MAP fit and its check (the session fixture ``checked_fit``), lexical-only indexes, no model call."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import BENCHFILL_CLI, ROOT, assert_rejected, run_script, sim_run


def _check_copy(checked_fit, tmp_path, name, edit_csv=None, edit_json=None, keep_json=True):
    """A copy of the check's folder with its items.csv and check_fit.json edited."""
    folder = tmp_path / name
    folder.mkdir()
    text = (checked_fit["check"] / "items.csv").read_text()
    (folder / "items.csv").write_text(edit_csv(text) if edit_csv else text)
    if keep_json:
        record = json.loads((checked_fit["check"] / "check_fit.json").read_text())
        (folder / "check_fit.json").write_text(json.dumps(edit_json(record) if edit_json else record))
    return folder


def _other_matrix(record):
    record["input"]["sha256"] = "0" * 64
    return record


def _bad_checks(checked_fit, tmp_path):
    """(check path, fragment of the error) for checks that do not belong to the checked benchmark or are damaged."""
    lines = (checked_fit["check"] / "items.csv").read_text().splitlines()
    header = lines[0].split(",")

    def set_cell(text, column, value):
        rows = text.splitlines()
        cells = rows[1].split(",")
        cells[header.index(column)] = value
        return "\n".join([rows[0], ",".join(cells), *rows[2:]]) + "\n"

    def drop_last(text):
        return "\n".join(text.splitlines()[:-1]) + "\n"

    extra = lines[1].replace("q0,", "zz9,", 1)
    (tmp_path / "no_check").mkdir()
    return [
        (tmp_path / "nowhere", "no such file or folder"),
        (tmp_path / "no_check", "no items.csv in the folder"),
        (_check_copy(checked_fit, tmp_path, "other", edit_json=_other_matrix), "a check of another matrix"),
        (_check_copy(checked_fit, tmp_path, "foreign", keep_json=False, edit_csv=lambda t: t + extra + "\n"),
         "1 item(s) of the check are not in"),
        (_check_copy(checked_fit, tmp_path, "partial", keep_json=False, edit_csv=drop_last),
         "1 item(s) of"),
        (_check_copy(checked_fit, tmp_path, "counted", edit_csv=drop_last), "records a check of 60 items"),
        (_check_copy(checked_fit, tmp_path, "flag", edit_csv=lambda t: set_cell(t, "flagged", "maybe")),
         "expected true or false"),
        (_check_copy(checked_fit, tmp_path, "p", edit_csv=lambda t: set_cell(t, "p_value", "1.5")),
         "a p-value is in [0, 1]"),
        (_check_copy(checked_fit, tmp_path, "nan", edit_csv=lambda t: set_cell(t, "p_value", "nan")),
         "not a finite number"),
        (_check_copy(checked_fit, tmp_path, "twice", edit_csv=lambda t: t + t.splitlines()[1] + "\n"),
         "appears more than once"),
        (_check_copy(checked_fit, tmp_path, "column", keep_json=False,
                     edit_csv=lambda t: t.replace(",against_ability,", ",against,", 1)), "against_ability"),
        (_check_copy(checked_fit, tmp_path, "json", edit_json=lambda r: {"summary": "x"}),
         "not a check_fit.json of benchmeasure check-fit"),
    ]


def test_select_anchors_check_fit_rejects_bad_or_foreign_checks(checked_fit, tmp_path):
    difficulty = checked_fit["fit"] / "difficulty.csv"
    out = tmp_path / "anchors.csv"
    for path, fragment in _bad_checks(checked_fit, tmp_path):
        done = run_script("select_anchors.py", difficulty, "--k", 5, "--check-fit", path, "--output", out)
        assert_rejected(done, fragment)
        assert not out.exists() and not (tmp_path / "anchors.csv.json").exists(), fragment
    # --keep-misfits without a check; more anchors than the items left; an output that is the check's own file
    assert_rejected(run_script("select_anchors.py", difficulty, "--k", 5, "--keep-misfits", "--output", out),
                    "--keep-misfits needs --check-fit")
    assert_rejected(run_script("select_anchors.py", difficulty, "--k", 59, "--check-fit", checked_fit["check"],
                               "--output", out), "--k 59 is more than the", "--keep-misfits")
    assert not out.exists()
    before = (checked_fit["check"] / "items.csv").read_bytes()
    assert_rejected(run_script("select_anchors.py", difficulty, "--k", 5, "--check-fit", checked_fit["check"],
                               "--output", checked_fit["check"] / "items.csv"), "overwrite")
    assert (checked_fit["check"] / "items.csv").read_bytes() == before


def test_browse_check_fit_rejects_bad_or_foreign_checks(checked_fit, tmp_path):
    from test_browse import browse, fit_index

    out = fit_index(checked_fit, tmp_path, ("cooking", ["How long should bread dough rise?", "Which oil fries?"]))
    report = tmp_path / "report.json"
    # the damaged files are the reader's, tested through select-anchors above; here the checks of another benchmark
    bad = dict((fragment, path) for path, fragment in _bad_checks(checked_fit, tmp_path))
    cases = [(f"checked={bad[f]}", f) for f in ("a check of another matrix", "1 item(s) of the check are not in",
                                                "1 item(s) of", "expected true or false")]
    cases += [(f"nobody={checked_fit['check']}", "no benchmark 'nobody' in the index"),
              (str(checked_fit["check"]), "the index holds 2 benchmarks"),
              (f"cooking={checked_fit['check']}", "item(s) of the check are not in benchmark 'cooking'")]
    for value, fragment in cases:
        assert_rejected(browse("query", out, "algebra", "--check-fit", value), fragment)
    for value, fragment in cases[:2]:
        assert_rejected(browse("report", out, "algebra", "--k", 5, "--benchmark", "checked", "--check-fit", value,
                               "--output", report), fragment)
        assert not report.exists()
    twice = f"checked={checked_fit['check']}"
    assert_rejected(browse("query", out, "algebra", "--check-fit", twice, "--check-fit", twice), "given twice")
    before = (checked_fit["check"] / "items.csv").read_bytes()
    assert_rejected(browse("report", out, "algebra", "--k", 5, "--benchmark", "checked", "--check-fit", twice,
                           "--output", checked_fit["check"] / "items.csv"), "overwrite")
    assert (checked_fit["check"] / "items.csv").read_bytes() == before


@pytest.mark.parametrize("value", ["1.0", "-0.1", '"often"'])
def test_benchfill_misfit_p_out_of_range_is_refused_at_init(tmp_path, value):
    from benchmeasure.serving.sim.dataset import make_sim_benchmark

    config = make_sim_benchmark(tmp_path / "data", 1, truth=True)
    config.write_text(config.read_text().replace("[search]\n", f"[search]\nmisfit_p = {value}\n"))
    done = subprocess.run([*BENCHFILL_CLI, "init", "--config", str(config), "--results", str(tmp_path / "res")],
                          capture_output=True, text=True)
    assert_rejected(done, "misfit_p")
    assert not (tmp_path / "res").exists()


NO_SCIPY = """
import importlib.abc, runpy, sys
class NoScipy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "scipy":
            raise ImportError("scipy is blocked")
sys.meta_path.insert(0, NoScipy())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_benchfill_item_fit_without_scipy_is_one_error_line_before_any_call(tmp_path):
    folder, env, server = sim_run(tmp_path, 1)
    server.shutdown()   # no call may be made
    done = subprocess.run([sys.executable, "-c", NO_SCIPY, str(ROOT / "propose" / "benchfill.py"), "run",
                           str(folder)], capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)})
    assert_rejected(done, "[search] misfit_p", "scipy", "misfit_p = 0")
    assert not (folder / "events.jsonl").exists() or "call" not in (folder / "events.jsonl").read_text()
    assert not (folder / "summary.json").exists()


def test_score_models_refuses_mixed_item_models_and_bad_slopes(tmp_path):
    """score-models against a 2PL table (issue 51 part 3, docs/anchored.md): the table's model and --model, the
    slopes and the draws of another model are one error line each, and nothing is written."""
    import numpy as np

    items = [f"q{i}" for i in range(6)]
    b = np.linspace(-1.5, 1.5, 6)

    def table(name, header, cells):
        path = tmp_path / name
        path.write_text(header + "\n" + "".join(f"{i},{v:.3f}{c}\n" for i, v, c in zip(items, b, cells)))
        return path

    two = table("two.csv", "item,b_mean,a_mean", [",1.2"] * 6)
    one = table("one.csv", "item,b_mean", [""] * 6)
    zero = table("zero.csv", "item,b_mean,a_mean", [",1.2"] * 5 + [",0"])
    blank = table("blank.csv", "item,b_mean,a_mean", [",1.2"] * 5 + [","])
    answers = tmp_path / "answers.csv"
    answers.write_text("model," + ",".join(items) + "\nnew,1,1,1,0,1,0\n")
    draws_csv = tmp_path / "draws.csv"
    draws_csv.write_text(",".join(items) + "\n" + ",".join(f"{v:.3f}" for v in b) + "\n")
    rng = np.random.default_rng(0)
    b_draws = b + rng.normal(0, 0.1, (5, 6))
    np.savez(tmp_path / "both.npz", b=b_draws, a=np.full((5, 6), 1.1), items=np.array(items))
    negative = np.full((5, 6), 1.1)
    negative[2, 3] = -0.4
    np.savez(tmp_path / "negative.npz", b=b_draws, a=negative, items=np.array(items))
    np.savez(tmp_path / "short.npz", b=b_draws, a=np.full((4, 6), 1.1), items=np.array(items))
    out = tmp_path / "scores.csv"
    cases = [
        ((one, "--model", "2pl"), "has no column a_mean"),
        ((two, "--model", "1pl"), "has the column a_mean"),
        ((zero, ), "a slope must be positive"),
        ((blank, ), "a_mean"),
        ((two, "--difficulty-draws", draws_csv), "no 'a' draws"),
        ((one, "--difficulty-draws", tmp_path / "both.npz"), "holds 'a' draws"),
        ((two, "--difficulty-draws", tmp_path / "negative.npz"), "a slope must be positive"),
        ((two, "--difficulty-draws", tmp_path / "short.npz"), "must pair up"),
        ((two, "--model", "3pl"), "--model"),
    ]
    for (difficulty, *extra), fragment in cases:
        done = run_script("score_models.py", answers, "--difficulty", difficulty, "--n-trials", 1, *extra,
                          "--output", out)
        assert_rejected(done, fragment)
        assert not out.exists() and not (tmp_path / "scores.csv.json").exists(), fragment
    done = run_script("score_models.py", answers, "--difficulty", two, "--n-trials", 1, "--difficulty-draws",
                      tmp_path / "both.npz", "--output", out, "--quiet")
    assert done.returncode == 0, done.stderr   # the same inputs, consistent: scored


def test_calibrate_items_refuses_abilities_of_another_item_model(tmp_path):
    """calibrate-items --model against the abilities' record (diagnostics.json beside them): one error line."""
    answers = tmp_path / "new.csv"
    answers.write_text("model,x1,x2\nm0,1,0\nm1,1,1\nm2,0,0\n")
    out = tmp_path / "new_difficulty.csv"
    for model, record, fragment in (("1pl", {"model": "2pl", "settings": {"model": "2pl"}}, "come from a 2pl fit"),
                                    ("2pl", {"settings": {"n_trials": 1}}, "come from a 1pl fit")):
        folder = tmp_path / f"fit_{model}"
        folder.mkdir()
        (folder / "ability.csv").write_text("model,theta_mean\nm0,0.1\nm1,1.2\nm2,-0.8\n")
        (folder / "diagnostics.json").write_text(json.dumps(record))
        done = run_script("calibrate_items.py", answers, "--abilities", folder / "ability.csv", "--n-trials", 1,
                          "--model", model, "--output", out)
        assert_rejected(done, fragment, "--model")
        assert not out.exists() and not (tmp_path / "new_difficulty.csv.json").exists()
