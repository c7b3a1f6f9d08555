"""scripts/explore_benchmarks.py through its command line: the page's data, its safety, its errors, its readers.

The browser tests (tests/test_explorer_browser.py) load the same pages in Chromium.
"""

from __future__ import annotations

import csv
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.base.errors import InputError
from benchmeasure.explorer.collect import compact_ids, item_id, parse_posterior, read_questions
from benchmeasure.explorer.filled import read_filled, read_records
from benchmeasure.explorer.page import inert_json, render
from conftest import ROOT, assert_rejected, make_benchmark, run_script

DATA = re.compile(r'<script type="application/json" id="explorer-data">(.*?)</script>', re.S)
EVIL_ID = "</script><script>window.__pwned=1</script>"
EVIL_QUESTION = "<img src=x onerror=\"window.__pwned=2\"> & </script><!-- \u2028 <b>bold?</b>"
EVIL_NAME = "evil <img src=x onerror=window.__pwned=3>"


def page_data(path) -> dict:
    """The JSON the page's script reads, parsed as the browser's JSON.parse would."""
    found = DATA.findall(Path(path).read_text(encoding="utf-8"))
    assert len(found) == 1
    return json.loads(found[0])


def explore(*args, **kw):
    return run_script("explore_benchmarks.py", *args, **kw)


def suite(root: Path, seed: int = 0) -> list:
    """Three benchmarks in the layouts users have: released folders (with test.jsonl) and a fit_irt.py output."""
    rng = random.Random(seed)
    bench = root / "benchmarks"
    make_benchmark(bench, "AIME24", [rng.gauss(0, 1.5) for _ in range(30)])
    skewed = make_benchmark(bench, "Skewed", [rng.expovariate(1.0) for _ in range(200)], test_ids=None)
    (skewed / "test.jsonl").write_text("".join(json.dumps({"item_id": i, "problem": f"Problem {i}: x^{i} = ?"}) + "\n"
                                               for i in range(200)))
    fit = root / "fits" / "MyFit"
    fit.mkdir(parents=True)
    lines = ["item,b_mean,b_sd"] + [f"q{i},{rng.uniform(-2, 3):.6f},0.1" for i in range(57)]
    (fit / "difficulty.csv").write_text("\n".join(lines) + "\n")
    return [bench / "AIME24" / "difficulty.csv", bench / "Skewed" / "difficulty.csv", fit / "difficulty.csv"]


