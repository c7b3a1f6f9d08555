"""The extension registries: every registered grader and log format is checked here, and a toy of each kind
registered from this file (outside the package) runs through the public path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmeasure.base.errors import InputError
from benchmeasure.base.registry import Registry, resolve
from benchmeasure.core.harness import FORMATS, Format, HarnessLog, ReadOptions, Sample, logs_to_matrix, read_log
from benchmeasure.grading import GRADERS, Grader, grade, kind_for
from benchmeasure.verifier.rollouts import PROMPTS, rollout_template
from benchmeasure.verifier.validity import ValidityPolicy, near_duplicate, reference_parseable, well_formed
from conftest import assert_rejected, run_script


@pytest.mark.parametrize("name", list(GRADERS))
def test_every_grader_has_its_parts(name):
    grader = GRADERS[name]
    assert (Path(PROMPTS) / grader.template_name).is_file()
    assert "$question" in rollout_template(name).template
    assert callable(resolve(grader.grade.target))
    for key in grader.benchmarks:
        if not key.endswith("*"):
            assert kind_for(key) == name
    assert grader.same_answer("x", "x") in (True, False)


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_format_has_its_parts(name):
    fmt = FORMATS[name]
    assert fmt.package and fmt.repeats_hint.startswith(" (")
    with pytest.raises(InputError):  # an option the format does not take is refused by name
        others = [o for o in ("filter_name", "metric", "scorer", "partial", "perturbation") if o not in fmt.options]
        read_log(name, Path("nowhere"), ReadOptions(**{others[0]: "x"}))


def test_registry_refuses_a_taken_name_and_lists_choices():
    registry = Registry("widget")
    registry.register(Grader(name="w", grade=lambda r, ref: True))
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Grader(name="w", grade=lambda r, ref: True))
    with pytest.raises(InputError, match=r"unknown widget 'v' \(choose from w\)"):
        registry.get("v")
    with pytest.raises(ValueError, match="module:object"):
        resolve("no_colon_here")


def _toy_grade(response: str, reference: str, casefold: bool = False) -> bool:
    a, b = response.strip(), reference.strip()
    return a.casefold() == b.casefold() if casefold else a == b


def _toy_check_reference(reference, policy):
    return None if reference.strip() else "toy reference is empty"


@pytest.fixture
def toy_grader(tmp_path):
    template = tmp_path / "toy_rollout.txt"
    template.write_text("Answer in one word.\n$question\n")
    grader = GRADERS.register(Grader(
        name="toy-exact", grade=_toy_grade, options=("casefold",), check_reference=_toy_check_reference,
        same_answer=lambda a, b: a.casefold() == b.casefold(), template=template, benchmarks=("toybench*",)))
    yield grader
    GRADERS.unregister("toy-exact")


def test_a_grader_registered_from_outside_is_used_everywhere(toy_grader):
    from benchmeasure.benchfill.config import config_from_dict

    assert grade("toy-exact", " Paris", "paris", casefold=True) and not grade("toy-exact", "Paris", "paris")
    assert kind_for("toybench_v2") == "toy-exact"
    assert rollout_template("toy-exact").substitute(question="Capital of France?").endswith("France?\n")
    policy = ValidityPolicy()
    assert reference_parseable("Paris", "toy-exact", policy).ok
    assert reference_parseable("  ", "toy-exact", policy).reason == "toy reference is empty"
    assert well_formed("What is the capital of France?", "Paris", "toy-exact").ok
    existing = [("q1", "What is the capital city of France today?", "PARIS")]
    assert not near_duplicate("What is the capital city of France today??", "paris", "toy-exact", existing).ok
    bench = {"name": "toy", "grader": "toy-exact", "calibration": "c.csv", "pool": "p.jsonl", "matrix": "m.csv",
             "matrix_n_trials": 2}
    config = {"benchmark": bench, "validity": {"grade_options": {"casefold": True}}}
    assert config_from_dict(config, "toy.toml").benchmark.grader == "toy-exact"
    with pytest.raises(InputError, match="not an option of the toy-exact grader"):
        config_from_dict({**config, "validity": {"grade_options": {"symbolic": True}}}, "toy.toml")


def test_an_unregistered_grader_is_refused():
    with pytest.raises(InputError, match="unknown grader kind 'toy-exact'"):
        grade("toy-exact", "a", "a")


def _read_toy(path, options):
    """A toy format: one JSON object per line, {"id", "target", "responses"}; the model is the file's stem."""
    samples = []
    for line_no, line in enumerate(Path(path).read_text().splitlines(), 1):
        row = json.loads(line)
        samples.append(Sample(row["id"], row["target"], tuple(row["responses"]), {}, line_no))
    return HarnessLog("toy-jsonl", Path(path), Path(path).stem, "toy-task", samples, "id")


