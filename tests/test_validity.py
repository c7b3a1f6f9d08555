"""Validity policy: each rule, and a wrong reference answer is rejected, not annotated as very hard."""

from __future__ import annotations

import json

import pytest

from benchmeasure.grading import grade
from benchmeasure.grading.extract import extract_math_answer
from benchmeasure.verifier.base import Candidate
from benchmeasure.verifier.validity import (
    ValidityPolicy,
    confirmed_by_solve,
    near_duplicate,
    reference_parseable,
    rejected,
    similarity,
    static_checks,
    well_formed,
)

BBH = (
    "The following paragraphs each describe a set of three objects arranged in a fixed order. "
    "On a shelf, there are three books: a red book, a blue book, and a green book. "
    "The blue book is to the left of the green book. The red book is the rightmost.\n"
    "Options:\n(A) The red book is the leftmost\n(B) The blue book is the leftmost\n(C) The green book is the leftmost"
)
ARITH = "A baker makes 17 loaves in the morning and 25 loaves in the afternoon. How many loaves does he make?"
# what a cold solver writes for ARITH: real answer formats
SOLVES = [
    "17 + 25 = 42, so the baker makes \\boxed{42} loaves.",
    "Morning 17, afternoon 25. Total: 42.\nAnswer: 42",
    "The answer is $42$.",
    "<think>17+25... 41? no, 42</think> He makes **42** loaves in total.",
]


def solve_and_check(reference, policy=None):
    policy = policy or ValidityPolicy()
    correct = [grade("math", s, reference) for s in SOLVES]
    answers = [extract_math_answer(s) for s in SOLVES]
    return confirmed_by_solve(correct, answers, policy)


def test_wrong_reference_is_rejected_not_annotated_as_hard():
    candidate = Candidate("c1", ARITH, "43", "amc23")
    assert static_checks(candidate).ok  # well-formed, parseable, new: only the solve can catch it
    check = solve_and_check(candidate.answer)
    assert not check.ok
    assert "0/4 correct" in check.reason and "'42'" in check.reason
    verdict = rejected(candidate, check)
    assert verdict.valid is False and verdict.rollouts == [] and verdict.counts() == {}


def test_right_reference_is_confirmed():
    assert solve_and_check("42").ok


def test_min_confirmations():
    policy = ValidityPolicy(min_confirmations=3)
    assert confirmed_by_solve([True, True, False], policy=policy).reason.startswith("reference not confirmed")
    assert confirmed_by_solve([True, True, True], policy=policy).ok
    assert "no independent solve" in confirmed_by_solve([]).reason


@pytest.mark.parametrize(
    ("question", "reference", "kind", "reason"),
    [
        ("What is 2+2?", "4", "math", "too short"),
        ("x" * 7000, "4", "math", "too long"),
        ("<think>hmm</think> What is two plus two, exactly?", "4", "math", "artifact"),
        ("Rewritten question: What is two plus two, exactly?", "4", "math", "artifact"),
        ("Solve {question} for the value of x please.", "4", "math", "artifact"),
        ("Which book is leftmost on the shelf today?", "(A)", "choice", "lists no options"),
        (BBH, "(D)", "choice", "not among the question's options"),
    ],
)
def test_ill_formed(question, reference, kind, reason):
    check = well_formed(question, reference, kind)
    assert not check.ok and reason in check.reason


def test_well_formed_examples():
    assert well_formed(BBH, "(B)", "choice").ok
    assert well_formed(ARITH, "42", "math").ok


@pytest.mark.parametrize(
    ("reference", "kind", "ok"),
    [
        ("42", "math", True),
        (r"\frac{\sqrt{3}}{2}", "math", True),
        ("[1,3)", "math", True),
        (r"\frac{1}{", "math", False),
        ("", "math", False),
        ("9" * 200, "math", False),
        ("(B)", "choice", True),
        ("maybe", "choice", False),
        (json.dumps([{"id": "punctuation:no_comma"}]), "ifeval", True),
        ('[{"id": "no:such"}]', "ifeval", False),
        ("x", "essay", False),
    ],
)
def test_reference_parseable(reference, kind, ok):
    assert reference_parseable(reference, kind).ok is ok


def test_similarity_measure():
    assert similarity(ARITH, ARITH.upper() + "!") == 1.0
    assert 0.85 < similarity(ARITH, ARITH.replace("17", "19")) < 0.9
    assert 0.9 < similarity(BBH, BBH.replace("to the left of", "to the right of")) < 0.99
    assert similarity(ARITH, "Completely different text about geometry of circles.") < 0.05


def test_near_duplicates():
    existing = [("q7", ARITH, "42")]
    exact = near_duplicate(ARITH.replace("How many", "How  many"), "42", "math", existing)
    assert not exact.ok and "near-duplicate of item q7" in exact.reason
    # a number changed and with it the answer: a new item
    assert near_duplicate(ARITH.replace("17", "19"), "44", "math", existing).ok
    # a light paraphrase that keeps the answer
    same = near_duplicate(ARITH.replace("make", "bake"), "42", "math", existing)
    assert not same.ok and "same answer" in same.reason
    # templated BBH: one relation flipped, a different answer, a new item
    bbh = [("b1", BBH, "(B)")]
    assert near_duplicate(BBH.replace("to the left of", "to the right of"), "(C)", "choice", bbh).ok


def test_static_checks_order_and_candidate():
    existing = [("q1", ARITH, "42")]
    assert "too short" in static_checks(Candidate("c", "2+2?", "{", "amc23"), existing).reason
    assert "cannot be parsed" in static_checks(Candidate("c", ARITH + " Be exact.", r"\frac{1}{}", "amc23")).reason
    assert "near-duplicate" in static_checks(Candidate("c", ARITH, "42", "amc23"), existing).reason
    assert static_checks(Candidate("c", BBH, "(B)", "bbh_3obj"), existing).ok
