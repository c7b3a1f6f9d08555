"""A BenchFill run folder: where it lives, what ``init`` recorded, and the checks made before a resume.

``<results>/<benchmark>/<name>/`` holds ``config.json`` (written once by ``init``: the resolved
settings, every input file's path and SHA-256, the panel's path and SHA-256, package versions),
``events.jsonl`` (the journal, :mod:`.eventlog`), ``run.lock``, and the outputs. ``mass_fill.json``
marks a mass-fill folder. :class:`RunFolder` is the one reader of ``config.json``: a damaged or
hand-edited file is one error naming the file and what is wrong, and :meth:`RunFolder.check_unchanged`
refuses a resume when an input or the panel changed since ``init`` (a resumed run would otherwise
mix annotations made against two different panels or calibrations).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.base.files import atomic_write, sha256_file
from benchmeasure.base.resources import shipped_examples
from benchmeasure.benchfill.config import RunConfig, check_name, config_from_dict
from benchmeasure.benchfill.eventlog import EVENTS, read_events

CONFIG = "config.json"
MASS_MARKER = "mass_fill.json"  # present in mass-fill folders, which 'benchfill.py run' refuses
LATEST = "LATEST"  # <results>/<benchmark>/LATEST: the newest run folder of that benchmark
@dataclass(frozen=True)
class InputFile:
    """An input as ``init`` recorded it."""

    label: str
    path: Path
    sha256: str

    def check_unchanged(self, folder: Path) -> None:
        if not self.path.is_file():
            fail(f"{folder}: input {self.label} {self.path} is gone since init")
        if sha256_file(self.path) != self.sha256:
            fail(f"{folder}: input {self.label} {self.path} changed since init (SHA-256 differs); "
                 f"start a new run folder with 'init' (or restore the file)")


@dataclass(frozen=True)
class RunFolder:
    """An initialized run folder and its ``config.json`` record."""

    path: Path
    config: RunConfig
    record: dict
    inputs: tuple  # InputFile, the benchmark's files and then the panel

    @classmethod
    def open(cls, folder) -> RunFolder:
        """Read and check ``<folder>/config.json``; InputError when the folder is not an intact run folder."""
        folder = Path(folder)
        path = folder / CONFIG
        if not path.is_file():
            fail(f"{folder}: not a run folder (no {CONFIG}; create one with 'init')")
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            fail(f"{path}: damaged, not valid JSON ({getattr(exc, 'msg', exc)}); it is written by 'init' only, "
                 f"start a new run folder")
        except OSError as exc:
            fail(f"{path}: cannot be read ({exc.strerror})")
        if not isinstance(record, dict) or not isinstance(record.get("config"), dict):
            fail(f"{path}: damaged, no 'config' object (written by 'init' only; start a new run folder)")
        config = config_from_dict(record["config"], f"{path} config")
        inputs = []
        entries = record.get("inputs")
        if not isinstance(entries, dict):
            fail(f"{path}: damaged, no 'inputs' object")
        panel = record.get("panel")
        for label, entry in [*entries.items(), *([("panel", panel)] if panel is not None else [])]:
            if (not isinstance(entry, dict) or not isinstance(entry.get("path"), str)
                    or not isinstance(entry.get("sha256"), str) or not entry["sha256"]):
                fail(f"{path}: damaged, input {label!r} lacks its path or sha256")
            inputs.append(InputFile(label, Path(entry["path"]), entry["sha256"]))
        return cls(folder, config, record, tuple(inputs))

    @property
    def events_path(self) -> Path:
        return self.path / EVENTS

    @property
    def is_mass_fill(self) -> bool:
        return (self.path / MASS_MARKER).is_file()

    def events(self) -> list:
        """The journal's typed events (read only)."""
        return read_events(self.events_path)

    def check_unchanged(self) -> None:
        """Refuse when an input file or the panel config changed (or vanished) since ``init``."""
        for entry in self.inputs:
            entry.check_unchanged(self.path)

    def provenance(self) -> dict:
        """``inputs`` and ``panel`` as recorded in ``config.json`` (copied into the summaries)."""
        return {"inputs": self.record["inputs"], "panel": self.record.get("panel")}


def write_latest(folder: Path) -> None:
    """Remember ``folder`` as its benchmark's newest run (``run_experiment.sh run`` without a RUN uses it)."""
    with atomic_write(folder.parent / LATEST) as handle:  # a failed write leaves the previous LATEST whole
        handle.write(f"{folder}\n")


def latest(results_root, benchmark: str) -> Path:
    """The newest run folder of ``benchmark`` under ``results_root``; InputError when there is none."""
    path = Path(results_root) / check_name(benchmark, "benchmark name") / LATEST
    if not path.is_file():
        others = sorted(p.parent.name for p in Path(results_root).glob(f"*/{LATEST}")) if Path(results_root).is_dir() \
            else []
        elsewhere = (f" (runs there are of {', '.join(others)}: benchmeasure benchfill where --benchmark {others[0]}, "
                     f"or in a checkout BENCHMARK={others[0]} bash run_experiment.sh status)" if others else "")
        shipped = benchmark if benchmark in shipped_examples("config") else "CONFIG"
        fail(f"no run for {benchmark} yet under {results_root}{elsewhere}; start one with 'benchmeasure benchfill "
             f"init --config {shipped} --results {results_root}' (in a checkout: BENCHMARK={benchmark} bash "
             "run_experiment.sh init)")
    return Path(path.read_text(encoding="utf-8").strip())