def test_a_format_registered_from_outside_reads_logs_into_a_matrix(tmp_path, toy_grader):
    FORMATS.register(Format("toy-jsonl", _read_toy, "toy_package", (), " (ask the toy for K answers)"))
    try:
        for model, answers in (("m1", ["a", "b", "a"]), ("m2", ["b", "b", "a"])):
            (tmp_path / f"{model}.jsonl").write_text("\n".join(
                json.dumps({"id": i, "target": "a", "responses": [answers[i], answers[i]]}) for i in range(3)))
        logs = [read_log("toy-jsonl", tmp_path / f"{m}.jsonl") for m in ("m1", "m2")]
        matrix, _rows = logs_to_matrix(logs, None, 2, grade_kind="toy-exact")
        assert matrix.models == ["m1", "m2"] and matrix.counts.tolist() == [[2, 0, 2], [0, 0, 2]]
        (tmp_path / "m3.jsonl").write_text(json.dumps({"id": 0, "target": "a", "responses": ["a"]}))
        with pytest.raises(InputError, match="ask the toy for K answers"):  # the entry's repeat hint
            logs_to_matrix([read_log("toy-jsonl", tmp_path / "m3.jsonl")], None, 2, grade_kind="toy-exact")
        with pytest.raises(InputError, match="--metric applies to"):
            read_log("toy-jsonl", tmp_path / "m1.jsonl", ReadOptions(metric="acc"))
    finally:
        FORMATS.unregister("toy-jsonl")


TOY_OPTION_GRADER = "tests/fixtures/toy_option_grader.py"   # registers "toy-tolerant" (option: tolerance)


def test_a_grader_option_reaches_the_command_line():
    """A grader registered from outside the package gets its own option from ``grade --option KEY=VALUE``."""
    common = ["--kind", "toy-tolerant", "--reference", "1.0", "--response", "1.04"]
    strict = run_script(TOY_OPTION_GRADER, *common)
    assert strict.returncode == 0 and strict.stdout.strip().splitlines()[-1] == "0", strict.stderr
    loose = run_script(TOY_OPTION_GRADER, *common, "--option", "tolerance=0.05")
    assert loose.returncode == 0 and loose.stdout.strip().splitlines()[-1] == "1", loose.stderr
    assert_rejected(run_script(TOY_OPTION_GRADER, *common, "--option", "tol=0.05"),
                    "--option tol", "toy-tolerant grader", "accepted: tolerance")
    assert_rejected(run_script(TOY_OPTION_GRADER, *common, "--option", "tolerance"), "KEY=VALUE")
    assert_rejected(run_script(TOY_OPTION_GRADER, *common, "--option", "tolerance=0.05", "--option",
                               "tolerance=0.1"), "given twice")


@pytest.mark.parametrize(("text", "value"), [("t=0.5", 0.5), ("t=3", 3), ("t=true", True), ("t=null", None),
                                             ("t=strict", "strict"), ('t="3"', "3"), ("t=[1, 2]", "[1, 2]"),
                                             ("t=", "")])
def test_option_values_are_json_scalars_else_text(text, value):
    from benchmeasure.base.options import key_value

    assert key_value(text) == ("t", value)


