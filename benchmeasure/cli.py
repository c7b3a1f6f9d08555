"""``benchmeasure``: one command line with a subcommand per task.

Each subcommand is a module of :mod:`benchmeasure.commands` with ``main(argv) -> int``; the scripts in
``scripts/``, ``propose/`` and ``verifier/`` are thin wrappers that call it, so both spellings run the same
code (``benchmeasure fit …`` = ``python3 scripts/fit_irt.py …``). This module imports nothing beyond the
standard library, so listing the commands is instant and the stdlib-only commands run on a bare Python.

To add a command: write ``benchmeasure/commands/<stem>.py`` (arguments, path checks, calls into the library,
writing), add a row to :data:`COMMANDS`, and add the wrapper ``scripts/<stem>.py`` copied from a sibling.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.abc
import importlib.machinery
import logging
import sys
import threading
import types
from typing import NamedTuple

from benchmeasure import __version__
from benchmeasure.base.errors import InputError, fail, name_next_parser, run_cli
from benchmeasure.base.extras import missing_package


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
    "fit-suite": Command("fit_suite", "scripts/fit_suite.py", "irt",
                         "fit a suite (holes allowed) on one scale: per-benchmark difficulties, metrics, abilities"),
    "chain": Command("chain", "scripts/chain.py", "irt",
                     "Growing Pains: benchmarks arrive in order; predict held-out models' accuracy from anchors"),
    "robustness": Command("irt_robustness", "scripts/irt_robustness.py", "irt",
                          "IRT robustness analyses (Tables 6–10)"),
    "check-fit": Command("check_fit", "scripts/check_fit.py", "irt",
                         "does the 1PL fit? item, model and whole-fit posterior predictive checks of a fit folder"),
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
    "drift": Command("drift", "scripts/drift.py", "analyses",
                     "contamination and drift by item date or any item column, difficulty-adjusted, calibrated"),
    "detect": Command("detect_improvement", "scripts/detect_improvement.py", "analyses",
                      "permutation test of a model's improvement (Table 12)"),
    "rank-flip": Command("rank_flip_bound", "scripts/rank_flip_bound.py", "analyses",
                         "Theorem 2.1 bound on comparison distortion"),
    "browse": Command("browse", "scripts/browse.py", "analyses",
                      "find the items that test a use case; their difficulty coverage and rank stability"),
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
    "scope": Command("scope", "scripts/scope.py", "benchfill",
                     "search a dynamic benchmark for configurations a model reliably fails, with certified bounds"),
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
# commands whose feature has its own pip extra (pyproject.toml): a missing package names that extra
FEATURE_EXTRA = {"scope": "scope", "browse": "browse"}

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
        close = difflib.get_close_matches(name, COMMANDS, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        fail(f"benchmeasure: unknown subcommand {name!r}; {hint}choose one of: {', '.join(COMMANDS)} (see --help)")
    module_name = f"benchmeasure.commands.{COMMANDS[name].module}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "benchmeasure":
            raise
        if "-h" not in args and "--help" not in args:
            _missing(name, prog, exc)
        module = _import_for_help(module_name)
    name_next_parser(prog or f"benchmeasure {name}")
    handler = setup_logging()
    handler.hold_warnings()
    try:
        code = module.main(args)
    except InputError:
        handler.drop_held()  # the error line is all a refused input prints
        raise
    except ModuleNotFoundError as exc:   # a command imports its heavy packages after parsing its arguments
        if not exc.name or exc.name.split(".")[0] == "benchmeasure":
            raise
        handler.drop_held()
        _missing(name, prog, exc)
    finally:
        handler.show_held()
    return code


def _missing(name: str, prog: str | None, exc: ModuleNotFoundError):
    """Refuse with the extra that provides the missing package: the command's feature (scope, browse), else
    BenchFill's for its group, else the package's."""
    feature = FEATURE_EXTRA.get(name) or ("benchfill" if COMMANDS[name].group in ("benchfill", "serving") else None)
    fail(missing_package(prog or f"benchmeasure {name}", exc.name or "?", feature))


class _Absent:
    """Stands for anything of a package that is not installed while a subcommand only prints its ``--help``:
    the command's module can be imported and its parser built; nothing of the package is ever used."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __getattr__(self, name: str) -> _Absent:
        return _Absent()

    def __call__(self, *args, **kwargs) -> _Absent:
        return _Absent()

    def __mro_entries__(self, bases) -> tuple:
        return (_Absent,)

    __getitem__ = __or__ = __ror__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __call__
    __truediv__ = __rtruediv__ = __pow__ = __rpow__ = __neg__ = __call__


