"""scripts/label_validity.py (benchmeasure.analyses.label_validity, benchmeasure.analyses.ability_accuracy)."""

from __future__ import annotations

import contextlib
import io
import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.analyses.label_validity import auc
from conftest import ROOT, assert_rejected, run_script

# easy items b = 0, 1, 2; hard items b = 1.5, 3: hard above easy in 5 of 6 pairs
DIFFICULTY = "item,b_mean,b_sd\n0,0.0,0.1\n1,1.0,0.1\n2,2.0,0.1\n3,1.5,0.1\n4,3.0,0.1\n5,0.5,0.1\n"
LABELS = {"easy": [0, 1, 2], "hard": [3, "4"], "intermediate": [5]}


@pytest.fixture
def files(tmp_path):
    difficulty = tmp_path / "difficulty.csv"
    difficulty.write_text(DIFFICULTY)
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps(LABELS))
    return difficulty, labels


def validity(*args):
    return run_script("label_validity.py", *args)


def test_auc_interval_counts_and_record(files, tmp_path):
    difficulty, labels = files
    out = tmp_path / "v.json"
    result = validity(difficulty, "--labels", labels, "--output", out, "--seed", 3)
    assert result.returncode == 0, result.stderr
    assert "easy 3, hard 2, intermediate 1; 0 fitted items without a label" in result.stdout
    assert re.search(r"AUC P\(b\[hard\] > b\[easy\]\): 0\.833 ", result.stdout)
    record = json.loads(out.read_text())
    summary = record["labels"]
    assert summary["auc"] == pytest.approx(5 / 6)
    assert summary["auc_low"] <= summary["auc"] <= summary["auc_high"] <= 1.0
    assert (summary["easier"]["items"], summary["harder"]["items"]) == (3, 2)
    assert summary["easier"]["mean_b"] == pytest.approx(1.0) and summary["harder"]["median_b"] == pytest.approx(2.25)
    assert summary["label_counts"] == {"easy": 3, "hard": 2, "intermediate": 1}
    assert record["settings"]["seed"] == 3 and len(record["inputs"]) == 2
    # the same seed gives the same interval; the interval is printed as recorded
    again = validity(difficulty, "--labels", labels, "--seed", 3)
    assert again.stdout == result.stdout
    assert f"[{summary['auc_low']:.3f}, {summary['auc_high']:.3f}]" in result.stdout


def test_labels_as_csv_give_the_same_answer_and_flags_choose_the_pair(files, tmp_path):
    difficulty, labels = files
    csv_labels = tmp_path / "labels.csv"
    csv_labels.write_text("item_id,label\n0,basic\n1,basic\n2,basic\n3,advanced\n4,advanced\n")
    result = validity(difficulty, "--labels", csv_labels, "--easier", "basic", "--harder", "advanced", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)["labels"]
    assert record["auc"] == pytest.approx(5 / 6) and record["unlabelled_items"] == 1
    # reversed pair: the AUC is the complement
    reverse = json.loads(validity(difficulty, "--labels", labels, "--easier", "hard", "--harder", "easy",
                                  "--json").stdout)["labels"]
    assert reverse["auc"] == pytest.approx(1 / 6)


