"""Rewriter replies parsed back into children (benchmeasure.benchfill.prompts.parse_child), including IFEval's,
whose answer is a JSON list of instructions (propose/configs/ifeval.toml)."""

import json

import pytest

from benchmeasure.benchfill.gaps import read_pool
from benchmeasure.benchfill.prompts import parse_child
from benchmeasure.grading import grade
from benchmeasure.verifier.llm_client import MalformedReply
from benchmeasure.verifier.validity import reference_parseable

INSTRUCTIONS = [{"id": "punctuation:no_comma", "kwargs": {}},
                {"id": "length_constraints:number_words", "kwargs": {"num_words": 5, "relation": "at least"}}]


def test_ifeval_answer_list_is_kept_as_the_json_the_grader_reads(tmp_path):
    reply = "```json\n" + json.dumps({"question": "Describe a cat without commas.", "answer": INSTRUCTIONS}) + "\n```"
    child = parse_child(reply)
    assert json.loads(child["answer"]) == INSTRUCTIONS
    assert reference_parseable(child["answer"], "ifeval").ok
    assert grade("ifeval", "A cat is a small soft animal", child["answer"])
    assert not grade("ifeval", "A cat, small and soft, purrs", child["answer"])
    # the same text as a pool item with that answer (children and originals compare alike)
    pool = tmp_path / "test.jsonl"
    pool.write_text(json.dumps({"item_id": 0, "prompt": "p", "instructions": INSTRUCTIONS}) + "\n")
    assert read_pool(pool, "prompt", "instructions")["0"][1] == child["answer"]


def test_ifeval_dataset_row_object_is_accepted():
    row = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    child = parse_child(json.dumps({"question": "Q", "answer": row}))
    assert json.loads(child["answer"]) == row and reference_parseable(child["answer"], "ifeval").ok


def test_other_answers():
    assert parse_child('{"question": " Q ", "answer": 42}') == {"question": "Q", "answer": "42"}
    assert parse_child('noise {"question": "Q", "answer": " 7 "} noise') == {"question": "Q", "answer": "7"}
    for bad in ("no json here", '{"question": "Q"}', '{"question": "Q", "answer": ""}',
                '{"question": "Q", "answer": true}', '{"question": "Q", "answer": null}',
                '{"question": "", "answer": "1"}',
                '["question", "answer"]', '{"question": "Q", "answer": "1"'):
        with pytest.raises(MalformedReply):
            parse_child(bad)
