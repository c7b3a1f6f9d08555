"""``benchmeasure``: one command line with a subcommand per task.

Each subcommand is a module of :mod:`benchmeasure.commands` with ``main(argv) -> int``; the scripts in
``scripts/``, ``propose/`` and ``verifier/`` are thin wrappers that call it, so both spellings run the same
code (``benchmeasure fit …`` = ``python3 scripts/fit_irt.py …``). This module imports nothing beyond the
standard library, so listing the commands is instant and the stdlib-only commands run on a bare Python.

To add a command: write ``benchmeasure/commands/<stem>.py`` (arguments, path checks, calls into the library,
writing), add a row to :data:`COMMANDS`, and add the wrapper ``scripts/<stem>.py`` copied from a sibling.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import NamedTuple

from benchmeasure import __version__
from benchmeasure.base.errors import fail, name_next_parser, run_cli


class Command(NamedTuple):
    module: str    # benchmeasure.commands.<module>
    wrapper: str   # the script that the paper's README (or ours) documents
    group: str
    summary: str


COMMANDS: dict[str, Command] = {
    # data → matrix → fit → metrics
    "prepare": Command("prepare_response_matrix", "scripts/prepare_response_matrix.py", "data",
                       "graded responses or harness logs → model × item count matrix"),
    "check": Command("check_response_matrix", "scripts/check_response_matrix.py", "data",
                     "check a response matrix before fitting (Table 5)"),
    "make-example": Command("make_example", "scripts/make_example.py", "data",
                            "regenerate the bundled simulated example"),
    "fit": Command("fit_irt", "scripts/fit_irt.py", "irt", "fit the Bayesian 1PL model with NUTS (Appendix C.3)"),
    "score": Command("score_models", "scripts/score_models.py", "irt",
                     "abilities of new models with the item difficulties fixed; predicted full-benchmark accuracy"),
    "calibrate": Command("calibrate_items", "scripts/calibrate_items.py", "irt",
                         "difficulties of new items with the model abilities fixed (online calibration)"),
    "select-anchors": Command("select_anchors", "scripts/select_anchors.py", "irt",
                              "choose k anchor items to evaluate future models cheaply"),
    "robustness": Command("irt_robustness", "scripts/irt_robustness.py", "irt",
                          "IRT robustness analyses (Tables 6–10)"),
    "diagnose": Command("diagnose_benchmark", "scripts/diagnose_benchmark.py", "analyses",
                        "DDM, Max Gap and Top-k Gap Sum of a difficulty file (Table 1)"),
    "summarize": Command("summarize_benchmarks", "scripts/summarize_benchmarks.py", "analyses",
                         "Table 1 for a folder of benchmarks"),
    "compare": Command("compare_difficulty", "scripts/compare_difficulty.py", "analyses",
                       "compare estimated with reference difficulties"),
    "plot": Command("plot_difficulty", "scripts/plot_difficulty.py", "analyses",
                    "ECDF figures with the widest gaps shaded (Figures 3, 5, 6)"),
    "posterior-metrics": Command("posterior_metrics", "scripts/posterior_metrics.py", "analyses",
                                 "posterior 94% intervals of DDM, Max Gap, Top-k"),
    "label-validity": Command("label_validity", "scripts/label_validity.py", "analyses",
                              "fitted difficulties vs people's easy/hard labels (AUC), abilities vs accuracy"),
    "detect": Command("detect_improvement", "scripts/detect_improvement.py", "analyses",
                      "permutation test of a model's improvement (Table 12)"),
    "rank-flip": Command("rank_flip_bound", "scripts/rank_flip_bound.py", "analyses",
                         "Theorem 2.1 bound on comparison distortion"),
    "explore": Command("explore_benchmarks", "scripts/explore_benchmarks.py", "analyses",
                       "one self-contained HTML page to explore benchmarks (project page)"),
    "reproduce": Command("reproduce_tables", "scripts/reproduce_tables.py", "analyses",
                         "the paper's tables beside what local data reproduces"),
    # grading, verifier, BenchFill
    "grade": Command("grade", "verifier/grade.py", "benchfill", "grade one response with the pipeline's graders"),
    "rollout": Command("run_rollout", "verifier/run_rollout.py", "benchfill",
                       "roll out candidate items on every panel model"),
    "fit-ability": Command("fit_ability", "verifier/fit_ability.py", "benchfill",
                           "fit the verifier panel's abilities once"),
    "panel-settings": Command("panel_settings", "scripts/panel_settings.py", "benchfill",
                              "print a panel model's serving settings"),
    "benchfill": Command("benchfill", "propose/benchfill.py", "benchfill",
                         "BenchFill runs: init | run | status | sim-data (Section 4)"),
    "mass-fill": Command("mass_fill", "propose/mass_fill/mass_fill.py", "benchfill",
                         "fill a benchmark's gaps one after another"),
    # serving
    "serve": Command("serve", "scripts/serve.py", "serving",
                     "start, wait for and stop a model server by PID file (what setup_server.sh runs)"),
    "prepare-cpu-model": Command("prepare_cpu_model", "scripts/prepare_cpu_model.py", "serving",
                                 "convert the bundled SmolLM2 GGUF for vLLM on CPU"),
    "serve-cpu-panel": Command("serve_cpu_panel", "scripts/serve_cpu_panel.py", "serving",
                               "serve a CPU panel with vLLM"),
    "cpu-real-run": Command("cpu_real_run", "scripts/cpu_real_run.py", "serving",
                            "the real small-model run on CPU, end to end"),
}

GROUPS = {"data": "data", "irt": "IRT", "analyses": "analyses", "benchfill": "grading, verifier, BenchFill",
          "serving": "serving"}

EXAMPLES = """\
examples:
  benchmeasure prepare responses.csv --n-trials 2 --output my_benchmark/response_matrix.csv
  benchmeasure fit my_benchmark/response_matrix.csv --n-trials 2 --output-dir my_benchmark
  benchmeasure diagnose my_benchmark/difficulty.csv
  benchmeasure benchfill init --config propose/configs/aime24.toml --name first
  benchmeasure SUBCOMMAND --help          # each subcommand's options and examples

