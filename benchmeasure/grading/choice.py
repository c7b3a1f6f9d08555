"""Multiple-choice grading (BBH logical deduction, MMLU): which option did the response pick?

The reference is a letter in any of the usual forms (``B``, ``(B)``, ``B.``) or, when the
options are given, an option's text. The response's choice is, in order of preference:

1. the letter in the last ``\\boxed{…}``;
2. the letter after the last answer phrase ("the answer is", "Answer:", "correct option
   is", "I choose", …), with or without parentheses or bold;
3. a response that starts with a letter (``B``, ``(B)``, ``B.``, ``B) text``; not ``A bird``);
4. the last parenthesized letter ``(B)`` in the response;
5. with ``choices`` given: the option whose text follows the answer phrase, or failing that the
   only option text that appears in the response's last line.

Letters are accepted only within the number of options (``choices``) or ``A``–``max_letter``.
"""

from __future__ import annotations

import re
import string

from benchmeasure.grading.extract import after_answer_phrase, last_boxed, strip_thinking
from benchmeasure.grading.registry import GRADERS

_PHRASE = re.compile(
    r"(?:final\s+answer|correct\s+(?:answer|option|choice)|the\s+answer|answer|option|choice|i\s+(?:choose|pick|select))"
    r"\s*(?:is|would\s+be|should\s+be|:|：)?\s*(?:option|choice)?\s*[:：]?\s*\**\s*[\(\[]?\s*([A-Z])\b(?![a-z'])",
    re.IGNORECASE,
)
_ALONE = re.compile(r"^\W*(?:\(([A-Z])\)|([A-Z])(?:[.:)]|$))")
_PAREN = re.compile(r"\(([A-Z])\)")


def _letters(choices, max_letter: str) -> str:
    if choices:
        return string.ascii_uppercase[: len(choices)]
    return string.ascii_uppercase[: string.ascii_uppercase.index(max_letter.upper()) + 1]


def _as_letter(text: str | None, allowed: str, choices=None) -> str | None:
    if not text:
        return None
    text = text.strip().strip("*").strip()
    match = re.fullmatch(r"[\(\[]?([A-Za-z])[\)\]]?[.:]?(?:\s.*)?", text, re.DOTALL)
    if match and match.group(1).upper() in allowed and (match.group(1).isupper() or len(text) <= 3):
        return match.group(1).upper()
    if choices:
        return _match_option(text, choices)
    return None


def _match_option(text: str, choices) -> str | None:
    def canon(s: str) -> str:
        return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()

    target = canon(text)
    hits = [string.ascii_uppercase[i] for i, option in enumerate(choices) if canon(str(option)) == target]
    if len(hits) == 1:
        return hits[0]
    texts = [canon(str(option)) for option in choices]
    hits = [string.ascii_uppercase[i] for i, option in enumerate(texts) if option and option in target]
    return hits[0] if len(hits) == 1 else None


def extract_choice(response: str, choices=None, max_letter: str = "J") -> str | None:
    """The option letter a response picks (module docstring), or None."""
    allowed = _letters(choices, max_letter)
    text = strip_thinking(response).strip()
    boxed = last_boxed(text)
    letter = _as_letter(boxed, allowed, choices) if boxed else None
    if letter:
        return letter
    for match in reversed(list(_PHRASE.finditer(text))):
        letter = match.group(1)
        # a lower-case letter counts only in parentheses or at the end of its line ("answer: b")
        plain_end = re.match(r"[\)\]\*]*\.?[ \t]*(?:\n|$)", text[match.end(1) :]) is not None
        if letter.upper() in allowed and (letter.isupper() or text[match.start(1) - 1] == "(" or plain_end):
            return letter.upper()
    alone = _ALONE.match(text)
    if alone and (alone.group(1) or alone.group(2)) in allowed and len(text) <= 200:
        return alone.group(1) or alone.group(2)
    parens = [m for m in _PAREN.findall(text) if m in allowed]
    if parens:
        return parens[-1]
    if choices:
        phrase = after_answer_phrase(text)
        if phrase:
            found = _match_option(phrase, choices)
            if found:
                return found
        last_line = text.strip().splitlines()[-1] if text.strip() else ""
        return _match_option(last_line, choices)
    return None


def reference_letter(reference: str, choices=None, max_letter: str = "J") -> str | None:
    """The letter a reference answer names (``B``, ``(B)``, or an option's text)."""
    allowed = _letters(choices, max_letter)
    return _as_letter(reference, allowed, choices)


def check_question(question: str, reference: str) -> str | None:
    """Why a multiple-choice question is malformed (no options, or not the reference's), or None."""
    letter = reference_letter(reference)
    markers = re.findall(r"\(([A-J])\)", question)
    if "A" not in markers or "B" not in markers:
        return "multiple-choice question lists no options (A), (B), ..."
    if letter is not None and letter not in markers:
        return f"reference option ({letter}) is not among the question's options"
    return None


def check_reference(reference: str, policy=None) -> str | None:
    """Why ``reference`` names no option letter, or None."""
    if reference_letter(reference) is None:
        return f"choice reference {reference!r} is not an option letter"
    return None


def same_answer(a: str, b: str) -> bool:
    """Whether two references name the same option letter."""
    return reference_letter(a) is not None and reference_letter(a) == reference_letter(b)


@GRADERS.add("choice", options=("choices", "max_letter"), check_reference=check_reference,
             check_question=check_question, same_answer=same_answer,
             benchmarks=("bbh_3obj", "bbh_5obj", "bbh_7obj", "mmlu_bio", "bbh*", "mmlu*"))
def grade_choice(response: str, reference: str, choices=None, max_letter: str = "J") -> bool:
    """1/0 verdict: the response picks the reference option.

    Parameters
    ----------
    response : str
    reference : str
        ``B``, ``(B)`` or, with ``choices``, the option text.
    choices : list of str, optional
        The options in order (A, B, …); enables matching by option text.
    max_letter : str
        Highest letter accepted when ``choices`` is not given.
    """
    want = reference_letter(reference, choices, max_letter)
    if want is None:
        return False
    return extract_choice(response, choices, max_letter) == want
