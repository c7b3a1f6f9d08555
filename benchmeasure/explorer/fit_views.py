"""The explorer's "Model fit" and "Drift" sections: what a benchmark's fit check and drift analyses found, formatted
here for the page. Standard library only (the page runs on a bare Python without a posterior).

* **Model fit**: the check of the benchmark's fit (``FIT_DIR/check_fit/`` beside its ``difficulty.csv``: written by
  ``benchmeasure fit`` unless ``--no-check-fit``, or by ``benchmeasure check-fit FIT_DIR --output-dir
  FIT_DIR/check_fit``), shown when it checked exactly that ``difficulty.csv`` (``core.fit_check_text.check_beside``):
  its summary line, the flagged items with their reason and p-values, the flagged models, and the figure of flagged
  items' response curves when ``check-fit`` drew one. Nothing is shown for a benchmark without a check.
* **Drift**: ``benchmeasure drift`` output folders (``--drift [NAME=]DIR``): per model τ, δ with its 95 % interval,
  p, q and flagged (a categorical covariate: each model's shift, worded "differs by"), and each flagged model's
  figure. A folder without ``NAME=`` joins the benchmark whose fit saw the same matrix (the SHA-256 that
  ``drift.json`` and the fit's ``diagnostics.json`` record).
"""

from __future__ import annotations

import base64
import json
import math
import os
from pathlib import Path

from benchmeasure.base.csv_table import read_table
from benchmeasure.base.errors import fail
from benchmeasure.base.files import sha256_file
from benchmeasure.core.fit_check_text import CHECK_RECORD, check_beside, check_folder_of
from benchmeasure.core.matrix_holes import diagnostics_beside

MAX_ROWS = 200          # flagged items listed per benchmark (smallest q first); the page says how many more
PNG = b"\x89PNG\r\n\x1a\n"
FIGURE = "item_fit.png"  # analyses.fit_check_outputs.FIGURE (check-fit draws it; fit does not)


def _number(table, r: int, column: str) -> float:
    """A finite number from row ``r`` of ``column`` (an InputError naming the file, line and column otherwise)."""
    cell = table.rows[r][table.index(column)].strip()
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        fail(f"{table.where(r, column)}: {cell[:40]!r} is not a finite number")
    return value


def _p(value: float) -> str:
    return f"{value:.2g}"


def _figure(path: Path) -> str | None:
    """A PNG as a ``data:`` URI (the page loads nothing from elsewhere), or None when there is no such PNG."""
    if not path.is_file():
        return None
    data = path.read_bytes()
    if not data.startswith(PNG):
        fail(f"{path}: not a PNG image")
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _flagged(path: Path, key: str, columns: tuple, expected: int) -> list:
    """The flagged rows of the check's ``items.csv`` or ``models.csv``, smallest q first, as the page shows them."""
    table = read_table(path, required=(key, "flagged", "reason", *columns), nonblank=(key,),
                       expected=f"the {key} table check-fit writes")
    rows = []
    for r, row in enumerate(table.rows):
        flag = row[table.index("flagged")].strip()
        if flag not in ("true", "false"):
            fail(f"{table.where(r, 'flagged')}: {flag[:20]!r} is not true or false")
        if flag == "true":
            rows.append((r, {c: _number(table, r, c) for c in columns}))
    if len(rows) != expected:
        fail(f"{path}: {len(rows)} {key}s flagged, but {path.parent / CHECK_RECORD} says {expected}; rerun check-fit")
    rows.sort(key=lambda pair: (pair[1]["q_value"], pair[0]))
    return [{key: table.rows[r][table.index(key)], "reason": table.rows[r][table.index("reason")], **values}
            for r, values in rows]


