"""The grader registry: one :class:`Grader` entry per kind, read by every place that grades or checks items.

Readers: :func:`benchmeasure.grading.grade` (the verdict), ``commands/grade.py`` (which options a
flag feeds, whether ``--reference`` is needed, ``--explain``), BenchFill's config (``grader`` and
``[validity] grade_options``), :mod:`benchmeasure.verifier.validity` (question and reference checks,
answer equivalence for the near-duplicate rule) and :mod:`benchmeasure.verifier.rollouts` (the rollout
prompt template).

The built-in graders register themselves beside their code (:mod:`.math_answer`, :mod:`.choice`,
:mod:`.ifeval`), decorating their ``grade`` function (:meth:`benchmeasure.base.registry.Registry.add`)::

    @GRADERS.add("choice", options=("choices", "max_letter"), check_reference=check_reference, ...)
    def grade_choice(response, reference, choices=None, max_letter="J"): ...

A grader of another package does the same in its own module (imported through its entry point, group
``benchmeasure.graders``), or declares a :class:`Grader` entry whose callables may be lazy ``"module:function"``
strings (ARCHITECTURE.md, "Adding an extension"). Its ``options`` reach the command line as
``grade --option KEY=VALUE`` (:mod:`benchmeasure.base.options`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from benchmeasure.base.registry import GROUPS, Registry, lazy


def _same_text(a: str, b: str) -> bool:
    return a.strip() == b.strip()


@dataclass(frozen=True)
class Grader:
    """A grader kind.

    Fields
    ------
    name : str
        The kind (``--kind``, a BenchFill config's ``grader``).
    grade : callable ``(response, reference, **options) -> bool``
        The 1/0 verdict.
    options : tuple of str
        The keyword options ``grade`` takes (checked in BenchFill's ``[validity] grade_options``).
    check_reference : callable ``(reference, policy) -> str | None``, optional
        Validity rule 2: why a reference is unusable in this format (None: usable); ``policy`` is the
        :class:`~benchmeasure.verifier.validity.ValidityPolicy`. Without one, every reference passes.
    check_question : callable ``(question, reference) -> str | None``, optional
        Format-specific part of validity rule 1 (e.g. option markers of a multiple-choice question).
    same_answer : callable ``(a, b) -> bool``
        Whether two references are the same answer (validity rule 3); default: equal after stripping.
    template : str or Path
        The rollout prompt (a ``string.Template`` with ``$question``): a file name in
        ``benchmeasure/verifier/templates`` or an absolute path; default ``rollout_<name>.txt``.
    reference_option : str, optional
        A ``grade`` option that can stand in for ``--reference`` on the command line (ifeval: instructions).
    extract : callable ``(response) -> str | None``, optional
        The answer a response gives, printed by ``grade --explain``.
    benchmarks : tuple of str
        Benchmark keys graded by this kind (exact keys, or prefixes ending in ``*``), for :func:`kind_for`.
    """

    name: str
    grade: object
    options: tuple = ()
    check_reference: object = None
    check_question: object = None
    same_answer: object = _same_text
    template: str | Path | None = None
    reference_option: str | None = None
    extract: object = None
    benchmarks: tuple = field(default=())

    DECORATES: ClassVar[str] = "grade"   # GRADERS.add(...) decorates the grade function

    def __post_init__(self):
        for name in ("grade", "check_reference", "check_question", "same_answer", "extract"):
            object.__setattr__(self, name, lazy(getattr(self, name)))
        if self.grade is None:
            raise ValueError(f"grader {self.name!r} needs a grade function")
        object.__setattr__(self, "options", tuple(self.options))
        if self.reference_option is not None and self.reference_option not in self.options:
            raise ValueError(f"grader {self.name!r}: reference_option {self.reference_option!r} is not an option")

    @property
    def template_name(self) -> str | Path:
        return self.template if self.template is not None else f"rollout_{self.name}.txt"


GRADERS = Registry("grader kind", GROUPS["grader"], entry=Grader,
                   builtins=("benchmeasure.grading.math_answer", "benchmeasure.grading.choice",
                             "benchmeasure.grading.ifeval"))
