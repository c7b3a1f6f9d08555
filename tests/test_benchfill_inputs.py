"""BenchFill run folders and their inputs (issue 15): the config's grader, damaged state files, run names
that would escape the results folder, inputs changed since init, configs anywhere, the ability cache."""

from __future__ import annotations

import json
import subprocess

from conftest import BENCHFILL_CLI as CLI
from conftest import sim_run


def run_cli(folder, env, **kw):
    return subprocess.run([*CLI, "run", str(folder)], capture_output=True, text=True, env=env, **kw)


def test_validity_check_uses_the_configs_grader_not_the_benchmark_name(tmp_path):
    # 'arithworld' names no known benchmark; its config says grader = "math", which must be used throughout.
    folder, env, server = sim_run(tmp_path, 1, search={"gaps": 1, "rounds": 1, "parents": 2, "children": 2},
                                  bench_name="arithworld")
    try:
        done = run_cli(folder, env, timeout=300)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr
    assert "no grader known" not in done.stderr
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    notes = [e for e in events if e["type"] == "annotation"]
    assert notes and any(n["valid"] for n in notes)
