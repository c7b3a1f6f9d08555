"""Math grading: is the final answer in a response equal to the reference answer?

``grade_math(response, reference)`` extracts the answer (:mod:`.extract`), normalizes both
sides (dollar signs, ``\\left``/``\\right``, spacing commands, ``\\dfrac``/``\\tfrac``,
degrees, percent, ``\\text{…}`` units after a number, common unit words, thousands
separators, a leading ``x =``), then decides in three steps, cheapest first:

1. exact match of the normalized strings;
2. numeric match: both sides are numbers (integers, decimals, ``a/b``, ``\\frac{a}{b}``). Two
   exact numbers (integers and fractions) must be equal as rationals; a tolerance applies only
   when at least one side is a decimal with a fractional part (a rounded value), and then the
   two agree when |a − b| ≤ max(``rel_tol``·max(|a|, |b|), ``abs_tol``), computed exactly. So a
   tolerance never makes two different integers equal (1396202 vs 1396203), and integers of
   any length are compared digit by digit, never converted to floats;
3. symbolic match through latex2sympy2_extended and SymPy in a worker process with a time
   limit (:mod:`.symbolic`); a timeout counts as not equal.

Answers with several parts are compared part by part: intervals and tuples (bracket types
must match, order matters), sets ``\\{…\\}`` and bare comma lists (order does not matter).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from benchmeasure.grading.extract import braced, extract_math_answer
from benchmeasure.grading.registry import GRADERS
from benchmeasure.grading.symbolic import shared_checker

_UNIT_WORDS = (
    "square units|square feet|square inches|square meters|square centimeters|sq units|units|unit|"
    "degrees|degree|cm|mm|km|m|meters|meter|inches|inch|in|feet|foot|ft|yards|yd|miles|mph|"
    "dollars|dollar|cents|cent|hours|hour|hrs|minutes|minute|mins|seconds|second|sec|s|days|day|"
    "weeks|years|grams|gram|g|kg|pounds|lbs|liters|ml|l|people|students|ways|points|pages|apples"
)
_TRAILING_UNIT = re.compile(rf"^(.*?\d)\s*(?:{_UNIT_WORDS})\^?\{{?[23]?\}}?\.?$", re.IGNORECASE)
_THOUSANDS = re.compile(r"^-?\d{1,3}(,\d{3})+(\.\d+)?$")
_PLAIN_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)$")
_FRACTION = re.compile(r"^([-+]?)\\frac\{([-+]?\d+)\}\{([-+]?\d+)\}$")
_SHORT_FRACTION = re.compile(r"^([-+]?)\\frac(\d)(\d)$")
_SLASH = re.compile(r"^([-+]?\d+)/(\d+)$")
_INTEGER = re.compile(r"^([-+]?)0*(\d+)$")
_DECIMAL_FRACTION = re.compile(r"\.\d*[1-9]")  # a decimal point followed by a nonzero digit
# Numbers longer than this are not converted (Python refuses int() of over 4300 digits, and no
# reference answer is that long); integers of any length are still compared exactly as digit strings.
MAX_NUMBER_CHARS = 1000
_ASSIGNMENT = re.compile(r"^[a-zA-Z](?:_\{?\w+\}?)?\s*=\s*(?!=)")
_TEXT_CMD = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname)\s*(?=\{)")


def _unwrap_text(s: str) -> str:
    """Drop ``\\text{…}`` after a number (a unit) and unwrap ``\\text{…}`` elsewhere."""
    out = []
    i = 0
    while True:
        match = _TEXT_CMD.search(s, i)
        if match is None:
            out.append(s[i:])
            break
        group = braced(s, match.end())
        if group is None:
            out.append(s[i:])
            break
        before = "".join(out) + s[i : match.start()]
        content, end = group
        is_unit = re.search(r"\d\s*$", before) is not None and re.fullmatch(r"\s*[a-zA-Z][a-zA-Z ^2-3]*", content)
        out.append(s[i : match.start()])
        if not is_unit:
            out.append(content)
        i = end
    return "".join(out)


def normalize(answer: str) -> str:
    """Canonical string form of a math answer (see module docstring); pure string edits."""
    s = answer.strip()
    for wrapper in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if s.startswith(wrapper[0]) and s.endswith(wrapper[1]) and len(s) > len(wrapper[0]) + len(wrapper[1]):
            s = s[len(wrapper[0]) : -len(wrapper[1])].strip()
    s = s.replace("\\$", "").replace("$", "")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("\\dbinom", "\\binom")
    s = re.sub(r"\\(?:left|right|big|Big|bigg|Bigg)(?![a-zA-Z])", "", s)
    s = re.sub(r"\\(?:displaystyle|!|,|;|:|quad|qquad)", "", s)
    s = s.replace("\\ ", " ").replace("~", " ").replace("{,}", ",")
    s = re.sub(r"\^\s*\{?\\circ\}?|°|\\circ|\\degree", "", s)
    s = s.replace("\\%", "").replace("%", "")
    s = _unwrap_text(s)
    s = s.strip().rstrip(".").strip()
    unit = _TRAILING_UNIT.match(s)
    if unit:
        s = unit.group(1)
    s = _ASSIGNMENT.sub("", s)
    s = re.sub(r"\s+", "", s)
    if _THOUSANDS.match(s):
        s = s.replace(",", "")
    return s


def to_number(s: str) -> Fraction | float | None:
    """A normalized answer's value when it is a plain number or fraction, else None.

    None too for a number of more than :data:`MAX_NUMBER_CHARS` characters (see :func:`same_integer`).
    """
    if len(s) > MAX_NUMBER_CHARS:
        return None
    if _PLAIN_NUMBER.match(s):
        return Fraction(s)
    for pattern in (_FRACTION, _SHORT_FRACTION):
        match = pattern.match(s)
        if match:
            sign, num, den = match.groups()
            if int(den) == 0:
                return None
            value = Fraction(int(num), int(den))
            return -value if sign == "-" else value
    match = _SLASH.match(s)
    if match and int(match.group(2)) != 0:
        return Fraction(int(match.group(1)), int(match.group(2)))
    return None


def split_top_level(s: str, separator: str = ",") -> list[str]:
    """Split at ``separator`` outside any brackets or braces."""
    parts, depth, start = [], 0, 0
    i = 0
    while i < len(s):
        char = s[i]
        if char == "\\" and i + 1 < len(s) and s[i + 1] in "{}":
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
            continue
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(s[start:i])
            start = i + 1
        i += 1
    parts.append(s[start:])
    return parts


def structure(s: str) -> tuple[str, str, list[str]] | None:
    """``(kind, brackets, parts)`` for a multi-part answer, else None.

    kind is ``"ordered"`` for intervals and tuples (brackets such as ``"[)"`` must match) and
    ``"unordered"`` for sets and bare comma lists.
    """
    if s.startswith("\\{") and s.endswith("\\}"):
        return "unordered", "{}", split_top_level(s[2:-2])
    if len(s) >= 2 and s[0] in "([" and s[-1] in ")]" and len(split_top_level(s[1:-1])) > 1:
        inner = s[1:-1]
        if len(split_top_level(s)) == 1:  # the brackets enclose the whole answer
            return "ordered", s[0] + s[-1], split_top_level(inner)
    parts = split_top_level(s)
    if len(parts) > 1:
        return "unordered", "", parts
    return None


def same_integer(a: str, b: str) -> bool | None:
    """Whether two normalized integers (any length) are equal, by their digits; None unless both are integers."""
    ma, mb = _INTEGER.match(a), _INTEGER.match(b)
    if ma is None or mb is None:
        return None
    sign_a = "-" if ma.group(1) == "-" and ma.group(2) != "0" else ""
    sign_b = "-" if mb.group(1) == "-" and mb.group(2) != "0" else ""
    return (sign_a, ma.group(2)) == (sign_b, mb.group(2))


def numbers_equal(pred: str, ref: str, a: Fraction, b: Fraction, rel_tol: float, abs_tol: float) -> bool:
    """Numeric match (module docstring, step 2): exact unless one side is a decimal with a fractional part."""
    if a == b:
        return True
    if not (_DECIMAL_FRACTION.search(pred) or _DECIMAL_FRACTION.search(ref)):
        return False  # integers and fractions are exact: no tolerance
    if not (math.isfinite(rel_tol) and math.isfinite(abs_tol)):
        return False
    return abs(a - b) <= max(Fraction(rel_tol) * max(abs(a), abs(b)), Fraction(abs_tol))


def _scalar_equal(pred: str, ref: str, rel_tol: float, abs_tol: float, symbolic: bool, timeout_s: float) -> bool:
    if pred == ref:
        return True
    integers = same_integer(pred, ref)
    if integers is not None:
        return integers
    a, b = to_number(pred), to_number(ref)
    if a is not None and b is not None:
        return numbers_equal(pred, ref, a, b, rel_tol, abs_tol)
    if not symbolic or not pred or not ref or max(len(pred), len(ref)) > MAX_NUMBER_CHARS:
        return False
    return shared_checker().equal(pred, ref, timeout_s) is True


def answers_equal(
    pred: str,
    ref: str,
    rel_tol: float = 1e-6,
    abs_tol: float = 1e-9,
    symbolic: bool = True,
    timeout_s: float = 5.0,
) -> bool:
    """Whether an extracted answer equals the reference (both raw strings; normalized here)."""
    p, r = normalize(pred), normalize(ref)
    if not p or not r:
        return False
    if p == r:
        return True
    sp, sr = structure(p), structure(r)
    if sp is None and sr is None:
        return _scalar_equal(p, r, rel_tol, abs_tol, symbolic, timeout_s)
    if sp is None or sr is None or sp[0] != sr[0] or sp[1] != sr[1] or len(sp[2]) != len(sr[2]):
        return False
    kind, _, pred_parts = sp
    ref_parts = list(sr[2])
    if kind == "ordered":
        return all(answers_equal(x, y, rel_tol, abs_tol, symbolic, timeout_s) for x, y in zip(pred_parts, ref_parts))
    for part in pred_parts:  # unordered: match each part to a distinct reference part
        for j, candidate in enumerate(ref_parts):
            if answers_equal(part, candidate, rel_tol, abs_tol, symbolic, timeout_s):
                del ref_parts[j]
                break
        else:
            return False
    return True


def check_reference(reference: str, policy) -> str | None:
    """Why ``reference`` is not a usable math answer (validity rule 2), or None when it is.

    ``policy`` supplies ``max_answer_chars`` and ``parse_timeout_s`` (a verifier ``ValidityPolicy``).
    """
    answer = reference.strip()
    if not answer or len(answer) > policy.max_answer_chars:
        return f"math reference must be 1 to {policy.max_answer_chars} characters"
    depth = 0
    for char in answer.replace("\\{", "").replace("\\}", ""):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            break
    if depth != 0:
        return f"math reference {answer!r} has unbalanced braces"
    normalized = normalize(answer)
    if to_number(normalized) is not None or shared_checker().parses(normalized, policy.parse_timeout_s):
        return None
    return f"math reference {answer!r} cannot be parsed"


def same_answer(a: str, b: str) -> bool:
    """Whether two math references are the same answer (exact or numeric; no symbolic worker)."""
    return answers_equal(a, b, symbolic=False)


@GRADERS.add("math", options=("rel_tol", "abs_tol", "symbolic", "timeout_s"), check_reference=check_reference,
             same_answer=same_answer, extract=extract_math_answer,
             benchmarks=("aime24", "aime25", "aime26", "amc23", "gaokao2023en", "math500",
                         "aime*", "amc*", "math*", "gaokao*", "gsm*"))
def grade_math(response: str, reference: str, **options) -> bool:
    """1/0 verdict for a math response: extract its final answer and compare (module docstring).

    Options: ``rel_tol``, ``abs_tol``, ``symbolic`` (bool), ``timeout_s`` (per symbolic comparison).
    """
    answer = extract_math_answer(response)
    if answer is None:
        return False
    return answers_equal(answer, reference, **options)
