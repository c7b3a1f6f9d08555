"""The plain responses reader (benchmeasure/core/response_counts.py) on a bare Python, and against the PyArrow route.

Issue 15, item 6 (the paper's first call works before any virtual environment) and item 2 (rows read wrongly
without a word): a row with more or fewer fields than the header, a blank trial ID and a repeated header are
refused with file and line; hypothesis writes random malformed files and checks "clean error or the right
matrix, never a traceback, never a changed input", and that the two readers agree.
"""

from __future__ import annotations

import csv
import hashlib
import io
import shutil
import subprocess
import sys
from itertools import product

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.base.errors import InputError
from benchmeasure.core.response_counts import count_responses
from benchmeasure.core.responses import read_responses_csv
from conftest import ROOT, assert_rejected, run_script

GOOD = "model,item_id,trial,correct\n" + "".join(
    f"m{j},q{i},{t},{(i * j + t) % 2}\n" for j, i, t in product(range(2), range(3), range(2)))
EXPECTED = "model,q0,q1,q2\nm0,1,1,1\nm1,1,1,1\n"


def test_the_papers_call_on_a_bare_python(tmp_path):
    """``python3 -I -S``: no site-packages at all (no NumPy, no pandas), as before any venv exists."""
    (tmp_path / "responses.csv").write_text(GOOD)
    out = tmp_path / "my_benchmark" / "response_matrix.csv"
    result = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "scripts" / "prepare_response_matrix.py"),
                             "responses.csv", "--n-trials", "2", "--output", str(out)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert out.read_text() == EXPECTED
    assert (tmp_path / "my_benchmark" / "response_matrix.csv.json").is_file()


def test_a_harness_format_on_a_bare_python_says_what_to_install(tmp_path):
    result = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "scripts" / "prepare_response_matrix.py"),
                             "--from", "lm-eval", "logs", "--metric", "acc", "--n-trials", "1", "--output", "m.csv"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert_rejected(result, "--from lm-eval needs the Python package", "requirements_irt.txt")


@pytest.mark.parametrize("text, fragment", [
    (GOOD.replace("m0,q1,0,", "m0,q1,x,0,", 1), "line 4: 5 fields, the header has 4"),  # unquoted comma in an ID
    (GOOD.replace("m0,q1,0,0\n", "m0,q1,0\n", 1), "line 4: 3 fields, the header has 4"),
    (GOOD.replace("m0,q1,0,", "m0,q1, ,", 1), "line 4: blank trial ID"),
    (GOOD.replace("model,item_id,trial,correct", "model,item_id,trial,correct,correct", 1).replace("\nm", ",1\nm"),
     "column 'correct' appears twice in the header"),
    (GOOD.replace("m1,q2,1,1", "m1,q2,1,Infinity", 1), "correct is 'Infinity', expected 0 or 1"),
])
def test_rows_that_would_be_read_wrongly_are_refused(tmp_path, text, fragment):
    (tmp_path / "responses.csv").write_text(text)
    assert_rejected(run_script("prepare_response_matrix.py", "responses.csv", "--n-trials", "2",
                               "--output", "m.csv", cwd=tmp_path), fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["responses.csv"]


# ---- hypothesis: random damage to a good file ---------------------------------------------------------

CELLS = st.sampled_from(["", " ", "0", "1", "2", "x", "m0", "q1", "a,b", '"', '"q"', "\t", "Infinity", "nan",
                         "1.0", "\u00e9", "0 ", "\n"])


@st.composite
def damaged(draw):
    rows = [line.split(",") for line in GOOD.strip().split("\n")]
    for _ in range(draw(st.integers(0, 3))):
        r = draw(st.integers(0, len(rows) - 1))
        kind = draw(st.sampled_from(["cell", "drop", "add", "dup", "delete", "blank"]))
        if kind == "cell":
            rows[r][draw(st.integers(0, len(rows[r]) - 1))] = draw(CELLS)
        elif kind == "drop" and len(rows[r]) > 1:
            rows[r].pop()
        elif kind == "add":
            rows[r].append(draw(CELLS))
        elif kind == "dup":
            rows.insert(r, list(rows[r]))
        elif kind == "delete" and len(rows) > 1:
            rows.pop(r)
        elif kind == "blank":
            rows.insert(r, [""])
    return "\n".join(",".join(row) for row in rows) + "\n"


def _outcome(reader, path):
    try:
        m = reader(path, 2)
    except InputError as exc:
        assert str(exc).startswith(str(path)), exc
        return "refused"
    counts = m.counts.tolist() if hasattr(m.counts, "tolist") else m.counts
    return list(m.models), list(m.items), counts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=damaged())
def test_both_readers_refuse_cleanly_or_agree(tmp_path, text):
    path = tmp_path / "responses.csv"
    path.write_text(text, encoding="utf-8")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    plain, fast = _outcome(count_responses, path), _outcome(read_responses_csv, path)
    assert plain == fast
    if plain != "refused":  # an accepted file is counted right: recount from the rows
        models, items, counts = plain
        rows = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)][1:]
        assert len(rows) == 2 * len(models) * len(items)
        for j, i in product(range(len(models)), range(len(items))):
            assert counts[j][i] == sum(r[3] == "1" for r in rows if r[0] == models[j] and r[1] == items[i])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=damaged())
def test_the_command_never_tracebacks_nor_changes_its_input(tmp_path, text):
    path = tmp_path / "responses.csv"
    path.write_text(text, encoding="utf-8")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    shutil.rmtree(tmp_path / "out", ignore_errors=True)  # tmp_path is shared by the examples
    out = tmp_path / "out" / "m.csv"
    result = run_script("prepare_response_matrix.py", path, "--n-trials", "2", "--output", out, timeout=60)
    assert "Traceback" not in result.stderr
    if result.returncode == 0:
        assert out.is_file()
    else:
        assert_rejected(result)
        assert not out.exists()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
