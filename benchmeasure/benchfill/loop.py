"""The BenchFill loop and its budget-matched baseline (paper, Section 4, Figure 4, Table 2).

For each target gap (widest first) BenchFill runs up to ``rounds`` rounds. A round picks
``parents`` items by difficulty-aware retrieval, asks the rewriter for ``children`` rewrites of
each with the target and a reference list in the prompt, sends the children to the verifier
(validity, panel rollouts, grading), annotates each valid child's difficulty with the panel's
abilities held fixed (:mod:`.calibration`) and adds it to the run's memory. A gap stops early
once a valid child lies within ``tolerance`` of z*; its final item is the valid child closest
to z*. The baseline spends the same number of rewrites per gap on parents drawn uniformly
from the benchmark, without reference list or memory, and selects its final item by the same
rule.

Every decision is journaled before it is used (:mod:`.eventlog`): a round's plan (parents,
references), each model call, each annotation, each finished gap. A resumed run replays
the journal, so it reaches the same state without repeating finished calls, and child IDs —
``<mode>-g<gap>-r<round>-p<parent>-c<child>`` — are never issued twice.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

from benchmeasure.benchfill import retrieval
from benchmeasure.benchfill.calibration import annotate
from benchmeasure.benchfill.gaps import Item
from benchmeasure.benchfill.prompts import parse_child
from benchmeasure.llm_client import Endpoint
from benchmeasure.verifier.base import Candidate

BENCHFILL = "benchfill"
BASELINE = "baseline"
# Sent with each rewrite request: a parent's children share one prompt, and this header lets a server
# that seeds its sampling per request (the simulation, benchmeasure.sim.server) tell them apart, so a
# run's replies do not depend on the order in which its concurrent requests arrive. Others ignore it.
KEY_HEADER = "X-BenchFill-Key"


@dataclass(frozen=True)
class Child:
    """One annotated rewrite, as recorded in the journal's ``annotation`` events."""

    item_id: str
    mode: str
    gap: int
    round: int
    parent_id: str
    question: str
    answer: str
    valid: bool
    reason: str
    b_mean: float | None
    b_sd: float | None
    z: float | None
    counts: dict

    @classmethod
    def from_event(cls, event: dict) -> Child:
        return cls(event["item_id"], event["mode"], event["gap"], event["round"], event["parent_id"],
                   event["question"], event["answer"], event["valid"], event["reason"], event["b_mean"],
                   event["b_sd"], event["z"], event["counts"])

    def as_item(self) -> Item:
        return Item(self.item_id, self.question, self.answer, self.z, self.b_mean, self.b_sd, self.mode)


def closest_valid(children, z_star: float):
    """The final selection rule: the valid child closest to z* (ties by ID), or None."""
    valid = [c for c in children if c.valid and c.z is not None]
    return min(valid, key=lambda c: (abs(c.z - z_star), c.item_id)) if valid else None