def diagnose_json(path) -> dict:
    done = run_script("diagnose_benchmark.py", path, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_numbers_equal_diagnose_and_summarize(tmp_path):
    files = suite(tmp_path)
    out = tmp_path / "page" / "explorer.html"
    done = explore(tmp_path / "benchmarks", files[2], "--output", out)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and f"wrote {out}" in done.stdout and "3 benchmarks" in done.stdout
    data = page_data(out)
    assert [b["name"] for b in data["benchmarks"]] == ["AIME24", "Skewed", "MyFit"]
    for b, path in zip(data["benchmarks"], files):
        cli = diagnose_json(path)
        assert b["items"] == cli["items"] and len(b["z"]) == cli["items"]
        assert (b["ddm"], b["max_gap"], b["top5_gap_sum"]) == (cli["ddm"], cli["max_gap"], cli["top5_gap_sum"])
        assert b["text"] == {"ddm": f"{cli['ddm']:.3f}", "max_gap": f"{cli['max_gap']:.3f}",
                             "top5_gap_sum": f"{cli['top5_gap_sum']:.3f}"}
        assert [g["text"] for g in b["gaps"]] == [f"{g['width']:.3f}" for g in cli["largest_gaps"]]
        assert [g["left"] for g in b["gaps"]] == [int(f"{g['left']:.4f}".replace(".", "")) for g in cli["largest_gaps"]]
    # the counts line and highlights are summarize_benchmarks.py's (Table 1 thresholds)
    summary = run_script("summarize_benchmarks.py", tmp_path / "benchmarks", "--json")
    record = json.loads(summary.stdout)
    aime = next(r for r in record["benchmarks"] if r["benchmark"] == "AIME24")
    assert data["benchmarks"][0]["marked"] == aime["marked"]
    assert data["benchmarks"][0]["domain"] == "Math"  # the paper's Table 3 row
    counts = {t["metric"]: (t["count"], t["total"]) for t in data["thresholds"]}
    mine = [b["marked"] for b in data["benchmarks"]]
    assert counts == {m: (sum(x[m] for x in mine), 3) for m in ("ddm", "max_gap", "top5_gap_sum")}
    # hover data: ids implicit for 0 … N−1, question text from test.jsonl ("problem"), b and z exact to shown digits
    aime, skewed, fit = data["benchmarks"]
    assert aime["ids"] is None and aime["questions"] == ["?"] * 30
    assert skewed["questions"][7] == "Problem 7: x^7 = ?"
    assert fit["ids"] == {"prefix": "q", "width": 0} and fit["questions"] is None
    rows = list(csv.DictReader(open(files[2])))
    scale = 10 ** fit["b_decimals"]
    assert [v / scale for v in fit["b"]] == [float(f"{float(r['b_mean']):.{fit['b_decimals']}f}") for r in rows]
    assert min(fit["z"]) == 0 and max(fit["z"]) == data["z_scale"]
    prov = data["provenance"]
    assert set(prov["inputs_sha256"]) == {str(p) for p in files} and prov["package_versions"]["python"]


def test_file_stems_name_benchmarks_sharing_a_folder(tmp_path):
    for name in ("aime24", "aime25"):
        (tmp_path / f"{name}.csv").write_text("item,b_mean\na,0\nb,1\nc,3\n")
    out = tmp_path / "e.html"
    done = explore(tmp_path / "aime24.csv", tmp_path / "aime25.csv", "--output", out, "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1  # --quiet: the final line only
    assert [b["name"] for b in page_data(out)["benchmarks"]] == ["aime24", "aime25"]


def test_user_strings_cannot_become_markup(tmp_path):
    bench = make_benchmark(tmp_path, EVIL_NAME, [0.1, 0.5, 2.0], test_ids=None)
    (bench / "test.jsonl").write_text("".join(json.dumps({"item_id": i, "question": EVIL_QUESTION}) + "\n"
                                              for i in range(3)))
    ids = tmp_path / "ids"
    ids.mkdir()
    (ids / "difficulty.csv").write_text(f'item,b_mean\n"{EVIL_ID}",0\nplain,1\n"a&b<c>",2\n')
    domains = tmp_path / "domains.csv"
    domains.write_text(f"benchmark,domain\nids,{EVIL_ID}\n")
    out = tmp_path / "e.html"
    done = explore(bench, ids / "difficulty.csv", "--domains", domains, "--output", out)
    assert done.returncode == 0, done.stderr
    html = out.read_text(encoding="utf-8")
    assert html.count("<script") == 2 and html.count("</script>") == 2  # the data element and the page's script
    for evil in (EVIL_ID, EVIL_QUESTION, EVIL_NAME, "<img"):
        assert evil not in html
    assert html.count("<!--") == 1  # the template's own comment
    data = page_data(out)
    assert data["benchmarks"][0]["name"] == EVIL_NAME
    assert data["benchmarks"][0]["questions"][0] == " ".join(EVIL_QUESTION.split())
    assert [item_id(data["benchmarks"][1]["ids"], i) for i in range(3)] == [EVIL_ID, "plain", "a&b<c>"]
    assert data["benchmarks"][1]["domain"] == EVIL_ID
    # only the page's own script may run (CSP by hash), and nothing may be fetched
    assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]{44}'", html) and "default-src 'none'" in html


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text() |
                    st.floats(allow_nan=False, allow_infinity=False),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=20))
def test_inert_json_round_trips_and_has_no_markup(value):
    text = inert_json(value)
    assert json.loads(text) == value
    assert not any(ch in text for ch in "<>&\u2028\u2029")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1), min_size=1, max_size=5))
