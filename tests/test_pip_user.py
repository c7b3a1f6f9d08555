"""Issue 22, through the command line: guards against silent wrong answers, errors that name the next step,
"did you mean", the dialect's old flag names as deprecated aliases, and every --help on the base install."""

from __future__ import annotations

import subprocess
import sys

import pytest

from benchmeasure.cli import COMMANDS
from conftest import ROOT, assert_rejected, run_script

np = pytest.importorskip("numpy")
CHEMBENCH = ROOT / "data" / "chembench" / "binary_matrix.csv"


def bare(*argv) -> subprocess.CompletedProcess:
    """``benchmeasure ARGV`` on this interpreter without site-packages: the base install, no extra."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from benchmeasure.cli import main; "
            f"main({[str(a) for a in argv]!r})")
    return subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=120)


def test_the_bare_interpreter_has_no_optional_package():
    done = subprocess.run([sys.executable, "-I", "-S", "-c", "import numpy"], capture_output=True, text=True)
    assert done.returncode != 0


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_help_works_on_the_base_install(name):
    done = bare(name, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: benchmeasure {name}") and done.stderr == ""


@pytest.mark.parametrize(("argv", "extra"), [
    (["fit", "m.csv", "--n-trials", "1", "--output-dir", "out"], "benchmeasure[irt]"),
    (["rollout", "--candidates", "c.jsonl", "--panel", "p.toml", "--benchmark", "b", "--output", "o.csv"],
     "benchmeasure[benchfill]"),
    (["benchfill", "status", "x"], "benchmeasure[benchfill]"),
    (["prepare", "--from", "inspect", "x", "--n-trials", "1", "--output", "o.csv"], "benchmeasure[irt]"),
])
def test_a_missing_package_names_its_extra(argv, extra):
    done = bare(*argv)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert extra in done.stderr and "Traceback" not in done.stderr


def test_did_you_mean_for_subcommands_formats_and_flags(tmp_path):
    assert_rejected(run_script("prepare_response_matrix.py", "--from", "inspct", "x", "--n-trials", "1",
                               "--output", tmp_path / "m.csv"), "did you mean 'inspect'?")
    done = subprocess.run([sys.executable, "-m", "benchmeasure", "diagnos", "x.csv"], capture_output=True,
                          text=True, cwd=ROOT)
    assert_rejected(done, "did you mean 'diagnose'?")
    assert_rejected(run_script("diagnose_benchmark.py", "x.csv", "--top-kk", "3"), "did you mean '--top-k'?")
    assert_rejected(run_script("propose/benchfill.py", "statsu", "x"), "did you mean 'status'?")


def test_n_trials_above_every_count_warns_with_what_was_meant(tmp_path):
    matrix = tmp_path / "m.csv"
    matrix.write_text("model,q1,q2,q3\na,1,0,1\nb,0,1,1\nc,1,1,0\n", encoding="utf-8")
    done = run_script("check_response_matrix.py", matrix, "--n-trials", "8")
    assert "no count reaches --n-trials 8 (the largest is 1)" in done.stderr and "--n-trials 1" in done.stderr
    quiet = run_script("check_response_matrix.py", matrix, "--n-trials", "1")
    assert "no count reaches" not in quiet.stderr


def test_a_wide_table_with_far_more_models_than_items_warns(tmp_path):
    out = tmp_path / "m.csv"
    done = run_script("prepare_response_matrix.py", "--from", "wide", CHEMBENCH, "--n-trials", "1", "--output", out)
    assert done.returncode == 0, done.stderr
    assert "far more models than items" in done.stderr and "--items-as-rows" in done.stderr
    right = run_script("prepare_response_matrix.py", "--from", "wide", CHEMBENCH, "--items-as-rows", "--n-trials",
                       "1", "--output", tmp_path / "m2.csv")
    assert right.returncode == 0 and "far more models" not in right.stderr


def test_diagnose_warns_on_an_unconverged_fit_and_on_top_k_over_few_items(tmp_path):
    fit = tmp_path / "fit"
    fit.mkdir()
    (fit / "difficulty.csv").write_text("item,b_mean,b_sd,r_hat,ess_bulk\nq1,-1,0.1,1.245,30\nq2,0.5,0.1,1.0,900\n"
                                        "q3,2,0.1,1.001,800\nq4,0.1,0.1,,\n", encoding="utf-8")
    (fit / "diagnostics.json").write_text('{"divergences": 3}', encoding="utf-8")
    done = run_script("diagnose_benchmark.py", fit / "difficulty.csv")
    assert done.returncode == 0
    assert "r_hat 1.245 > 1.01" in done.stderr and "ess_bulk 30 < 400" in done.stderr
    assert "3 divergent transitions" in done.stderr
    assert "Top-5 Gap Sum adds every gap and is 1 by construction" in done.stderr
    good = tmp_path / "good.csv"
    good.write_text("item,b_mean,r_hat,ess_bulk\n" + "".join(f"q{i},{i * 0.37 % 2},1.001,900\n" for i in range(9)),
                    encoding="utf-8")
    clean = run_script("diagnose_benchmark.py", good, "--json")
    assert clean.returncode == 0 and clean.stderr == "", clean.stderr


def test_benchmark_names_come_from_the_data_or_name(tmp_path):
    fit = tmp_path / "fit"
    fit.mkdir()
    (fit / "difficulty.csv").write_text("item,b_mean\nq1,0\nq2,1\nq3,0.2\nq4,0.7\nq5,0.4\n", encoding="utf-8")
    folder = run_script("diagnose_benchmark.py", fit / "difficulty.csv", "--json")
    assert '"benchmark": "fit"' in folder.stdout
    (fit / "diagnostics.json").write_text('{"benchmark": "aime24", "divergences": 0}', encoding="utf-8")
    recorded = run_script("diagnose_benchmark.py", fit / "difficulty.csv", "--json")
    assert '"benchmark": "aime24"' in recorded.stdout, recorded.stdout
    given = run_script("diagnose_benchmark.py", fit / "difficulty.csv", "--json", "--name", "AIME 2024")
    assert '"benchmark": "AIME 2024"' in given.stdout
    assert_rejected(run_script("diagnose_benchmark.py", fit / "difficulty.csv", fit / "difficulty.csv", "--name",
                               "x"), "one name per file")


def test_errors_name_the_next_step(tmp_path):
    responses = ROOT / "data" / "example_simulated" / "responses.csv"
    assert_rejected(run_script("fit_irt.py", responses, "--n-trials", "8", "--output-dir", tmp_path / "o"),
                    "benchmeasure prepare")
    assert_rejected(run_script("prepare_response_matrix.py", CHEMBENCH, "--n-trials", "1", "--output",
                               tmp_path / "m.csv"), "--from wide")
    fit = tmp_path / "fit"
    fit.mkdir()
    (fit / "difficulty.csv").write_text("item,b_mean\nq1,0\nq2,1\n", encoding="utf-8")
    assert_rejected(run_script("posterior_metrics.py", fit), "--save-posterior")
    (tmp_path / "res" / "math_sim").mkdir(parents=True)
    (tmp_path / "res" / "math_sim" / "LATEST").write_text("x\n", encoding="utf-8")
    assert_rejected(run_script("propose/benchfill.py", "where", "--benchmark", "aime24", "--results",
                               tmp_path / "res"), "BENCHMARK=math_sim")


@pytest.mark.parametrize(("script", "old", "new"), [
    ("posterior_metrics.py", "--probability", "--hdi-prob"),
    ("label_validity.py", "--level", "--hdi-prob"),
    ("make_example.py", "--trials", "--n-trials"),
    ("explore_benchmarks.py", "--probability", "--hdi-prob"),
    ("prepare_cpu_model.py", "--out", "--output-dir"),
])
def test_old_flag_names_are_hidden_from_help(script, old, new):
    helped = run_script(script, "--help")
    assert new in helped.stdout and f"{old} " not in helped.stdout and f"{old}\n" not in helped.stdout


def test_an_old_flag_name_works_and_warns(tmp_path):
    out = tmp_path / "example"
    done = run_script("make_example.py", "--output-dir", out, "--models", "2", "--items", "3", "--trials", "2")
    assert done.returncode == 0, done.stderr
    assert "warning: --trials is deprecated" in done.stderr and "use --n-trials" in done.stderr
    assert (out / "responses.csv").read_text(encoding="utf-8").splitlines()[2].split(",")[2] == "1"  # trial 1 of 2
    assert '"trials": 2' in (out / "settings.json").read_text(encoding="utf-8")


def test_a_refused_input_prints_its_error_line_alone(tmp_path):
    # the deprecation warning came before the refusal: the one error line is all that is shown
    assert_rejected(run_script("make_example.py", "--output-dir", tmp_path / "e", "--trials", "2", "--models", "1"),
                    "--models")


def test_old_flag_value_reaches_the_command(tmp_path):
    draws = tmp_path / "d.csv"
    draws.write_text("q1,q2,q3\n0,1,2\n0,2,1\n0.5,1,2\n", encoding="utf-8")
    old = run_script("posterior_metrics.py", draws, "--probability", "0.5", "--json", "--top-k", "2")
    new = run_script("posterior_metrics.py", draws, "--hdi-prob", "0.5", "--json", "--top-k", "2")
    assert old.returncode == new.returncode == 0
    assert '"interval": "central 0.5' in old.stdout
    assert old.stdout.replace("--probability", "--hdi-prob") == new.stdout


def test_plot_writes_an_svg_alone(tmp_path):
    pytest.importorskip("matplotlib")
    diff = tmp_path / "difficulty.csv"
    diff.write_text("item,b_mean\n" + "".join(f"q{i},{(i * 0.37) % 2}\n" for i in range(12)), encoding="utf-8")
    done = run_script("plot_difficulty.py", diff, "--output", tmp_path / "fig.svg")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["difficulty.csv", "fig.svg"]
    assert (tmp_path / "fig.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_one_trial_is_singular(tmp_path):
    responses = tmp_path / "r.csv"
    responses.write_text("model,item_id,trial,correct\na,q1,0,1\na,q2,0,0\nb,q1,0,0\nb,q2,0,1\n", encoding="utf-8")
    done = run_script("prepare_response_matrix.py", responses, "--n-trials", "1", "--output", tmp_path / "m.csv")
    assert done.returncode == 0 and "1 trial each" in done.stderr, done.stderr


def test_score_with_n_trials_above_the_data_says_what_was_meant(tmp_path):
    # issue 22: 0/1 answers scored with --n-trials 8 gave theta -2.80 at exit 0 and no word
    difficulty = tmp_path / "difficulty.csv"
    difficulty.write_text("item,b_mean\n" + "".join(f"q{i},{-1.5 + 0.3 * i}\n" for i in range(10)), encoding="utf-8")
    answers = tmp_path / "new.csv"
    answers.write_text("model,q0,q1,q2,q3,q4,q5,q6,q7,q8,q9\nnew,1,1,1,1,1,1,1,0,0,0\n", encoding="utf-8")
    done = run_script("score_models.py", answers, "--difficulty", difficulty, "--n-trials", "8",
                      "--output", tmp_path / "scores.csv")
    assert done.returncode == 0, done.stderr
    assert "no count reaches --n-trials 8 (the largest is 1)" in done.stderr and "give --n-trials 1" in done.stderr
