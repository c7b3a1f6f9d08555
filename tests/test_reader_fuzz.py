"""Hypothesis fuzz of every CSV reader (issue 15: "a property-based fuzz test per reader").

Each reader gets a valid file that hypothesis then damages — cells replaced by odd text (Latin-1 bytes, NUL,
quotes, 5,000-digit numbers, NaN), fields dropped or added, header names repeated or blanked, lines duplicated,
blank lines, truncation. The reader must return a result or raise :class:`InputError` naming the file (never
another exception), and the file must be byte-for-byte unchanged. Rejections that matter are pinned as
examples. The command-line side is covered by a few end-to-end examples.
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchmeasure.analyses.detection import read_pre_post
from benchmeasure.analyses.posterior_metrics import read_posterior_b
from benchmeasure.analyses.summary import read_domains
from benchmeasure.base.csv_table import read_table
from benchmeasure.base.errors import InputError
from benchmeasure.benchfill.gaps import read_calibration
from benchmeasure.core.difficulty_file import read_difficulty_column, read_item_difficulties
from benchmeasure.core.guessing import read_guessing_csv
from benchmeasure.core.matrix import read_matrix
from conftest import assert_rejected, run_script

READERS = {
    "matrix": ("model,q0,q1,q2\na,0,1,2\nb,1,2,2\nc,0,0,1\n", lambda p: read_matrix(p, 2)),
    "difficulty": ("item,b_mean,b_sd\nq0,0.1,0.2\nq1,0.5,0.1\nq2,1.2,0.3\n", read_difficulty_column),
    "item difficulties": ("item_id,b_mean\nq0,0.1\nq1,0.5\nq2,1.2\n", read_item_difficulties),
    "guessing": ("item_id,guessing\nq0,0.25\nq1,0.2\nq2,0\n", lambda p: read_guessing_csv(p, ["q0", "q1", "q2"])),
    "domains": ("benchmark,domain\nAIME24,Math\nGPQA,Science\n", read_domains),
    "draws": ("q0,q1,q2\n0.1,0.2,0.3\n0.0,-1.5,2\n", read_posterior_b),
    "calibration": ("item_id,b_mean,b_sd\nq0,0.1,0.2\nq1,0.5,0.1\nq2,1.2,0.3\n", read_calibration),
    "pre/post": ("model,item_id,trial,correct,condition\nm,q0,0,1,pre\nm,q0,0,0,post\nm,q1,0,1,pre\n"
                 "m,q1,0,1,post\n", read_pre_post),
    "table": ("a,b,c\n1,2,3\n4,5,6\n", lambda p: read_table(p, required=("a", "b"))),
}

ODD = st.sampled_from([b"", b" ", b"x", b"\xe9", b"\xff\xfe", b"\x00", b'"', b'"a,b"', b"nan", b"-inf", b"1e999",
                       b"9" * 5000, b"0", b"1", b"2", b"-1", b"q0", b"a", b"\r", b"model", b"item_id"])


@st.composite
def damage(draw, text: str):
    lines = [line.split(b",") for line in text.encode().strip().split(b"\n")]
    for _ in range(draw(st.integers(1, 3))):
        r = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["cell", "drop", "add", "dup", "blank", "header", "truncate"]))
        if op == "cell":
            lines[r][draw(st.integers(0, len(lines[r]) - 1))] = draw(ODD)
        elif op == "drop" and len(lines[r]) > 1:
            lines[r].pop()
        elif op == "add":
            lines[r].append(draw(ODD))
        elif op == "dup":
            lines.insert(r, list(lines[r]))
        elif op == "blank":
            lines.insert(r, [b""])
        elif op == "header":
            lines[0][draw(st.integers(0, len(lines[0]) - 1))] = draw(st.sampled_from(lines[0] + [b"", b" "]))
        elif op == "truncate":
            lines = lines[:r + 1]
    return b"\n".join(b",".join(line) for line in lines) + b"\n"


def _check(tmp_path, name, data):
    path = tmp_path / ("draws.csv" if name == "draws" else "input.csv")
    path.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    try:
        READERS[name][1](path)
    except InputError as exc:
        assert str(exc).startswith(str(path)), exc
        assert "\n" not in " ".join(str(exc).split())
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("name", list(READERS))
def test_each_reader_refuses_cleanly_or_reads(tmp_path, name):
    text = READERS[name][0]

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data=damage(text))
    @example(data=text.encode())
    def run(data):
        _check(tmp_path, name, data)

    run()


@pytest.mark.parametrize("name, data, fragment", [
    ("matrix", b"model,q0,q1\na,0,1\nb,1,0,1\n", "line 3: 4 fields, the header has 3"),
    ("matrix", b"model,q0,q1\na,0,1\nb,1\n", "line 3: 2 fields, the header has 3"),
    ("matrix", b"model,q0,q0\na,0,1\nb,1,0\n", "column 'q0' appears twice"),
    ("matrix", b"model,q0,q1\na,0," + b"9" * 5000 + b"\nb,1,0\n", "is not an integer count"),
    ("difficulty", b"item,b_mean\nq0,1\nq1,\n", "line 3, column 'b_mean': blank"),
    ("guessing", b"item_id,guessing,guessing\nq0,0,0\n", "appears twice"),
    ("domains", "benchmark,domain\nAIME24,Mathématiques\n".encode("latin-1"), "not UTF-8"),
    ("draws", b"q0,q1\n0.1,0.2\n0.3\n", "line 3: 1 field, the header has 2"),
    ("calibration", b"item_id,b_mean\nq0,0.1\nq1,0.2,0.3\n", "line 3: 3 fields"),
    ("pre/post", b"model,item_id,trial,correct,condition\nm,q0,0,1,pre,x\n", "line 2: 6 fields"),
])
def test_pinned_rejections_name_file_line_and_column(tmp_path, name, data, fragment):
    path = tmp_path / "input.csv"
    path.write_bytes(data)
    with pytest.raises(InputError) as caught:
        READERS[name][1](path)
    assert str(caught.value).startswith(str(path)) and fragment in str(caught.value), caught.value


def test_through_the_command_line(tmp_path):
    (tmp_path / "m.csv").write_text("model,q0,q1\na,0," + "9" * 5000 + "\nb,1,0\n")
    assert_rejected(run_script("check_response_matrix.py", "m.csv", "--n-trials", "2", cwd=tmp_path),
                    "m.csv: line 2", "not an integer count")
    (tmp_path / "domains.csv").write_bytes("benchmark,domain\nAIME24,Mathématiques\n".encode("latin-1"))
    (tmp_path / "b" / "AIME24").mkdir(parents=True)
    (tmp_path / "b" / "AIME24" / "difficulty.csv").write_text("item_id,b_mean\n0,0.1\n1,0.5\n2,1.5\n")
    assert_rejected(run_script("summarize_benchmarks.py", "b", "--domains", "domains.csv", cwd=tmp_path),
                    "domains.csv", "not UTF-8")