class Loop:
    """Runs BenchFill and the baseline over the targets of one benchmark, journaled.

    Parameters
    ----------
    config : RunConfig
    benchmark : Benchmark
    prompts : Prompts
    rewriter : PanelModel
    verifier : Verifier
        Returns one Verdict per Candidate (validity, then rollouts).
    client : LLMClient
        Its journal is ``journal``.
    journal : EventLog
    abilities : dict
        ``{model: θ}`` of the verifier panel, held fixed.
    n_trials : int
        Rollouts per item and model.
    log : callable
        Progress lines.
    """

    def __init__(self, config, benchmark, prompts, rewriter, verifier, client, journal, abilities, n_trials,
                 log=print):
        self.config = config
        self.search = config.search
        self.benchmark = benchmark
        self.prompts = prompts
        self.rewriter = Endpoint.from_panel_model(rewriter)
        self.verifier = verifier
        self.client = client
        self.journal = journal
        self.abilities = abilities
        self.n_trials = n_trials
        self.log = log
        self.originals = {item.item_id: item for item in benchmark.items}

    # -- state recovered from the journal ---------------------------------------------------
    def children(self, mode: str | None = None, gap: int | None = None) -> list:
        out = [Child.from_event(e) for e in self.journal.of_type("annotation")]
        return [c for c in out if (mode is None or c.mode == mode) and (gap is None or c.gap == gap)]

    def memory(self) -> list:
        """Valid annotated BenchFill children, as retrievable items (the run's memory)."""
        return [c.as_item() for c in self.children(BENCHFILL) if c.valid]

    def known(self, item_id: str) -> Item:
        if item_id in self.originals:
            return self.originals[item_id]
        for child in self.children():
            if child.item_id == item_id:
                return child.as_item()
        raise KeyError(item_id)

    # -- one round ----------------------------------------------------------------------------
    def plan(self, mode: str, target, round_no: int, n_parents: int) -> dict:
        recorded = self.journal.find("plan", mode=mode, gap=target.rank, round=round_no)
        if recorded is not None:
            return recorded
        if mode == BENCHFILL:
            known = list(self.benchmark.items) + self.memory()
            used = {p for e in self.journal.of_type("plan") if e["mode"] == mode and e["gap"] == target.rank
                    for p in e["parents"]}
            parents = retrieval.benchfill_parents(known, target.z_star, n_parents, used)
            references = retrieval.reference_list(known, target.z_star, self.search.references)
        else:
            rng = random.Random(f"{self.search.seed}/{mode}/{target.rank}/{round_no}")
            parents = retrieval.uniform_parents(self.benchmark.items, n_parents, rng)
            references = []
        return self.journal.append({"type": "plan", "mode": mode, "gap": target.rank, "round": round_no,
                                    "target": target.z_star,
                                    "parents": [p.item_id for p in parents],
                                    "references": [r.item_id for r in references]})

    def prompt(self, mode: str, target, parent: Item, references: list) -> str:
        fmt = self.config.benchmark.answer_format
        if mode == BENCHFILL:
            return self.prompts.rewrite(self.benchmark.name, target.z_star, parent, references, fmt)
        return self.prompts.rewrite_baseline(self.benchmark.name, target.z_star, parent, fmt)

    async def rewrite(self, child_id: str, text: str) -> dict:
        key = f"rewrite/{child_id}"
        result = await self.client.chat(self.rewriter, [{"role": "user", "content": text}], n=1,
                                        key=key, parse=parse_child, extra_headers={KEY_HEADER: key})
        return parse_child(result.texts[0])

    async def run_round(self, mode: str, target, round_no: int, n_parents: int) -> list:
        plan = self.plan(mode, target, round_no, n_parents)
        parents = [self.known(p) for p in plan["parents"]]
        references = [self.known(r) for r in plan["references"]]
        ids, jobs = [], []
        for pi, parent in enumerate(parents):
            text = self.prompt(mode, target, parent, references)
            for ci in range(self.search.children):
                child_id = f"{mode}-g{target.rank}-r{round_no}-p{pi}-c{ci}"
                ids.append((child_id, parent.item_id))
                jobs.append(self.rewrite(child_id, text))
        drafts = await asyncio.gather(*jobs)
        pending = [(cid, pid, d) for (cid, pid), d in zip(ids, drafts)
                   if self.journal.find("annotation", item_id=cid) is None]
        if pending:
            candidates = [Candidate(cid, d["question"], d["answer"], self.benchmark.name, pid)
                          for cid, pid, d in pending]
            verdicts = await self.verifier.verify(candidates)
            for candidate, verdict in zip(candidates, verdicts):
                self.record_annotation(mode, target, round_no, candidate, verdict)
        return [c for c in self.children(mode, target.rank) if c.round == round_no]

    def record_annotation(self, mode, target, round_no, candidate, verdict) -> None:
        b_mean = b_sd = z = None
        counts = verdict.counts() if verdict.valid else {}
        if verdict.valid:
            counts = {m: counts.get(m, 0) for m in self.abilities}
            note = annotate(counts, self.abilities, self.n_trials, self.benchmark.b_min, self.benchmark.b_max,
                            self.config.benchmark.guessing)
            b_mean, b_sd, z = note.b_mean, note.b_sd, note.z
        self.journal.append({
            "type": "annotation", "item_id": candidate.item_id, "mode": mode, "gap": target.rank, "round": round_no,
            "parent_id": candidate.parent_id, "question": candidate.question, "answer": candidate.answer,
            "valid": bool(verdict.valid), "reason": verdict.reason, "counts": counts, "b_mean": b_mean,
            "b_sd": b_sd, "z": z, "target": target.z_star})

    # -- one gap --------------------------------------------------------------------------------
    async def fill(self, mode: str, target, budget: int | None = None) -> dict:
        """Run rounds for one gap until early stop (BenchFill only) or the budget is spent."""
        done = self.journal.find("gap_done", mode=mode, gap=target.rank)
        if done is not None:
            return done
        per_round = self.search.parents * self.search.children
        budget = self.search.rounds * per_round if budget is None else budget
        spent, round_no, stopped_early = 0, 0, False
        while spent < budget:
            round_no += 1
            n_parents = min(self.search.parents, -(-(budget - spent) // self.search.children))
            children = await self.run_round(mode, target, round_no, n_parents)
            spent += n_parents * self.search.children
            best = closest_valid(children, target.z_star)
            news = f"best deviation {abs(best.z - target.z_star):.4f}" if best else "no valid child"
            self.log(f"[{mode}] gap {target.rank} round {round_no}: "
                     f"{sum(c.valid for c in children)}/{len(children)} valid, {news}")
            if mode == BENCHFILL and best is not None and abs(best.z - target.z_star) <= self.search.tolerance:
                stopped_early = True
                break
        final = closest_valid(self.children(mode, target.rank), target.z_star)
        return self.journal.append({
            "type": "gap_done", "mode": mode, "gap": target.rank, "rounds": round_no, "rewrites": spent,
            "stopped_early": stopped_early, "final": None if final is None else final.item_id,
            "deviation": None if final is None else abs(final.z - target.z_star)})

    async def fill_gap(self, target) -> tuple:
        bench = await self.fill(BENCHFILL, target)
        full = self.search.rounds * self.search.parents * self.search.children
        budget = bench["rewrites"] if self.search.baseline_budget == "matched" else full
        base = await self.fill(BASELINE, target, budget)
        return bench, base

    async def run(self, targets) -> list:
        """Fill every target (gaps concurrently); returns ``[(benchfill_done, baseline_done), …]``."""
        return list(await asyncio.gather(*(self.fill_gap(t) for t in targets)))

    def lineage(self, item_id: str) -> list:
        """IDs from the original ancestor down to ``item_id``."""
        chain = [item_id]
        by_id = {c.item_id: c for c in self.children()}
        while chain[-1] in by_id:
            chain.append(by_id[chain[-1]].parent_id)
        return chain[::-1]
