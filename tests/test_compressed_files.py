"""Issue 32: one reader and one writer of compressed files for every command, and formats that follow their names.

A damaged archive is one ``error:`` line in every reader (the suite reader met a corrupt deflate block with a
``zlib.error`` traceback while ``prepare`` refused it cleanly); ``prepare --output m.csv.gz`` writes gzip (it wrote
plain text under the name), and a round-trip property over each writer and reader: what a writer writes under a
``.gz``, ``.bz2``, ``.xz`` or plain name, every reader reads back unchanged.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import json
import lzma
import random
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.base.compressed import FORMATS
from benchmeasure.base.csv_table import read_table
from benchmeasure.base.errors import InputError
from benchmeasure.base.files import all_or_nothing, atomic_write, read_jsonl_objects, write_json
from conftest import assert_rejected, run_script

SUFFIXES = ("", ".gz", ".bz2", ".xz")
COMPRESS = {".gz": lambda data: gzip.compress(data, mtime=0), ".bz2": bz2.compress, ".xz": lzma.compress}


def _responses(models=6, items=30, benchmark=None, seed=0) -> str:
    rng = random.Random(seed)
    head = "model,item_id,correct" + (",benchmark" if benchmark else "")
    rows = [f"m{j},q{i},{rng.randint(0, 1)}" + (f",{benchmark}" if benchmark else "")
            for j in range(models) for i in range(items)]
    return "\n".join([head, *rows]) + "\n"


def _corrupt_deflate(text: str) -> bytes:
    """A gzip file whose deflate stream is damaged inside (header intact): reading it raises zlib.error."""
    data = bytearray(gzip.compress(text.encode(), mtime=0))
    for k in range(20, 40):
        data[k] ^= 0xFF
    with pytest.raises(zlib.error):
        gzip.decompress(bytes(data))
    return bytes(data)


def test_a_corrupt_deflate_block_is_one_error_line_in_every_reader(tmp_path):
    bad = tmp_path / "suite.csv.gz"
    bad.write_bytes(_corrupt_deflate(_responses()))
    out = tmp_path / "out"
    for script, args in [("fit_suite.py", [bad, "--output-dir", out]),
                         ("chain.py", [bad, "--anchors", "5", "--output-dir", out]),
                         ("check_response_matrix.py", [bad, "--n-trials", "1"])]:  # (prepare: test_prepare_gzip)
        assert_rejected(run_script(script, *args), str(bad), "not a readable gzip file")
        assert not out.exists()
    jsonl = tmp_path / "items.jsonl.gz"
    jsonl.write_bytes(_corrupt_deflate("".join(json.dumps({"id": f"q{i}", "text": f"question {i}"}) + "\n"
                                               for i in range(200))))
    assert_rejected(run_script("browse.py", "index", jsonl, "--benchmark", "b", "--id-field", "id", "--text-field",
                               "text", "--lexical-only", "--output-dir", out, "--quiet"), "not a readable gzip file")
    assert not out.exists()


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_a_cut_archive_and_a_misnamed_file_are_refused_by_each_reader(tmp_path, suffix):
    from benchmeasure.suite.reader import read_suite

    lines = "".join(json.dumps({"item_id": f"q{i}"}) + "\n" for i in range(300))
    kind = FORMATS[suffix][0]
    for name, text, read in [("suite", _responses(), lambda path: read_suite([path])),
                             ("table", _responses(), read_table), ("lines", lines, read_jsonl_objects)]:
        whole = COMPRESS[suffix](text.encode())
        cut = tmp_path / f"{name}-cut{suffix}"
        cut.write_bytes(whole[: len(whole) // 2])
        plain = tmp_path / f"{name}-plain{suffix}"
        plain.write_text(text, encoding="utf-8")
        hidden = tmp_path / f"{name}-hidden"
        hidden.write_bytes(whole)
        with pytest.raises(InputError, match=f"{name}-cut{suffix}: not a readable {kind} file"):
            read(cut)
        with pytest.raises(InputError, match=f"{name}-plain{suffix}: not a {kind} file"):
            read(plain)
        with pytest.raises(InputError, match=f"is {kind}-compressed, but its name does not end in {suffix}"):
            read(hidden)


def test_prepare_writes_what_its_output_name_says_and_the_next_command_reads_it(tmp_path):
    source = tmp_path / "r.csv.gz"
    source.write_bytes(COMPRESS[".gz"]((_responses() + "m6,q0,1\n").encode()))  # m6 answered one item: holes
    out = tmp_path / "m.csv.gz"
    done = run_script("prepare_response_matrix.py", source, "--n-trials", "1", "--allow-missing", "--output", out)
    assert done.returncode == 0, done.stderr
    for written in (out, tmp_path / "m.trials.csv.gz"):  # the matrix and its trials file are both gzip, as named
        assert written.read_bytes().startswith(FORMATS[".gz"][1]), written
    checked = run_script("check_response_matrix.py", out, "--n-trials", "1", "--allow-missing", "--json")
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["absent_cells"] == 29
    suite = run_script("fit_suite.py", "--matrix", out, "--n-trials", "1", "--output-dir", tmp_path / "suite")
    assert suite.returncode == 0, suite.stderr
    assert "m: 30 items" in suite.stdout  # the benchmark is named without .csv.gz
    # a suffix of a compression the project does not write is refused before any work, nothing written
    assert_rejected(run_script("prepare_response_matrix.py", source, "--n-trials", "1", "--allow-missing",
                               "--output", tmp_path / "m.csv.zip"), ".zip files are not read or written here")
    assert not (tmp_path / "m.csv.zip").exists()


# -- round trip: every writer's output under every name is read back as written ---------------------------------

CELL = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
ID = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=8)
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(suffix=st.sampled_from(SUFFIXES), rows=st.lists(st.tuples(ID, CELL, CELL), min_size=1, max_size=6))
def test_round_trip_tables(tmp_path, suffix, rows):
    path = tmp_path / f"t.csv{suffix}"
    rows = [r for r in rows if any(c.strip() for c in r)] or [("a", "b", "c")]
    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["id", "x", "y"])
        writer.writerows(rows)
    if suffix:
        assert path.read_bytes().startswith(FORMATS[suffix][1])
    assert read_table(path, ["id"]).rows == [list(r) for r in rows]


@FUZZ
@given(suffix=st.sampled_from(SUFFIXES),
       records=st.lists(st.fixed_dictionaries({"item_id": ID, "text": CELL}), min_size=1, max_size=6))
def test_round_trip_json_lines_and_json(tmp_path, suffix, records):
    path = tmp_path / f"r.jsonl{suffix}"
    with atomic_write(path) as handle:
        handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    assert [r for _, r in read_jsonl_objects(path, ("item_id",))] == records
    doc = tmp_path / f"d.json{suffix}"
    write_json(doc, {"records": records})
    opener = {"": open, ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}[suffix]
    with opener(doc, "rt", encoding="utf-8") as handle:
        assert json.load(handle) == {"records": records}


@FUZZ
@given(suffix=st.sampled_from(SUFFIXES), counts=st.lists(st.lists(st.integers(0, 3), min_size=2, max_size=4),
                                                         min_size=2, max_size=4))
def test_round_trip_count_matrices_and_suites(tmp_path, suffix, counts):
    from benchmeasure.core.matrix import ResponseMatrix, read_matrix, write_matrix
    from benchmeasure.suite.reader import read_suite

    width = min(map(len, counts))
    counts = [row[:width] for row in counts]
    models, items = [f"m{j}" for j in range(len(counts))], [f"q{i}" for i in range(width)]
    import numpy as np

    path = tmp_path / f"m.csv{suffix}"
    write_matrix(ResponseMatrix(models, items, np.array(counts), 3), path)
    back = read_matrix(path, 3)
    assert back.models == models and back.items == items and back.counts.tolist() == counts
    long = tmp_path / f"bench.csv{suffix}"
    with atomic_write(long) as handle:
        handle.write("model,item_id,trial,correct\n" + "".join(
            f"{m},{i},{t},{int(t < c)}\n" for m, row in zip(models, counts) for i, c in zip(items, row)
            for t in range(3)))
    suite = read_suite([long])
    assert suite.benchmarks == ["bench"] and suite.counts.tolist() == counts and (suite.trials == 3).all()


def test_a_failed_all_or_nothing_block_leaves_no_folder_it_made(tmp_path):
    with pytest.raises(InputError), all_or_nothing():
        with atomic_write(tmp_path / "new" / "deep" / "a.csv.gz") as handle:
            handle.write("x\n")
        raise InputError("the second output failed")
    assert list(tmp_path.iterdir()) == []
    with atomic_write(tmp_path / "b.txt.gz", "wb") as handle:  # binary writers are compressed too
        handle.write(b"bytes")
    assert gzip.decompress((tmp_path / "b.txt.gz").read_bytes()) == b"bytes"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(suffix=st.sampled_from([".gz", ".bz2", ".xz"]), data=st.data())
def test_damaged_archives_fuzz(tmp_path, suffix, data):
    """Any damage to an archive (bytes changed, cut, appended) gives the suite, table and JSON Lines readers a
    result or one InputError naming the file, never another exception."""
    from benchmeasure.suite.reader import read_suite

    whole = bytearray(COMPRESS[suffix](_responses(models=3, items=5).encode()))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(whole) - 1))
        whole[at] = data.draw(st.integers(0, 255))
    whole = whole[: data.draw(st.integers(1, len(whole)))] + data.draw(st.binary(max_size=8))
    path = tmp_path / f"r.csv{suffix}"
    path.write_bytes(bytes(whole))
    for read in (lambda p: read_suite([p]), read_table, read_jsonl_objects):
        try:
            read(path)
        except InputError as exc:
            assert "\n" not in str(exc) and str(path) in str(exc)


def test_a_compressed_name_names_the_benchmark_as_the_plain_one_does():
    from benchmeasure.core.difficulty_file import default_benchmark_name
    from benchmeasure.suite.reader import benchmark_name

    assert default_benchmark_name("runs/aime24/response_matrix.csv.gz") == "aime24"
    assert default_benchmark_name("chembench.csv.xz") == default_benchmark_name("chembench.csv") == "chembench"
    assert benchmark_name("zeroeval/gsm8k.csv.bz2") == benchmark_name("gsm8k.csv") == "gsm8k"
