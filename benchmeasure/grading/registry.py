"""The grader registry: one :class:`Grader` entry per kind, read by every place that grades or checks items.

Readers: :func:`benchmeasure.grading.grade` (the verdict), ``commands/grade.py`` (which options a
flag feeds, whether ``--reference`` is needed, ``--explain``), BenchFill's config (``grader`` and
``[validity] grade_options``), :mod:`benchmeasure.verifier.validity` (question and reference checks,
answer equivalence for the near-duplicate rule) and :mod:`benchmeasure.verifier.rollouts` (the rollout
prompt template). Adding a grader is one module with its functions plus one ``GRADERS.register(...)``
(ARCHITECTURE.md, "Adding an extension"); a callable may be a lazy ``"module:function"`` string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

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


GRADERS = Registry("grader kind", GROUPS["grader"])

GRADERS.register(Grader(
    name="math", grade="benchmeasure.grading.math_answer:grade_math",
    options=("rel_tol", "abs_tol", "symbolic", "timeout_s"),
    check_reference="benchmeasure.grading.math_answer:check_reference",
    same_answer="benchmeasure.grading.math_answer:same_answer",
    extract="benchmeasure.grading.extract:extract_math_answer",
    benchmarks=("aime24", "aime25", "aime26", "amc23", "gaokao2023en", "math500",
                "aime*", "amc*", "math*", "gaokao*", "gsm*"),
))
GRADERS.register(Grader(
    name="choice", grade="benchmeasure.grading.choice:grade_choice", options=("choices", "max_letter"),
    check_reference="benchmeasure.grading.choice:check_reference",
    check_question="benchmeasure.grading.choice:check_question",
    same_answer="benchmeasure.grading.choice:same_answer",
    benchmarks=("bbh_3obj", "bbh_5obj", "bbh_7obj", "mmlu_bio", "bbh*", "mmlu*"),
))
GRADERS.register(Grader(
    name="ifeval", grade="benchmeasure.grading.ifeval:grade_ifeval", options=("instructions", "loose"),
    check_reference="benchmeasure.grading.ifeval:check_reference", reference_option="instructions",
    benchmarks=("ifeval",),
))
