"""Gather what the explorer page shows: benchmarks, their metrics, posteriors and filled runs.

Every number comes from the package's own definitions — :func:`benchmeasure.core.metrics.diagnose`
(DDM, Max Gap, Top-5 Gap Sum and the five widest gaps; paper, Section 2 and Table 1),
:data:`benchmeasure.analyses.summary.THRESHOLDS` (the Table 1 highlights and the project page's
"k/25" counts), :mod:`benchmeasure.analyses.posterior_metrics` (94% intervals, ECDF band) and
:mod:`benchmeasure.explorer.filled` (before/after, paper Figure 5) — and is formatted here,
in Python, to the three decimals of Table 1, so the page shows exactly what
``diagnose_benchmark.py`` prints.

Naming: a benchmark is named after the folder that holds its difficulty file; when several
given files share a folder, after each file's stem instead.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from benchmeasure.analyses.summary import LABELS, THRESHOLDS, SummaryRow, marked_counts
from benchmeasure.base.compressed import strip_compression
from benchmeasure.base.errors import fail
from benchmeasure.base.files import read_jsonl_objects, sha256_file
from benchmeasure.core.benchmarks import DIFFICULTY, TEST, find_benchmarks, load_benchmark
from benchmeasure.core.difficulty_file import benchmark_name, read_difficulty_column
from benchmeasure.core.metrics import Diagnosis, diagnose
from benchmeasure.explorer.filled import FilledRun, read_filled

log = logging.getLogger(__name__)

TOP_K = 5
QUESTION_FIELDS = ("question", "problem", "prompt", "input", "text")
Z_DECIMALS = 4  # item positions on the page: 1e-4 of the axis, well under a pixel
BAND_POINTS = 201


@dataclass
class Entry:
    """One benchmark of the page, before it is turned into page data.

    Attributes
    ----------
    name, source : str
        Display name; the difficulty file it was read from.
    item_ids : list of str
    b : list of float
        Unnormalized difficulties (``b_mean``), in file order.
    questions : dict or None
        ``item_id → question text`` when an item pool is present.
    domain : str
    sha256 : str
        Of the difficulty file (how a filled run finds its benchmark).
    posterior, filled : see :func:`posterior_view`, :func:`filled_view`
    model_fit, drift : see :mod:`benchmeasure.explorer.fit_views`
    """

    name: str
    source: str
    item_ids: list
    b: list
    questions: dict | None
    sha256: str
    domain: str = ""
    posterior: dict | None = None
    filled: list = field(default_factory=list)
    absent: dict | None = None
    model_fit: dict | None = None
    drift: list = field(default_factory=list)

    def diagnosis(self) -> Diagnosis:
        return diagnose(self.b, top_k=TOP_K, where=self.source)


def fmt(value: float) -> str:
    """Three decimals, as the paper's Table 1 and ``diagnose_benchmark.py``'s table print them."""
    return f"{value:.3f}"


def _fixed(value: float, decimals: int) -> int:
    """``value`` as an integer count of 10^-decimals, rounded exactly as ``f"{value:.{decimals}f}"`` rounds."""
    return int(f"{value:.{decimals}f}".replace(".", ""))


def _question_text(record: dict, question_field: str | None, where: str) -> str:
    if question_field is not None:
        if question_field not in record:
            fail(f"{where}: no field {question_field!r} (--question-field)")
        value = record[question_field]
    else:
        value = next((record[k] for k in QUESTION_FIELDS if k in record), "")
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def read_questions(path: Path, question_field: str | None, chars: int) -> dict:
    """``item_id → the first ``chars`` characters of the question`` from an item pool (``test.jsonl``)."""
    questions = {}
    for line, record in read_jsonl_objects(path, ("item_id",)):
        text = " ".join(_question_text(record, question_field, f"{path} line {line}").split())
        key = record["item_id"]
        questions[str(key).strip()] = _snippet(text, chars)  # IDs stripped, as the difficulty file's are
    return questions


def _key(item_id: str, questions: dict) -> str:
    """The pool key of a difficulty-file ID (released layout: the integers 0 … N−1, written either way)."""
    if item_id in questions:
        return item_id
    try:
        return str(int(item_id))
    except ValueError:
        return item_id


def load_entries(paths: list, column: str, question_field: str | None, chars: int) -> tuple:
    """Entries for the positional arguments, and the folders skipped while scanning (module docstring)."""
    files = [Path(p) for p in paths if Path(p).is_file()]
    shared = Counter(f.parent for f in {f.resolve() for f in files})  # distinct files per folder
    entries, skipped = [], []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            name = (Path(strip_compression(path)[0]).stem if shared[path.resolve().parent] > 1
                    else benchmark_name(path.resolve()))
            pool = path.parent / TEST
            if path.name == DIFFICULTY and column == "b_mean":
                loaded = load_benchmark(path.parent)  # checks the released layout against test.jsonl
                ids, b = loaded.item_ids, loaded.difficulties
            else:
                read = read_difficulty_column(path, column)
                ids, b, pool = read.item_ids, read.values, None
            entries.append(_entry(name, path, ids, b, pool, question_field, chars))
        elif path.is_dir():
            for loaded in find_benchmarks([path], skipped=skipped):
                folder = Path(loaded.folder)
                entries.append(_entry(loaded.name, folder / DIFFICULTY, loaded.item_ids, loaded.difficulties,
                                      folder / TEST, question_field, chars))
        else:
            fail(f"{path}: no such benchmark folder or difficulty file")
    return entries, skipped


def _entry(name, path: Path, ids, b, pool, question_field, chars) -> Entry:
    questions = read_questions(pool, question_field, chars) if pool is not None and pool.is_file() and chars else None
    log.info("%s: %d items from %s%s", name, len(b), path, " (with question text)" if questions else "")
    return Entry(name, str(path), [str(i) for i in ids], list(b), questions, sha256_file(path),
                 absent=absent_view(path, [str(i) for i in ids]))


def absent_view(path: Path, ids: list) -> dict | None:
    """A fit with holes (``absent_cells`` in the diagnostics.json beside the difficulty file): the total, the
    models with some and, per item in file order, how many models did not answer it; None without holes."""
    from benchmeasure.core.matrix_holes import absent_cells_beside

    absent = absent_cells_beside(path)
    if absent is None:
        return None
    per_item = absent.get("per_item", {})
    counts = [int(per_item.get(i, 0)) for i in ids]  # this benchmark's items (a suite's record covers them all)
    if not any(counts):
        return None
    return {"total": sum(counts), "models": len(absent.get("per_model", {})),
            "items": sum(1 for c in counts if c), "per_item": counts}


def check_names(entries: list) -> None:
    counts = Counter(e.name for e in entries)
    repeated = next((n for n in counts if counts[n] > 1), None)
    if repeated is not None:
        sources = [e.source for e in entries if e.name == repeated]
        fail(f"benchmark {repeated!r} is given more than once ({', '.join(sources)}); give each benchmark once")


# -- posterior ----------------------------------------------------------------------------------------
def parse_posterior(spec: str) -> tuple:
    """``NAME=PATH`` or ``PATH`` → (name or None, path)."""
    name, sep, path = spec.partition("=")
    if sep and name and not Path(spec).exists():
        return name, Path(path)
    return None, Path(spec)


def posterior_path(path: Path) -> Path:
    """A fit folder stands for its ``posterior.zarr``; anything else is the posterior itself
    (:func:`benchmeasure.irt.fit_folder.posterior_store`)."""
    from benchmeasure.irt.fit_folder import posterior_store

    return posterior_store(path)


def attach_posteriors(entries: list, specs: list, probability: float) -> list:
    """Attach each ``--posterior`` to its benchmark; returns the posterior paths read."""
    from benchmeasure.analyses.posterior_metrics import input_sha256, read_posterior_b

    read = {}
    for spec in specs:
        name, raw = parse_posterior(spec)
        if name is not None:
            entry = next((e for e in entries if e.name == name), None)
            if entry is None:
                fail(f"--posterior {spec}: no benchmark named {name!r} (benchmarks: "
                     f"{', '.join(e.name for e in entries)})")
        path = posterior_path(raw)
        if name is None:
            home = path.resolve().parent
            entry = next((e for e in entries if Path(e.source).resolve().parent == home), None)
            if entry is None:
                fail(f"--posterior {spec}: no given benchmark's difficulty file is in {home}; "
                     f"name it as NAME=PATH")
        if entry.posterior is not None:
            fail(f"--posterior {spec}: benchmark {entry.name!r} already has a posterior")
        log.info("%s: reading posterior %s", entry.name, path)
        items, draws = read_posterior_b(path)
        _check_items(entry, items, path)
        entry.posterior = posterior_view(draws, probability, str(path), items=items)
        read[str(path)] = input_sha256(path)
    return read


def _check_items(entry: Entry, items: list, path: Path) -> None:
    mine = set(entry.item_ids)
    theirs = [str(i) for i in items]
    if len(theirs) != len(mine) or set(theirs) != mine:
        odd = next((i for i in theirs if i not in mine), None) or next(i for i in entry.item_ids if i not in theirs)
        fail(f"{path}: its {len(theirs)} items are not {entry.name}'s {len(mine)} (item {odd!r} is in only one); "
             f"give the posterior of this benchmark's fit")


def posterior_view(draws, probability: float, source: str, items=None) -> dict:
    """Labelled intervals of the metrics and the pointwise band of ECDF draws, ready for the page.

    The metric cells keep the paper's plug-in value; beside each, the noise-aware interval of
    ``posterior-metrics`` (same seed and replicates, so the same numbers), and in its tooltip the
    per-draw own-min-max interval, whether the widest gaps are resolved and the resolution.
    """
    import numpy as np

    from benchmeasure.analyses.noise_aware import report
    from benchmeasure.analyses.posterior_metrics import ecdf_band
    from benchmeasure.core.difficulty_file import fit_n_trials

    # K from the fit folder: at K = 1 the noise-aware interval is refused, as posterior-metrics refuses it
    # ``items`` lets the plug-in pool tied items' draws as fit does (benchmeasure.analyses.plugin)
    rec = report(items, draws, top_k=TOP_K, probability=probability, n_trials=fit_n_trials(source),
                 posterior_path=source)
    from benchmeasure.core.calibrated_text import calibrated_beside

    stored = calibrated_beside(source)  # the fit's calibrated intervals, shown instead where it made them
    calibrated = {} if stored is None or "refused" in stored else {
        k: e for k, e in stored["metrics"].items() if abs(e["probability"] - probability) < 1e-9}
    grid = np.linspace(0.0, 1.0, BAND_POINTS)
    low, high = ecdf_band(draws, grid, probability)
    pct = f"{100 * probability:g}%"
    intervals = {}
    for k, m in rec["metrics"].items():
        own = m["per_draw_min_max"]
        resolved = {True: "; widest gap(s) resolved", False: "; NOT resolved: may be noise"}.get(m.get("resolved"), "")
        if m["refused"]:  # K = 1: no noise-aware interval; the per-draw one on the fixed range, labelled so
            fixed = m["per_draw_fixed_range"]
            text = f"[{fmt(fixed['low'])}, {fmt(fixed['high'])}]*"
            aware = f"noise-aware interval {m['refused']}; shown: per draw on a fixed range {pct}"
        else:
            text = f"[{fmt(m['low'])}, {fmt(m['high'])}]"
            aware = f"interval: noise-aware {pct} (estimate {fmt(m['estimate'])})"
        low_, high_, estimate = m["low"], m["high"], m["estimate"]
        if k in calibrated:  # covers the truth at its rate in simulations at this fit (docs/gap_noise.md)
            low_, high_, estimate = calibrated[k]["low"], calibrated[k]["high"], calibrated[k].get("estimate")
            text = ("" if estimate is None else f"≈ {fmt(estimate)} ") + f"[{fmt(low_)}, {fmt(high_)}]"
            aware = (f"≈ estimate [interval] of the TRUE value: calibrated {pct} (simulated at this fit's models, "
                     f"items, trials and holes; width {fmt(high_ - low_)} against "
                     f"{fmt(calibrated[k]['known_world_width'])} if the world were known)")
        intervals[k] = {"low": low_, "high": high_, "estimate": estimate, "plugin": m["plugin"],
                        "calibrated": k in calibrated,
                        "per_draw_min_max": own, "resolved": m.get("resolved"), "refused": m["refused"],
                        "text": text,
                        "title": (f"value: the paper's plug-in (metric of the posterior means); {aware}; per draw, "
                                  f"own min-max: [{fmt(own['low'])}, {fmt(own['high'])}]{resolved}; resolution "
                                  f"{fmt(rec['resolution'])}")}
    return {
        "source": source, "draws": int(draws.shape[0]), "probability": probability,
        "resolution": rec["resolution"], "intervals": intervals,
        "band": {"x": [_fixed(x, Z_DECIMALS) for x in grid], "low": [_fixed(v, Z_DECIMALS) for v in low],
                 "high": [_fixed(v, Z_DECIMALS) for v in high]},
    }


# -- filled runs --------------------------------------------------------------------------------------
def attach_filled(entries: list, folders: list, question_field: str | None, chars: int) -> dict:
    """Attach each filled folder to the benchmark whose difficulty file it calibrated from (same SHA-256).

    A folder whose calibration table is none of the given files adds its original benchmark as
    a row of its own. Returns every file read, ``{path: sha256}``.
    """
    read = {}
    for folder in folders:
        run = read_filled(folder)
        read.update(run.inputs)
        entry = next((e for e in entries if e.sha256 == run.calibration_sha256), None)
        if entry is None:
            entry = _entry_from_run(run, {e.name for e in entries}, chars)
            entries.append(entry)
        log.info("%s: %s %s, %d new items", entry.name, run.kind, folder, len(run.items))
        entry.filled.append(filled_view(run, chars))
    return read


def _entry_from_run(run: FilledRun, taken: set, chars: int) -> Entry:
    bench = run.benchmark
    name = bench.name if bench.name not in taken else f"{bench.name} ({Path(run.folder).name})"
    questions = {i.item_id: _snippet(i.question, chars) for i in bench.items} if chars else None
    return Entry(name, run.calibration, [i.item_id for i in bench.items], [i.b_mean for i in bench.items], questions,
                 run.calibration_sha256)


def _snippet(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text`` (whitespace runs made one space), "…" where it was cut.

    Cutting a snippet again to fewer characters gives the snippet of the full text at that length."""
    text = " ".join(str(text).split())
    return text if len(text) <= chars else text[:chars].rstrip() + "…"


