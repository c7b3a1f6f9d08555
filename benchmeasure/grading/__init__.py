"""Graders: one 1/0 verdict per (response, reference) pair, shared by the pipeline and ``verifier/grade.py``.

``grade(kind, response, reference, **options)`` dispatches on ``kind``:

- ``"math"``: final-answer extraction and exact / numeric / symbolic comparison
  (:mod:`.math_answer`); options ``rel_tol``, ``abs_tol``, ``symbolic``, ``timeout_s``;
- ``"choice"``: option-letter extraction (:mod:`.choice`); options ``choices``, ``max_letter``;
- ``"ifeval"``: IFEval instruction checks (:mod:`.ifeval`); option ``instructions`` (else the
  reference is read as the instruction JSON), ``loose``.

:data:`BENCHMARK_KINDS` maps the BenchFill benchmark keys of the paper (Section 5) to kinds.
"""

from __future__ import annotations

from benchmeasure.base.errors import fail

KINDS = ("math", "choice", "ifeval")

BENCHMARK_KINDS = {
    "aime24": "math",
    "aime25": "math",
    "aime26": "math",
    "amc23": "math",
    "gaokao2023en": "math",
    "math500": "math",
    "bbh_3obj": "choice",
    "bbh_5obj": "choice",
    "bbh_7obj": "choice",
    "mmlu_bio": "choice",
    "ifeval": "ifeval",
}


def kind_for(benchmark: str) -> str:
    """The grader kind of a benchmark key; InputError for an unknown key."""
    key = benchmark.lower()
    if key in BENCHMARK_KINDS:
        return BENCHMARK_KINDS[key]
    if key.startswith(("aime", "amc", "math", "gaokao", "gsm")):
        return "math"
    if key.startswith(("bbh", "mmlu")):
        return "choice"
    fail(f"no grader known for benchmark {benchmark!r} (kinds: {', '.join(KINDS)})")


def grade(kind: str, response: str, reference: str, **options) -> bool:
    """Whether ``response`` answers correctly, judged against ``reference`` by the ``kind`` grader."""
    if kind == "math":
        from benchmeasure.grading.math_answer import grade_math

        return grade_math(response, reference, **options)
    if kind == "choice":
        from benchmeasure.grading.choice import grade_choice

        return grade_choice(response, reference, **options)
    if kind == "ifeval":
        from benchmeasure.grading.ifeval import grade_ifeval

        return grade_ifeval(response, reference, **options)
    fail(f"unknown grader kind {kind!r} (choose from {', '.join(KINDS)})")
