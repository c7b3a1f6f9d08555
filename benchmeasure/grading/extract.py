"""Find the final answer in a model's response to a math item.

Order of preference (the first that finds something wins):

1. the content of the last ``\\boxed{…}`` or ``\\fbox{…}`` (nested braces included; also
   ``\\boxed 5``);
2. the text after the last "final answer is", "the answer is", "Answer:" or
   "**Answer**" (up to the end of its line; a ``$…$`` right after it is taken whole);
3. the last number in the response.

Reasoning inside ``<think>…</think>`` is dropped first, so a number the model considered
and rejected while thinking does not count. Pure string processing: nothing here parses or
evaluates the answer.
"""

from __future__ import annotations

import re

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_BOX = re.compile(r"\\(?:boxed|fbox)\s*")
_ANSWER = re.compile(
    r"(?:final\s+answer\s*(?:is|:)|the\s+answer\s+is|\banswer\s*[:：]|\*\*\s*answer\s*\*\*\s*:?)\s*",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|-?\d+(?:\.\d+)?|-?\.\d+")
_TRAILER = re.compile(r"\s*(?:\.|I hope it is correct\.?)*\s*$", re.IGNORECASE)


def strip_thinking(text: str) -> str:
    """Remove ``<think>…</think>`` blocks; text before an unclosed ``</think>`` is dropped too."""
    text = _THINK.sub(" ", text)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    return text


def braced(text: str, start: int) -> tuple[str, int] | None:
    """Content of the brace group opening at ``text[start] == "{"`` and the index after it.

    Escaped braces (``\\{``) do not count. None when the group is not closed.
    """
    if start >= len(text) or text[start] != "{":
        return None
    depth = 0
    i = start
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i + 1
        i += 1
    return None


def last_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{…}``/``\\fbox{…}`` (or ``\\boxed x``), else None."""
    found = None
    for match in _BOX.finditer(text):
        end = match.end()
        group = braced(text, end)
        if group is not None:
            found = group[0]
        elif end < len(text) and text[end] not in "{":
            token = re.match(r"[^\s$]+", text[end:])
            if token and match.group(0).endswith((" ", "\t")):
                found = token.group(0)
    return None if found is None else found.strip()


def after_answer_phrase(text: str) -> str | None:
    """Text after the last "answer is" / "Answer:" phrase, up to its line's end, else None."""
    matches = list(_ANSWER.finditer(text))
    if not matches:
        return None
    rest = text[matches[-1].end() :]
    for opener, closer in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if rest.startswith(opener):
            close = rest.find(closer, len(opener))
            if close > 0:
                return rest[len(opener) : close].strip()
    line = rest.split("\n", 1)[0].strip().strip("*").strip()
    line = _TRAILER.sub("", line).strip()
    return line or None


def last_number(text: str) -> str | None:
    """The last number written in ``text`` (thousands separators kept), else None."""
    numbers = _NUMBER.findall(text)
    return numbers[-1] if numbers else None


def extract_math_answer(response: str) -> str | None:
    """The final answer in ``response`` as a string, or None when none can be found."""
    text = strip_thinking(response)
    boxed = last_boxed(text)
    if boxed:
        return boxed
    phrase = after_answer_phrase(text)
    if phrase:
        inner = last_boxed(phrase)
        if inner is None and _BOX.search(phrase):
            return None  # a box that never closes: the response was cut off
        return inner or phrase
    return last_number(text)
