"""The model-fit check that ``benchmeasure fit`` runs by default (``FIT_DIR/check_fit/``), as ``diagnose``,
``summarize`` (Table 1) and the explorer report it, and the explorer's Drift section (``--drift``); their error
contract. Every fit here is the shared session fixture's (conftest.misfit_fit, conftest.drift_world) or a MAP fit
of its matrix (seconds)."""

from __future__ import annotations

import csv
import hashlib
import json
import shutil

from test_explorer import page_data

from conftest import (
    MISFIT_INVERTED,
    MISFIT_ITEMS,
    MISFIT_K,
    MISFIT_MODELS,
    MISFIT_SHUFFLED,
    assert_rejected,
    run_script,
)


def _record(fit):
    return json.loads((fit / "check_fit" / "check_fit.json").read_text(encoding="utf-8"))


def _copy(misfit_fit, target, posterior=False):
    """The shared fit folder copied (without its posterior unless asked), so a test may change it."""
    ignore = None if posterior else shutil.ignore_patterns("posterior.zarr")
    shutil.copytree(misfit_fit / "fit", target, ignore=ignore)
    return target


def _name(fit) -> str:
    """The benchmark's name as the fit recorded it (what the explorer calls it)."""
    return json.loads((fit / "diagnostics.json").read_text(encoding="utf-8"))["benchmark"]


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fit_checks_its_own_fit_on_a_few_draws(misfit_fit):
    fit = misfit_fit / "fit"
    assert sorted(p.name for p in (fit / "check_fit").iterdir()) == ["check_fit.json", "items.csv", "models.csv"]
    record = _record(fit)
    stderr = (misfit_fit / "fit.stderr").read_text(encoding="utf-8")
    assert record["summary"] in stderr.splitlines()          # the one summary line, as the fit printed it
    assert record["summary"].endswith("; 10 draws") and "p ≤ 0.091" in record["summary"]
    assert "check_fit/" in stderr.splitlines()[-1]
    assert record["settings"]["draws"] == 10 and record["settings"]["posterior_used"] is True
    assert record["settings"]["draws_source"].startswith("posterior draws of this fit")
    assert record["input"]["difficulty_sha256"] == _sha256(fit / "difficulty.csv")
    assert record["input"]["sha256"] == _sha256(misfit_fit / "matrix.csv")
    assert (record["input"]["models"], record["input"]["items"], record["input"]["n_trials"]) == (
        MISFIT_MODELS, MISFIT_ITEMS, MISFIT_K)
    # the planted wrong keys and the shuffled model are found on 10 draws
    assert len(set(record["flagged_items"]) & set(MISFIT_INVERTED)) >= 3, record["flagged_items"]
    assert MISFIT_SHUFFLED in record["flagged_models"]
    with open(fit / "check_fit" / "items.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(r["item"] for r in rows if r["flagged"] == "true") == sorted(record["flagged_items"])
    diagnostics = json.loads((fit / "diagnostics.json").read_text(encoding="utf-8"))
    assert "check_fit" in diagnostics["outputs"] and diagnostics["check_fit"]["summary"] == record["summary"]


def test_diagnose_and_summarize_show_the_check_or_say_not_checked(misfit_fit, tmp_path):
    fit = misfit_fit / "fit"
    summary = _record(fit)["summary"]
    shown = "Model fit:" + summary[len("model fit:"):]
    for flags in ((), ("-I", "-S")):   # diagnose runs on a bare Python: the check is read with the standard library
        done = run_script("diagnose_benchmark.py", fit / "difficulty.csv", python="python3" if flags else None,
                          flags=flags)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == shown
    state = json.loads(run_script("diagnose_benchmark.py", fit / "difficulty.csv", "--json").stdout)["model_fit"]
    assert state["checked"] is True and state["items_flagged"] == len(_record(fit)["flagged_items"])

    checked, edited, bare = (_copy(misfit_fit, tmp_path / name) for name in ("checked", "edited", "bare"))
    text = (edited / "difficulty.csv").read_text(encoding="utf-8").splitlines()
    text[1] = text[1][:-1] + ("1" if text[1][-1] != "1" else "2")   # one digit of the first item's ESS
    (edited / "difficulty.csv").write_text("\n".join(text) + "\n", encoding="utf-8")
    shutil.rmtree(bare / "check_fit")
    for folder, why in ((edited, "checked another difficulty.csv"), (bare, "no check_fit/check_fit.json")):
        last = run_script("diagnose_benchmark.py", folder / "difficulty.csv").stdout.splitlines()[-1]
        assert last.startswith("Model fit: not checked (") and why in last, last

    record = _record(checked)
    items = f"{len(record['flagged_items'])} of {MISFIT_ITEMS}"
    models = f"{len(record['flagged_models'])} of {MISFIT_MODELS}"
    table = run_script("diagnose_benchmark.py", checked / "difficulty.csv", bare / "difficulty.csv").stdout
    assert f"{items}; {models}" in table.splitlines()[1] and "not checked" in table.splitlines()[2]

    done = run_script("summarize_benchmarks.py", checked, edited, "--output-dir", tmp_path / "table1")
    assert done.returncode == 0, done.stderr
    lines = {line.split(" | ")[0]: line for line in done.stdout.splitlines() if line.startswith("| ")}
    assert lines["| Benchmark"].endswith("| # | items flagged | models flagged |")
    assert lines["| checked"].endswith(f"| {items} | {models} |")
    assert lines["| edited"].endswith("| not checked | not checked |")
    with open(tmp_path / "table1" / "table1.csv", encoding="utf-8", newline="") as handle:
        rows = {r["benchmark"]: r for r in csv.DictReader(handle)}
    assert rows["checked"]["items_flagged"] == str(len(record["flagged_items"]))
    assert rows["checked"]["models_checked"] == str(MISFIT_MODELS) and rows["edited"]["items_flagged"] == ""
    saved = {r["benchmark"]: r for r in json.loads((tmp_path / "table1" / "table1.json").read_text())["benchmarks"]}
    assert saved["checked"]["model_fit"]["summary"] == record["summary"]
    assert saved["edited"]["model_fit"] == {"checked": False, "why": saved["edited"]["model_fit"]["why"]}


def test_check_fit_into_the_fit_folder_replaces_the_fits_check(misfit_fit, tmp_path):
    folder = _copy(misfit_fit, tmp_path / "fit", posterior=True)
    done = run_script("check_fit.py", folder, "--output-dir", folder / "check_fit", "--draws", 40)
    assert done.returncode == 0, done.stderr
    assert (folder / "check_fit" / "item_fit.png").is_file() and _record(folder)["settings"]["draws"] == 40
    last = run_script("diagnose_benchmark.py", folder / "difficulty.csv").stdout.splitlines()[-1]
    assert last.startswith("Model fit: ") and last.endswith("; 40 draws")


def test_a_map_refit_checks_its_mode_and_no_check_fit_leaves_no_stale_check(misfit_fit, tmp_path):
    folder = _copy(misfit_fit, tmp_path / "fit")
    matrix = misfit_fit / "matrix.csv"
    common = [matrix, "--n-trials", MISFIT_K, "--allow-missing", "--method", "map", "--output-dir", folder]
    done = run_script("fit_irt.py", *common)
    assert done.returncode == 0, done.stderr
    record = _record(folder)
    assert record["settings"]["draws_source"].startswith("posterior mode only") and record["summary"] in done.stderr
    assert record["settings"]["posterior_used"] is False
    done = run_script("fit_irt.py", *common, "--no-check-fit")
    assert done.returncode == 0, done.stderr
    assert "model fit:" not in done.stderr and not (folder / "check_fit").exists()   # the earlier check is removed
    diagnostics = json.loads((folder / "diagnostics.json").read_text(encoding="utf-8"))
    assert "check_fit" not in diagnostics and "check_fit" not in diagnostics["outputs"]


def test_fit_check_options_keep_the_error_contract(misfit_fit, tmp_path):
    matrix = misfit_fit / "matrix.csv"
    out = tmp_path / "out"
    assert_rejected(run_script("fit_irt.py", matrix, "--n-trials", MISFIT_K, "--output-dir", out,
                               "--no-check-fit=yes"), "--no-check-fit")
    out.mkdir()
    (out / "check_fit").write_text("not a folder\n")       # the check's folder is checked with the fit's outputs
    done = run_script("fit_irt.py", matrix, "--n-trials", MISFIT_K, "--allow-missing", "--method", "map",
                      "--output-dir", out)
    assert_rejected(done, "check_fit")
    assert sorted(p.name for p in out.iterdir()) == ["check_fit"]


# -- the explorer ---------------------------------------------------------------------------------------------------
def test_explorer_shows_the_model_fit_and_the_drift(misfit_fit, drift_world, tmp_path):
    fit = misfit_fit / "fit"
    record = _record(fit)
    out = tmp_path / "e.html"
    drift = f"{_name(fit)}={drift_world['out']}"
    for python, flags in ((None, ()), ("python3", ("-I", "-S"))):   # no NumPy needed for either section
        done = run_script("explore_benchmarks.py", fit / "difficulty.csv", "--drift", drift, "--output", out,
                          python=python, flags=flags)
        assert done.returncode == 0, done.stderr
    bench = page_data(out)["benchmarks"][0]
    view = bench["model_fit"]
    assert view["summary"] == record["summary"] and view["draws"] == 10
    assert (view["items_flagged"], view["models_flagged"]) == (len(record["flagged_items"]),
                                                               len(record["flagged_models"]))
    assert [r["item"] for r in view["item_rows"]] and {r["item"] for r in view["item_rows"]} == set(
        record["flagged_items"])
    assert all(r["reason"] and float(r["p"]) <= 1 for r in view["item_rows"])
    assert any("ability falls" in r["reason"] for r in view["item_rows"])
    assert MISFIT_SHUFFLED in [r["model"] for r in view["model_rows"]] and view["figure"] is None
    (drift,) = bench["drift"]
    rows = {r["model"]: r for r in drift["rows"]}
    assert [m for m, r in rows.items() if r["flagged"]] == drift_world["json"]["flagged"] == ["m03"]
    bad = next(r for r in drift_world["json"]["models"] if r["model"] == "m03")
    assert rows["m03"]["delta"] == f"{bad['delta']:+.2f} [{bad['delta_lo']:+.2f}, {bad['delta_hi']:+.2f}]"
    assert rows["m03"]["tau"] == bad["tau"] and rows["m03"]["near"] == "yes"
    assert [f["model"] for f in drift["figures"]] == ["m03"] and drift["missing_figures"] == 0
    assert drift["figures"][0]["uri"].startswith("data:image/png;base64,")
    inputs = page_data(out)["provenance"]["inputs_sha256"]
    assert str(fit / "check_fit" / "check_fit.json") in inputs and str(drift_world["out"] / "drift.json") in inputs


def test_drift_joins_the_benchmark_whose_fit_saw_its_matrix(drift_world, tmp_path):
    bench = tmp_path / "dated"
    bench.mkdir()
    (bench / "difficulty.csv").write_text("item,b_mean\nq000,0.1\nq001,1.5\nq002,-0.3\n")
    (bench / "diagnostics.json").write_text(json.dumps({"input": {"sha256": _sha256(drift_world["matrix"])}}))
    other = tmp_path / "other"
    other.mkdir()
    (other / "difficulty.csv").write_text("item,b_mean\na,0\nb,1\n")
    out = tmp_path / "e.html"
    done = run_script("explore_benchmarks.py", other / "difficulty.csv", bench / "difficulty.csv", "--drift",
                      drift_world["out"], "--output", out)
    assert done.returncode == 0, done.stderr
    views = {b["name"]: b for b in page_data(out)["benchmarks"]}
    assert len(views["dated"]["drift"]) == 1 and views["other"]["drift"] == []
    assert views["dated"]["model_fit"] is None   # no check beside it: no section (the page says nothing)


def test_explorer_fit_and_drift_inputs_keep_the_error_contract(misfit_fit, drift_world, tmp_path):
    fit = _copy(misfit_fit, tmp_path / "fit")
    out = tmp_path / "e.html"
    damaged = tmp_path / "damaged"
    shutil.copytree(drift_world["out"], damaged)
    (tmp_path / "empty").mkdir()
    notjson = tmp_path / "notjson"
    notjson.mkdir()
    (notjson / "drift.json").write_text("{")
    record = json.loads((damaged / "drift.json").read_text())
    record["models"][0]["p_value"] = 1.5
    (damaged / "drift.json").write_text(json.dumps(record))
    difficulty = fit / "difficulty.csv"
    cases = [
        (("--drift", tmp_path / "nowhere"), ["nowhere", "no such folder"]),
        (("--drift", tmp_path / "empty"), ["no drift.json"]),
        (("--drift", f"{_name(fit)}={notjson}"), ["drift.json", "not JSON"]),
        (("--drift", f"{_name(fit)}={damaged}"), ["models[0].p_value", "not a probability"]),
        (("--drift", f"nobody={drift_world['out']}"), ["'nobody'"]),
        (("--drift", drift_world["out"]), ["name it as NAME=DIR"]),
    ]
    for args, fragments in cases:
        assert_rejected(run_script("explore_benchmarks.py", difficulty, *args, "--output", out), *fragments)
        assert not out.exists()
    items = fit / "check_fit" / "items.csv"
    text = items.read_text(encoding="utf-8").splitlines()
    flagged = next(k for k, line in enumerate(text) if ",true," in line)
    cells = text[flagged].split(",")
    cells[12] = "nan"    # p_value
    text[flagged] = ",".join(cells)
    items.write_text("\n".join(text) + "\n", encoding="utf-8")
    assert_rejected(run_script("explore_benchmarks.py", difficulty, "--output", out), "items.csv", "p_value",
                    "not a finite number")
    assert not out.exists()