def has_questions(data: dict) -> bool:
    """Whether the page data (:func:`page_data`) holds any question text."""
    return any(view["questions"] or any(i["question"] for run in view["filled"] or () for i in run["items"])
               for view in data["benchmarks"])


def recut_questions(data: dict, chars: int) -> dict:
    """A copy of the page data (:func:`page_data`) with every question text cut to ``chars`` characters
    (fewer than it was built with; 0 leaves the text out), and the setting recorded in its provenance."""
    views = []
    for view in data["benchmarks"]:
        view = dict(view)
        if view["questions"]:
            view["questions"] = [_snippet(q, chars) for q in view["questions"]] if chars else None
        if view["filled"]:
            view["filled"] = [{**run, "items": [{**i, "question": _snippet(i["question"], chars) if chars else ""}
                                                for i in run["items"]]} for run in view["filled"]]
        views.append(view)
    provenance = dict(data["provenance"])
    provenance["settings"] = {**provenance["settings"], "question_chars": chars}
    return {**data, "benchmarks": views, "provenance": provenance}


def filled_view(run: FilledRun, chars: int) -> dict:
    """Before/after metrics and the new items (paper, Figure 5), ready for the page."""
    metrics = run.metrics(TOP_K)
    return {
        "kind": run.kind, "folder": run.folder, "reported": run.reported,
        "metrics": {label: _metric_view(d) for label, d in metrics.items()},
        "top3_reduction": f"{run.top3_reduction():.2f}",
        "target_deviation": None if run.target_deviation() is None else f"{run.target_deviation():.4f}",
        "targets": [{"step": t.step, "left": _fixed(t.left, Z_DECIMALS), "right": _fixed(t.right, Z_DECIMALS),
                     "target": _fixed(t.target, Z_DECIMALS), "text": fmt(t.target)} for t in run.targets],
        "items": [{"id": i.label, "item_id": i.item_id, "step": i.step, "z": _fixed(min(1.0, max(0.0, i.z)), 4),
                   "z_text": f"{i.z:.4f}", "target": _fixed(i.target, Z_DECIMALS), "target_text": f"{i.target:.4f}",
                   "deviation": f"{i.deviation:.4f}", "b_mean": f"{i.b_mean:.4f}", "parent": i.parent_id,
                   "parent_z": None if i.parent_z is None else _fixed(min(1.0, max(0.0, i.parent_z)), 4),
                   "parent_z_text": None if i.parent_z is None else f"{i.parent_z:.4f}",
                   "lineage": i.lineage, "question": _snippet(i.question, chars) if chars else ""}
                  for i in run.items],
    }


