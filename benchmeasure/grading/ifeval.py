"""IFEval instruction checks (Zhou et al., 2023), our own implementation of its 25 instruction kinds.

No maintained PyPI package provides these checks on their own (lm-eval carries them inside a
framework that pulls in torch), so they are implemented here from the published instruction
definitions, one small function per kind, each tested in ``tests/test_grading_ifeval.py``.

An item's instructions are given as JSON, either a list of ``{"id": ..., "kwargs": {...}}``
or the dataset-row form ``{"instruction_id_list": [...], "kwargs": [{...}, ...]}``. A
response is correct when it follows every instruction (IFEval's "prompt-level strict"
accuracy); ``loose=True`` also accepts it when a variant with the first and/or last line or
the markdown asterisks removed follows them all ("loose"). ``language:response_language``
and the two ``change_case:english_*`` checks use ``langdetect`` (seeded, so repeatable).
"""

from __future__ import annotations

import json
import re

from benchmeasure.base.errors import fail
from benchmeasure.grading.registry import GRADERS

RELATIONS = ("less than", "at least")


def _compare(count: int, relation: str, target: int) -> bool:
    if relation == "less than":
        return count < target
    if relation == "at least":
        return count >= target
    fail(f"ifeval: relation must be one of {RELATIONS}, got {relation!r}")


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


def _sentences(text: str) -> list[str]:
    # split after . ! ? followed by space and a capital/digit/quote, keeping common abbreviations whole
    protected = re.sub(r"\b(Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|vs|etc|e\.g|i\.e)\.", r"\1<dot>", text)
    protected = re.sub(r"(\d)\.(\d)", r"\1<dot>\2", protected)
    parts = re.split(r"(?<=[.!?])[\"')\]]*\s+|\n+", protected)
    return [p for p in parts if re.search(r"\w", p)]


def _language(text: str) -> str | None:
    try:
        from langdetect import DetectorFactory, detect
        from langdetect.lang_detect_exception import LangDetectException
    except ImportError:
        fail("ifeval language checks need the 'langdetect' package (pip install langdetect==1.0.9)")
    DetectorFactory.seed = 0
    try:
        return detect(text)
    except LangDetectException:
        return None


def keywords_existence(r, keywords):
    return all(re.search(re.escape(k), r, re.IGNORECASE) for k in keywords)


def keywords_frequency(r, keyword, frequency, relation):
    return _compare(len(re.findall(re.escape(keyword), r, re.IGNORECASE)), relation, frequency)


def keywords_forbidden_words(r, forbidden_words):
    return not any(re.search(rf"\b{re.escape(w)}\b", r, re.IGNORECASE) for w in forbidden_words)


def keywords_letter_frequency(r, letter, let_frequency, let_relation):
    return _compare(r.lower().count(letter.lower()), let_relation, let_frequency)


def language_response_language(r, language):
    return _language(r) == language


def length_number_sentences(r, num_sentences, relation):
    return _compare(len(_sentences(r)), relation, num_sentences)


def length_number_paragraphs(r, num_paragraphs):
    paragraphs = re.split(r"\s?\*\*\*\s?", r)
    for i, paragraph in enumerate(paragraphs):
        if not paragraph.strip() and 0 < i < len(paragraphs) - 1:
            return False  # an empty paragraph between two dividers
    return len([p for p in paragraphs if p.strip()]) == num_paragraphs


def length_number_words(r, num_words, relation):
    return _compare(len(_words(r)), relation, num_words)


def length_nth_paragraph_first_word(r, num_paragraphs, nth_paragraph, first_word):
    paragraphs = [p for p in re.split(r"\n\s*\n", r) if p.strip()]
    if len(paragraphs) != num_paragraphs or not 1 <= nth_paragraph <= len(paragraphs):
        return False
    words = paragraphs[nth_paragraph - 1].split()
    found = re.sub(r"^\W+|\W+$", "", words[0]).lower() if words else ""
    return found == first_word.strip().lower()


def content_number_placeholders(r, num_placeholders):
    return len(re.findall(r"\[[^\[\]\n]+\]", r)) >= num_placeholders


def content_postscript(r, postscript_marker):
    # "P.S." also matches "P. S.", "p.s."; the marker must start a line
    pattern = r"\.\s?".join(re.escape(part) for part in postscript_marker.strip().split("."))
    return re.search(rf"^\s*{pattern}", r, re.IGNORECASE | re.MULTILINE) is not None


def format_number_bullet_lists(r, num_bullets):
    bullets = re.findall(r"^\s*(?:\*[^\*]|-\s)", r, re.MULTILINE)
    return len(bullets) == num_bullets


def format_constrained_response(r):
    return any(option in r for option in ("My answer is yes.", "My answer is no.", "My answer is maybe."))


def format_number_highlighted_sections(r, num_highlights):
    spans = re.findall(r"\*\*([^\n*]+)\*\*", r)
    single = re.findall(r"(?<!\*)\*([^\n*]+)\*(?!\*)", r)
    return len([s for s in spans + single if s.strip()]) >= num_highlights


def format_multiple_sections(r, section_spliter, num_sections):
    parts = re.split(rf"\s?{re.escape(section_spliter)}\s?\d+\s?", r)
    return len(parts) - 1 >= num_sections


def format_json_format(r):
    text = r.strip()
    text = re.sub(r"^```(?:json|JSON|Json)?\s*", "", text)
    text = re.sub(r"\s*```$", "", text)
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def format_title(r):
    return any(t.strip() for t in re.findall(r"<<([^\n]+?)>>", r))