class _AbsentModule(types.ModuleType):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__ = []  # a package: its submodules import too

    def __getattr__(self, name: str) -> _Absent:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Absent()


class _AbsentFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, missing: set) -> None:
        self.missing = missing

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.missing:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec) -> types.ModuleType:
        return _AbsentModule(spec.name)

    def exec_module(self, module) -> None:
        pass


def _import_for_help(module_name: str):
    """Import a command whose optional packages are missing, only to print its ``--help``.

    Every ``--help`` works with the base install (``pip install benchmeasure``, no extra): the missing
    packages are stood in for while the module is imported; its ``main`` prints the help and exits in argument
    parsing, before any of them would be used. Running the command still says which extra to install.
    """
    missing: set = set()
    sys.meta_path.append(_AbsentFinder(missing))
    before = set(sys.modules)
    for _ in range(50):
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            top = (exc.name or "").split(".")[0]
            if not top or top == "benchmeasure" or top in missing:
                raise
            missing.add(top)
            for half_imported in set(sys.modules) - before:  # imported again, now with the stand-in
                del sys.modules[half_imported]
    raise ImportError(f"{module_name}: too many missing packages to build its --help")


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
    # the kernel cache says at once when a first run compiles (and why it is slower), whatever the command
    from benchmeasure.base.progress import show_progress

    show_progress("benchmeasure.base.kernel_cache", stream=sys.stderr)
    return handler


HOLD_S = 20.0  # how long a command's warnings may wait for the command's outcome


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record (tests and callers may swap it).

    While a subcommand runs, its warnings are held back: a command that then refuses its input prints its one
    ``error:`` line alone (a warning about the input it refused would only add noise, and the rule is one line);
    they are written when the command ends, or after :data:`HOLD_S` seconds of a long run, whichever is first.
    """

    def __init__(self) -> None:
        super().__init__()
        self._held: list | None = None
        self._timer: threading.Timer | None = None
        self._held_lock = threading.Lock()

    def hold_warnings(self) -> None:
        with self._held_lock:
            self._held = []
            self._timer = threading.Timer(HOLD_S, self.show_held)
            self._timer.daemon = True
            self._timer.start()

    def _take_held(self) -> list:
        with self._held_lock:
            held, self._held = self._held or [], None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        return held

    def show_held(self) -> None:
        for record in self._take_held():
            self._write(record)

    def drop_held(self) -> None:
        self._take_held()

    def emit(self, record: logging.LogRecord) -> None:
        with self._held_lock:
            if self._held is not None:
                self._held.append(record)
                return
        self._write(record)

    def _write(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def _lower_level_name(record: logging.LogRecord) -> bool:
    record.levelname_lower = record.levelname.lower()
    return True


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run ``benchmeasure SUBCOMMAND ARGS``; ``prog`` names a wrapper script in usage and error lines."""
    if argv is None:  # run as a program (the entry point): Ctrl-C from here on exits 130 (base/interrupt.py)
        from benchmeasure.base.interrupt import exit_on_interrupt

        exit_on_interrupt()
    argv = sys.argv[1:] if argv is None else list(argv)
    setup_logging()
    skip_blas_probe()
    run_cli(lambda args: _dispatch(args, prog), argv)


def skip_blas_probe() -> None:
    """Tell PyTensor (before it is imported) that its C back end has no BLAS to link, unless the user said
    otherwise in ``PYTENSOR_FLAGS``. Our graphs run on its Numba back end; left alone, its first import tries to
    compile and link test programs against BLAS libraries a pip install lacks and prints a four-line warning into
    every ``fit-suite`` (the flags end up empty either way)."""
    import os

    flags = os.environ.get("PYTENSOR_FLAGS", "")
    if "pytensor" not in sys.modules and "blas__ldflags" not in flags:
        os.environ["PYTENSOR_FLAGS"] = ",".join(f for f in (flags, "blas__ldflags=") if f)
