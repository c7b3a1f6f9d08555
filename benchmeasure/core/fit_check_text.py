"""The model-fit check stored in a fit folder (``FIT_DIR/check_fit/``), read back and put in words for ``diagnose``,
``summarize`` and the explorer. Standard library only.

``benchmeasure fit`` runs the check after every fit unless ``--no-check-fit`` and writes it to ``FIT_DIR/check_fit/``
(``check_fit.json``, ``items.csv``, ``models.csv``); ``benchmeasure check-fit FIT_DIR --output-dir FIT_DIR/check_fit``
writes the same files (with more draws, and a figure). A check describes the ``difficulty.csv`` whose SHA-256 its
``check_fit.json`` records (``input.difficulty_sha256``): a difficulty file edited or refitted since is "not checked".
How the check is made: :mod:`benchmeasure.analyses.model_fit` (docs/model_fit.md).
"""

from __future__ import annotations

import hashlib
import json
import math
import os

CHECK_FOLDER = "check_fit"          # the check's folder inside a fit folder
CHECK_RECORD = "check_fit.json"
CHECK_TABLES = ("items.csv", "models.csv")
NOT_CHECKED = "not checked"


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _sha256(path: str) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def check_folder_of(path) -> str:
    """``check_fit/`` of the fit folder holding ``path`` (a ``difficulty.csv``)."""
    return os.path.join(os.path.dirname(os.path.abspath(os.fspath(path))), CHECK_FOLDER)


def read_check(record: dict, where: str) -> dict | None:
    """The parts of a ``check_fit.json`` the reports use, checked (counts are counts, the summary a line, the p-value
    floor a probability), or None for a record that is not one."""
    if not isinstance(record, dict):
        return None
    source, settings = record.get("input"), record.get("settings")
    flagged_items, flagged_models = record.get("flagged_items"), record.get("flagged_models")
    summary = record.get("summary")
    if not (isinstance(source, dict) and isinstance(settings, dict) and isinstance(summary, str)
            and summary.startswith("model fit: ") and "\n" not in summary
            and isinstance(flagged_items, list) and isinstance(flagged_models, list)
            and all(isinstance(x, str) for x in flagged_items + flagged_models)
            and _count(source.get("items")) and _count(source.get("models")) and _count(settings.get("draws"))):
        return None
    fdr = settings.get("fdr")
    if not isinstance(fdr, (int, float)) or isinstance(fdr, bool) or not math.isfinite(fdr) or not 0 < fdr < 1:
        return None
    if len(flagged_items) > source["items"] or len(flagged_models) > source["models"]:
        return None
    return {"checked": True, "summary": summary, "items_flagged": len(flagged_items), "items": source["items"],
            "models_flagged": len(flagged_models), "models": source["models"], "draws": settings["draws"],
            "fdr": float(fdr), "draws_source": str(settings.get("draws_source", "")),
            "flagged_items": flagged_items, "flagged_models": flagged_models,
            "difficulty_sha256": source.get("difficulty_sha256"), "record": where}


def check_beside(path) -> dict:
    """The model-fit check of the fit folder holding ``path`` (its ``difficulty.csv``): ``{"checked": True,
    "summary", "items_flagged", "items", "models_flagged", "models", "draws", "fdr", …}`` when ``check_fit/`` holds a
    well-formed check of exactly this file, else ``{"checked": False, "why": …}`` saying what is missing."""
    folder = check_folder_of(path)
    record_path = os.path.join(folder, CHECK_RECORD)
    if not os.path.isfile(record_path):
        return {"checked": False, "why": f"no {CHECK_FOLDER}/{CHECK_RECORD} beside {os.path.basename(path)} "
                                         "(benchmeasure fit writes it unless --no-check-fit; or run benchmeasure "
                                         f"check-fit FIT_DIR --output-dir FIT_DIR/{CHECK_FOLDER})"}
    try:
        with open(record_path, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        record = None
    check = read_check(record, record_path)
    if check is None:
        return {"checked": False, "why": f"{record_path} is not a check-fit record (damaged?); rerun check-fit"}
    if check["difficulty_sha256"] != _sha256(os.fspath(path)):
        return {"checked": False, "why": f"{record_path} checked another {os.path.basename(path)} (the fit was "
                                         "redone or the file edited since); rerun check-fit"}
    return check


def summary_line(state: dict) -> str:
    """``model fit: …`` (the check's own line) or ``model fit: not checked (why)``."""
    return state["summary"] if state["checked"] else f"model fit: {NOT_CHECKED} ({state['why']})"


def flag_cells(state: dict) -> tuple[str, str]:
    """The two Table 1 cells: items flagged and models flagged (``3 of 2,854``), or "not checked" twice."""
    if not state["checked"]:
        return NOT_CHECKED, NOT_CHECKED
    return (f"{state['items_flagged']:,} of {state['items']:,}", f"{state['models_flagged']:,} of {state['models']:,}")
