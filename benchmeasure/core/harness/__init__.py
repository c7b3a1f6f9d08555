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
- :mod:`.records`: the :class:`Sample` / :class:`HarnessLog` records every reader returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.core.harness.assemble import first_missing_document, log_rows, logs_to_matrix
from benchmeasure.core.harness.evalscope import read_evalscope_log
from benchmeasure.core.harness.helm import read_helm_log
from benchmeasure.core.harness.inspect_log import PARTIAL_CHOICES, read_inspect_log
from benchmeasure.core.harness.lighteval import read_lighteval_log
from benchmeasure.core.harness.lm_eval import find_lmms_samples, read_lm_eval_log, read_lmms_log, read_lmms_samples
from benchmeasure.core.harness.opencompass import read_opencompass_log
from benchmeasure.core.harness.records import HarnessLog, Rows, Sample, binarize


@dataclass(frozen=True)
class ReadOptions:
    """Reader settings given on the command line (each applies to some formats only)."""

    filter_name: str | None = None
    metric: str | None = None
    scorer: str | None = None
    partial: str | None = None
    perturbation: str | None = None


@dataclass(frozen=True)
class Format:
    """A log format: its reader, the package that writes it (for provenance) and the options it takes."""

    read: object
    package: str
    options: tuple = ()


FORMATS = {
    "lmms-eval": Format(lambda path, o: read_lmms_log(path), "lmms_eval", ("metric",)),
    "lm-eval": Format(lambda path, o: read_lm_eval_log(path, o.filter_name), "lm_eval", ("filter_name", "metric")),
    "lighteval": Format(lambda path, o: read_lighteval_log(path), "lighteval", ("metric",)),
    "inspect": Format(lambda path, o: read_inspect_log(path, o.scorer, o.partial or "reject"), "inspect_ai",
                      ("scorer", "partial")),
    "evalscope": Format(lambda path, o: read_evalscope_log(path, o.metric), "evalscope", ("metric",)),
    "helm": Format(lambda path, o: read_helm_log(path, o.metric, o.perturbation), "crfm-helm",
                   ("metric", "perturbation")),
    "opencompass": Format(lambda path, o: read_opencompass_log(path, o.metric), "opencompass", ("metric",)),
}
HARNESSES = tuple(FORMATS)
OPTION_FLAGS = {"filter_name": "--filter", "metric": "--metric", "scorer": "--scorer", "partial": "--partial",
                "perturbation": "--perturbation"}


def check_options(harness: str, options: ReadOptions) -> None:
    """Refuse a reader option given for a format that does not take it."""
    if harness not in FORMATS:
        fail(f"unknown harness {harness!r} (choose from {', '.join(HARNESSES)})")
    for name, flag in OPTION_FLAGS.items():
        if getattr(options, name) is not None and name not in FORMATS[harness].options:
            takers = [h for h, f in FORMATS.items() if name in f.options]
            fail(f"{flag} applies to {', '.join(takers)} logs only")


def read_log(harness: str, path: Path, options: ReadOptions | str | None = None) -> HarnessLog:
    """Read one model's log of format ``harness`` (a key of :data:`FORMATS`)."""
    if not isinstance(options, ReadOptions):  # the older call shape read_log(harness, path, filter_name)
        options = ReadOptions(filter_name=options)
    check_options(harness, options)
    return FORMATS[harness].read(Path(path), options)


__all__ = ["FORMATS", "HARNESSES", "PARTIAL_CHOICES", "Format", "HarnessLog", "ReadOptions", "Rows", "Sample",
           "binarize", "check_options", "find_lmms_samples", "first_missing_document", "log_rows", "logs_to_matrix",
           "read_evalscope_log", "read_helm_log", "read_inspect_log", "read_lighteval_log", "read_lm_eval_log",
           "read_lmms_log", "read_lmms_samples", "read_log", "read_opencompass_log"]
