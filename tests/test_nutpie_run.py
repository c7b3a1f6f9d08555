"""nutpie imported without ArviZ, pandas or xarray (irt/nutpie_run.py), and the draws a fit keeps as plain arrays
(irt/draws.py): a default fit never loads the three, a nutpie that needs them for more than annotations gets them,
and the arrays answer as the DataTree of the same draws."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.conftest import ROOT, run_script


def test_a_default_fit_imports_neither_pandas_nor_xarray_nor_arviz(tmp_path):
    rng = np.random.default_rng(3)
    counts = rng.binomial(3, 1.0 / (1.0 + np.exp(-(rng.normal(size=(6, 1)) - rng.normal(size=40)))))
    matrix = tmp_path / "m.csv"
    matrix.write_text("model," + ",".join(f"q{i}" for i in range(40)) + "\n"
                      + "".join(f"m{j}," + ",".join(map(str, row)) + "\n" for j, row in enumerate(counts)))
    done = run_script("fit_irt.py", matrix, "--n-trials", 3, "--output-dir", tmp_path / "fit", "--chains", 2,
                      "--tune", 100, "--draws", 100, "--seed", 1, "--quiet", flags=("-X", "importtime"))
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time")}
    assert "nutpie" in loaded and "numba" in loaded     # the fit did import what it samples with
    assert not loaded & {"pandas", "xarray", "arviz", "arviz_base"}, sorted(loaded & {"pandas", "xarray", "arviz"})
    assert (tmp_path / "fit" / "difficulty.csv").is_file()


def _import_fake_nutpie(tmp_path, body: str) -> list:
    """Import a stand-in ``nutpie`` package whose __init__ is ``body`` through ``import_nutpie`` in a fresh
    process; returns what it prints."""
    package = tmp_path / "fake" / "nutpie"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(body))
    probe = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        from benchmeasure.irt.nutpie_run import import_nutpie
        nutpie = import_nutpie()
        print("pandas loaded" if "pandas" in sys.modules else "pandas not loaded")
        print(nutpie.check())
    """)
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "fake")], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split("\n")[:2]


def test_names_used_only_in_annotations_load_nothing_until_asked_for(tmp_path):
    out = _import_fake_nutpie(tmp_path, """
        import pandas as pd
        import xarray as xr

        def convert(x: pd.DataFrame | None) -> xr.DataTree | list[pd.Index]:
            return x

        def check():
            return type(pd.Index([1, 2])).__name__      # used later: pandas itself
    """)
    assert out == ["pandas not loaded", "Index"]


@pytest.mark.parametrize("use", [
    "KEPT = pd.DataFrame",                       # a placeholder kept in a global: found after the import
    "class Frame(pd.DataFrame):\n    pass",       # subclassed: refused at once
    "EMPTY = pd.Index([])",                       # called: refused at once
    "import pandas.api.types",                    # a submodule: not on a stand-in
])
def test_a_nutpie_that_needs_pandas_at_import_gets_pandas_itself(tmp_path, use):
    out = _import_fake_nutpie(tmp_path, "import pandas as pd\n" + use + """

def check():
    import pandas
    return pd.DataFrame is pandas.DataFrame and all(
        not type(v).__name__ == "_Placeholder" for v in globals().values())
""")
    assert out == ["pandas loaded", "True"]


def test_draws_answer_as_the_datatree_of_the_same_draws():
    from benchmeasure.irt.draws import Draws

    rng = np.random.default_rng(0)
    theta, b = rng.normal(size=(2, 20, 3)), rng.normal(size=(2, 20, 4)).astype(np.float32)
    draws = Draws({"theta": (("model",), theta)}, {"model": ["a", "b", "c"]},
                  {"diverging": np.zeros((2, 20), dtype=bool), "n_steps": np.full((2, 20), 7, dtype=np.uint64)})
    draws = draws.with_variable("b", ("item",), b, {"item": ["q0", "q1", "q2", "q3"]})
    assert draws.shape == (2, 20) and draws.names() == ["theta", "b"]
    assert draws.labels("b") == ["b[q0]", "b[q1]", "b[q2]", "b[q3]"]
    tree = draws.tree()
    np.testing.assert_array_equal(tree["posterior"]["b"].values, b)
    assert tree["posterior"]["b"].dtype == np.float32 and list(tree["posterior"]["model"].values) == ["a", "b", "c"]
    assert draws["posterior"]["theta"].dims == ("chain", "draw", "model")       # asked as a DataTree
    again = Draws.of(tree)
    np.testing.assert_array_equal(again.values("theta"), theta)
    assert again.labels("theta") == draws.labels("theta") and set(again.stats) == {"diverging", "n_steps"}
    kept = draws.keep(["b"])
    assert kept.names() == ["b"] and "model" not in kept.coords

    from benchmeasure.irt.diagnostics import summarize_diagnostics

    assert summarize_diagnostics(draws) == summarize_diagnostics(tree)


pa = pytest.importorskip("pyarrow")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_TYPES = [pa.bool_(), pa.int8(), pa.int32(), pa.int64(), pa.uint64(), pa.float32(), pa.float64()]


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(_TYPES), data=st.data())
def test_arrow_columns_are_read_as_pyarrow_reads_them(kind, data):
    """``_numbers`` (Arrow buffers → NumPy, without pandas) against pyarrow's own conversion, missing values and
    sliced arrays included: NaN in a float column, 0 / False elsewhere, in the column's own type."""
    from benchmeasure.irt.nutpie_run import _numbers

    if pa.types.is_boolean(kind):
        element = st.booleans()
    elif pa.types.is_floating(kind):
        element = st.floats(width=kind.bit_width, allow_nan=False)
    else:
        info = np.iinfo(kind.to_pandas_dtype())
        element = st.integers(int(info.min), int(info.max))
    values = data.draw(st.lists(st.one_of(st.none(), element), max_size=40))
    array = pa.array(values, type=kind)
    start = data.draw(st.integers(0, len(values)))
    array = array.slice(start, data.draw(st.integers(0, len(values) - start)))
    ours = _numbers(array)
    filled = array if pa.types.is_floating(kind) else array.fill_null(False if pa.types.is_boolean(kind) else 0)
    theirs = filled.to_numpy(zero_copy_only=False)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


@settings(max_examples=50, deadline=None)
@given(rows=st.integers(0, 6), width=st.integers(1, 4), start=st.integers(0, 3), large=st.booleans())
def test_list_columns_of_draws_are_read_whole_rows_in_order(rows, width, start, large):
    from benchmeasure.irt.nutpie_run import _flat

    flat = np.arange((rows + start) * width, dtype=float)
    kind = pa.large_list(pa.float64()) if large else pa.list_(pa.float64())
    column = pa.array([list(flat[i * width:(i + 1) * width]) for i in range(rows + start)], type=kind).slice(start)
    np.testing.assert_array_equal(_flat(column), flat[start * width:])
    np.testing.assert_array_equal(_flat(pa.array(flat).slice(start)), flat[start:])
