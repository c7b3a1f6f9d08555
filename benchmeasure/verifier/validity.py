"""Validity of a candidate item, decided before any panel rollout is spent on it.

BenchFill (Section 5 of the paper) annotates each accepted item's difficulty from the
panel's graded rollouts. An item whose reference answer is wrong would be graded wrong for
every model and so be annotated as extremely hard; the policy below rejects such items
instead. A candidate is valid only when every check passes, in this order (cheapest first):

1. **Well-formed question** — non-empty text of ``min_chars`` to ``max_chars`` characters,
   with no leftover generation artifacts (``<think>`` tags, template slots such as
   ``{question}``, "Rewritten question:" headers) and, for multiple-choice items, option
   markers ``(A)``, ``(B)``, … that include the reference's letter.
2. **Parseable reference in the benchmark's format** — math: a short (<= ``max_answer_chars``),
   brace-balanced answer that is a number or that latex2sympy parses (in the time-limited worker);
   choice: a letter ``A``–``J`` in any usual form; ifeval: instruction JSON whose ids and
   arguments the IFEval checks accept.
3. **Not a near-duplicate** of an existing benchmark item or of an item accepted earlier in
   the run. Similarity is the Jaccard index of the two questions' sets of character 5-grams
   (after lower-casing, dropping punctuation and collapsing spaces). A candidate is a
   near-duplicate when the similarity is >= ``duplicate_threshold`` (0.99: the same text up
   to case, punctuation or a typo, whatever its answer), or >= ``same_answer_threshold``
   (0.8) with an equal reference answer (a light paraphrase of an existing item). Character
   n-grams rather than word n-grams because templated benchmarks (BBH) and short math items
   differ in a word or a number: a child that changes one relation or one number and thereby
   its answer scores about 0.85-0.98 and is a new item, not a duplicate.
4. **Reference confirmed by an independent solve** — a strong model that did not write the
   item (the rewriter or a strong panel model, prompted with the question only) answers it
   ``n`` times; each answer is graded against the reference with the benchmark's grader.
   The reference is confirmed when at least ``min_confirmations`` of the graded answers are
   correct (default 1). Otherwise the item is rejected, never kept as "very hard": the
   rejection reason reports the solver's most common answer, which usually shows the
   reference's error.

The cost of rule 4 is that a correct item that even the strong solver never solves is also
rejected; with ``n`` cold samples the chance of that falls as the solver improves, and
items harder than the strongest available solver cannot be certified by this pipeline at all.
The LLM call itself is made by the verifier through the LLM client; this module only decides.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from benchmeasure.base.errors import InputError
from benchmeasure.grading import kind_for
from benchmeasure.grading.choice import reference_letter
from benchmeasure.grading.ifeval import parse_instructions
from benchmeasure.grading.math_answer import answers_equal, normalize, to_number
from benchmeasure.grading.symbolic import shared_checker
from benchmeasure.verifier.base import Candidate, Verdict

_ARTIFACTS = re.compile(
    r"<\s*/?\s*think\s*>|\{(?:question|answer|parent|item)\}|^\s*(?:rewritten|new|revised)\s+(?:question|item)\s*:",
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True)
class ValidityPolicy:
    """Thresholds of the validity policy (module docstring)."""

    min_chars: int = 15
    max_chars: int = 6000
    max_answer_chars: int = 120
    duplicate_threshold: float = 0.99
    same_answer_threshold: float = 0.8
    min_confirmations: int = 1
    parse_timeout_s: float = 5.0


@dataclass(frozen=True)
class Check:
    """Outcome of one validity check: ``ok`` and, when not ok, why."""

    ok: bool
    reason: str = "ok"


OK = Check(True)


def shingles(text: str, size: int = 5) -> set:
    """Character ``size``-grams of lower-cased text with punctuation dropped and spaces collapsed."""
    flat = " ".join(re.findall(r"[a-z0-9]+", text.lower()))
    if len(flat) < size:
        return {flat} if flat else set()
    return {flat[i : i + size] for i in range(len(flat) - size + 1)}


def similarity(a: str, b: str) -> float:
    """Jaccard index of the two texts' character 5-gram sets (:func:`shingles`), in [0, 1]."""
    sa, sb = shingles(a), shingles(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def well_formed(question: str, reference: str, kind: str, policy: ValidityPolicy = ValidityPolicy()) -> Check:
    """Rule 1 of the policy."""
    text = question.strip()
    if len(text) < policy.min_chars:
        return Check(False, f"question too short ({len(text)} < {policy.min_chars} characters)")
    if len(text) > policy.max_chars:
        return Check(False, f"question too long ({len(text)} > {policy.max_chars} characters)")
    artifact = _ARTIFACTS.search(text)
    if artifact:
        return Check(False, f"question contains a generation artifact {artifact.group(0).strip()!r}")
    if kind == "choice":
        letter = reference_letter(reference)
        markers = re.findall(r"\(([A-J])\)", text)
        if "A" not in markers or "B" not in markers:
            return Check(False, "multiple-choice question lists no options (A), (B), ...")
        if letter is not None and letter not in markers:
            return Check(False, f"reference option ({letter}) is not among the question's options")
    return OK


def reference_parseable(reference: str, kind: str, policy: ValidityPolicy = ValidityPolicy()) -> Check:
    """Rule 2 of the policy."""
    if kind == "math":
        answer = reference.strip()
        if not answer or len(answer) > policy.max_answer_chars:
            return Check(False, f"math reference must be 1 to {policy.max_answer_chars} characters")
        depth = 0
        for char in answer.replace("\\{", "").replace("\\}", ""):
            depth += {"{": 1, "}": -1}.get(char, 0)
            if depth < 0:
                break
        if depth != 0:
            return Check(False, f"math reference {answer!r} has unbalanced braces")
        normalized = normalize(answer)
        if to_number(normalized) is not None or shared_checker().parses(normalized, policy.parse_timeout_s):
            return OK
        return Check(False, f"math reference {answer!r} cannot be parsed")
    if kind == "choice":
        if reference_letter(reference) is None:
            return Check(False, f"choice reference {reference!r} is not an option letter")
        return OK
    if kind == "ifeval":
        try:
            parse_instructions(reference)
        except InputError as exc:
            return Check(False, f"ifeval reference: {exc}")
        return OK
    return Check(False, f"no reference format known for kind {kind!r}")


def _same_answer(a: str, b: str, kind: str) -> bool:
    if kind == "math":
        return answers_equal(a, b, symbolic=False)
    if kind == "choice":
        return reference_letter(a) is not None and reference_letter(a) == reference_letter(b)
    return a.strip() == b.strip()


def near_duplicate(
    question: str, reference: str, kind: str, existing: Iterable, policy: ValidityPolicy = ValidityPolicy()
) -> Check:
    """Rule 3 of the policy; ``existing`` holds ``(item_id, question, reference)`` triples."""
    for item_id, other_question, other_reference in existing:
        score = similarity(question, other_question)
        if score >= policy.duplicate_threshold:
            return Check(False, f"near-duplicate of item {item_id} (similarity {score:.2f})")
        if score >= policy.same_answer_threshold and _same_answer(reference, other_reference, kind):
            return Check(False, f"paraphrase of item {item_id} with the same answer (similarity {score:.2f})")
    return OK


def confirmed_by_solve(correct: list, answers: list | None = None, policy: ValidityPolicy = ValidityPolicy()) -> Check:
    """Rule 4: decide from the independent solver's graded answers.

    Parameters
    ----------
    correct : list of bool, length n
        Each cold solve graded against the reference with the benchmark's grader.
    answers : list of str or None, length n, optional
        The solver's extracted final answers, only to explain a rejection.
    """
    if not correct:
        return Check(False, "reference not confirmed: no independent solve was made")
    hits = sum(bool(c) for c in correct)
    if hits >= policy.min_confirmations:
        return OK
    reason = f"reference not confirmed by an independent solve ({hits}/{len(correct)} correct"
    given = [a for a in (answers or []) if a]
    if given:
        answer, count = Counter(given).most_common(1)[0]
        reason += f"; solver's most common answer {answer!r}, {count}/{len(correct)}"
    return Check(False, reason + ")")


def static_checks(candidate: Candidate, existing: Iterable = (), policy: ValidityPolicy = ValidityPolicy(),
                  kind: str | None = None) -> Check:
    """Rules 1–3 for a :class:`Candidate` (no model calls); the first failure, or ``OK``.

    ``kind`` is the grader kind (a BenchFill config's ``grader``); without it the kind is looked
    up from the benchmark's name (:func:`kind_for`).
    """
    kind = kind or kind_for(candidate.benchmark)
    for check in (
        lambda: well_formed(candidate.question, candidate.answer, kind, policy),
        lambda: reference_parseable(candidate.answer, kind, policy),
        lambda: near_duplicate(candidate.question, candidate.answer, kind, existing, policy),
    ):
        outcome = check()
        if not outcome.ok:
            return outcome
    return OK


def rejected(candidate: Candidate, check: Check) -> Verdict:
    """The verdict for an invalid candidate: no rollouts, so it is never annotated with a difficulty."""
    return Verdict(candidate.item_id, valid=False, reason=check.reason, rollouts=[])