def test_a_plugin_imports_format_and_lists_the_registries_without_numpy():
    """The harness package imports its readers and NumPy lazily: ``Format``, the records and every format's and
    grader's name are there on a Python without NumPy (as the command line's choices and --help need)."""
    import subprocess
    import sys

    from conftest import ROOT

    code = ("import sys\n"
            "class NoNumpy:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'numpy':\n"
            "            raise ImportError('no numpy here')\n"
            "sys.meta_path.insert(0, NoNumpy())\n"
            "from benchmeasure.core.harness import FORMATS, Format, HarnessLog, Sample\n"
            "from benchmeasure.grading import GRADERS\n"
            "print(' '.join(FORMATS), '|', ' '.join(GRADERS))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [*FORMATS, "|", *GRADERS]


def test_an_anchor_strategy_registered_from_outside_gets_its_options():
    import numpy as np

    from benchmeasure.analyses.anchors import STRATEGIES, select_anchors

    @STRATEGIES.add("toy-hardest", options=("skip",))
    def hardest(b, k, rng, *, skip=0, **unused):
        return np.argsort(-b, kind="stable")[skip:skip + k]

    try:
        b = np.array([0.1, 2.0, -1.0, 1.5, 0.7])
        assert select_anchors(b, 2, "toy-hardest", 0).tolist() == [3, 1]
        assert select_anchors(b, 2, "toy-hardest", 0, options={"skip": 1}).tolist() == [4, 3]
        with pytest.raises(InputError, match="'depth' is not an option of the toy-hardest anchor strategy"):
            select_anchors(b, 2, "toy-hardest", 0, options={"depth": 1})
        assert list(STRATEGIES)[:3] == ["stratified", "information", "random"]
    finally:
        STRATEGIES.unregister("toy-hardest")


BUILTIN_ORDER = [
    ("benchmeasure.grading.ifeval", "benchmeasure.grading:GRADERS", "math choice ifeval"),
    ("benchmeasure.core.harness.helm", "benchmeasure.core.harness:FORMATS",
     "lmms-eval lm-eval lighteval inspect evalscope helm opencompass"),
    ("benchmeasure.benchfill.strategies.uniform", "benchmeasure.benchfill.strategies:STRATEGIES", "benchfill baseline"),
    ("benchmeasure.irt.observation", "benchmeasure.irt.observation:OBSERVATIONS", "binomial beta-binomial"),
    ("benchmeasure.scope.strategies", "benchmeasure.scope.strategies:STRATEGIES", "uniform quickscope lucb shared"),
    ("benchmeasure.scope.utility", "benchmeasure.scope.utility:UTILITIES", "error complexity band"),
    ("benchmeasure.analyses.anchors", "benchmeasure.analyses.anchors:STRATEGIES", "stratified information random"),
    ("benchmeasure.browse.hybrid", "benchmeasure.browse.fusion:MODES", "prf dense fused rrf lexical"),
    ("benchmeasure.suite.mirt", "benchmeasure.suite.mirt:ROUTES", "collapsed joint"),
]


def test_each_builtin_module_imported_first_registers_in_the_registry_order():
    """No import circle between a registry and its built-in modules: importing a built-in module first (in a fresh
    interpreter) works, and the registry still lists the built-ins in the order of its ``builtins``. A registry's
    own package does not import its built-in modules (they load on first read)."""
    import subprocess
    import sys

    from conftest import ROOT

    def run(code: str) -> str:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    for module, registry, names in BUILTIN_ORDER:
        assert run(f"import {module}\nfrom benchmeasure.base.registry import resolve\n"
                   f"print(*resolve({registry!r}))") == names, module
    loaded = run("import sys\nimport benchmeasure.benchfill.strategies, benchmeasure.grading\n"
                 "import benchmeasure.core.harness\n"
                 "print(sorted(m for m in sys.modules if m.rsplit('.', 1)[-1] in "
                 "('uniform', 'difficulty_aware', 'math_answer', 'helm', 'assemble')))")
    assert loaded == "[]"
