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

Same seed, same items, however unevenly the endpoints answer: the gaps of a run are filled
concurrently, but a round's decisions see only what was annotated before that round. BenchFill's
round r of any gap is planned only once every gap of the run has finished round r − 1 (a barrier,
:class:`RoundBarrier`), and its memory (parents, references) and the near-duplicate check of its
children see the children of rounds < r of every gap, never those of a round still in flight. The
baseline's children are checked against the originals and its own gap's earlier rounds.

With ``[search] reannotate = K`` (> 0) each gap's final item is annotated a second time from K
fresh rollouts per panel model (:class:`~.records.Reannotation`): an independent calibration of
the kept child, whose deviation from z* is not biased low by selecting the best of several noisy
calibrations (the paper's number, kept as ``target_deviation``, is).
"""

from __future__ import annotations

import asyncio
import logging
import random
import re

from benchmeasure.benchfill import retrieval
from benchmeasure.benchfill.calibration import annotate
from benchmeasure.benchfill.gaps import Item
from benchmeasure.benchfill.prompts import parse_child
from benchmeasure.benchfill.records import Annotation, GapDone, Plan, Reannotation
from benchmeasure.verifier.base import Candidate
from benchmeasure.verifier.llm_client import KEY_HEADER, Endpoint

BENCHFILL = "benchfill"
BASELINE = "baseline"
CHILD_ID = re.compile(r"^(?P<mode>benchfill|baseline)-g(?P<gap>\d+)-r(?P<round>\d+)-p\d+-c\d+$")

log = logging.getLogger(__name__)


def child_id(mode: str, gap: int, round_no: int, parent: int, child: int) -> str:
    return f"{mode}-g{gap}-r{round_no}-p{parent}-c{child}"


def closest_valid(children, z_star: float):
    """The final selection rule: the valid child closest to z* (ties by ID), or None."""
    valid = [c for c in children if c.valid and c.z is not None]
    return min(valid, key=lambda c: (abs(c.z - z_star), c.item_id)) if valid else None


class RoundBarrier:
    """Round r of a gap starts only after every gap of the group has finished round r − 1 (or the gap)."""

    def __init__(self, ranks):
        self.finished = {rank: 0 for rank in ranks}
        self.changed = asyncio.Condition()

    def __contains__(self, rank) -> bool:
        return rank in self.finished

    async def wait(self, round_no: int) -> None:
        async with self.changed:
            await self.changed.wait_for(lambda: min(self.finished.values()) >= round_no - 1)

    async def done(self, rank: int, round_no: float) -> None:
        async with self.changed:
            self.finished[rank] = max(self.finished[rank], round_no)
            self.changed.notify_all()


class Loop:
    """Runs BenchFill and the baseline over the targets of one benchmark, journaled.

    Parameters
    ----------
    config : RunConfig
    benchmark : SeedSet
    prompts : Prompts
    rewriter : PanelModel
    verifier : PanelVerifier
        Returns one Verdict per Candidate (validity, then rollouts); its ``rollouts`` also make
        the re-annotation's fresh rollouts.
    client : LLMClient
        Its journal is ``journal``.
    journal : EventLog
    abilities : dict
        ``{model: θ}`` of the verifier panel, held fixed.
    n_trials : int
        Rollouts per item and model.
    """

    def __init__(self, config, benchmark, prompts, rewriter, verifier, client, journal, abilities, n_trials):
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
        self.originals = {item.item_id: item for item in benchmark.items}
        self.barrier = RoundBarrier(())

    # -- state recovered from the journal ---------------------------------------------------
    def children(self, mode: str | None = None, gap: int | None = None) -> list:
        """Annotated children (:class:`~.records.Annotation`), optionally of one mode and gap."""
        match = {k: v for k, v in (("mode", mode), ("gap", gap)) if v is not None}
        return self.journal.of_type(Annotation, **match)

    def visible(self, mode: str, gap: int, round_no: int) -> list:
        """The valid children a decision of round ``round_no`` of ``gap`` may see (module docstring)."""
        if mode == BASELINE:
            return [c for c in self.children(BASELINE, gap) if c.valid and c.round < round_no]
        return [c for c in self.children(BENCHFILL) if c.valid
                and not ((c.gap == gap or c.gap in self.barrier) and c.round >= round_no)]

    def memory(self, gap: int, round_no: int) -> list:
        """The run's memory for round ``round_no`` of ``gap``: valid BenchFill children, as retrievable items."""
        return [c.as_item() for c in self.visible(BENCHFILL, gap, round_no)]

    def existing(self, candidate) -> list:
        """``(item_id, question, answer)`` a candidate must not duplicate: the originals and the visible children."""
        match = CHILD_ID.match(candidate.item_id)
        mode, gap, round_no = match["mode"], int(match["gap"]), int(match["round"])
        return ([(i.item_id, i.question, i.answer) for i in self.benchmark.items]
                + [(c.item_id, c.question, c.answer) for c in self.visible(mode, gap, round_no)])

    def known(self, item_id: str) -> Item:
        if item_id in self.originals:
            return self.originals[item_id]
        child = self.journal.find(Annotation, item_id=item_id)
        if child is None:
            raise KeyError(item_id)
        return child.as_item()

    # -- one round ----------------------------------------------------------------------------
    def plan(self, mode: str, target, round_no: int, n_parents: int) -> Plan:
        recorded = self.journal.find(Plan, mode=mode, gap=target.rank, round=round_no)
        if recorded is not None:
            return recorded
        if mode == BENCHFILL:
            known = list(self.benchmark.items) + self.memory(target.rank, round_no)
            used = {p for e in self.journal.of_type(Plan, mode=mode, gap=target.rank) for p in e.parents}
            parents = retrieval.benchfill_parents(known, target.midpoint, n_parents, used)
            references = retrieval.reference_list(known, target.midpoint, self.search.references)
        else:
            rng = random.Random(f"{self.search.seed}/{mode}/{target.rank}/{round_no}")
            parents = retrieval.uniform_parents(self.benchmark.items, n_parents, rng)
            references = []
        return self.journal.append(Plan(mode, target.rank, round_no, target.midpoint,
                                        [p.item_id for p in parents], [r.item_id for r in references]))

    def prompt(self, mode: str, target, parent: Item, references: list) -> str:
        fmt = self.config.benchmark.answer_format
        if mode == BENCHFILL:
            return self.prompts.rewrite(self.benchmark.name, target.midpoint, parent, references, fmt)
        return self.prompts.rewrite_baseline(self.benchmark.name, target.midpoint, parent, fmt)

    async def rewrite(self, child: str, text: str) -> dict:
        key = f"rewrite/{child}"
        result = await self.client.chat(self.rewriter, [{"role": "user", "content": text}], n=1,
                                        key=key, parse=parse_child, extra_headers={KEY_HEADER: key})
        return parse_child(result.texts[0])

    async def run_round(self, mode: str, target, round_no: int, n_parents: int) -> list:
        plan = self.plan(mode, target, round_no, n_parents)
        parents = [self.known(p) for p in plan.parents]
        references = [self.known(r) for r in plan.references]
        ids, jobs = [], []
        for pi, parent in enumerate(parents):
            text = self.prompt(mode, target, parent, references)
            for ci in range(self.search.children):
                cid = child_id(mode, target.rank, round_no, pi, ci)
                ids.append((cid, parent.item_id))
                jobs.append(self.rewrite(cid, text))
        drafts = await asyncio.gather(*jobs)
        pending = [(cid, pid, d) for (cid, pid), d in zip(ids, drafts)
                   if self.journal.find(Annotation, item_id=cid) is None]
        if pending:
            candidates = [Candidate(cid, d["question"], d["answer"], self.benchmark.name, pid)
                          for cid, pid, d in pending]
            verdicts = await self.verifier.verify(candidates)
            for candidate, verdict in zip(candidates, verdicts):
                self.record_annotation(mode, target, round_no, candidate, verdict)
        return self.journal.of_type(Annotation, mode=mode, gap=target.rank, round=round_no)

    def calibrate(self, counts: dict):
        """Online calibration of one item from ``{model: correct count}`` (every panel model)."""
        return annotate({m: counts.get(m, 0) for m in self.abilities}, self.abilities, self.n_trials,
                        self.benchmark.b_min, self.benchmark.b_max, self.config.benchmark.guessing)

    def record_annotation(self, mode, target, round_no, candidate, verdict) -> None:
        b_mean = b_sd = z = None
        counts = {}
        if verdict.valid:
            counts = {m: verdict.counts().get(m, 0) for m in self.abilities}
            note = self.calibrate(counts)
            b_mean, b_sd, z = note.b_mean, note.b_sd, note.z
        self.journal.append(Annotation(
            candidate.item_id, mode, target.rank, round_no, candidate.parent_id, candidate.question, candidate.answer,
            bool(verdict.valid), verdict.reason, counts, b_mean, b_sd, z, target.midpoint))

    # -- one gap --------------------------------------------------------------------------------
    async def fill(self, mode: str, target, budget: int | None = None) -> GapDone:
        """Run rounds for one gap until early stop (BenchFill only) or the budget is spent."""
        barrier = self.barrier if mode == BENCHFILL and target.rank in self.barrier else None
        done = self.journal.find(GapDone, mode=mode, gap=target.rank)
        if done is not None:
            if barrier:
                await barrier.done(target.rank, float("inf"))
            return done
        per_round = self.search.parents * self.search.children
        budget = self.search.rounds * per_round if budget is None else budget
        spent, round_no, stopped_early = 0, 0, False
        while spent < budget:
            round_no += 1
            n_parents = min(self.search.parents, -(-(budget - spent) // self.search.children))
            if barrier:
                await barrier.wait(round_no)
            children = await self.run_round(mode, target, round_no, n_parents)
            spent += n_parents * self.search.children
            best = closest_valid(children, target.midpoint)
            news = f"best deviation {abs(best.z - target.midpoint):.4f}" if best else "no valid child"
            log.info("[%s] gap %d round %d: %d/%d valid, %s", mode, target.rank, round_no,
                     sum(c.valid for c in children), len(children), news)
            if mode == BENCHFILL and best is not None and abs(best.z - target.midpoint) <= self.search.tolerance:
                stopped_early = True
                break
            if barrier:
                await barrier.done(target.rank, round_no)
        if barrier:
            await barrier.done(target.rank, float("inf"))
        final = closest_valid(self.children(mode, target.rank), target.midpoint)
        return self.journal.append(GapDone(
            mode, target.rank, round_no, spent, stopped_early, None if final is None else final.item_id,
            None if final is None else abs(final.z - target.midpoint)))

    async def reannotate(self, done: GapDone, target) -> Reannotation | None:
        """The independent calibration of a gap's final item from fresh rollouts (``[search] reannotate``)."""
        trials = self.search.reannotate
        if trials == 0 or done.final is None:
            return None
        recorded = self.journal.find(Reannotation, mode=done.mode, gap=done.gap)
        if recorded is not None:
            return recorded
        child = self.journal.find(Annotation, item_id=done.final)
        candidate = Candidate(child.item_id, child.question, child.answer, self.benchmark.name, child.parent_id)
        rollouts = await self.verifier.rollouts.for_candidate(candidate, n_trials=trials, key_prefix="reannotate",
                                                             key_header=KEY_HEADER)
        counts = {m: 0 for m in self.abilities}
        for rollout in rollouts:
            if rollout.model in counts:
                counts[rollout.model] += rollout.correct
        note = annotate(counts, self.abilities, trials, self.benchmark.b_min, self.benchmark.b_max,
                        self.config.benchmark.guessing)
        event = self.journal.append(Reannotation(done.mode, done.gap, child.item_id, trials, counts, note.b_mean,
                                                 note.b_sd, note.z, note.z_sd, target.midpoint))
        log.info("[%s] gap %d: %s re-annotated from %d fresh rollouts per model: z=%.4f (was %.4f), "
                 "deviation %.4f", done.mode, done.gap, child.item_id, trials, note.z, child.z, event.deviation)
        return event

    async def fill_gap(self, target) -> tuple:
        bench = await self.fill(BENCHFILL, target)
        await self.reannotate(bench, target)
        full = self.search.rounds * self.search.parents * self.search.children
        budget = bench.rewrites if self.search.baseline_budget == "matched" else full
        base = await self.fill(BASELINE, target, budget)
        await self.reannotate(base, target)
        return bench, base

    async def run(self, targets) -> list:
        """Fill every target (gaps concurrently, BenchFill's rounds in step); ``[(benchfill, baseline) GapDone]``."""
        self.barrier = RoundBarrier(t.rank for t in targets)
        return list(await asyncio.gather(*(self.fill_gap(t) for t in targets)))

    def lineage(self, item_id: str) -> list:
        """IDs from the original ancestor down to ``item_id``."""
        chain = [item_id]
        by_id = {c.item_id: c for c in self.children()}
        while chain[-1] in by_id:
            chain.append(by_id[chain[-1]].parent_id)
        return chain[::-1]
