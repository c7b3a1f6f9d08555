"""Graders: one 1/0 verdict per (response, reference) pair, shared by the pipeline and ``verifier/grade.py``.

``grade(kind, response, reference, **options)`` runs the grader registered as ``kind`` in
:data:`benchmeasure.grading.registry.GRADERS` (adding one: ARCHITECTURE.md, "Adding an extension"):

- ``"math"``: final-answer extraction and exact / numeric / symbolic comparison
  (:mod:`.math_answer`); options ``rel_tol``, ``abs_tol``, ``symbolic``, ``timeout_s``;
- ``"choice"``: option-letter extraction (:mod:`.choice`); options ``choices``, ``max_letter``;
- ``"ifeval"``: IFEval instruction checks (:mod:`.ifeval`); option ``instructions`` (else the
  reference is read as the instruction JSON), ``loose``.

:func:`kind_for` maps the BenchFill benchmark keys of the paper (Section 5) to kinds, from each
grader's ``benchmarks``.
"""

from __future__ import annotations

from benchmeasure.base.errors import fail
from benchmeasure.grading.registry import GRADERS, Grader

KINDS = GRADERS  # the registry: ``kind in KINDS``, ``choices=KINDS`` and ``", ".join(KINDS)`` read it live


def kind_for(benchmark: str) -> str:
    """The grader kind of a benchmark key (an exact key first, then a prefix); InputError for an unknown key."""
    key = benchmark.lower()
    graders = GRADERS.entries()
    for grader in graders:
        if key in grader.benchmarks:
            return grader.name
    for grader in graders:
        if any(p.endswith("*") and key.startswith(p[:-1]) for p in grader.benchmarks):
            return grader.name
    fail(f"no grader known for benchmark {benchmark!r} (kinds: {', '.join(KINDS)})")


def grade(kind: str, response: str, reference: str, **options) -> bool:
    """Whether ``response`` answers correctly, judged against ``reference`` by the ``kind`` grader."""
    if kind not in GRADERS:
        fail(f"unknown grader kind {kind!r} (choose from {', '.join(KINDS)})")
    return GRADERS[kind].grade(response, reference, **options)


__all__ = ["GRADERS", "KINDS", "Grader", "grade", "kind_for"]
