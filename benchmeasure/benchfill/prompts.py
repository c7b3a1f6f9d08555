"""Rewriter prompts, rendered from template files and parsed back.

Templates live in ``propose/prompts/`` (or a benchmark's own folder named in its config) as
plain text with ``$name`` placeholders (:class:`string.Template`, so LaTeX braces need no
escaping): ``rewrite.txt`` for BenchFill (target, parent, reference list), ``rewrite_baseline.txt``
for the baseline (target and parent only, paper Table 2), ``reference_line.txt`` for one
reference pair. The rewriter replies with a JSON object ``{"question": …, "answer": …}``;
anything else is a malformed reply, which the client retries.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from string import Template
from typing import ClassVar

from benchmeasure.base.errors import fail
from benchmeasure.base.resources import package_file
from benchmeasure.verifier.llm_client import MalformedReply

DEFAULT_DIR = package_file("benchfill", "templates")  # propose/prompts/ in a checkout links here
TEMPLATES = ("rewrite.txt", "rewrite_baseline.txt", "reference_line.txt")


class Prompts:
    """The three templates of one prompt folder, checked for unknown or missing placeholders."""

    FIELDS: ClassVar[dict] = {
        "rewrite.txt": {"benchmark", "target", "references", "parent_z", "parent_question", "parent_answer",
                        "answer_format"},
        "rewrite_baseline.txt": {"benchmark", "target", "parent_question", "parent_answer", "answer_format"},
        "reference_line.txt": {"z", "question", "answer"},
    }

    def __init__(self, folder: str | os.PathLike = DEFAULT_DIR):
        self.folder = Path(folder)
        self.templates = {}
        for name in TEMPLATES:
            path = self.folder / name
            if not path.is_file():
                fail(f"{path}: prompt template not found")
            template = Template(path.read_text(encoding="utf-8"))
            used = {m.group("named") or m.group("braced") for m in template.pattern.finditer(template.template)
                    if m.group("named") or m.group("braced")}
            unknown = used - self.FIELDS[name]
            if unknown:
                allowed = ", ".join(sorted(self.FIELDS[name]))
                fail(f"{path}: unknown placeholder ${sorted(unknown)[0]} (allowed: {allowed})")
            self.templates[name] = template

    def reference_block(self, references) -> str:
        line = self.templates["reference_line.txt"]
        return "".join(line.substitute(z=f"{r.z:.3f}", question=_one_line(r.question), answer=_one_line(r.answer))
                       for r in references).rstrip("\n")

    def rewrite(self, benchmark: str, target: float, parent, references, answer_format: str) -> str:
        return self.templates["rewrite.txt"].substitute(
            benchmark=benchmark, target=f"{target:.3f}", references=self.reference_block(references),
            parent_z=f"{parent.z:.3f}", parent_question=parent.question, parent_answer=parent.answer,
            answer_format=answer_format)

    def rewrite_baseline(self, benchmark: str, target: float, parent, answer_format: str) -> str:
        return self.templates["rewrite_baseline.txt"].substitute(
            benchmark=benchmark, target=f"{target:.3f}", parent_question=parent.question,
            parent_answer=parent.answer, answer_format=answer_format)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_child(text: str) -> dict:
    """``{"question", "answer"}`` from a rewriter reply (a JSON object, possibly inside a code fence).

    Raises
    ------
    MalformedReply
        No JSON object, or one without a non-empty string ``question`` and a non-empty ``answer``.
        A number answer becomes its text; a list or object answer (IFEval's instructions) its JSON.
    """
    match = _OBJECT.search(text or "")
    if match is None:
        raise MalformedReply("rewriter reply holds no JSON object")
    try:
        record = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise MalformedReply(f"rewriter reply is not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise MalformedReply("rewriter reply is not a JSON object")
    question, answer = record.get("question"), record.get("answer")
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        answer = str(answer)
    elif isinstance(answer, (list, dict)):
        # An IFEval answer is its instruction list: kept as JSON text, as the pool's answers are
        # (gaps.read_pool) and as the ifeval grader reads a reference.
        answer = json.dumps(answer)
    if not isinstance(question, str) or not question.strip() or not isinstance(answer, str) or not answer.strip():
        raise MalformedReply("rewriter reply lacks a non-empty question or answer")
    return {"question": question.strip(), "answer": answer.strip()}
