"""The harness log-format registry: one :class:`Format` entry per ``prepare --from NAME``.

An entry holds the reader, the package that writes the format (named in the provenance record), the
reader options it takes (``--metric``, ``--filter``…, refused for formats that do not take them) and the
hint printed when a log holds one response per document but ``--n-trials`` asks for more. Adding a
format is one reader module plus one ``FORMATS.register(Format(...))`` (ARCHITECTURE.md, "Adding an
extension"); a reader may be a lazy ``"module:function"`` string taking ``(path, options)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmeasure.base.registry import GROUPS, Registry, lazy


@dataclass(frozen=True)
class ReadOptions:
    """Reader settings given on the command line (each applies to some formats only)."""

    filter_name: str | None = None
    metric: str | None = None
    scorer: str | None = None
    partial: str | None = None
    perturbation: str | None = None


#: ReadOptions field → the command-line flag that sets it, in the order prepare names them when misused
OPTION_FLAGS = {"metric": "--metric", "filter_name": "--filter", "scorer": "--scorer", "partial": "--partial",
                "perturbation": "--perturbation"}


@dataclass(frozen=True)
class Format:
    """A log format: ``read(path, options) -> HarnessLog``, the writing package, its options, its repeat hint."""

    name: str
    read: object
    package: str
    options: tuple = ()
    repeats_hint: str = ""

    def __post_init__(self):
        object.__setattr__(self, "read", lazy(self.read))
        unknown = set(self.options) - set(OPTION_FLAGS)
        if unknown:
            raise ValueError(f"format {self.name!r}: unknown reader option {sorted(unknown)[0]!r}")


FORMATS = Registry("harness", GROUPS["log format"])


def _lmms(path, o):
    from benchmeasure.core.harness.lm_eval import read_lmms_log

    return read_lmms_log(path)


def _lm_eval(path, o):
    from benchmeasure.core.harness.lm_eval import read_lm_eval_log

    return read_lm_eval_log(path, o.filter_name)


def _lighteval(path, o):
    from benchmeasure.core.harness.lighteval import read_lighteval_log

    return read_lighteval_log(path)


def _inspect(path, o):
    from benchmeasure.core.harness.inspect_log import read_inspect_log

    return read_inspect_log(path, o.scorer, o.partial or "reject")


def _evalscope(path, o):
    from benchmeasure.core.harness.evalscope import read_evalscope_log

    return read_evalscope_log(path, o.metric)


def _helm(path, o):
    from benchmeasure.core.harness.helm import read_helm_log

    return read_helm_log(path, o.metric, o.perturbation)


def _opencompass(path, o):
    from benchmeasure.core.harness.opencompass import read_opencompass_log

    return read_opencompass_log(path, o.metric)


for _entry in (
    Format("lmms-eval", _lmms, "lmms_eval", ("metric",),
           " (lmms-eval logs every repeat only when the task has a take_first_k filter with k = repeats)"),
    Format("lm-eval", _lm_eval, "lm_eval", ("filter_name", "metric"), " (log all repeats with a take_first_k filter)"),
    Format("lighteval", _lighteval, "lighteval", ("metric",),
           " (lighteval samples K responses only for a metric that asks for them, e.g. avg@n with n = K)"),
    Format("inspect", _inspect, "inspect_ai", ("scorer", "partial"), " (run the evaluation with --epochs K)"),
    Format("evalscope", _evalscope, "evalscope", ("metric",), " (run evalscope with --repeats K)"),
    Format("helm", _helm, "crfm-helm", ("metric", "perturbation"), " (run HELM with num_train_trials K)"),
    Format("opencompass", _opencompass, "opencompass", ("metric",), " (repeat each prompt with the dataset's n = K)"),
):
    FORMATS.register(_entry)
