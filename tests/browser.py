"""Headless Debian Chromium driven by Playwright through its executable path (no browser download).

Used by the explorer's browser tests and by ``bench/bench_explorer.py``. Chromium is installed by
``bash scripts/setup_env.sh dev`` (Debian's ``chromium`` package); ``$BENCHMEASURE_CHROMIUM`` names
another binary. The flags keep a headless Chromium from reaching for the network at start (this
machine's network is closed) and let it run as root in a container.
"""

from __future__ import annotations

import os
import shutil

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


def chromium_path() -> str | None:
    """The Chromium binary to drive, or None when there is none."""
    for candidate in (os.environ.get("BENCHMEASURE_CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def unavailable() -> str | None:
    """Why no browser test can run here (None when one can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the Playwright package is not installed (bash scripts/setup_env.sh dev installs it)"
    if chromium_path() is None:
        return ("no Chromium found (bash scripts/setup_env.sh dev installs Debian's chromium as root; "
                "or set BENCHMEASURE_CHROMIUM)")
    return None


def launch(playwright):
    """A headless Chromium browser from a started ``sync_playwright()``."""
    return playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=FLAGS)