# -- the page's data ----------------------------------------------------------------------------------
def _metric_view(d: Diagnosis) -> dict:
    return {"items": d.items, "ddm": d.ddm, "max_gap": d.max_gap, "top5_gap_sum": d.top_k_gap_sum,
            "text": {"ddm": fmt(d.ddm), "max_gap": fmt(d.max_gap), "top5_gap_sum": fmt(d.top_k_gap_sum)}}


def _b_decimals(b: list) -> int:
    """Decimals that resolve the benchmark's b scale to 1e-4 of its range (at least 3)."""
    span = max(b) - min(b)
    return max(3, min(12, math.ceil(4 - math.log10(span))))


def compact_ids(ids: list):
    """Item IDs in few bytes: None for 0 … N−1; else their common prefix with the rest, or with a zero-pad
    width when the rest counts 0 … N−1 (``q00000``, ``q00001``, …). The page rebuilds each ID exactly."""
    if ids == [str(i) for i in range(len(ids))]:
        return None
    prefix = os.path.commonprefix(ids)  # noqa: RUF071 - character prefix of IDs, not paths, wanted
    rest = [i[len(prefix):] for i in ids]
    for width in {0, len(rest[0])}:
        if rest == [str(i).zfill(width) for i in range(len(rest))]:
            return {"prefix": prefix, "width": width}
    return {"prefix": prefix, "rest": rest}