def test_ability_beside_accuracy(files, tmp_path):
    difficulty, labels = files
    matrix = tmp_path / "m.csv"
    matrix.write_text("model,a,b,c\nweak,0,1,0\nstrong,2,2,1\nmid,1,1,1\n")
    abilities = tmp_path / "ability.csv"
    abilities.write_text("model,theta_mean,theta_sd,r_hat\nweak,-1.2,0.3,1.0\nmid,0.1,0.2,1.0\nstrong,1.5,0.4,1.0\n")
    result = validity(difficulty, "--labels", labels, "--abilities", abilities, "--matrix", matrix,
                      "--n-trials", 2, "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert [row["model"] for row in record["models"]] == ["strong", "mid", "weak"]
    assert [row["accuracy"] for row in record["models"]] == pytest.approx([5 / 6, 3 / 6, 1 / 6])
    assert [row["correct"] for row in record["models"]] == [5, 3, 1]
    assert record["spearman_theta_accuracy"] == pytest.approx(1.0)
    text = validity(difficulty, "--labels", labels, "--abilities", abilities, "--matrix", matrix,
                    "--n-trials", 2).stdout
    assert re.search(r"strong\s+\+1\.500 ± 0\.400\s+0\.833\s+5/6", text)
    assert "Spearman(θ, accuracy): 1.000" in text
    abilities.write_text("model,theta_mean,theta_sd\nweak,-1.2,0.3\nmid,0.1,0.2\nother,1.5,0.4\n")
    assert_rejected(validity(difficulty, "--labels", labels, "--abilities", abilities, "--matrix", matrix,
                             "--n-trials", 2), "model 'strong'", "is not there")
    abilities.write_text("model,theta_mean,theta_sd\nweak,-1.2,0.3\nmid,nan,0.2\nstrong,1.5,0.4\n")
    assert_rejected(validity(difficulty, "--labels", labels, "--abilities", abilities, "--matrix", matrix,
                             "--n-trials", 2), "line 3, column 'theta_mean'", "not a finite number")


@pytest.mark.parametrize("labels_text, fragments", [
    ('{"easy": [0, 1], "hard": [1, 3]}', ["item '1' is labelled both 'easy' and 'hard'"]),
    ('{"easy": [0, 1], "hard": [3, 99]}', ["1 labelled item(s) are not in", "'99'"]),
    ('{"easy": [0, 1], "advanced": [3, 4]}', ["no item is labelled 'hard' (--harder)", "'advanced' (2)"]),
    ('{"easy": [0, 1], "hard": [3]}', ["only 1 item labelled 'hard'"]),
    ('{"easy": [0, 1], "hard": [3, 4.5]}', ["4.5 is not an item ID"]),
    ('{"easy": [0, 1], "hard": "3"}', ["expected a list of item IDs"]),
    ('{"easy": [0, 1], "hard": [3, 4]', ["not valid JSON"]),
    ("item,label\n0,easy\n1\n", ["line 3: 1 field, the header has 2"]),
    ("item,label\n0,easy\n1,\n", ["line 3: blank label"]),
    ("id,label\n0,easy\n", ["expected columns item (or item_id) and label"]),
])
def test_bad_labels_are_one_line(files, tmp_path, labels_text, fragments):
    difficulty, _ = files
    bad = tmp_path / "bad_labels"
    bad.write_text(labels_text)
    out = tmp_path / "v.json"
    assert_rejected(validity(difficulty, "--labels", bad, "--output", out), *fragments)
    assert not out.exists()


def test_bad_flags_and_outputs(files, tmp_path):
    difficulty, labels = files
    assert_rejected(validity(difficulty, "--labels", labels, "--easier", "easy", "--harder", "easy"), "both 'easy'")
    assert_rejected(validity(difficulty, "--labels", labels, "--abilities", difficulty), "go together")
    assert_rejected(validity(difficulty, "--labels", labels, "--n-boot", "10"), "--n-boot")
    assert_rejected(validity(difficulty, "--labels", labels, "--level", "nan"), "--level")
    before = labels.read_bytes()
    assert_rejected(validity(difficulty, "--labels", labels, "--output", labels))
    assert labels.read_bytes() == before
    assert_rejected(validity(tmp_path / "nope.csv", "--labels", labels), "no such file")


def test_chembench_labels_file_reads_as_published():
    from benchmeasure.analyses.label_validity import read_labels

    labels = read_labels(ROOT / "data" / "chembench" / "difficulty_dict.json")
    assert len(labels) == 2854 and set(labels) == {str(i) for i in range(2854)}
    assert sum(label == "hard" for label in labels.values()) == 22
    assert sum(label == "easy" for label in labels.values()) == 859


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0]), min_size=1, max_size=8),
       st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0]), min_size=1, max_size=8))
def test_auc_equals_the_pair_count(lower, higher):
    pairs = [(h > low) + 0.5 * (h == low) for h in higher for low in lower]
    assert auc(np.array(lower), np.array(higher)) == pytest.approx(sum(pairs) / len(pairs))


# --- fuzz: random labels files (JSON and CSV), through the command's main() in this process ------------------

ITEM = st.one_of(st.sampled_from(["0", "1", "2", "3", "4", "5", "", " ", "9", "x"]), st.integers(-1, 6),
                 st.sampled_from([1.0, True, None, [1]]))
LABEL = st.sampled_from(["easy", "hard", "mid", "", " "])


def run_in_process(argv):
    from benchmeasure.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as stop:
        main(argv)
    return stop.value.code, stdout.getvalue(), stderr.getvalue()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(st.tuples(LABEL, ITEM), max_size=10), as_json=st.booleans())
def test_fuzz_labels_files_clean_error_or_correct_auc(entries, as_json, files, tmp_path):
    difficulty, _ = files
    path = tmp_path / "fuzz_labels"
    if as_json:
        grouped: dict = {}
        for label, item in entries:
            grouped.setdefault(label, []).append(item)
        path.write_text(json.dumps(grouped))
    else:
        path.write_text("item,label\n" + "".join(f"{json.dumps(item) if not isinstance(item, str) else item},"
                                                 f"{label}\n" for label, item in entries))
    before = path.read_bytes()
    code, stdout, stderr = run_in_process(["label-validity", str(difficulty), "--labels", str(path), "--json",
                                           "--n-boot", "100"])
    assert path.read_bytes() == before
    want = expected_labels(entries, as_json)
    if want is None:
        assert code == 2 and stderr.startswith("error: ") and stderr.count("\n") == 1, stderr
        return
    assert code == 0, stderr
    easy = [B[k] for k, v in want.items() if v == "easy"]
    hard = [B[k] for k, v in want.items() if v == "hard"]
    pairs = [(h > e) + 0.5 * (h == e) for h in hard for e in easy]
    record = json.loads(stdout)["labels"]
    assert record["auc"] == pytest.approx(sum(pairs) / len(pairs))
    assert record["unlabelled_items"] == 6 - len(want)


B = {str(i): v for i, v in enumerate([0.0, 1.0, 2.0, 1.5, 3.0, 0.5])}  # the fixture's difficulties


def expected_labels(entries, as_json):
    """{item: label} the command must accept, or None when it must refuse the file (or the pair)."""
    labels: dict = {}
    for label, item in entries:
        if as_json:
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                return None
            key = str(item).strip()
        else:
            key = item.strip() if isinstance(item, str) else json.dumps(item)
            if not key and not label.strip():
                continue  # a line of blank fields is skipped
        if not key or key not in B or not label.strip() or key in labels:
            return None
        labels[key] = label.strip()
    counts = [sum(v == name for v in labels.values()) for name in ("easy", "hard")]
    return labels if min(counts) >= 2 else None