Every subcommand is also a script (the column on the right), with the same arguments.
"""


def usage() -> str:
    lines = [f"usage: benchmeasure SUBCOMMAND [ARGS...]   (benchmeasure {__version__})", "",
             "Your Benchmark Is an Empirical Measure Over Difficulty: difficulty measures of benchmarks.", ""]
    width = max(map(len, COMMANDS))
    for group, title in GROUPS.items():
        lines.append(f"{title}:")
        for name, command in COMMANDS.items():
            if command.group == group:
                lines.append(f"  {name:<{width}}  {command.summary}  [{command.wrapper}]")
        lines.append("")
    return "\n".join(lines) + EXAMPLES


def _dispatch(argv: list[str], prog: str | None) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if argv[0] == "--version":
        print(f"benchmeasure {__version__}")
        return 0
    name, args = argv[0], argv[1:]
    if name not in COMMANDS:
        fail(f"benchmeasure: unknown subcommand {name!r}; choose one of: {', '.join(COMMANDS)} (see --help)")
    try:
        module = importlib.import_module(f"benchmeasure.commands.{COMMANDS[name].module}")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "benchmeasure":
            raise
        fail(f"{prog or 'benchmeasure ' + name} needs the Python package {exc.name!r}, which {sys.executable} "
             "lacks: run it with .venv-irt/bin/python (bash scripts/setup_env.sh irt), or pip install "
             f"'benchmeasure[irt]'")
    name_next_parser(prog or f"benchmeasure {name}")
    return module.main(args)


def setup_logging() -> logging.Handler:
    """The command line's one logging handler: library warnings as ``warning: …`` lines on stderr.

    Library modules log with ``logging.getLogger(__name__)`` and never print. Records of WARNING and above
    under the ``benchmeasure`` logger reach this handler; a command that shows a library's progress lines
    (INFO) turns them on with :func:`benchmeasure.base.progress.show_progress`, which prints them bare, as before.
    Installed once per process, so calling a command twice from Python doubles nothing.
    """
    logger = logging.getLogger("benchmeasure")
    for handler in logger.handlers:
        if getattr(handler, "_benchmeasure_cli", False):
            return handler
    handler = _StderrHandler()
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(levelname_lower)s: %(message)s"))
    handler.addFilter(_lower_level_name)
    handler._benchmeasure_cli = True
    logger.addHandler(handler)
    return handler


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record (tests and callers may swap it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def _lower_level_name(record: logging.LogRecord) -> bool:
    record.levelname_lower = record.levelname.lower()
    return True


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run ``benchmeasure SUBCOMMAND ARGS``; ``prog`` names a wrapper script in usage and error lines."""
    argv = sys.argv[1:] if argv is None else list(argv)
    setup_logging()
    run_cli(lambda args: _dispatch(args, prog), argv)