def test_rendered_page_keeps_exactly_its_two_scripts(strings):
    html = render({"title": strings[0], "benchmarks": [], "thresholds": [], "z_scale": 10000,
                   "provenance": {"strings": strings}})
    assert html.lower().count("<script") == 2 and html.lower().count("</script") == 2
    assert json.loads(DATA.findall(html)[0])["provenance"]["strings"] == strings


def test_posterior_intervals_and_band(tmp_path):
    root = tmp_path / "fit"
    root.mkdir()
    rng = np.random.default_rng(0)
    b = rng.normal(0, 1, 40)
    (root / "difficulty.csv").write_text("item,b_mean\n" + "".join(f"i{k},{float(v)!r}\n" for k, v in enumerate(b)))
    draws = b + rng.normal(0, 0.2, (300, 40))
    np.savez(root / "draws.npz", b=draws, items=np.array([f"i{k}" for k in range(40)]))
    out = tmp_path / "e.html"
    done = explore(root, "--posterior", root / "draws.npz", "--output", out)
    assert done.returncode == 0, done.stderr
    post = page_data(out)["benchmarks"][0]["posterior"]
    cli = json.loads(run_script("posterior_metrics.py", root / "draws.npz", "--json").stdout)["metrics"]
    for name in ("ddm", "max_gap", "top5_gap_sum"):
        assert (post["intervals"][name]["low"], post["intervals"][name]["high"]) == \
            (cli[name]["low"], cli[name]["high"])
        assert post["intervals"][name]["text"] == f"[{cli[name]['low']:.3f}, {cli[name]['high']:.3f}]"
    band = post["band"]
    assert post["draws"] == 300 and band["low"][0] >= 0 and band["high"][-1] == 10000
    assert all(lo <= hi for lo, hi in zip(band["low"], band["high"]))
    # NAME=PATH attaches by name; a posterior of other items is refused
    named = explore(root, "--posterior", f"fit={root / 'draws.npz'}", "--output", out)
    assert named.returncode == 0, named.stderr
    np.savez(tmp_path / "other.npz", b=draws[:, :39])
    assert_rejected(explore(root, "--posterior", f"fit={tmp_path / 'other.npz'}", "--output", tmp_path / "x.html"),
                    "other.npz", "not fit's 40")
    assert not (tmp_path / "x.html").exists()
    # a K = 1 fit (diagnostics.json beside the draws): the noise-aware interval is refused, as posterior-metrics
    # refuses it; the cell shows the per-draw interval on a fixed range, marked, and its tooltip says why
    (root / "diagnostics.json").write_text(json.dumps({"input": {"n_trials": 1}}))
    done = explore(root, "--posterior", root / "draws.npz", "--output", out)
    assert done.returncode == 0, done.stderr
    post = page_data(out)["benchmarks"][0]["posterior"]
    cli = json.loads(run_script("posterior_metrics.py", root / "draws.npz", "--json").stdout)["metrics"]
    for name in ("ddm", "max_gap", "top5_gap_sum"):
        iv, fixed = post["intervals"][name], cli[name]["per_draw_fixed_range"]
        assert cli[name]["low"] is None and iv["low"] is None and "K = 1" in iv["refused"]
        assert iv["text"] == f"[{fixed['low']:.3f}, {fixed['high']:.3f}]*" and "K = 1" in iv["title"]


