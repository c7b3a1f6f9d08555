"""Evaluation-harness logs → graded ``model,item_id,trial,correct`` rows → count matrix.

Most users already have per-sample logs from an evaluation harness. This subpackage reads them
as the harnesses write them (one module per format) and turns them into the long response rows
of the paper's README (one row per model, item and trial), then into the model × item count
matrix through :func:`benchmeasure.core.responses.assemble_matrix`, the same checks and messages as
the CSV path (:mod:`.assemble`). Formats and the exact fields used: ``docs/harness_logs.md``.

- :mod:`.lm_eval`: lmms-eval and lm-evaluation-harness sample JSONL;
- :mod:`.lighteval`: lighteval parquet details;
- :mod:`.inspect_log`: Inspect AI ``.eval``/``.json`` logs, through inspect-ai's own reader;
- :mod:`.evalscope`: evalscope per-sample review JSONL;
- :mod:`.helm`: HELM ``per_instance_stats.json`` with ``run_spec.json``;
- :mod:`.opencompass`: OpenCompass results JSON with per-sample ``details``;
- :mod:`.records`: the :class:`Sample` / :class:`HarnessLog` records every reader returns;
- :mod:`.formats`: the registry of formats (``prepare --from NAME``), which each reader module joins.

Importing this package imports only :mod:`.formats` (standard library and :mod:`benchmeasure.base`): the readers,
the records and :mod:`.assemble` (NumPy) are imported when one of their names is first used
(``from benchmeasure.core.harness import logs_to_matrix``), so a plugin can import :class:`Format`, :class:`Sample`
and :class:`HarnessLog` on a Python without NumPy.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from benchmeasure.base.errors import fail
from benchmeasure.core.harness.formats import FORMATS, OPTION_FLAGS, Format, ReadOptions

if TYPE_CHECKING:
    from benchmeasure.core.harness.records import HarnessLog

# name -> the submodule defining it, imported on first use (PEP 562)
_LAZY = {
    **dict.fromkeys(("first_missing_document", "log_rows", "logs_to_matrix"), "assemble"),
    "read_evalscope_log": "evalscope",
    "read_helm_log": "helm",
    **dict.fromkeys(("PARTIAL_CHOICES", "read_inspect_log"), "inspect_log"),
    "read_lighteval_log": "lighteval",
    **dict.fromkeys(("find_lmms_samples", "read_lm_eval_log", "read_lmms_log", "read_lmms_samples"), "lm_eval"),
    "read_opencompass_log": "opencompass",
    **dict.fromkeys(("HarnessLog", "Rows", "Sample", "binarize"), "records"),
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


HARNESSES = FORMATS  # the registry (benchmeasure.core.harness.formats): names in registration order


def check_options(harness: str, options: ReadOptions) -> None:
    """Refuse a reader option given for a format that does not take it."""
    if harness not in FORMATS:
        fail(f"unknown harness {harness!r} (choose from {', '.join(HARNESSES)})")
    for name, flag in OPTION_FLAGS.items():
        if getattr(options, name) is not None and name not in FORMATS[harness].options:
            takers = [f.name for f in FORMATS.entries() if name in f.options]
            fail(f"{flag} applies to {', '.join(takers)} logs only")


def read_log(harness: str, path: Path, options: ReadOptions | None = None) -> HarnessLog:
    """Read one model's log of format ``harness`` (a name in :data:`FORMATS`)."""
    options = options if options is not None else ReadOptions()
    check_options(harness, options)
    return FORMATS[harness].read(Path(path), options)


__all__ = ["FORMATS", "HARNESSES", "PARTIAL_CHOICES", "Format", "HarnessLog", "ReadOptions", "Rows", "Sample",
           "binarize", "check_options", "find_lmms_samples", "first_missing_document", "log_rows", "logs_to_matrix",
           "read_evalscope_log", "read_helm_log", "read_inspect_log", "read_lighteval_log", "read_lm_eval_log",
           "read_lmms_log", "read_lmms_samples", "read_log", "read_opencompass_log"]
