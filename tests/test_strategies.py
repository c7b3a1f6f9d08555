"""BenchFill search strategies (benchmeasure.benchfill.strategies): a toy strategy registered from this file
runs in a real run against the simulated server, beside the built-in ones, and is reported like them."""

from __future__ import annotations

import csv
import json

import pytest

from benchmeasure.benchfill import retrieval, runner
from benchmeasure.benchfill.loop import CHILD_ID, Loop
from benchmeasure.benchfill.strategies import STRATEGIES, Strategy, table_order
from conftest import sim_run


def _plan(loop, target, round_no, n_parents):
    """Nearest originals to z*, a fresh set each round; no references."""
    ranked = retrieval.nearest(loop.benchmark.items, target.midpoint, n_parents * round_no)
    return ranked[n_parents * (round_no - 1):] or ranked[:n_parents], []


def _prompt(loop, target, parent, references):
    return loop.prompts.rewrite_baseline(loop.benchmark.name, target.midpoint, parent,
                                         loop.config.benchmark.answer_format)


def _visible(loop, gap, round_no):
    return [c for c in loop.children("nearest_originals", gap) if c.valid and c.round < round_no]


TOY = Strategy("nearest_originals", _plan, _prompt, _visible, stop=lambda loop, target, best: False,
               budget=lambda search, done: search.parents * search.children, table_rank=50)


def test_builtin_strategies_and_their_order():
    assert list(STRATEGIES)[:2] == ["benchfill", "baseline"]
    assert table_order(["benchfill", "baseline", "oracle"]) == ["baseline", "benchfill"]
    for strategy in STRATEGIES.entries():
        assert CHILD_ID.match(f"{strategy.name}-g1-r2-p0-c1")["mode"] == strategy.name
        assert strategy.records_file.endswith(".csv")
    with pytest.raises(ValueError, match="lower-case"):
        Strategy("Bad-Name", _plan, _prompt, _visible, None, None)


def test_a_strategy_registered_from_outside_runs_and_is_reported(tmp_path, monkeypatch):
    folder, env, server = sim_run(tmp_path, 4, search={"gaps": 1, "rounds": 1})
    monkeypatch.setenv("BENCHFILL_SIM_URL", env["BENCHFILL_SIM_URL"])
    STRATEGIES.register(TOY)
    try:
        summary = runner.run(folder)
    finally:
        STRATEGIES.unregister(TOY.name)
        server.shutdown()
    toy = summary["nearest_originals"]
    assert toy["gaps"] == 1 and sum(b["rewrites"] for b in toy["budget"].values()) == toy["rewrites"]
    assert all(b["rounds"] == 1 and not b["stopped_early"] for b in toy["budget"].values())
    assert set(summary) >= {"benchfill", "baseline", "oracle"}
    table = (folder / "table2.txt").read_text().splitlines()
    names = [line.split()[0] for line in table[2:]]
    assert names[:4] == ["baseline", "benchfill", "nearest_originals", "oracle"]
    rows = list(csv.DictReader(open(folder / "nearest_originals_item_records.csv")))
    assert len(rows) == toy["gaps_filled"] and all(r["item_id"].startswith("nearest_originals-g") for r in rows)
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    plans = [e for e in events if e["type"] == "plan" and e["mode"] == "nearest_originals"]
    assert plans and all(e["references"] == [] for e in plans)
    assert Loop.fill_gap.__doc__ and "registered strategy" in Loop.fill_gap.__doc__
