"""IFEval checks: for every instruction kind, one response that follows it and one that does not."""

from __future__ import annotations

import json

import pytest

from benchmeasure.base.errors import InputError
from benchmeasure.grading import grade
from benchmeasure.grading.ifeval import CHECKS, follows, parse_instructions

LONG_EN = "the quick brown fox jumps over the lazy dog while the farmer watches from the old wooden barn"

# instruction id -> (kwargs, response that follows, response that does not)
CASES = {
    "keywords:existence": ({"keywords": ["owl", "night"]}, "An owl hunts at Night.", "An owl hunts by day."),
    "keywords:frequency": ({"keyword": "tea", "frequency": 2, "relation": "at least"}, "Tea, then TEA.", "Tea."),
    "keywords:forbidden_words": ({"forbidden_words": ["bad"]}, "A badge is fine.", "That is Bad."),
    "keywords:letter_frequency": ({"letter": "z", "let_frequency": 3, "let_relation": "less than"}, "zz", "Zzz"),
    "language:response_language": (
        {"language": "de"},
        "Der schnelle braune Fuchs springt über den faulen Hund und der Bauer schaut zu.",
        LONG_EN,
    ),
    "length_constraints:number_sentences": (
        {"num_sentences": 3, "relation": "less than"},
        "One. Two here, e.g. this.",
        "One. Two. Three.",
    ),
    "length_constraints:number_paragraphs": ({"num_paragraphs": 2}, "First.\n***\nSecond.", "A\n***\n***\nB"),
    "length_constraints:number_words": ({"num_words": 5, "relation": "at least"}, "one two three four five", "one two"),
    "length_constraints:nth_paragraph_first_word": (
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "First we go.\n\n**Then,** we stop.",
        "First we go.\n\nAfter that we stop.",
    ),
    "detectable_content:number_placeholders": ({"num_placeholders": 2}, "Dear [name] of [city]", "Dear [name]"),
    "detectable_content:postscript": ({"postscript_marker": "P.S."}, "Hi.\n\nP. S. bye", "Hi. PS bye"),
    "detectable_format:number_bullet_lists": ({"num_bullets": 2}, "* a\n* b", "* a\n* b\n- c"),
    "detectable_format:constrained_response": ({}, "My answer is maybe.", "Maybe."),
    "detectable_format:number_highlighted_sections": ({"num_highlights": 2}, "*one* and **two**", "*one* and ** **"),
    "detectable_format:multiple_sections": (
        {"section_spliter": "SECTION", "num_sections": 2},
        "SECTION 1\nA\nSECTION 2\nB",
        "SECTION 1\nA",
    ),
    "detectable_format:json_format": ({}, '```json\n{"a": 1}\n```', "{a: 1}"),
    "detectable_format:title": ({}, "<<My Poem>>\nRoses", "<< >>\nRoses"),
    "combination:two_responses": ({}, "Yes.\n******\nNo.", "Yes.\n******\nYes."),
    "combination:repeat_prompt": ({"prompt_to_repeat": "Say hi."}, "say hi. Hi!", "Hi! Say hi."),
    "startend:end_checker": ({"end_phrase": "Any questions?"}, 'Done. Any questions?"', "Any questions? Done."),
    "startend:quotation": ({}, '"quoted"', '"half'),
    "change_case:capital_word_frequency": (
        {"capital_frequency": 2, "capital_relation": "at least"},
        "USE CAPS here",
        "Use Caps here",
    ),
    "change_case:english_capital": ({}, LONG_EN.upper(), LONG_EN),
    "change_case:english_lowercase": ({}, LONG_EN, LONG_EN.capitalize()),
    "punctuation:no_comma": ({}, "No commas here.", "One, two."),
}


def test_every_kind_has_a_case():
    assert set(CASES) == set(CHECKS) and len(CHECKS) == 25


@pytest.mark.parametrize("instruction_id", sorted(CASES))
def test_instruction_kind(instruction_id):
    kwargs, good, bad = CASES[instruction_id]
    assert follows(good, instruction_id, kwargs) is True
    assert follows(bad, instruction_id, kwargs) is False


def test_grade_needs_every_instruction():
    spec = [{"id": "punctuation:no_comma", "kwargs": {}}, {"id": "startend:quotation"}]
    assert grade("ifeval", '"no commas"', "", instructions=spec)
    assert not grade("ifeval", '"a, b"', "", instructions=spec)
    assert not grade("ifeval", "no commas", json.dumps(spec))  # the reference carries the JSON


def test_dataset_row_form_and_null_kwargs():
    row = {"instruction_id_list": ["keywords:existence"], "kwargs": [{"keywords": ["sun"], "language": None}]}
    assert grade("ifeval", "The sun.", json.dumps(row))


def test_loose_accepts_a_chatty_first_line():
    spec = [{"id": "startend:quotation"}]
    response = 'Sure, here it is:\n"quoted"'
    assert not grade("ifeval", response, "", instructions=spec)
    assert grade("ifeval", response, "", instructions=spec, loose=True)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("not json", "not valid JSON"),
        ("[]", "non-empty list"),
        ('[{"id": "nope"}]', "unknown id 'nope'"),
        ('[{"kwargs": {}}]', "string 'id'"),
        ('[{"id": "keywords:existence", "kwargs": {"words": ["x"]}}]', "bad kwargs"),
        ('{"instruction_id_list": ["punctuation:no_comma"], "kwargs": []}', "same length"),
        ('[{"id": "keywords:frequency", "kwargs": {"keyword": "a", "frequency": 1, "relation": "about"}}]', "relation"),
    ],
)
def test_bad_instructions(spec, message):
    with pytest.raises(InputError, match=message):
        grade("ifeval", "text", "", instructions=spec)


def test_parse_instructions_forms():
    assert parse_instructions('[{"id": "punctuation:no_comma"}]') == [("punctuation:no_comma", {})]
