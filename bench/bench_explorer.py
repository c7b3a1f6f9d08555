#!/usr/bin/env python3
"""Size and render time of the explorer page for 25 benchmarks of 10,000 items each.

Targets (issue 14): the page stays under 5 MB and renders in under 2 s in headless Chromium.
Three pages are built through the real command line and loaded from their file URL:

* ``difficulties``: the released layout (``item_id,b_mean``, IDs 0 … N−1) without ``test.jsonl``;
* ``string IDs``: fit_irt.py-style files whose item IDs are strings (``item,b_mean``);
* ``questions``: the released layout with a ``test.jsonl`` per benchmark, default settings: question
  text up to 120 characters, cut shorter where the page would pass the 5 MB budget (``--max-mb``);
* ``all text``: the same with ``--max-mb 0``, every question kept to 120 characters (the alternative).

For each: the file size; the time until the page has drawn its table and first chart
(``performance.now()`` at the page's ready mark, measured from navigation start, so HTML
parsing, JSON parsing and drawing are all in it), best and median of ``--repeats`` loads in a
fresh tab; and the time to switch to another benchmark (redraw of a 10,000-item chart).

    .venv-irt/bin/python bench/bench_explorer.py [--benchmarks 25] [--items 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_browser = runpy.run_path(str(ROOT / "tests" / "browser.py"))  # the tests' Chromium launcher
launch, unavailable = _browser["launch"], _browser["unavailable"]

WORDS = ("triangle circle integer prime remainder probability expected value sequence polynomial root real "
         "number digits sum product area perimeter angle chord tangent radius chessboard rook coloring graph "
         "vertex edge path function derivative integral limit matrix vector solve find compute determine how "
         "many ways the of a an is are with such that where each every at least most distinct positive").split()
SIZE_MB, RENDER_S = 5.0, 2.0


def write_suite(root: Path, benchmarks: int, items: int, layout: str, seed: int = 0) -> Path:
    rng = random.Random(seed)
    for k in range(benchmarks):
        folder = root / f"bench{k:02d}"
        folder.mkdir(parents=True)
        shape = rng.uniform(0.5, 3.0)
        b = [rng.gammavariate(shape, 1.0) - shape for _ in range(items)]
        if layout == "string IDs":
            rows = ["item,b_mean,b_sd"] + [f"{folder.name}-q{i:05d},{v:.6f},0.12" for i, v in enumerate(b)]
        else:
            rows = ["item_id,b_mean"] + [f"{i},{v:.6f}" for i, v in enumerate(b)]
        (folder / "difficulty.csv").write_text("\n".join(rows) + "\n")
        if layout == "questions":
            with open(folder / "test.jsonl", "w", encoding="utf-8") as handle:
                for i in range(items):
                    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 70)))
                    handle.write(json.dumps({"item_id": i, "question": text.capitalize() + "?"}) + "\n")
    return root


def build(folder: Path, output: Path, *extra: str) -> tuple[float, int | None]:
    """Build the page; return the seconds taken and the question characters it kept (None: no text)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "explore_benchmarks.py"), str(folder),
                           "--output", str(output), "--quiet", *extra], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    data = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>',
                     output.read_text(encoding="utf-8"), re.S)
    page = json.loads(data.group(1))
    chars = page["provenance"]["settings"]["question_chars"] if page["benchmarks"][0]["questions"] else None
    return time.perf_counter() - started, chars


def measure(browser, path: Path, repeats: int) -> dict:
    loads, switches = [], []
    for _ in range(repeats):
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        errors = []
        page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        page.goto(path.as_uri())
        page.wait_for_selector("html[data-ready='1']", timeout=60_000)
        loads.append(page.evaluate("window.explorerRenderMs") / 1000)
        switches.append(page.evaluate("""() => {
            const picker = document.getElementById('picker');
            const t = performance.now();
            picker.value = String(picker.options.length - 1);
            picker.dispatchEvent(new Event('change'));
            return performance.now() - t;
        }""") / 1000)
        if errors:
            raise SystemExit(f"{path}: console errors {errors[:3]}")
        page.close()
    return {"best": min(loads), "median": statistics.median(loads), "switch": statistics.median(switches)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=25)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    reason = unavailable()
    if reason:
        raise SystemExit(f"cannot measure: {reason}")
    from playwright.sync_api import sync_playwright

    results = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        browser = launch(playwright)
        for layout, extra in (("difficulties", ()), ("string IDs", ()), ("questions", ()),
                              ("all text", ("--max-mb", "0"))):
            suite = "questions" if layout == "all text" else layout
            folder = Path(tmp) / suite.replace(" ", "_")
            if not folder.exists():
                write_suite(folder, args.benchmarks, args.items, suite)
            page = Path(tmp) / f"{layout.replace(' ', '_')}.html"
            built, chars = build(folder, page, *extra)
            timing = measure(browser, page, args.repeats)
            results.append((layout, page.stat().st_size / 1e6, built, timing, chars))
        browser.close()
    print(f"explorer page, {args.benchmarks} benchmarks x {args.items:,} items, headless Chromium "
          f"({args.repeats} loads each)")
    print(f"{'page':<14} {'text chars':>10} {'size MB':>8} {'target':>7} {'render s':>9} {'(median)':>9} "
          f"{'target':>7} {'switch s':>9} {'build s':>8}")
    for layout, size, built, t, chars in results:
        print(f"{layout:<14} {'-' if chars is None else chars:>10} {size:8.2f} {'<' + str(SIZE_MB):>7} "
              f"{t['best']:9.3f} {t['median']:9.3f} {'<' + str(RENDER_S):>7} {t['switch']:9.3f} {built:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
