"""The build backend of ``pip install .``: setuptools' own, with its ``build/`` folder in a temporary directory.

pip (21.3 and later) builds in the checkout, and setuptools then leaves ``build/`` (``lib/``, ``bdist.*/``) there,
untracked. Every hook is setuptools.build_meta's; the two that build wheels run with the distutils ``build_base``
pointed at a temporary folder (through ``DIST_EXTRA_CONFIG``, an extra configuration file setuptools reads),
removed when the hook returns. pyproject.toml names this module (``backend-path = ["."]``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the hooks this module does not change)


@contextlib.contextmanager
def _build_base_elsewhere():
    with tempfile.TemporaryDirectory(prefix="benchmeasure-build-") as folder:
        config = os.path.join(folder, "build.cfg")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(f"[build]\nbuild_base = {os.path.join(folder, 'build')}\n")
        before = os.environ.get("DIST_EXTRA_CONFIG")
        os.environ["DIST_EXTRA_CONFIG"] = config
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("DIST_EXTRA_CONFIG", None)
            else:
                os.environ["DIST_EXTRA_CONFIG"] = before


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with _build_base_elsewhere():
        return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    with _build_base_elsewhere():
        return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