def combination_two_responses(r):
    parts = [p.strip() for p in r.split("******")]
    non_empty = [p for p in parts if p]
    if len(non_empty) != 2 or any(not p for p in parts[1:-1]):
        return False
    return non_empty[0] != non_empty[1]


def combination_repeat_prompt(r, prompt_to_repeat):
    return r.strip().lower().startswith(prompt_to_repeat.strip().lower())


def startend_end_checker(r, end_phrase):
    return r.strip().strip('"').lower().endswith(end_phrase.strip().lower())


def startend_quotation(r):
    text = r.strip()
    return len(text) > 1 and text[0] == '"' and text[-1] == '"'


def case_capital_word_frequency(r, capital_frequency, capital_relation):
    capitals = [w for w in re.findall(r"[A-Za-z][A-Za-z'-]*", r) if w.isupper()]
    return _compare(len(capitals), capital_relation, capital_frequency)


def case_english_capital(r):
    return r.isupper() and _language(r) == "en"


def case_english_lowercase(r):
    return r.islower() and _language(r) == "en"


def punctuation_no_comma(r):
    return "," not in r


CHECKS = {
    "keywords:existence": keywords_existence,
    "keywords:frequency": keywords_frequency,
    "keywords:forbidden_words": keywords_forbidden_words,
    "keywords:letter_frequency": keywords_letter_frequency,
    "language:response_language": language_response_language,
    "length_constraints:number_sentences": length_number_sentences,
    "length_constraints:number_paragraphs": length_number_paragraphs,
    "length_constraints:number_words": length_number_words,
    "length_constraints:nth_paragraph_first_word": length_nth_paragraph_first_word,
    "detectable_content:number_placeholders": content_number_placeholders,
    "detectable_content:postscript": content_postscript,
    "detectable_format:number_bullet_lists": format_number_bullet_lists,
    "detectable_format:constrained_response": format_constrained_response,
    "detectable_format:number_highlighted_sections": format_number_highlighted_sections,
    "detectable_format:multiple_sections": format_multiple_sections,
    "detectable_format:json_format": format_json_format,
    "detectable_format:title": format_title,
    "combination:two_responses": combination_two_responses,
    "combination:repeat_prompt": combination_repeat_prompt,
    "startend:end_checker": startend_end_checker,
    "startend:quotation": startend_quotation,
    "change_case:capital_word_frequency": case_capital_word_frequency,
    "change_case:english_capital": case_english_capital,
    "change_case:english_lowercase": case_english_lowercase,
    "punctuation:no_comma": punctuation_no_comma,
}


def parse_instructions(spec) -> list[tuple[str, dict]]:
    """``[(instruction_id, kwargs), ...]`` from a JSON string, a list or a dataset-row dict."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError as exc:
            fail(f"ifeval: instructions are not valid JSON ({exc})")
    if isinstance(spec, dict) and "instruction_id_list" in spec:
        ids = spec["instruction_id_list"]
        kwargs = spec.get("kwargs")
        kwargs = [{}] * len(ids) if kwargs is None and isinstance(ids, list) else kwargs
        if not isinstance(ids, list) or not isinstance(kwargs, list) or len(kwargs) != len(ids):
            fail("ifeval: instruction_id_list and kwargs must be lists of the same length")
        spec = [{"id": i, "kwargs": k} for i, k in zip(ids, kwargs)]
    if not isinstance(spec, list) or not spec:
        fail("ifeval: instructions must be a non-empty list of {'id': ..., 'kwargs': {...}}")
    parsed = []
    for n, entry in enumerate(spec, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            fail(f"ifeval: instruction #{n} must be an object with a string 'id'")
        if entry["id"] not in CHECKS:
            fail(f"ifeval: instruction #{n}: unknown id {entry['id']!r}")
        kwargs = {k: v for k, v in (entry.get("kwargs") or {}).items() if v is not None}
        parsed.append((entry["id"], kwargs))
    return parsed


def follows(response: str, instruction_id: str, kwargs: dict) -> bool:
    """Whether ``response`` follows one instruction; InputError for wrong kwargs."""
    try:
        return bool(CHECKS[instruction_id](response, **kwargs))
    except TypeError as exc:
        fail(f"ifeval: {instruction_id}: bad kwargs {sorted(kwargs)} ({exc})")


def _loose_variants(response: str) -> list[str]:
    lines = response.split("\n")
    bodies = [response, "\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip(), "\n".join(lines[1:-1]).strip()]
    return bodies + [b.replace("*", "") for b in bodies]


def check_reference(reference: str, policy=None) -> str | None:
    """Why ``reference`` is not instruction JSON the checks accept, or None."""
    from benchmeasure.base.errors import InputError

    try:
        parse_instructions(reference)
    except InputError as exc:
        return f"ifeval reference: {exc}"
    return None


@GRADERS.add("ifeval", options=("instructions", "loose"), check_reference=check_reference,
             reference_option="instructions", benchmarks=("ifeval",))
def grade_ifeval(response: str, reference: str = "", instructions=None, loose: bool = False) -> bool:
    """1/0 verdict: the response follows every instruction.

    Parameters
    ----------
    response : str
    reference : str
        The instruction JSON when ``instructions`` is not given (how BenchFill stores an
        IFEval item's "answer").
    instructions : str, list or dict, optional
    loose : bool
        IFEval's loose criterion (see module docstring).
    """
    parsed = parse_instructions(instructions if instructions is not None else reference)
    variants = _loose_variants(response) if loose else [response]
    return any(v.strip() and all(follows(v, i, k) for i, k in parsed) for v in variants)
