"""Fuzz and edge cases of the readers the anchored workflows added: ability tables and named difficulty files."""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmeasure.base.errors import InputError
from benchmeasure.core.ability_file import read_ability_table
from benchmeasure.core.difficulty_file import read_item_difficulties

CELL = st.one_of(st.sampled_from(["0.5", "-1", "nan", "inf", "", "x", "1e3", " 2 ", "m1", "m2", '"a,b"']),
                 st.text(max_size=6))


def _table(header, rows):
    return "\n".join([",".join(header), *(",".join(row) for row in rows)]) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=st.lists(st.sampled_from(["model", "theta_mean", "theta_sd", "", "model "]), min_size=0, max_size=4),
       rows=st.lists(st.lists(CELL, min_size=0, max_size=4), max_size=5))
def test_ability_table_reads_or_refuses_with_one_input_error(tmp_path, header, rows):
    path = tmp_path / "ability.csv"
    path.write_text(_table(header, rows), encoding="utf-8")
    try:
        abilities = read_ability_table(path)
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert abilities and all(math.isfinite(v) for v in abilities.values())
    assert len(abilities) == sum(1 for row in rows if any(cell.strip() for cell in row))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=st.lists(st.sampled_from(["item", "item_id", "b_mean", "b_sd", ""]), min_size=0, max_size=4),
       rows=st.lists(st.lists(CELL, min_size=0, max_size=4), max_size=5))
def test_named_difficulties_read_or_refuse_with_one_input_error(tmp_path, header, rows):
    path = tmp_path / "difficulty.csv"
    path.write_text(_table(header, rows), encoding="utf-8")
    try:
        items, values = read_item_difficulties(path)
    except InputError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert len(set(items)) == len(items) == len(values) >= 2
    assert all(math.isfinite(v) for v in values)


def test_duplicate_model_is_named_with_its_line(tmp_path):
    path = tmp_path / "ability.csv"
    path.write_text("model,theta_mean\na,0.1\nb,0.2\na,0.3\n")
    with pytest.raises(InputError, match=r"line 4, column 'model': model 'a' appears more than once"):
        read_ability_table(path)


def test_difficulties_need_item_ids(tmp_path):
    path = tmp_path / "difficulty.csv"
    path.write_text("b_mean\n0.1\n0.2\n")
    with pytest.raises(InputError, match="must name their items"):
        read_item_difficulties(path)