def item_id(ids, index: int) -> str:
    """The ID of item ``index`` from :func:`compact_ids`' form (what the page's script does)."""
    if ids is None:
        return str(index)
    return ids["prefix"] + (ids["rest"][index] if "rest" in ids else str(index).zfill(ids["width"]))


def benchmark_view(entry: Entry, domains: dict) -> dict:
    """One benchmark's page record; the table row follows :class:`benchmeasure.analyses.summary.SummaryRow`."""
    d = entry.diagnosis()
    row = SummaryRow(entry.name, domains.get(entry.name, ""), d.ddm, d.max_gap, d.top_k_gap_sum, d.items)
    low, span = min(entry.b), max(entry.b) - min(entry.b)
    decimals = _b_decimals(entry.b)
    ids = compact_ids(entry.item_ids)
    questions = None
    if entry.questions:
        questions = [entry.questions.get(_key(i, entry.questions), "") for i in entry.item_ids]
    return {
        "name": entry.name, "domain": row.domain, "source": entry.source, **_metric_view(d),
        "marked": {m: row.marked(m) for m in THRESHOLDS},
        "gaps": [{"rank": g.rank, "left": _fixed(g.left, Z_DECIMALS), "right": _fixed(g.right, Z_DECIMALS),
                  "text": fmt(g.width)} for g in d.largest_gaps],
        "b_decimals": decimals,
        "b": [_fixed(v, decimals) for v in entry.b],
        "z": [_fixed((v - low) / span, Z_DECIMALS) for v in entry.b],
        "ids": ids, "questions": questions, "posterior": entry.posterior, "filled": entry.filled,
        "absent": entry.absent, "model_fit": entry.model_fit, "drift": entry.drift,
    }


def page_data(entries: list, domains: dict, title: str, provenance: dict) -> dict:
    """Everything the page's script reads (one JSON object)."""
    views = [benchmark_view(e, domains) for e in entries]
    rows = [SummaryRow(v["name"], v["domain"], v["ddm"], v["max_gap"], v["top5_gap_sum"], v["items"]) for v in views]
    counts = marked_counts(rows)
    return {
        "title": title,
        "z_scale": 10 ** Z_DECIMALS,
        "thresholds": [{"metric": m, "label": LABELS[m], "threshold": f"{THRESHOLDS[m]:.2f}",
                        "count": counts[m][0], "total": counts[m][1]} for m in THRESHOLDS],
        "benchmarks": views,
        "provenance": provenance,
    }