def test_rejects_bad_input_with_one_line(tmp_path):
    files = suite(tmp_path)
    out = tmp_path / "e.html"
    cases = [
        ((), ["at least one benchmark"]),
        ((tmp_path / "nope",), ["nope", "no such"]),
        ((files[0], files[0]), ["'AIME24'", "more than once"]),
        ((files[0], "--question-chars", "-1"), ["--question-chars"]),
        ((files[0], "--filled", tmp_path), ["not a BenchFill run"]),
        ((files[0], "--posterior", "Nobody=x.npz"), ["Nobody"]),
        ((files[0], "--posterior", tmp_path / "fits"), ["no posterior.zarr"]),
        ((files[0], "--domains", tmp_path / "none.csv"), ["none.csv"]),
    ]
    for args, fragments in cases:
        assert_rejected(explore(*args, "--output", out), *fragments)
        assert not out.exists()
    assert_rejected(explore(files[0], "--output", files[0]), "overwrite the input")
    assert_rejected(explore(tmp_path / "benchmarks", "--output", tmp_path / "benchmarks"), "is a folder")
    assert_rejected(explore(files[0]), "--output")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "difficulty.csv").write_bytes(b"item,b_mean\na,1\nb,\xff\n")
    assert_rejected(explore(bad, "--output", out), "not UTF-8")
    assert not out.exists()


def test_help_and_subcommand(tmp_path):
    done = explore("--help")
    assert done.returncode == 0 and "examples:" in done.stdout and "--filled" in done.stdout
    same = subprocess.run([sys.executable, "-m", "benchmeasure", "explore", "--help"], capture_output=True,
                          text=True, cwd=ROOT)
    assert same.returncode == 0 and same.stdout.startswith("usage: benchmeasure explore") and "--filled" in same.stdout


def test_runs_on_a_bare_python_without_a_posterior(tmp_path):
    files = suite(tmp_path)
    done = explore(files[0], "--output", tmp_path / "e.html", python="python3", flags=("-I", "-S"))
    assert done.returncode == 0, done.stderr


# -- filled runs (the real BenchFill and mass-fill command lines against the simulated server) ----------------
@pytest.mark.slow
def test_filled_runs_before_after(tmp_path, filled_runs):
    calibration, run, mass = filled_runs
    out = tmp_path / "e.html"
    done = explore(calibration, "--filled", run, mass, "--output", out)
    assert done.returncode == 0, done.stderr
    (bench,) = page_data(out)["benchmarks"]  # both runs calibrated from this file: one row
    assert bench["name"] == "data" and [f["kind"] for f in bench["filled"]] == ["BenchFill run", "mass fill"]
    summary = json.loads((run / "summary.json").read_text())
    records = list(csv.DictReader(open(run / "new_item_records.csv")))
    view = bench["filled"][0]
    assert view["top3_reduction"] == f"{summary['benchfill']['top3_gap_sum_reduction']:.2f}"
    assert view["target_deviation"] == f"{summary['benchfill']['target_deviation']:.4f}"
    assert [i["id"] for i in view["items"]] == [r["item_id"] for r in records]
    assert [i["parent"] for i in view["items"]] == [r["parent_id"] for r in records]
    assert [t["text"] for t in view["targets"]] == [f"{t['target']:.3f}" for t in summary["targets"]]
    assert all(i["parent_z"] is not None for i in view["items"])
    mass_summary = json.loads((mass / "mass_fill_summary.json").read_text())
    metrics = bench["filled"][1]["metrics"]
    assert metrics["before"]["max_gap"] == mass_summary["before"]["max_gap"]
    assert metrics["after"]["max_gap"] == mass_summary["after"]["max_gap"]
    assert metrics["after"]["ddm"] == mass_summary["after"]["ddm"]
    assert metrics["after"]["items"] == mass_summary["after"]["items"] == bench["items"] + 3
    assert [i["id"] for i in bench["filled"][1]["items"]] == ["MATH_SIM-fill-001", "MATH_SIM-fill-002",
                                                              "MATH_SIM-fill-003"]
    # without the benchmark, the run's own calibration becomes the row; a changed calibration is refused
    alone = explore("--filled", run, "--output", out)
    assert alone.returncode == 0, alone.stderr
    (row,) = page_data(out)["benchmarks"]
    assert row["name"] == "math_sim" and row["ddm"] == bench["ddm"] and row["questions"][0].startswith("Simulated")
    # a size budget cuts the new items' question text as well as the benchmark's
    full = out.stat().st_size
    cut = explore("--filled", run, "--output", out, "--max-mb", f"{(full - 2000) / 1e6}", "--question-chars", 60)
    assert cut.returncode == 0 and out.stat().st_size <= full - 2000, cut.stderr
    (row,) = page_data(out)["benchmarks"]
    chars = page_data(out)["provenance"]["settings"]["question_chars"]
    assert 20 <= chars < 60 and "question text cut to" in cut.stdout
    assert all(len(i["question"]) <= chars + 1 for f in row["filled"] for i in f["items"])
    assert all(len(q) <= chars + 1 for q in row["questions"])


