"""HELM run folders (``runs/<suite>/<run>/per_instance_stats.json`` + ``run_spec.json``), standard library.

Format, checked against crfm-helm 0.5.16 on runs it wrote (``tests/fixtures/harness_logs/helm``; the
fields are those of HELM's ``PerInstanceStats``, ``Stat`` and ``MetricName`` records):
``per_instance_stats.json`` is a list with one entry per (instance, train trial, perturbation):

- ``instance_id`` (the item, e.g. ``id12``), ``train_trial_index`` (the trial: HELM's
  ``num_train_trials`` draws the in-context examples anew for each trial) and, on entries computed
  on a perturbed copy of the instance (``data_augmentation=…`` run entries), ``perturbation``
  (``name``: e.g. ``lowercase``);
- ``stats``: a list of ``{"name": {"name": METRIC, "split": …, "perturbation": …}, "mean": …,
  "count": …, …}``; the metric is chosen by its ``name.name`` (``--metric``) and its ``mean``
  must be 0 or 1.

Entries with a perturbation are left out unless ``perturbation`` names the one to read instead of
the unperturbed instances. The model is ``run_spec.json``'s ``adapter_spec.model`` and the task its
``name`` without the ``model=`` argument (so the runs of several models share it). HELM keeps the
completions elsewhere (``scenario_state.json``), so ``--grade`` does not apply.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.core.harness.formats import FORMATS
from benchmeasure.core.harness.records import HarnessLog, Sample, read_json

STATS = "per_instance_stats.json"


def _stats_file(path: Path) -> Path:
    if path.is_file():
        return path
    if not path.is_dir():
        fail(f"{path}: no such file or folder")
    if (path / STATS).is_file():
        return path / STATS
    found = sorted(path.rglob(STATS))
    if not found:
        fail(f"{path}: no HELM run in it (looked for {STATS})")
    fail(f"{path}: holds {len(found)} HELM runs ({', '.join(str(f.parent) for f in found[:3])}); give one run "
         "folder per model")


def _run_spec(file: Path) -> tuple:
    """``(model, task)`` from ``run_spec.json`` beside the stats."""
    spec_file = file.parent / "run_spec.json"
    if not spec_file.is_file():
        fail(f"{file}: no run_spec.json beside it (HELM writes it in the same run folder; it names the model)")
    spec = read_json(spec_file)
    adapter = spec.get("adapter_spec") if isinstance(spec, dict) else None
    model = adapter.get("model") if isinstance(adapter, dict) else None
    name = spec.get("name") if isinstance(spec, dict) else None
    if not isinstance(model, str) or not model or not isinstance(name, str):
        fail(f"{spec_file}: no 'name' and 'adapter_spec.model' (is this a HELM run_spec.json?)")
    task = re.sub(r"(?<=[:,])model=[^,]*,?|,model=[^,]*$", "", name).rstrip(",:")
    return model, task


def _perturbation(value) -> str | None:
    if value is None:
        return None
    return str(value.get("name")) if isinstance(value, dict) else str(value)


def _value(where: str, entry: dict, metric: str, perturbation: str | None):
    stats = entry.get("stats")
    if not isinstance(stats, list):
        fail(f"{where}: no 'stats' list")
    found, names = [], []
    for stat in stats:
        name = stat.get("name") if isinstance(stat, dict) else None
        if not isinstance(name, dict):
            fail(f"{where}: a stat without a 'name' record")
        names.append(str(name.get("name")))
        if name.get("name") == metric and _perturbation(name.get("perturbation")) == perturbation:
            found.append(stat)
    if not found:
        listed = ", ".join(sorted(set(names))[:12])
        fail(f"{where}: no metric {metric!r} (per-instance stats here: {listed})")
    if len(found) > 1:
        fail(f"{where}: metric {metric!r} appears {len(found)} times (several splits?)")
    value = found[0].get("mean")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value not in (0, 1):
        fail(f"{where}: metric {metric!r} has mean {value!r}; a 0/1 metric (exact_match, quasi_exact_match, …) "
             "is needed")
    return int(value)


def read_helm_log(path: Path, metric: str | None, perturbation: str | None = None) -> HarnessLog:
    """One HELM run (its folder or ``per_instance_stats.json``); ``metric`` names the 0/1 stat."""
    file = _stats_file(Path(path))
    model, task = _run_spec(file)
    entries = read_json(file)
    if not isinstance(entries, list) or not entries:
        fail(f"{file}: not a non-empty list of per-instance stats")
    if not metric:
        fail("give --metric NAME for HELM runs: the per-instance stat to read (e.g. exact_match)")
    items: dict = {}
    kinds = set()
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("instance_id"), str):
            fail(f"{file} entry {number}: no 'instance_id' (is this HELM's per_instance_stats.json?)")
        item, trial = entry["instance_id"], entry.get("train_trial_index", 0)
        if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
            fail(f"{file} entry {number} (instance {item}): train_trial_index must be a non-negative integer")
        kind = _perturbation(entry.get("perturbation"))
        kinds.add(kind)
        if kind != perturbation:
            continue
        where = f"{file} entry {number} (instance {item}, train trial {trial})"
        record = items.setdefault(item, {"line": number, "trials": {}, "entries": {}})
        if trial in record["trials"]:
            fail(f"{where}: instance {item} train trial {trial} appears twice (also entry {record['entries'][trial]})")
        record["trials"][trial] = _value(where, entry, metric, perturbation)
        record["entries"][trial] = number
    if not items:
        present = ", ".join(sorted(k for k in kinds if k is not None))
        if perturbation is None:
            fail(f"{file}: only perturbed entries ({present}); choose one with --perturbation NAME")
        fail(f"{file}: no entries with perturbation {perturbation!r} (the run has: {present or 'none'})")
    samples = [Sample(item, "", None, {metric: [e["trials"][t] for t in sorted(e["trials"])]}, e["line"])
               for item, e in items.items()]
    return HarnessLog("helm", file, model, task, samples, "instance", metric)


@FORMATS.add("helm", package="crfm-helm", options=("metric", "perturbation"),
             repeats_hint=" (run HELM with num_train_trials K)")
def read_helm(path, options):
    """``prepare --from helm``: the reader of the format registry (:mod:`benchmeasure.core.harness.formats`)."""
    return read_helm_log(path, options.metric, options.perturbation)
