"""HELM runs through ``prepare_response_matrix.py --from helm``, on real HELM output.

The fixtures under tests/fixtures/harness_logs/helm/runs/fixtures were written by crfm-helm 0.5.16
(run spec ``sim_arith`` of tasks/helm_sim_arith.py: one in-context example, two train trials, the
lowercase perturbation) against the simulated OpenAI-compatible server (``make_fixtures_sim.sh``);
the expected matrices are hand counts of their ``final_number_exact_match`` means
(tests/fixtures/harness_logs/README.md). Error cases run on edited copies.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.base.errors import InputError
from benchmeasure.core.harness import logs_to_matrix, read_helm_log
from conftest import ROOT, assert_rejected, run_script

RUNS = ROOT / "tests" / "fixtures" / "harness_logs" / "helm" / "runs" / "fixtures"
STRONG = RUNS / "sim_arith:model=sim_sim-strong,data_augmentation=lower"
WEAK = RUNS / "sim_arith:model=sim_sim-weak,data_augmentation=lower"
METRIC = ("--metric", "final_number_exact_match")
ITEMS = ["id2", "id3", "id4", "id5"]  # HELM's instance ids (id0, id1 are the training items)


def prepare(*args):
    return run_script("prepare_response_matrix.py", *args)


def matrix(path: Path) -> tuple[list, dict]:
    lines = path.read_text().splitlines()
    return lines[0].split(",")[1:], {line.split(",")[0]: [int(x) for x in line.split(",")[1:]] for line in lines[1:]}


def entries(folder: Path) -> list:
    return json.loads((folder / "per_instance_stats.json").read_text())


def edited(tmp_path, folder: Path, change) -> Path:
    target = tmp_path / "runs" / folder.name
    shutil.copytree(folder, target)
    (target / "per_instance_stats.json").write_text(json.dumps(change(entries(folder))))
    return target


def test_train_trials_become_trials_and_perturbations_are_left_out(tmp_path):
    out, rows = tmp_path / "m.csv", tmp_path / "rows.csv"
    result = prepare("--from", "helm", STRONG, WEAK, *METRIC, "--n-trials", 2, "--output", out, "--responses-out", rows)
    assert result.returncode == 0, result.stderr
    assert matrix(out) == (ITEMS, {"sim/sim-strong": [2, 2, 2, 1], "sim/sim-weak": [2, 1, 0, 0]})
    long = rows.read_text().splitlines()
    assert len(long) == 1 + 2 * 4 * 2  # the 8 perturbed entries per run are not counted
    assert "sim/sim-strong,id5,0,0" in long and "sim/sim-strong,id5,1,1" in long
    record = json.loads((tmp_path / "m.csv.json").read_text())
    assert record["settings"]["from"] == "helm" and record["settings"]["perturbation"] is None
    assert [i["task"] for i in record["inputs"]] == ["sim_arith:data_augmentation=lower"] * 2
    stats = STRONG / "per_instance_stats.json"
    assert record["inputs"][0]["sha256"] == hashlib.sha256(stats.read_bytes()).hexdigest()


def test_a_perturbation_when_asked(tmp_path):
    out = tmp_path / "m.csv"
    result = prepare("--from", "helm", STRONG / "per_instance_stats.json", WEAK, *METRIC, "--perturbation", "lowercase",
                     "--n-trials", 2, "--output", out)
    assert result.returncode == 0, result.stderr
    assert matrix(out) == (ITEMS, {"sim/sim-strong": [2, 1, 1, 1], "sim/sim-weak": [1, 0, 1, 0]})


def _only_perturbed(rows):
    return [r for r in rows if r.get("perturbation")]


def _drop_instance(rows):
    return [r for r in rows if r["instance_id"] != "id4"]


def _drop_trial(rows):
    return [r for r in rows if not (r["instance_id"] == "id3" and r["train_trial_index"] == 1)]


def _twice(rows):
    return [*rows, rows[0]]


EDITED = {
    "only perturbed entries": (_only_perturbed, ("only perturbed entries (lowercase)", "--perturbation NAME")),
    "instance missing from one model's run": (_drop_instance, ("(model sim/sim-weak): no response for instance id4",)),
    "a train trial missing": (_drop_trial, ("instance id3", "has 1 trial, expected --n-trials 2")),
    "an entry twice": (_twice, ("entry 17 (instance id2, train trial 0): instance id2 train trial 0 appears twice "
                                "(also entry 1)",)),
}


@pytest.mark.parametrize("case", sorted(EDITED))
def test_rejected_edited_run(case, tmp_path):
    change, fragments = EDITED[case]
    copy = edited(tmp_path, WEAK, change)
    out = tmp_path / "m.csv"
    result = prepare("--from", "helm", STRONG, copy, *METRIC, "--n-trials", 2, "--output", out, "--responses-out",
                     tmp_path / "rows.csv")
    line = assert_rejected(result, *fragments)
    assert str(copy) in line
    assert not out.exists() and not (tmp_path / "rows.csv").exists()


CASES = {
    "no --metric": ([], ("give --metric NAME for HELM runs",)),
    "a metric that is not 0/1": (["--metric", "num_prompt_tokens"], ("metric 'num_prompt_tokens' has mean",
                                                                       "a 0/1 metric")),
    "unknown metric": (["--metric", "accuracy"], ("no metric 'accuracy'", "exact_match")),
    "unknown perturbation": ([*METRIC, "--perturbation", "typos"], ("no entries with perturbation 'typos'",
                                                                    "lowercase")),
    "--grade on a HELM run": ([*METRIC, "--grade", "math"], ("keeps no response text to grade", "--metric")),
    "folder with several runs": ([RUNS, *METRIC], ("holds 2 HELM runs", "one run folder per model")),
    "--perturbation on another format": ([ROOT / "tests" / "fixtures" / "harness_logs" / "lm-eval" / "smollm2-greedy",
                                          "--from", "lm-eval", *METRIC, "--perturbation", "x"],
                                         ("--perturbation applies to helm logs only",)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rejected(case, tmp_path):
    args, fragments = CASES[case]
    paths = [a for a in args if isinstance(a, Path)] or [STRONG]
    flags = [a for a in args if not isinstance(a, Path)]
    harness = ["--from", "helm"] if "--from" not in flags else []
    out = tmp_path / "m.csv"
    result = prepare(*harness, *paths, *flags, "--n-trials", 2, "--output", out)
    assert_rejected(result, *fragments)
    assert not out.exists()


def test_no_run_spec_beside_the_stats(tmp_path):
    copy = tmp_path / "run"
    copy.mkdir()
    shutil.copy(STRONG / "per_instance_stats.json", copy)
    result = prepare("--from", "helm", copy, *METRIC, "--n-trials", 2, "--output", tmp_path / "m.csv")
    assert_rejected(result, "no run_spec.json beside it")


# ---------------------------------------------------------------- fuzz

SCALARS = st.none() | st.booleans() | st.integers(-2, 3) | st.floats(allow_nan=True) | st.text(max_size=5)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(["name", "mean", "perturbation", "stats", "x"]), inner,
                                        max_size=3), max_leaves=6)
FIELDS = [("instance_id",), ("train_trial_index",), ("perturbation",), ("stats",), ("stats", 0), ("stats", 0, "name"),
          ("stats", 0, "mean"), ("stats", 0, "name", "name"), ("stats", 0, "name", "perturbation")]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=st.integers(0, 15), where=st.sampled_from(FIELDS), value=VALUES, delete=st.booleans(),
       whole=st.booleans())
def test_fuzz_damaged_stats(tmp_path_factory, entry, where, value, delete, whole):
    """A field of a real per_instance_stats.json replaced or deleted (or the whole file replaced): a clean
    error or a result; never a traceback, never a changed file."""
    rows = entries(STRONG)
    if whole:
        rows = value
    else:
        parent = rows[entry]
        for key in where[:-1]:
            parent = parent[key]
        if delete and isinstance(parent, dict):
            parent.pop(where[-1], None)
        else:
            parent[where[-1]] = value
    folder = tmp_path_factory.mktemp("fuzz") / "run"
    shutil.copytree(STRONG, folder)
    path = folder / "per_instance_stats.json"
    path.write_text(json.dumps(rows))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for metric in ("final_number_exact_match", "exact_match"):
        try:
            log = read_helm_log(folder, metric)
            logs_to_matrix([log], None, 2)
        except InputError as exc:
            assert str(exc) and "\n" not in str(exc)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