def test_changed_calibration_is_refused(tmp_path, filled_runs):
    calibration, run, _ = filled_runs
    copy = tmp_path / "run"
    copy.mkdir()
    for name in ("config.json", "summary.json", "new_item_records.csv"):
        (copy / name).write_text((run / name).read_text())
    config = json.loads((copy / "config.json").read_text())
    moved = tmp_path / "calibration.csv"
    moved.write_text(calibration.read_text().replace("\n1,", "\n1,9", 1))
    config["inputs"]["calibration"]["path"] = str(moved)
    (copy / "config.json").write_text(json.dumps(config))
    assert_rejected(explore("--filled", copy, "--output", tmp_path / "e.html"), "changed since init")
    (copy / "summary.json").unlink()
    config["inputs"]["calibration"]["path"] = str(calibration)
    (copy / "config.json").write_text(json.dumps(config))
    assert_rejected(explore("--filled", copy, "--output", tmp_path / "e.html"), "no summary.json", "finished")


# -- the readers, fuzzed -------------------------------------------------------------------------------------
# the column names before the rename (CHANGELOG.md): still read
HEADER = "benchmark,gap,z_L,z_R,target,item_id,question,answer,parent_id,round,b_mean,b_sd,z,deviation,lineage"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.text(alphabet=st.characters(codec="utf-8"), max_size=300), header=st.booleans())
def test_records_reader_fuzz(tmp_path, body, header):
    path = tmp_path / "new_item_records.csv"
    path.write_text((HEADER + "\n" if header else "") + body, encoding="utf-8", newline="")
    try:
        rows = read_records(path, "item_id")
    except InputError:
        return
    for row in rows:
        assert isinstance(row["gap"], int) and all(np.isfinite(row[c]) for c in ("z", "target", "left", "right"))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=200))
def test_records_reader_fuzz_bytes(tmp_path, raw):
    path = tmp_path / "new_item_records.csv"
    path.write_bytes(HEADER.encode() + b"\n" + raw)
    try:
        read_records(path, "item_id")
    except InputError:
        pass


