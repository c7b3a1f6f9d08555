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

With ``[search] keep = "certified"`` (the default; :mod:`.certify`) BenchFill's gaps keep only a *certified*
child — one whose pooled posterior interval lies inside the target gap and within ``certify_tolerance`` of z*.
After each round the gap races: the plausible child most likely to be certified gets one more batch of
rollouts (:class:`~.records.RaceBatch`, journaled like every call), until one is certified (the gap stops and
keeps it), none is plausible (the next round) or ``race_batches`` are spent. The outcome, kept or not, is a
:class:`~.records.Keep` with the interval and the calls the gap cost. The race of round r runs before the gap
finishes round r at the barrier and reads only its own gap's children, so the same seed gives the same keeps.
"""

from __future__ import annotations

import asyncio
import logging
import re

from benchmeasure.benchfill.calibration import annotate, item_fit
from benchmeasure.benchfill.certify import band, certified_best, pick, standing
from benchmeasure.benchfill.gaps import Item
from benchmeasure.benchfill.prompts import parse_child
from benchmeasure.benchfill.records import Annotation, Call, GapDone, Keep, Plan, RaceBatch, Reannotation, Resolution
from benchmeasure.benchfill.strategies import STRATEGIES
from benchmeasure.verifier.base import Candidate
from benchmeasure.verifier.llm_client import KEY_HEADER, Endpoint

BENCHFILL = "benchfill"
BASELINE = "baseline"
CHILD_ID = re.compile(r"^(?P<mode>[a-z][a-z0-9_]*)-g(?P<gap>\d+)-r(?P<round>\d+)-p\d+-c\d+$")  # mode: a strategy

log = logging.getLogger(__name__)


def child_id(mode: str, gap: int, round_no: int, parent: int, child: int) -> str:
    return f"{mode}-g{gap}-r{round_no}-p{parent}-c{child}"


def closest_valid(children, z_star: float):
    """The final selection rule: the valid child closest to z* (ties by ID), or None; a child that misfits the
    panel's abilities (``[search] misfit_p``, :func:`~.calibration.item_fit`) is never chosen."""
    valid = [c for c in children if c.valid and c.z is not None and not c.misfits]
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
        self._standings = {}   # (item_id, batches, band) -> certify.Standing (a pure function of the journal)

    def reseed(self, benchmark) -> None:
        """Fill ``benchmark`` from now on: the same items, some recalibrated (:mod:`.resolve`), the same scale."""
        self.benchmark = benchmark
        self.originals = {item.item_id: item for item in benchmark.items}

    # -- state recovered from the journal ---------------------------------------------------
    def children(self, mode: str | None = None, gap: int | None = None) -> list:
        """Annotated children (:class:`~.records.Annotation`), optionally of one mode and gap."""
        match = {k: v for k, v in (("mode", mode), ("gap", gap)) if v is not None}
        return self.journal.of_type(Annotation, **match)

    def visible(self, mode: str, gap: int, round_no: int) -> list:
        """The valid children a decision of round ``round_no`` of ``gap`` may see (its strategy's rule)."""
        return STRATEGIES[mode].visible(self, gap, round_no)

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
        parents, references = STRATEGIES[mode].plan(self, target, round_no, n_parents)
        return self.journal.append(Plan(mode, target.rank, round_no, target.midpoint,
                                        [p.item_id for p in parents], [r.item_id for r in references]))

    def prompt(self, mode: str, target, parent: Item, references: list) -> str:
        return STRATEGIES[mode].prompt(self, target, parent, references)

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

    def item_fit(self, counts: dict, trials: int) -> dict | None:
        """check-fit's item test of one child's ``{model: correct of trials}`` against the panel's fixed abilities
        (:func:`~.calibration.item_fit`); None when ``[search] misfit_p`` is 0 (off)."""
        threshold = self.search.misfit_p
        if threshold <= 0:
            return None
        return item_fit({m: counts.get(m, 0) for m in self.abilities}, self.abilities, trials, threshold,
                        self.config.benchmark.guessing)

    def record_annotation(self, mode, target, round_no, candidate, verdict) -> None:
        b_mean = b_sd = z = fit = None
        counts = {}
        if verdict.valid:
            counts = {m: verdict.counts().get(m, 0) for m in self.abilities}
            note = self.calibrate(counts)
            b_mean, b_sd, z = note.b_mean, note.b_sd, note.z
            fit = self.item_fit(counts, self.n_trials)
        event = self.journal.append(Annotation(
            candidate.item_id, mode, target.rank, round_no, candidate.parent_id, candidate.question, candidate.answer,
            bool(verdict.valid), verdict.reason, counts, b_mean, b_sd, z, target.midpoint, fit))
        if event.misfits:
            log.warning("[%s] gap %d round %d: %s (z=%.4f) will not be kept: it misfits the panel's abilities, %s",
                        mode, target.rank, round_no, event.item_id, event.z, fit["reason"])

    # -- one gap --------------------------------------------------------------------------------
    async def fill(self, mode: str, target, budget: int | None = None, certify: bool | None = None) -> GapDone:
        """Run rounds for one gap until the strategy's stop rule holds or the budget is spent.

        ``certify`` (default: the strategy certifies and ``[search] keep = "certified"``) replaces the stop rule
        and the final selection by the certified keep rule (:meth:`race`); mass fill passes False.
        """
        strategy = STRATEGIES[mode]
        if certify is None:
            certify = strategy.certifies and self.search.keep == "certified"
        barrier = self.barrier if strategy.in_step and target.rank in self.barrier else None
        done = self.journal.find(GapDone, mode=mode, gap=target.rank)
        if done is not None:
            if barrier:
                await barrier.done(target.rank, float("inf"))
            return done
        per_round = self.search.parents * self.search.children
        budget = self.search.rounds * per_round if budget is None else budget
        spent, round_no, stopped_early, kept = 0, 0, False, None
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
            if certify and self.journal.find(Plan, mode=mode, gap=target.rank, round=round_no + 1) is not None:
                # a resumed run: this round's race ended without a keep and with batches left (the next round was
                # planned after it), and the journal already holds the next rounds' children and batches
                stop = False
            elif certify:
                kept = await self.race(mode, target)
                # stop at a certificate, or once the race batches are spent (a new child could not be raced)
                stop = kept is not None or 0 < self.search.race_batches <= self.race_spent(mode, target)
            else:
                stop = strategy.stop(self, target, best)
            if stop:
                stopped_early = kept is not None or not certify
                break
            if barrier:
                await barrier.done(target.rank, round_no)
        if barrier:
            await barrier.done(target.rank, float("inf"))
        if certify:
            keep = self.record_keep(mode, target, kept)
            final = keep.item_id if keep.certified else None
            deviation = abs(keep.z - target.midpoint) if keep.certified else None
        else:
            chosen = closest_valid(self.children(mode, target.rank), target.midpoint)
            final = None if chosen is None else chosen.item_id
            deviation = None if chosen is None else abs(chosen.z - target.midpoint)
        misfits = self.misfits(mode, target, certify)
        if misfits:
            log.warning("[%s] gap %d: %d child(ren) not kept because they misfit the panel's abilities: %s", mode,
                        target.rank, len(misfits), "; ".join(f"{m['item_id']} ({m['reason']})" for m in misfits))
        return self.journal.append(GapDone(mode, target.rank, round_no, spent, stopped_early, final, deviation,
                                           misfits))

    def misfits(self, mode: str, target, certify: bool) -> list:
        """The gap's valid children that misfit (not kept): on their screening rollouts (the annotation's test)
        or, racing for a certified keep, on their screening and race rollouts pooled."""
        out = [{"item_id": c.item_id, "stage": "screening", "trials": c.fit["trials"], "p_value": c.fit["p_value"],
                "p_slope": c.fit["p_slope"], "point_biserial": c.fit["point_biserial"], "reason": c.fit["reason"]}
               for c in self.children(mode, target.rank) if c.misfits]
        if certify:
            out += [{"item_id": s.item_id, "stage": "race", "trials": s.trials, "p_value": s.fit["p_value"],
                     "p_slope": s.fit["p_slope"], "point_biserial": s.fit["point_biserial"],
                     "reason": s.fit["reason"]} for s in self.standings(mode, target) if s.fit and s.fit["misfit"]]
        return out

    # -- the certified keep rule (certify.py) -----------------------------------------------------
    def band(self, target) -> tuple:
        return band(target.left, target.right, target.midpoint, self.search.certify_tolerance)

    def standings(self, mode: str, target) -> list:
        """Every valid child of the gap with its pooled posterior (screening rollouts and race batches)."""
        target_band = self.band(target)
        batches: dict = {}
        for event in self.journal.of_type(RaceBatch, mode=mode, gap=target.rank):
            batches.setdefault(event.item_id, []).append(event)
        out = []
        for child in self.children(mode, target.rank):
            if not child.valid or child.z is None or child.misfits:   # a misfit on its screening is out
                continue
            mine = sorted(batches.get(child.item_id, []), key=lambda e: e.batch)
            key = (child.item_id, len(mine), target_band)
            if key not in self._standings:
                self._standings[key] = standing(
                    child.item_id, child.counts, [e.counts for e in mine], self.abilities, self.n_trials,
                    self.benchmark.b_min, self.benchmark.b_max, self.config.benchmark.guessing,
                    self.search.certify_level, target_band, self.item_fit if mine else None)
                fit = self._standings[key].fit
                if fit and fit["misfit"]:
                    log.warning("[%s] gap %d: %s leaves the race after %d batch(es): it misfits the panel's "
                                "abilities, %s", mode, target.rank, child.item_id, len(mine), fit["reason"])
            out.append(self._standings[key])
        return out

    async def race(self, mode: str, target):
        """Race the gap's children for a certificate (:mod:`.certify`); the certified Standing, or None."""
        while True:
            standings = self.standings(mode, target)
            best = certified_best(standings, target.midpoint)
            if best is not None:
                return best
            left = self.search.race_batches - self.race_spent(mode, target)
            chosen = pick(standings, target.midpoint, self.band(target), self.search.certify_level, left)
            if chosen is None:
                return None
            await self.race_batch(mode, target, chosen.item_id, chosen.batches + 1)

    async def race_batch(self, mode: str, target, item_id: str, batch: int) -> RaceBatch:
        """One more batch of the panel's rollouts on a child (journal keys ``race<batch>/<item_id>/<model>``)."""
        recorded = self.journal.find(RaceBatch, item_id=item_id, batch=batch)
        if recorded is not None:
            return recorded
        child = self.journal.find(Annotation, item_id=item_id)
        candidate = Candidate(child.item_id, child.question, child.answer, self.benchmark.name, child.parent_id)
        rollouts = await self.verifier.rollouts.for_candidate(candidate, key_prefix=f"race{batch}",
                                                             key_header=KEY_HEADER)
        counts = self.correct_counts(rollouts)
        return self.journal.append(RaceBatch(mode, target.rank, item_id, batch, self.n_trials, counts))

    def correct_counts(self, rollouts) -> dict:
        """``{model: correct rollouts}`` for every panel model (0 for a model with none)."""
        counts = {m: 0 for m in self.abilities}
        for rollout in rollouts:
            if rollout.model in counts:
                counts[rollout.model] += rollout.correct
        return counts

    async def extra_trials(self, item_id: str, trials: int, round_no: int) -> Resolution:
        """``trials`` more rollouts per panel model on an original item in resolve round ``round_no`` (journal keys
        ``resolve<round>/<item_id>/<model>``; :mod:`.resolve`)."""
        recorded = self.journal.find(Resolution, item_id=item_id, round=round_no)
        if recorded is not None:
            return recorded
        item = self.originals[item_id]
        candidate = Candidate(item.item_id, item.question, item.answer, self.benchmark.name, None)
        rollouts = await self.verifier.rollouts.for_candidate(candidate, n_trials=trials,
                                                             key_prefix=f"resolve{round_no}", key_header=KEY_HEADER)
        return self.journal.append(Resolution(item_id, round_no, trials, self.correct_counts(rollouts)))

    def race_spent(self, mode: str, target) -> int:
        return len(self.journal.of_type(RaceBatch, mode=mode, gap=target.rank))

    def gap_calls(self, mode: str, gap: int) -> int:
        """Model calls recorded for one gap and mode: rewrites, solves, rollouts and race batches of its children."""
        mark = f"{mode}-g{gap}-"
        return sum(1 for call in self.journal.of_type(Call) if mark in call.key)

    def record_keep(self, mode: str, target, kept) -> Keep:
        """The gap's :class:`~.records.Keep`: the certified child, or (budget spent) the closest uncertified one."""
        recorded = self.journal.find(Keep, mode=mode, gap=target.rank)
        if recorded is not None:
            return recorded
        low, high = self.band(target)
        shown = kept
        if shown is None:
            standings = [s for s in self.standings(mode, target) if not (s.fit and s.fit["misfit"])]
            shown = min(standings, key=lambda s: (s.distance(target.midpoint), s.item_id)) if standings else None
        spent = self.race_spent(mode, target)
        calls = self.gap_calls(mode, target.rank)
        values = ((shown.b_mean, shown.b_sd, shown.z, shown.z_sd, shown.z_low, shown.z_high) if shown
                  else (None,) * 6)
        keep = self.journal.append(Keep(mode, target.rank, shown.item_id if shown else None, kept is not None,
                                        *values, low, high, self.search.certify_level,
                                        shown.trials if shown else 0, shown.batches if shown else 0, spent, calls,
                                        target.midpoint))
        if keep.certified:
            log.info("[%s] gap %d: kept %s, z=%.4f, %g%% interval [%.4f, %.4f] inside [%.4f, %.4f] from %d trials "
                     "per model (%d race batch(es)); the gap cost %d calls", mode, target.rank, keep.item_id, keep.z,
                     100 * keep.level, keep.z_low, keep.z_high, low, high, keep.trials, keep.batches, calls)
        else:
            log.warning("[%s] gap %d: no child certified within the gap's budget (its rewrites and %d of %d race "
                        "batches): nothing kept (closest: %s); the gap cost %d calls", mode, target.rank, spent,
                        self.search.race_batches,
                        "none" if shown is None else f"{shown.item_id} [{shown.z_low:.4f}, {shown.z_high:.4f}]",
                        calls)
        return keep

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
        counts = self.correct_counts(rollouts)
        note = annotate(counts, self.abilities, trials, self.benchmark.b_min, self.benchmark.b_max,
                        self.config.benchmark.guessing)
        event = self.journal.append(Reannotation(done.mode, done.gap, child.item_id, trials, counts, note.b_mean,
                                                 note.b_sd, note.z, note.z_sd, target.midpoint))
        log.info("[%s] gap %d: %s re-annotated from %d fresh rollouts per model: z=%.4f (was %.4f), "
                 "deviation %.4f", done.mode, done.gap, child.item_id, trials, note.z, child.z, event.deviation)
        return event

    async def fill_gap(self, target) -> tuple:
        """Each registered strategy in turn on one gap (its budget may depend on those before); their GapDone."""
        done: dict = {}
        for strategy in STRATEGIES.entries():
            done[strategy.name] = await self.fill(strategy.name, target, strategy.budget(self.search, done))
            await self.reannotate(done[strategy.name], target)
        return tuple(done.values())

    async def run(self, targets) -> list:
        """Fill every target (gaps concurrently, in-step strategies' rounds in step); per gap, one GapDone per
        strategy in registration order (``[(benchfill, baseline)]`` with the built-ins)."""
        self.barrier = RoundBarrier(t.rank for t in targets)
        return list(await asyncio.gather(*(self.fill_gap(t) for t in targets)))

    def lineage(self, item_id: str) -> list:
        """IDs from the original ancestor down to ``item_id``."""
        chain = [item_id]
        by_id = {c.item_id: c for c in self.children()}
        while chain[-1] in by_id:
            chain.append(by_id[chain[-1]].parent_id)
        return chain[::-1]
