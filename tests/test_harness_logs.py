"""benchmeasure/harness through ``prepare_response_matrix.py --from``, on real harness logs.

The fixtures under tests/fixtures/harness_logs were written by lmms-eval 0.7.3, lm-eval 0.4.13 and
lighteval 0.13.0 against a real vLLM server (see its README); every error case runs on an edited copy.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmeasure.core.harness import binarize, read_lighteval_log, read_lm_eval_log, read_lmms_log
from benchmeasure.grading import grade
from conftest import ROOT, assert_rejected, run_in_process, run_script

FIX = ROOT / "tests" / "fixtures" / "harness_logs"
MODELS = ("smollm2-greedy", "smollm2-t07")


def lmms(model):
    return FIX / "lmms-eval" / model


def lm_eval(model):
    return FIX / "lm-eval" / model


def prepare(*args, process=False):
    """``prepare_response_matrix.py ARGS``: through its entry point in this process, or in a real process
    (``process=True``: one accepted and one rejected conversion per harness)."""
    if process:
        return run_script("prepare_response_matrix.py", *args)
    return run_in_process("prepare", *args, prog="prepare_response_matrix.py")


def read_matrix_csv(path):
    lines = Path(path).read_text().splitlines()
    header = lines[0].split(",")
    return header[1:], {line.split(",")[0]: [int(x) for x in line.split(",")[1:]] for line in lines[1:]}


def samples_of(folder):
    (path,) = [p for p in folder.iterdir() if "samples_" in p.name]
    return path, [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def copy_log(tmp_path, folder, name=None):
    target = tmp_path / (name or folder.name)
    shutil.copytree(folder, target)
    return target


def edit_samples(folder, change):
    """Rewrite the samples file of ``folder`` with ``change(list_of_records) -> list_of_records``."""
    path, records = samples_of(folder)
    path.write_text("".join(json.dumps(r) + "\n" for r in change(records)))
    return path


# ---------------------------------------------------------------- conversions of the real logs

def test_lmms_eval_repeats_are_graded_one_by_one(tmp_path):
    out, rows = tmp_path / "m.csv", tmp_path / "rows.csv"
    result = prepare("--from", "lmms-eval", lmms(MODELS[0]), lmms(MODELS[1]), "--grade", "math", "--n-trials", 3,
                     "--output", out, "--responses-out", rows, process=True)
    assert result.returncode == 0, result.stderr
    items, counts = read_matrix_csv(out)
    for model in MODELS:
        _, records = samples_of(lmms(model))
        records.sort(key=lambda r: r["doc_id"])
        assert items == [str(r["doc_id"]) for r in records]
        assert len(records[0]["filtered_resps"]) == 3  # all repeats logged (take_first_k)
        expected = [sum(grade("math", text, r["target"]) for text in r["filtered_resps"]) for r in records]
        assert counts[model] == expected
    long = rows.read_text().splitlines()
    assert long[0] == "model,item_id,trial,correct"
    assert len(long) - 1 == 2 * len(items) * 3
    assert {line.split(",")[2] for line in long[1:]} == {"0", "1", "2"}
    record = json.loads((tmp_path / "m.csv.json").read_text())
    assert record["settings"]["from"] == "lmms-eval" and record["settings"]["grade"] == "math"
    assert [i["model"] for i in record["inputs"]] == list(MODELS)
    for entry in record["inputs"]:
        assert entry["sha256"] == hashlib.sha256(Path(entry["path"]).read_bytes()).hexdigest()


def test_lm_eval_metric_of_one_filter(tmp_path):
    out = tmp_path / "m.csv"
    result = prepare("--from", "lm-eval", lm_eval(MODELS[0]), lm_eval(MODELS[1]), "--metric", "exact_match",
                     "--filter", "first", "--n-trials", 1, "--output", out)
    assert result.returncode == 0, result.stderr
    _, counts = read_matrix_csv(out)
    for model in MODELS:
        _, records = samples_of(lm_eval(model))
        first = sorted((r for r in records if r["filter"] == "first"), key=lambda r: r["doc_id"])
        assert len(first) == len(records) // 2  # one line per document and filter: no document counted twice
        assert counts[model] == [int(r["exact_match"]) for r in first]


def test_lm_eval_all_repeats_graded(tmp_path):
    out = tmp_path / "m.csv"
    result = prepare("--from", "lm-eval", lm_eval(MODELS[0]), "--filter", "all", "--grade", "math",
                     "--n-trials", 3, "--output", out)
    assert result.returncode == 0, result.stderr
    _, counts = read_matrix_csv(out)
    _, records = samples_of(lm_eval(MODELS[0]))
    chosen = sorted((r for r in records if r["filter"] == "all"), key=lambda r: r["doc_id"])
    assert counts[MODELS[0]] == [sum(grade("math", t, r["target"]) for t in r["filtered_resps"][0]) for r in chosen]


def test_model_name_from_results_file_and_override(tmp_path):
    assert read_lmms_log(lmms(MODELS[1])).model == "smollm2-t07"
    assert read_lm_eval_log(lm_eval(MODELS[0])).model == "smollm2-greedy"
    out = tmp_path / "m.csv"
    result = prepare("--from", "lm-eval", lm_eval(MODELS[0]), "--metric", "exact_match", "--filter", "first",
                     "--model", "renamed", "--n-trials", 1, "--output", out)
    assert result.returncode == 0, result.stderr
    assert out.read_text().splitlines()[1].startswith("renamed,")


def test_the_samples_file_itself_is_accepted(tmp_path):
    path, _ = samples_of(lmms(MODELS[0]))
    result = prepare("--from", "lmms-eval", path, "--grade", "math", "--n-trials", 3, "--output", tmp_path / "m.csv")
    assert result.returncode == 0, result.stderr


def test_metric_values_are_binarized_at_the_threshold(tmp_path):
    log = copy_log(tmp_path, lm_eval(MODELS[0]))

    def fractional(records):
        for r in records:
            r["exact_match"] = 0.7 if r["doc_id"] == 1 else 0.2
        return records

    edit_samples(log, fractional)
    for threshold, expected in (("0.5", [0, 1, 0, 0]), ("0.8", [0, 0, 0, 0])):
        out = tmp_path / f"m{threshold}.csv"
        result = prepare("--from", "lm-eval", log, "--metric", "exact_match", "--filter", "first",
                         "--threshold", threshold, "--n-trials", 1, "--output", out)
        assert result.returncode == 0, result.stderr
        assert read_matrix_csv(out)[1][MODELS[0]] == expected
    assert binarize(True, 0.5, "x") == 1 and binarize(0.0, 0.5, "x") == 0 and binarize(0.5, 0.5, "x") == 1


def test_csv_path_still_works(write_csv, tmp_path):
    path = write_csv("r.csv", "model,item_id,trial,correct\nm,q,0,1\nm,q,1,0")
    result = prepare(path, "--n-trials", 2, "--output", tmp_path / "m.csv")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "m.csv").read_text() == "model,q\nm,1\n"


# ---------------------------------------------------------------- rejected inputs (edited copies)

def _drop_doc(records):
    return [r for r in records if r["doc_id"] != 3]


def _fail_request(records):
    records[1]["filtered_resps"][2] = "[LMMS_EVAL_REQUEST_FAILED after 1 retries] Connection error."
    return records


def _duplicate_doc(records):
    return [*records, records[0]]


CASES = {
    "one metric value for 3 responses, no --grade": (
        lambda t: ["--from", "lmms-eval", lmms(MODELS[0]), "--metric", "exact_match", "--n-trials", 3],
        ("doc_id 0", "3 responses but one 'exact_match' value", "--grade")),
    "trial count differs from --n-trials": (
        lambda t: ["--from", "lmms-eval", lmms(MODELS[0]), "--grade", "math", "--n-trials", 2],
        ("samples_tiny_arith.jsonl doc_id 0", "has 3 trials, expected --n-trials 2")),
    "one response per document but --n-trials 3": (
        lambda t: ["--from", "lm-eval", lm_eval(MODELS[0]), "--filter", "first", "--grade", "math", "--n-trials", 3],
        ("every document has one response but --n-trials is 3", "take_first_k")),
    "same model twice": (
        lambda t: ["--from", "lmms-eval", lmms(MODELS[0]), lmms(MODELS[0]), "--grade", "math", "--n-trials", 3],
        ("model 'smollm2-greedy' already comes from", "the same model twice")),
    "unknown metric": (
        lambda t: ["--from", "lm-eval", lm_eval(MODELS[0]), "--filter", "first", "--metric", "acc",
                   "--n-trials", 1],
        ("doc_id 0", "no metric 'acc'", "exact_match")),
    "unknown filter": (
        lambda t: ["--from", "lm-eval", lm_eval(MODELS[0]), "--filter", "strict", "--metric", "exact_match",
                   "--n-trials", 1],
        ("no filter 'strict'", "all, first")),
    "--model with two logs": (
        lambda t: ["--from", "lmms-eval", lmms(MODELS[0]), lmms(MODELS[1]), "--grade", "math", "--model", "x",
                   "--n-trials", 3],
        ("--model renames a single log",)),
    "no such log": (
        lambda t: ["--from", "lmms-eval", t / "nowhere", "--grade", "math", "--n-trials", 3],
        ("nowhere: no such file or folder",)),
    "folder with several logs": (
        lambda t: ["--from", "lmms-eval", FIX / "lmms-eval", "--grade", "math", "--n-trials", 3],
        ("holds 2 lmms-eval sample logs", "give one file per model")),
    # (an lm-eval log names its metrics, and one named metric is used without --metric; lmms-eval names none)
    "neither --metric nor --grade": (
        lambda t: ["--from", "lmms-eval", FIX / "lmms-eval" / "smollm2-greedy", "--n-trials", 1],
        ("give --metric NAME",)),
    "--metric without --from": (
        lambda t: [FIX / "tasks" / "tiny_arith.jsonl", "--metric", "exact_match", "--n-trials", 1],
        ("--metric needs --from",)),
    "--filter on an lmms-eval log": (
        lambda t: ["--from", "lmms-eval", lmms(MODELS[0]), "--filter", "all", "--grade", "math", "--n-trials", 3],
        ("--filter applies to lm-eval logs only",)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rejected(case, tmp_path):
    make_args, fragments = CASES[case]
    out = tmp_path / "m.csv"
    result = prepare(*make_args(tmp_path), "--output", out, "--responses-out", tmp_path / "rows.csv",
                     process=case == sorted(CASES)[0])
    assert_rejected(result, *fragments)
    assert not out.exists() and not (tmp_path / "rows.csv").exists()


EDITED = {
    "document missing from one model's log": (
        "lmms-eval", _drop_doc, ("{path} (model smollm2-t07): no response for doc_id 3 (present in {other}, "
                                 "model smollm2-greedy)",)),
    "failed lmms-eval request": (
        "lmms-eval", _fail_request, ("doc_id 1", "failed request", "LMMS_EVAL_REQUEST_FAILED")),
    "doc_id twice in one log": ("lmms-eval", _duplicate_doc, ("doc_id 0 appears twice",)),
}


@pytest.mark.parametrize("case", sorted(EDITED))
def test_rejected_edited_log(case, tmp_path):
    harness, change, fragments = EDITED[case]
    edited = copy_log(tmp_path, lmms(MODELS[1]))
    path = edit_samples(edited, change)
    out = tmp_path / "m.csv"
    result = prepare("--from", harness, lmms(MODELS[0]), edited, "--grade", "math", "--n-trials", 3,
                     "--output", out)
    other = samples_of(lmms(MODELS[0]))[0]
    line = assert_rejected(result, *(f.format(path=path, other=other) for f in fragments))
    assert str(path) in line
    assert not out.exists()


def test_task_mismatch_names_both_logs(tmp_path):
    other = copy_log(tmp_path, lmms(MODELS[1]))
    path, _ = samples_of(other)
    renamed = path.with_name(path.name.replace("_samples_tiny_arith", "_samples_other_task"))
    path.rename(renamed)
    result = prepare("--from", "lmms-eval", lmms(MODELS[0]), other, "--grade", "math", "--n-trials", 3,
                     "--output", tmp_path / "m.csv")
    assert_rejected(result, str(renamed), "task 'other_task' differs from 'tiny_arith'")


def test_malformed_line_is_located(tmp_path):
    edited = copy_log(tmp_path, lmms(MODELS[0]))
    path, _ = samples_of(edited)
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:40]
    path.write_text("\n".join(lines) + "\n")
    result = prepare("--from", "lmms-eval", edited, "--grade", "math", "--n-trials", 3, "--output", tmp_path / "m.csv")
    assert_rejected(result, f"{path} line 3: not valid JSON")


# ---------------------------------------------------------------- lighteval (parquet details)

LIGHTEVAL_MODELS = ("smollm2-t07", "smollm2-t10")  # lighteval logs them as openai/<name>


def lighteval(root, model):
    """The model folder ``details/openai/<model>`` of a lighteval output folder ``root``."""
    return root / "details" / "openai" / model


LIGHTEVAL = FIX / "lighteval"


def details_of(folder):
    (path,) = folder.rglob("details_*.parquet")
    return path, pq.read_table(path)


def edit_details(folder, change):
    """Rewrite the details file under ``folder`` with ``change(list_of_rows) -> list_of_rows`` (same schema)."""
    path, table = details_of(folder)
    pq.write_table(pa.Table.from_pylist(change(table.to_pylist()), schema=table.schema), path)
    return path


def copy_lighteval(tmp_path):
    """A copy of the whole lighteval output folder (details and results, so model names stay)."""
    return Path(shutil.copytree(LIGHTEVAL, tmp_path / "lighteval"))


def test_lighteval_samples_are_graded_one_by_one(tmp_path):
    out, rows = tmp_path / "m.csv", tmp_path / "rows.csv"
    result = prepare("--from", "lighteval", *(lighteval(LIGHTEVAL, m) for m in LIGHTEVAL_MODELS), "--grade", "math",
                     "--n-trials", 3, "--output", out, "--responses-out", rows, process=True)
    assert result.returncode == 0, result.stderr
    items, counts = read_matrix_csv(out)
    assert items == ["0", "1", "2", "3"]
    for model in LIGHTEVAL_MODELS:
        _, table = details_of(lighteval(LIGHTEVAL, model))
        records = table.to_pylist()
        assert [r["doc"]["id"] for r in records] != items  # lighteval's row order is not the documents' order
        records.sort(key=lambda r: int(r["doc"]["id"]))
        texts = [r["model_response"]["text"] for r in records]
        assert {len(t) for t in texts} == {3} and {r["doc"]["num_samples"] for r in records} == {3}
        assert {isinstance(r["metric"]["avg@n:n=3"], float) for r in records} == {True}  # one value per document
        expected = [sum(grade("math", t, r["doc"]["choices"][r["doc"]["gold_index"]]) for t in ts)
                    for r, ts in zip(records, texts)]
        assert counts[f"openai/{model}"] == expected
    long = rows.read_text().splitlines()
    assert len(long) - 1 == 2 * 4 * 3 and {line.split(",")[2] for line in long[1:]} == {"0", "1", "2"}


def test_lighteval_model_name_and_paths(tmp_path):
    path, _ = details_of(lighteval(LIGHTEVAL, LIGHTEVAL_MODELS[0]))
    for given in (LIGHTEVAL / "details" / "openai" / LIGHTEVAL_MODELS[0], path.parent, path):
        log = read_lighteval_log(given)
        assert (log.model, log.task, log.path) == ("openai/smollm2-t07", "tiny_arith|0", path)
    alone = tmp_path / "run" / path.parent.name  # no results file beside it: the folder name
    shutil.copytree(path.parent, alone)
    assert read_lighteval_log(alone).model == "run"


def test_lighteval_metric_of_single_samples_binarized(tmp_path):
    root = copy_lighteval(tmp_path)

    def one_sample(records):  # as a task without a sampling metric logs it: one response, one value
        for r in records:
            r["doc"]["num_samples"] = 1
            r["model_response"]["text"] = r["model_response"]["text"][:1]
            r["model_response"]["text_post_processed"] = r["model_response"]["text_post_processed"][:1]
            r["metric"]["avg@n:n=3"] = 0.7 if r["doc"]["id"] == "1" else 0.2
        return records

    edit_details(lighteval(root, LIGHTEVAL_MODELS[0]), one_sample)
    for threshold, expected in (("0.5", [0, 1, 0, 0]), ("0.8", [0, 0, 0, 0])):
        out = tmp_path / f"m{threshold}.csv"
        result = prepare("--from", "lighteval", lighteval(root, LIGHTEVAL_MODELS[0]), "--metric", "avg@n:n=3",
                         "--threshold", threshold, "--n-trials", 1, "--output", out)
        assert result.returncode == 0, result.stderr
        assert read_matrix_csv(out)[1]["openai/smollm2-t07"] == expected
    result = prepare("--from", "lighteval", lighteval(root, LIGHTEVAL_MODELS[0]), "--grade", "math", "--n-trials", 3,
                     "--output", tmp_path / "m.csv")
    assert_rejected(result, "every document has one response but --n-trials is 3", "avg@n")


LIGHTEVAL_CASES = {
    "one metric value for 3 samples, no --grade": (
        ["--metric", "em", "--n-trials", 3], ("doc_id 0", "3 responses but one 'em' value", "--grade")),
    "unknown metric": (["--metric", "acc", "--n-trials", 3], ("doc_id 0", "no metric 'acc'", "avg@n:n=3, em")),
    "trial count differs from --n-trials": (["--grade", "math", "--n-trials", 2],
                                            ("has 3 trials, expected --n-trials 2",)),
    "--filter on a lighteval log": (["--filter", "all", "--grade", "math", "--n-trials", 3],
                                    ("--filter applies to lm-eval logs only",)),
}


@pytest.mark.parametrize("case", sorted(LIGHTEVAL_CASES))
def test_lighteval_rejected(case, tmp_path):
    args, fragments = LIGHTEVAL_CASES[case]
    out = tmp_path / "m.csv"
    result = prepare("--from", "lighteval", lighteval(LIGHTEVAL, LIGHTEVAL_MODELS[0]), *args, "--output", out,
                     "--responses-out", tmp_path / "rows.csv", process=case == sorted(LIGHTEVAL_CASES)[0])
    line = assert_rejected(result, *fragments)
    assert "--filter" in case or str(details_of(lighteval(LIGHTEVAL, LIGHTEVAL_MODELS[0]))[0]) in line
    assert not out.exists() and not (tmp_path / "rows.csv").exists()


def test_lighteval_same_model_twice_and_several_logs(tmp_path):
    folder = lighteval(LIGHTEVAL, LIGHTEVAL_MODELS[0])
    result = prepare("--from", "lighteval", folder, folder, "--grade", "math", "--n-trials", 3,
                     "--output", tmp_path / "m.csv")
    assert_rejected(result, "model 'openai/smollm2-t07' already comes from", "the same model twice")
    result = prepare("--from", "lighteval", LIGHTEVAL / "details", "--grade", "math", "--n-trials", 3,
                     "--output", tmp_path / "m.csv")
    assert_rejected(result, "holds 2 lighteval sample logs", "give one file per model")


def _set_text(doc_id, texts):
    def change(records):
        for r in records:
            if r["doc"]["id"] == doc_id:
                r["model_response"]["text"] = r["model_response"]["text_post_processed"] = texts
        return records
    return change


def _set_doc(doc_id, **values):
    def change(records):
        for r in records:
            if r["doc"]["id"] == doc_id:
                r["doc"].update(values)
        return records
    return change


LIGHTEVAL_EDITED = {
    "document missing from one model's log": (
        lambda rows: [r for r in rows if r["doc"]["id"] != "3"],
        ("{path} (model openai/smollm2-t10): no response for doc_id 3 (present in {other}, "
         "model openai/smollm2-t07)",)),
    "failed request (one empty response)": (_set_text("1", [""]), ("(doc_id 1)", "1 response(s) logged for "
                                                                   "num_samples 3", "failed")),
    "doc_id twice in one log": (lambda rows: [*rows, rows[0]], ("row 5: doc_id 2 appears twice (also row 1)",)),
    "doc id not an index": (_set_doc("1", id="q1"), ("row 2: doc id must be a document index, got 'q1'",)),
    "gold_index outside the choices": (_set_doc("1", gold_index=4), ("(doc_id 1)", "gold_index 4 does not index",)),
}


@pytest.mark.parametrize("case", sorted(LIGHTEVAL_EDITED))
def test_lighteval_rejected_edited_log(case, tmp_path):
    change, fragments = LIGHTEVAL_EDITED[case]
    root = copy_lighteval(tmp_path)
    path = edit_details(lighteval(root, LIGHTEVAL_MODELS[1]), change)
    out = tmp_path / "m.csv"
    result = prepare("--from", "lighteval", lighteval(root, LIGHTEVAL_MODELS[0]), lighteval(root, LIGHTEVAL_MODELS[1]),
                     "--grade", "math", "--n-trials", 3, "--output", out)
    other = details_of(lighteval(root, LIGHTEVAL_MODELS[0]))[0]
    line = assert_rejected(result, *(f.format(path=path, other=other) for f in fragments))
    assert str(path) in line
    assert not out.exists()


def test_lighteval_task_mismatch_and_broken_files(tmp_path):
    root = copy_lighteval(tmp_path)
    path, table = details_of(lighteval(root, LIGHTEVAL_MODELS[1]))
    renamed = path.with_name(path.name.replace("details_tiny_arith|0_", "details_other|0_"))
    path.rename(renamed)
    both = (lighteval(root, LIGHTEVAL_MODELS[0]), lighteval(root, LIGHTEVAL_MODELS[1]))
    result = prepare("--from", "lighteval", *both, "--grade", "math", "--n-trials", 3, "--output", tmp_path / "m.csv")
    assert_rejected(result, str(renamed), "task 'other|0' differs from 'tiny_arith|0'")
    pq.write_table(table.drop_columns(["metric"]), renamed)
    result = prepare("--from", "lighteval", both[1], "--grade", "math", "--n-trials", 3, "--output", tmp_path / "m.csv")
    assert_rejected(result, f"{renamed}: no 'metric' column", "lighteval details file")
    renamed.write_bytes(b"not parquet at all")
    result = prepare("--from", "lighteval", both[1], "--grade", "math", "--n-trials", 3, "--output", tmp_path / "m.csv")
    assert_rejected(result, f"{renamed}: not a readable parquet file")
    pq.write_table(table.slice(0, 0), renamed)
    result = prepare("--from", "lighteval", both[1], "--grade", "math", "--n-trials", 3, "--output", tmp_path / "m.csv")
    assert_rejected(result, f"{renamed}: no samples (empty log)")
    assert not (tmp_path / "m.csv").exists()