def model_fit_view(difficulty: str | os.PathLike) -> tuple[dict | None, dict]:
    """The "Model fit" section of the benchmark whose difficulty file is ``difficulty`` (None without a check of it),
    and the files read, ``{path: sha256}``."""
    state = check_beside(difficulty)
    if not state["checked"]:
        return None, {}
    folder = Path(check_folder_of(difficulty))
    items = _flagged(folder / "items.csv", "item",
                     ("accuracy", "b_mean", "point_biserial", "p_value", "q_value"), state["items_flagged"])
    models = _flagged(folder / "models.csv", "model", ("accuracy", "theta_mean", "lz", "p_value", "q_value"),
                      state["models_flagged"])
    read = {str(folder / name): sha256_file(folder / name) for name in (CHECK_RECORD, "items.csv", "models.csv")}
    figure = _figure(folder / FIGURE)
    if figure is not None:
        read[str(folder / FIGURE)] = sha256_file(folder / FIGURE)
    view = {
        "source": str(folder), "summary": state["summary"], "draws": state["draws"],
        "draws_source": state["draws_source"], "fdr": f"{state['fdr'] * 100:g} %",
        "items_flagged": state["items_flagged"], "items": state["items"],
        "models_flagged": state["models_flagged"], "models": state["models"],
        "item_rows": [{"item": row["item"], "reason": row["reason"], "p": _p(row["p_value"]), "q": _p(row["q_value"]),
                       "accuracy": f"{row['accuracy']:.3f}", "b": f"{row['b_mean']:.3f}",
                       "pbis": f"{row['point_biserial']:+.2f}"} for row in items[:MAX_ROWS]],
        "more_items": max(0, len(items) - MAX_ROWS),
        "model_rows": [{"model": row["model"], "reason": row["reason"], "p": _p(row["p_value"]),
                        "q": _p(row["q_value"]), "accuracy": f"{row['accuracy']:.3f}",
                        "theta": f"{row['theta_mean']:+.2f}", "lz": f"{row['lz']:+.2f}"} for row in models],
        "figure": figure,
    }
    return view, read


def attach_model_fit(entries: list) -> dict:
    """Set each entry's ``model_fit`` (:func:`model_fit_view`); returns every file read, ``{path: sha256}``."""
    read = {}
    for entry in entries:
        entry.model_fit, files = model_fit_view(entry.source)
        read.update(files)
    return read


# -- drift ------------------------------------------------------------------------------------------------------
def parse_drift(spec: str) -> tuple:
    """``NAME=DIR`` or ``DIR`` → (name or None, folder)."""
    name, sep, path = spec.partition("=")
    if sep and name and not Path(spec).exists():
        return name, Path(path)
    return None, Path(spec)


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_drift(folder: Path) -> dict:
    """``drift.json`` of a ``benchmeasure drift`` output folder, checked for what the page shows."""
    path = folder / "drift.json"
    if not folder.is_dir():
        fail(f"--drift {folder}: no such folder")
    if not path.is_file():
        fail(f"--drift {folder}: no drift.json (a benchmeasure drift --output-dir folder)")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"{path}: not JSON ({exc})")
    rows = record.get("models") if isinstance(record, dict) else None
    kind = record.get("kind") if isinstance(record, dict) else None
    alpha = (record.get("settings") or {}).get("alpha") if isinstance(record, dict) else None
    if (kind not in ("date", "number", "category") or not isinstance(rows, list) or not rows
            or not isinstance(record.get("by"), str) or not _finite(alpha)
            or not all(isinstance(r, dict) and isinstance(r.get("model"), str) for r in rows)):
        fail(f"{path}: not a drift.json of benchmeasure drift (no kind, by, settings.alpha or models)")
    for k, row in enumerate(rows):
        for key in ("p_value", "q_value"):
            if row.get(key) is not None and not (_finite(row[key]) and 0 <= row[key] <= 1):
                fail(f"{path}: models[{k}].{key} is not a probability")
    return record


def _interval(row: dict, value: str) -> str:
    if not all(_finite(row.get(k)) for k in (value, f"{value}_lo", f"{value}_hi")):
        return "—"
    return f"{row[value]:+.2f} [{row[f'{value}_lo']:+.2f}, {row[f'{value}_hi']:+.2f}]"


