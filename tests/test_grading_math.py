"""Math grader: answer extraction and comparison on a table of real answer formats."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmeasure.grading import grade
from benchmeasure.grading.extract import extract_math_answer, last_boxed
from benchmeasure.grading.math_answer import answers_equal, normalize
from benchmeasure.grading.symbolic import SymbolicChecker

EXTRACT = [
    (r"Thus the area is $\boxed{\frac{\sqrt{3}}{4}}$.", r"\frac{\sqrt{3}}{4}"),
    (r"\boxed{\left\{ 1, 2 \right\}} and later \boxed{7}", "7"),
    (r"so $x = \boxed{ {a}^{ {b} } }$ done", "{a}^{ {b} }"),
    (r"We get \fbox{12}.", "12"),
    (r"The value is \boxed 5 indeed", "5"),
    ("Final Answer: The final answer is $\\frac{3}{4}$. I hope it is correct.", "\\frac{3}{4}"),
    ("Therefore, the answer is 42.", "42"),
    ("**Answer:** 17", "17"),
    ("Answer: $2\\pi$\nThat is all.", "2\\pi"),
    ("There are 3 apples and then 1,250 more", "1,250"),
    ("<think>maybe \\boxed{3}? no</think> It is \\boxed{4}", "4"),
    ("<think>\\boxed{3}</think> The answer is 9", "9"),
    ("no numbers here", None),
    ("The answer is \\boxed{", None),
]


@pytest.mark.parametrize(("response", "expected"), EXTRACT)
def test_extract(response, expected):
    assert extract_math_answer(response) == expected


def test_last_boxed_ignores_unclosed():
    assert last_boxed(r"\boxed{1} then \boxed{2") == "1"


# (response, reference, correct?)
GRADE = [
    # fractions
    (r"\boxed{\dfrac{1}{2}}", "0.5", True),
    (r"\boxed{\tfrac12}", r"\frac{1}{2}", True),
    (r"\boxed{1/2}", r"\frac{1}{2}", True),
    (r"\boxed{\frac{2}{4}}", r"\frac12", True),
    (r"\boxed{\frac{1}{3}}", "0.5", False),
    (r"\boxed{0.3333}", r"\frac{1}{3}", False),
    (r"\boxed{-\frac{7}{3}}", r"-\dfrac{7}{3}", True),
    # radicals
    (r"\boxed{2\sqrt{2}}", r"\sqrt{8}", True),
    (r"\boxed{\frac{\sqrt{3}}{2}}", r"\frac{1}{2}\sqrt{3}", True),
    (r"\boxed{3\sqrt{2}}", r"2\sqrt{3}", False),
    # intervals, tuples, sets, lists
    (r"\boxed{[1, 3)}", "[1,3)", True),
    (r"\boxed{(1, 3)}", "[1,3)", False),
    (r"\boxed{(-\infty, 2] }", r"(-\infty,2]", True),
    (r"\boxed{(1,2)}", "(2,1)", False),
    (r"\boxed{\{2, 1\}}", r"\{1,2\}", True),
    (r"The solutions are \boxed{3, -2}", "-2, 3", True),
    (r"\boxed{3, -2, 5}", "-2, 3", False),
    # units and currency, degrees, percent
    (r"\boxed{12\text{ cm}}", "12", True),
    ("Answer: 12 cm", "12", True),
    (r"\boxed{30^\circ}", "30", True),
    (r"\boxed{30^{\circ}}", "30", True),
    (r"\boxed{\$18.90}", "18.9", True),
    (r"\boxed{25\%}", "25", True),
    (r"\boxed{5\text{ dollars}}", "6", False),
    # thousands separators
    (r"\boxed{1,000}", "1000", True),
    (r"\boxed{1{,}234{,}567}", "1234567", True),
    (r"\boxed{1\,000}", "1000", True),
    ("So in total we need 12,345 bricks.", "12345", True),
    # text around the box, assignments, dollar wrappers
    (r"Putting it together, $x = \boxed{5}$, as required.", "5", True),
    (r"\boxed{x = 5}", "5", True),
    (r"\boxed{y=2x+1}", "2x+1", True),
    ("The final answer is $\\boxed{204}$", "204", True),
    ("The final answer is $\\boxed{204}$", "$204$", True),
    # numbers: integer forms, decimals, tolerance
    (r"\boxed{007}", "7", True),
    (r"\boxed{2.50}", "2.5", True),
    (r"\boxed{3.14159}", r"\pi", False),
    # symbolic
    (r"\boxed{x^2+2x+1}", "(x+1)^2", True),
    (r"\boxed{\frac{\pi}{6}}", r"\frac{1}{6}\pi", True),
    (r"\boxed{2^{10}}", "1024", True),
    (r"\boxed{\binom{5}{2}}", "10", True),
    (r"\boxed{x^2-1}", "(x-1)(x+1)", True),
    (r"\boxed{x^2+1}", "(x-1)(x+1)", False),
    # nothing to grade
    ("I don't know.", "3", False),
    (r"\boxed{}", "3", False),
]


@pytest.mark.parametrize(("response", "reference", "correct"), GRADE)
def test_grade_math_table(response, reference, correct):
    assert grade("math", response, reference) is correct


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(r"$\dfrac{1}{2}$", r"\frac{1}{2}"), (r"\left( 1, 2 \right)", "(1,2)"), ("1,000", "1000"), ("x = 3.", "3")],
)
def test_normalize(raw, expected):
    assert normalize(raw) == expected


def test_numeric_tolerance_option():
    assert answers_equal("3.1416", "3.14159", rel_tol=1e-4)
    assert not answers_equal("3.1416", "3.14159")


@pytest.mark.parametrize(
    ("pred", "ref", "equal"),
    [
        ("1396203", "1396202", False),  # issue 15: a relative tolerance made these equal
        ("1000000", "999999", False),
        ("-0", "0", True),
        ("+0012", "12", True),
        (r"\frac{1000001}{3}", r"\frac{1000000}{3}", False),  # exact rationals: no tolerance
        (r"\frac{1}{" + "9" * 400 + "}", "0", False),  # abs_tol does not apply to exact numbers either
        ("0.3333333", r"\frac{1}{3}", True),  # a rounded decimal: within rel_tol 1e-6
        ("2.0000001", "2", True),
        ("2.001", "2", False),
        ("1396203.0", "1396202", False),  # '.0' is no fractional part: exact
        ("9" * 400, "9" * 400 + "0", False),
        ("9" * 5000, "9" * 5000, True),
        ("9" * 400 + ".5", "3", False),
    ],
)
def test_tolerance_only_for_decimals_and_big_numbers_bounded(pred, ref, equal):
    assert answers_equal(pred, ref) is equal


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=-(10**600), max_value=10**600), st.integers(min_value=-(10**600), max_value=10**600))
def test_two_integers_are_equal_only_when_they_are(a, b):
    assert grade("math", f"\\boxed{{{a}}}", str(b), symbolic=False) is (a == b)
    assert grade("math", f"\\boxed{{{a}}}", str(a), symbolic=False) is True


def test_symbolic_can_be_turned_off():
    assert not answers_equal(r"\sqrt{8}", r"2\sqrt{2}", symbolic=False)


@pytest.mark.slow
def test_pathological_expression_is_cut_off_and_worker_recovers():
    checker = SymbolicChecker(timeout_s=2.0)
    try:
        start = time.monotonic()
        assert checker.equal(r"10^{10^{10^{10}}}+1", "5") is None
        assert time.monotonic() - start < 10.0
        assert checker.equal(r"\sqrt{8}", r"2\sqrt{2}") is True
    finally:
        checker.close()


def test_unparseable_latex_is_not_equal():
    assert grade("math", r"\boxed{\frac{}{}}", "1") is False


def test_no_eval_on_model_text(tmp_path):
    marker = tmp_path / "pwned"
    payload = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    assert grade("math", f"\\boxed{{{payload}}}", "1") is False
    assert not marker.exists()
