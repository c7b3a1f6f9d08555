"""Multiple-choice grader: letter/option extraction on the usual phrasings."""

from __future__ import annotations

import pytest

from benchmeasure.grading import grade, kind_for
from benchmeasure.grading.choice import extract_choice, reference_letter

OWL = ["The owl is the leftmost", "The robin is the leftmost", "The owl is the second from the left"]

EXTRACT = [
    ("The answer is (B).", None, "B"),
    ("So the answer is (C)", None, "C"),
    ("Answer: C", None, "C"),
    ("**Answer:** D", None, "D"),
    ("**Final answer: (E)**", None, "E"),
    ("The correct option is B.", None, "B"),
    ("Correct answer: (A) The owl is the leftmost", None, "A"),
    ("I choose D because the rest fail.", None, "D"),
    ("B", None, "B"),
    ("(A)", None, "A"),
    ("B. The robin", None, "B"),
    ("A) because it is first", None, "A"),
    (r"Thus $\boxed{C}$.", None, "C"),
    (r"\boxed{(B)}", None, "B"),
    ("I think A is wrong. Therefore, the answer is C.", None, "C"),
    ("Options (A) and (B) fail, so it must be (D).", None, "D"),
    ("<think>the answer is (A)?</think>The answer is (B).", None, "B"),
    ("Answer: The owl is the second from the left", OWL, "C"),
    ("After placing the birds:\nThe robin is the leftmost.", OWL, "B"),
    ("The answer is (F).", OWL, None),
    ("I am not sure.", None, None),
    ("A bird sits on a branch.", None, None),
]


@pytest.mark.parametrize(("response", "choices", "expected"), EXTRACT)
def test_extract_choice(response, choices, expected):
    assert extract_choice(response, choices) == expected


@pytest.mark.parametrize(
    ("reference", "choices", "expected"),
    [
        ("(A)", None, "A"),
        ("B", None, "B"),
        ("c.", None, "C"),
        ("The robin is the leftmost", OWL, "B"),
        ("(K)", None, None),
    ],
)
def test_reference_letter(reference, choices, expected):
    assert reference_letter(reference, choices) == expected


@pytest.mark.parametrize(
    ("response", "reference", "correct"),
    [
        ("The answer is (B).", "(B)", True),
        ("The answer is (B).", "(C)", False),
        ("Answer: b", "B", True),
        ("nothing", "(A)", False),
        ("The answer is (A).", "not a letter", False),
    ],
)
def test_grade_choice(response, reference, correct):
    assert grade("choice", response, reference) is correct


def test_grade_choice_by_option_text():
    assert grade("choice", "The answer is: the owl is the second from the left.", "(C)", choices=OWL)


def test_kind_for_benchmarks():
    assert kind_for("bbh_3obj") == "choice"
    assert kind_for("AIME24") == "math"
    assert kind_for("ifeval") == "ifeval"
    with pytest.raises(ValueError, match="no grader known"):
        kind_for("swebench")


def test_unknown_kind():
    with pytest.raises(ValueError, match="unknown grader kind"):
        grade("essay", "x", "y")