def _prob(value) -> str:
    return _p(value) if _finite(value) else "—"


def drift_view(folder: Path, record: dict) -> tuple[dict, dict]:
    """The "Drift" section for one drift folder, and the files read (``{path: sha256}``)."""
    ordered = record["kind"] != "category"
    alpha, by = record["settings"]["alpha"], record["by"]
    read = {str(folder / "drift.json"): sha256_file(folder / "drift.json")}
    if ordered:
        rows = [{"model": r["model"], "tau": str(r.get("tau") or "—"), "delta": _interval(r, "delta"),
                 "p": _prob(r.get("p_value")), "q": _prob(r.get("q_value")), "flagged": bool(r.get("flagged")),
                 "near": {True: "yes", False: "no"}.get(r.get("near_release"), "")} for r in record["models"]]
        flagged = [r["model"] for r in rows if r["flagged"]]
        what = "item date" if record["kind"] == "date" else by
        summary = (f"{len(flagged)} of {len(rows)} models flagged: better on items before a step in {what} "
                   f"(BH q ≤ {alpha:g}; p calibrated for the search over τ; δ > 0 = better before τ, in logits "
                   "with a 95 % interval)")
    else:
        rows = [{"model": r["model"], "level": str(r.get("level", "")), "against": str(r.get("against", "")),
                 "shift": _interval(r, "shift"), "p": _prob(r.get("p_value")), "q": _prob(r.get("q_value")),
                 "flagged": bool(r.get("differs"))} for r in record["models"]]
        flagged = sorted({r["model"] for r in rows if r["flagged"]})
        summary = (f"{len(flagged)} of {len({r['model'] for r in rows})} models differ by {by} (BH q ≤ {alpha:g}; "
                   f"shift in logits with a 95 % interval); a difference by {by} is not contamination")
    figures = []
    listed = record.get("figures") if isinstance(record.get("figures"), dict) else {}
    for model in flagged if ordered else ():
        relative = listed.get(model)
        target = (folder / relative).resolve() if isinstance(relative, str) else None
        if target is None or folder.resolve() not in target.parents:
            continue   # a drift.json without the figure's name (or naming a file outside the folder)
        uri = _figure(target)
        if uri is not None:
            figures.append({"model": model, "uri": uri})
            read[str(target)] = sha256_file(target)
    view = {"source": str(folder), "by": by, "kind": record["kind"], "summary": summary, "rows": rows,
            "figures": figures, "missing_figures": (len(flagged) - len(figures)) if ordered else 0}
    return view, read


def _fitted_matrix(difficulty: str) -> str | None:
    """The SHA-256 of the matrix the fit beside ``difficulty`` saw (its diagnostics.json), or None."""
    source = diagnostics_beside(difficulty).get("input")
    return source.get("sha256") if isinstance(source, dict) else None


def attach_drift(entries: list, specs: list) -> dict:
    """Attach each ``--drift`` folder to its benchmark (by ``NAME=``, else by the matrix SHA-256 its fit recorded);
    returns the files read."""
    read = {}
    for spec in specs:
        name, folder = parse_drift(spec)
        record = read_drift(folder)
        if name is not None:
            entry = next((e for e in entries if e.name == name), None)
            if entry is None:
                fail(f"--drift {spec}: no benchmark named {name!r} (benchmarks: {', '.join(e.name for e in entries)})")
        else:
            hashes = {i.get("sha256") for i in record.get("inputs") or () if isinstance(i, dict)} - {None}
            matches = [e for e in entries if _fitted_matrix(e.source) in hashes]
            if len(matches) != 1:
                fail(f"--drift {spec}: {'no' if not matches else 'more than one'} given benchmark's fit saw the "
                     f"matrix this drift analysed; name it as NAME=DIR")
            entry = matches[0]
        view, files = drift_view(folder, record)
        entry.drift.append(view)
        read.update(files)
    return read