def test_question_text_is_cut_to_keep_the_page_within_its_size_budget(tmp_path):
    rng = random.Random(3)
    bench = tmp_path / "benchmarks"
    for name in ("Long", "Longer"):
        folder = make_benchmark(bench, name, [rng.gauss(0, 1) for _ in range(400)], test_ids=None)
        (folder / "test.jsonl").write_text("".join(
            json.dumps({"item_id": i, "question": f"Q{i} " + "word " * 60}) + "\n" for i in range(400)))
    full = explore(bench, "--output", tmp_path / "full.html", "--max-mb", "0")
    assert full.returncode == 0, full.stderr
    full_size = (tmp_path / "full.html").stat().st_size
    assert page_data(tmp_path / "full.html")["benchmarks"][0]["questions"][5].startswith("Q5 word")
    assert "cut to" not in full.stdout

    budget = (full_size - 60_000) / 1e6  # a budget the full text does not fit in
    cut = explore(bench, "--output", tmp_path / "cut.html", "--max-mb", f"{budget:.6f}")
    assert cut.returncode == 0, cut.stderr
    size = (tmp_path / "cut.html").stat().st_size
    data = page_data(tmp_path / "cut.html")
    chars = data["provenance"]["settings"]["question_chars"]
    assert size <= budget * 1e6 and 0 < chars < 120
    assert data["provenance"]["settings"]["question_chars_asked"] == 120
    assert f"note: question text cut to {chars} characters per item (asked: 120)" in cut.stdout
    text = " ".join(("Q5 " + "word " * 60).split())
    assert data["benchmarks"][0]["questions"][5] == text[:chars].rstrip() + "…"
    # the longest text that fits: one character more does not
    more = explore(bench, "--output", tmp_path / "more.html", "--max-mb", "0", "--question-chars", chars + 1)
    assert more.returncode == 0 and (tmp_path / "more.html").stat().st_size > budget * 1e6

    # too small a budget for 20 characters: the text is left out, not cut to a few letters
    bare = tmp_path / "bare.html"
    assert explore(bench, "--output", bare, "--question-chars", 0).returncode == 0
    squeezed = explore(bench, "--output", tmp_path / "squeezed.html", "--max-mb",
                       f"{(bare.stat().st_size + 9_000) / 1e6}")  # 800 items x 20 characters need ~20 kB
    assert squeezed.returncode == 0, squeezed.stderr
    assert page_data(tmp_path / "squeezed.html")["benchmarks"][0]["questions"] is None
    assert "note: question text left out: even 20 characters per item would take the page over" in squeezed.stdout

    tiny = explore(bench, "--output", tmp_path / "tiny.html", "--max-mb", "0.001")
    assert tiny.returncode == 0, tiny.stderr
    assert page_data(tmp_path / "tiny.html")["benchmarks"][0]["questions"] is None
    assert "over --max-mb 0.001 even without question text" in tiny.stdout


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=200), chars=st.integers(1, 50))
def test_question_reader_fuzz(tmp_path, raw, chars):
    path = tmp_path / "test.jsonl"
    path.write_bytes(raw)
    try:
        questions = read_questions(path, None, chars)
    except InputError:
        return
    assert all(len(q) <= chars + 1 for q in questions.values())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=st.recursive(st.none() | st.integers() | st.text(max_size=10),
                           lambda inner: st.dictionaries(st.sampled_from(["config", "benchmark", "inputs", "name",
                                                                          "calibration", "pool", "path", "sha256"]),
                                                         inner, max_size=4), max_leaves=12))
def test_run_folder_reader_fuzz(tmp_path, config):
    (tmp_path / "config.json").write_text(json.dumps(config))
    try:
        read_filled(tmp_path)
    except InputError:
        pass


@given(st.lists(st.text(max_size=6), min_size=1, max_size=12))
def test_compact_ids_round_trip(ids):
    packed = compact_ids(ids)
    assert [item_id(packed, i) for i in range(len(ids))] == ids


def test_compact_ids_shapes():
    assert compact_ids(["0", "1", "2"]) is None
    ids = [f"b-q{i:05d}" for i in range(1200)]
    assert compact_ids(ids) == {"prefix": "b-q0", "width": 4}
    assert compact_ids(["doc_7", "doc_3"]) == {"prefix": "doc_", "rest": ["7", "3"]}


@given(st.text(max_size=30))
def test_posterior_spec(spec):
    name, path = parse_posterior(spec)
    assert (name is None and str(path) == str(Path(spec))) or f"{name}={path}" == spec or \
        spec.startswith(f"{name}=")


@settings(max_examples=300, deadline=None)
@given(budget=st.integers(0, 6000), chars=st.integers(0, 150), least=st.integers(1, 30),
       per_char=st.integers(1, 60))
def test_the_size_budget_keeps_the_longest_text_that_fits(budget, chars, least, per_char):
    from benchmeasure.explorer import page

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(page, "render", lambda n: "x" * (1000 + per_char * n))  # a page that grows with its text
        html, kept = page.render_within(chars, budget, chars, lambda data, n: n, least=least)
    assert len(html) == 1000 + per_char * kept
    fits = [n for n in range(min(least, chars), chars + 1) if 1000 + per_char * n <= budget]
    if budget == 0 or 1000 + per_char * chars <= budget:
        assert kept == chars
    else:
        assert kept == (max(fits) if fits else 0)
