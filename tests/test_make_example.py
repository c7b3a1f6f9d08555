"""scripts/make_example.py regenerates the bundled simulated example byte for byte."""

import json

import pytest

from conftest import ROOT, assert_rejected, run_script

BUNDLED = ROOT / "data" / "example_simulated"
GENERATED = ["responses.csv", "settings.json", "true_ability.csv", "true_difficulty.csv"]


def test_regenerates_the_bundled_example_byte_for_byte(tmp_path):
    # the command data/example_simulated/README.md gives, with the output redirected (seed 2026 is the default)
    out = run_script("make_example.py", "--output-dir", tmp_path / "example")
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in (tmp_path / "example").iterdir()) == GENERATED
    assert sorted(p.name for p in BUNDLED.iterdir()) == sorted([*GENERATED, "README.md"])
    for name in GENERATED:
        assert (tmp_path / "example" / name).read_bytes() == (BUNDLED / name).read_bytes(), name
    assert json.loads((BUNDLED / "settings.json").read_text())["seed"] == 2026
    assert "(seed 2026)" in (BUNDLED / "README.md").read_text()


def test_another_seed_gives_other_responses(tmp_path):
    out = run_script("make_example.py", "--output-dir", tmp_path, "--seed", 7)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "responses.csv").read_bytes() != (BUNDLED / "responses.csv").read_bytes()
    assert json.loads((tmp_path / "settings.json").read_text())["seed"] == 7


@pytest.mark.parametrize("flag, value, least", [("--models", 1, 2), ("--models", -1, 2), ("--items", 0, 2),
                                                ("--trials", 0, 1)])
def test_degenerate_designs_are_rejected_before_writing(tmp_path, flag, value, least):
    out = run_script("make_example.py", "--output-dir", tmp_path / "example", flag, value)
    assert_rejected(out, flag, f"{value} is outside the allowed range [{least}, ")
    assert not (tmp_path / "example").exists()
