"""The explorer page in a real browser: headless Debian Chromium, driven by Playwright, loading the file from disk.

Skipped, with the reason, only where no Chromium or no Playwright is installed
(``bash scripts/setup_env.sh dev`` installs both).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from browser import launch, unavailable
from test_explorer import EVIL_ID, EVIL_NAME, EVIL_QUESTION, diagnose_json, make_benchmark, page_data, suite

from conftest import ROOT, run_script

REASON = unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

# chart geometry of template.html (viewBox 720 × 540; plot 440 px square at (58, 26); item ticks at y 492–504)
VIEW_W, VIEW_H, LEFT, SIZE, RUG_Y = 720, 540, 58, 440, 492


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


def open_page(browser, path):
    """The page loaded from its file URL; the list collects console errors/warnings, page errors and requests."""
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: problems.append(f"request {r.url}") if not r.url.startswith("file:") else None)
    page.goto(path.as_uri())
    page.wait_for_selector("html[data-ready='1']")
    return page, problems


def text(page, selector: str) -> str:
    return page.locator(selector).first.text_content()


def row_values(page, name: str) -> dict:
    """A table row's metric cells as shown (the value, without the interval line beneath)."""
    return page.evaluate("""(name) => {
        for (const tr of document.querySelectorAll('#table tbody tr')) {
            if (tr.querySelector('td[data-key=name]').firstChild.textContent !== name) continue;
            const out = {};
            for (const td of tr.querySelectorAll('td')) {
                out[td.dataset.key] = td.firstChild ? td.firstChild.textContent : '';
            }
            out.highlighted = [...tr.querySelectorAll('td.hi')].map((td) => td.dataset.key);
            out.interval = [...tr.querySelectorAll('td .iv')].map((s) => s.textContent);
            return out;
        }
        return null;
    }""", name)


def shown_names(page) -> list:
    cells = page.locator("#table tbody td[data-key=name]")
    return cells.evaluate_all("tds => tds.map((td) => td.firstChild.textContent)")


def chart_labels(page) -> dict:
    return {"title": text(page, "#chart-title"), "ddm": text(page, "[data-role=ddm-label]"),
            "max_gap": text(page, "[data-role=maxgap-label]"),
            "widest": text(page, "[data-role=gap-label][data-rank='1']"),
            "top5": text(page, "[data-role=top5-label]")}


def hover_item(page, z: float) -> str:
    """Move the mouse over the item tick at normalized difficulty ``z``; returns the tooltip's text."""
    box = page.locator("#chart").bounding_box()
    page.mouse.move(box["x"] + (LEFT + z * SIZE) * box["width"] / VIEW_W,
                    box["y"] + (RUG_Y + 6) * box["height"] / VIEW_H)
    page.wait_for_selector("#tip", state="visible")
    return page.locator("#tip").inner_text()


def lonely_item(b: list) -> int:
    """The item farthest from its neighbours on the z axis (so the pointer cannot land nearer another)."""
    z = (np.asarray(b) - min(b)) / (max(b) - min(b))
    order = np.argsort(z)
    s = z[order]
    room = np.minimum(np.diff(np.r_[-1.0, s]), np.diff(np.r_[s, 2.0]))
    return int(order[int(np.argmax(room))])


def test_page_in_chromium(tmp_path, browser):
    files = suite(tmp_path)
    fit = files[2].parent
    b_fit = [float(line.split(",")[1]) for line in files[2].read_text().splitlines()[1:]]
    rng = np.random.default_rng(1)
    np.savez(fit / "draws.npz", b=np.asarray(b_fit) + rng.normal(0, 0.1, (200, len(b_fit))),
             items=np.array([f"q{i}" for i in range(len(b_fit))]))
    evil = make_benchmark(tmp_path / "more", EVIL_NAME, [0.0, 0.4, 1.0], test_ids=None)
    (evil / "test.jsonl").write_text("".join(json.dumps({"item_id": i, "question": EVIL_QUESTION}) + "\n"
                                             for i in range(3)))
    (tmp_path / "more" / "ids").mkdir()
    (tmp_path / "more" / "ids" / "difficulty.csv").write_text(f'item,b_mean\n"{EVIL_ID}",0\nplain,1\nx,3\n')
    out = tmp_path / "explorer.html"
    done = run_script("explore_benchmarks.py", tmp_path / "benchmarks", files[2], evil,
                      tmp_path / "more" / "ids" / "difficulty.csv", "--posterior", fit / "draws.npz", "--output", out)
    assert done.returncode == 0, done.stderr
    names = ["AIME24", "Skewed", "MyFit", EVIL_NAME, "ids"]
    cli = {name: diagnose_json(path) for name, path in zip(names, [*files, evil / "difficulty.csv",
                                                                 tmp_path / "more" / "ids" / "difficulty.csv"])}
    page, problems = open_page(browser, out)
    assert page.locator("#table tbody tr").count() == 5
    counts = page.locator("#counts li").all_inner_texts()
    ddm_count = sum(cli[n]["ddm"] >= 0.10 for n in names)
    assert any(c.replace("\n", " ") == f"{ddm_count}/5 have DDM ≥ 0.10" for c in counts), counts
    # the first benchmark is shown at load; pick the second with the selector, the others by clicking their rows
    for index in (1, 0, 2, 3, 4):
        name = names[index]
        if index < 2:
            page.select_option("#picker", index=index)
        else:
            page.locator("#table tbody tr", has_text=name).first.click()
        want = cli[name]
        labels = chart_labels(page)
        row = row_values(page, name)
        assert labels["title"] == f"{name} (n = {want['items']})"
        assert labels["ddm"] == f"DDM {want['ddm']:.3f}" == f"DDM {row['ddm']}"
        assert labels["max_gap"] == f"Max Gap {want['max_gap']:.3f}" == f"Max Gap {row['max_gap']}"
        assert labels["widest"] == f"{want['largest_gaps'][0]['width']:.3f}" == row["max_gap"]
        assert labels["top5"] == f"Top-5 Gap Sum {want['top5_gap_sum']:.3f}" == f"Top-5 Gap Sum {row['top5_gap_sum']}"
        assert page.locator("[data-role=gap-label]").count() == len(want["largest_gaps"])
        marked = [m for m, t in (("ddm", 0.10), ("max_gap", 0.10), ("top5_gap_sum", 0.30))
                  if want[m] >= t]
        assert row["highlighted"] == marked
        assert page.locator("tr.sel td[data-key=name]").first.evaluate("td => td.firstChild.textContent") == name
    # posterior: intervals under the metrics and a band of ECDF draws, only where given
    page.locator("#table tbody tr", has_text="MyFit").first.click()
    intervals = json.loads(run_script("posterior_metrics.py", fit / "draws.npz", "--json").stdout)["metrics"]
    assert row_values(page, "MyFit")["interval"] == [
        f"[{intervals[k]['low']:.3f}, {intervals[k]['high']:.3f}]" for k in ("ddm", "max_gap", "top5_gap_sum")]
    assert page.locator("[data-role=posterior-band]").count() == 1
    # hovering an item shows its ID, b_mean and z
    k = lonely_item(b_fit)
    z = (b_fit[k] - min(b_fit)) / (max(b_fit) - min(b_fit))
    tip = hover_item(page, z)
    assert f"item q{k}" in tip and f"b_mean {b_fit[k]:.4f}" in tip and f"z {z:.4f}" in tip
    # … and the start of the question text where test.jsonl has one; user strings stay text
    page.select_option("#picker", label=EVIL_NAME)
    assert text(page, "#chart-title") == f"{EVIL_NAME} (n = 3)"
    assert page.locator("[data-role=posterior-band]").count() == 0
    tip = hover_item(page, 0.4)
    assert "item 1" in tip and " ".join(EVIL_QUESTION.split())[:40] in tip.replace("\n", " ")
    page.select_option("#picker", label="ids")
    assert EVIL_ID in hover_item(page, 0.0)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img").count() == 0 and page.locator("script").count() == 2
    # keyboard: focus the chart and step through items
    page.locator("#chart rect[tabindex]").focus()
    page.keyboard.press("ArrowRight")
    assert "item plain" in page.locator("#tip").inner_text() or EVIL_ID in page.locator("#tip").inner_text()
    # sorting: DDM descending on the first click, ascending on the second
    page.locator("th[data-key=ddm] button").click()
    shown = shown_names(page)
    assert shown == sorted(names, key=lambda n: -cli[n]["ddm"])
    page.locator("th[data-key=ddm] button").click()
    shown = shown_names(page)
    assert shown == sorted(names, key=lambda n: cli[n]["ddm"])
    shot = tmp_path / "explorer.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    assert problems == []
    # the page's data is what the browser shows: one more cross-check of the inlined numbers
    assert [b["text"]["ddm"] for b in page_data(out)["benchmarks"]] == [f"{cli[n]['ddm']:.3f}" for n in names]


@pytest.mark.slow
def test_filled_page_in_chromium(tmp_path, browser, filled_runs):
    calibration, run, mass = filled_runs
    out = tmp_path / "filled.html"
    done = run_script("explore_benchmarks.py", calibration, "--filled", run, mass, "--output", out)
    assert done.returncode == 0, done.stderr
    page, problems = open_page(browser, out)
    cards = page.locator("[data-role=filled-run]")
    assert cards.count() == 2
    mass_summary = json.loads((mass / "mass_fill_summary.json").read_text())
    before, after = mass_summary["before"]["max_gap"], mass_summary["after"]["max_gap"]
    assert cards.nth(1).locator("[data-role=filled-maxgap]").text_content() == f"Max Gap {before:.3f} → {after:.3f}"
    assert cards.nth(0).locator("[data-role=new-item]").count() == 3
    assert cards.nth(1).locator("[data-role=new-items] tbody tr").count() == 3
    first = cards.nth(1).locator("[data-role=new-items] tbody tr").first.locator("td").all_inner_texts()
    assert first[0] == "MATH_SIM-fill-001"
    page.screenshot(path=str(tmp_path / "filled.png"), full_page=True)
    assert problems == []


@pytest.mark.slow  # prepares and fits (posterior mode) the real ChemBench matrix: about 10 s
def test_real_chembench_in_chromium(tmp_path, browser):
    """Real data: 22 LLMs × 2,854 ChemBench questions (data/chembench, MIT), fitted here, shown and checked."""
    matrix, fit = tmp_path / "matrix.csv", tmp_path / "ChemBench"
    done = run_script("prepare_response_matrix.py", "--from", "wide", ROOT / "data" / "chembench" / "binary_matrix.csv",
                      "--items-as-rows", "--n-trials", "1", "--output", matrix)
    assert done.returncode == 0, done.stderr
    done = run_script("fit_irt.py", matrix, "--n-trials", "1", "--output-dir", fit, "--method", "map")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "chembench.html"
    done = run_script("explore_benchmarks.py", fit, "--output", out)
    assert done.returncode == 0, done.stderr
    want = diagnose_json(fit / "difficulty.csv")
    page, problems = open_page(browser, out)
    labels = chart_labels(page)
    assert labels["title"] == "ChemBench (n = 2854)"
    assert labels["ddm"] == f"DDM {want['ddm']:.3f}" and labels["max_gap"] == f"Max Gap {want['max_gap']:.3f}"
    assert row_values(page, "ChemBench")["top5_gap_sum"] == f"{want['top5_gap_sum']:.3f}"
    b = [float(line.split(",")[1]) for line in (fit / "difficulty.csv").read_text().splitlines()[1:]]
    # with one trial per cell the 1PL's b depends on an item's total only: 2,854 items share a few dozen values
    z = [(v - min(b)) / (max(b) - min(b)) for v in b]
    for target in sorted(set(z))[1:4]:
        shown = hover_item(page, target).splitlines()
        item = int(shown[0].removeprefix("item "))
        assert z[item] == target and shown[1] == f"b_mean {b[item]:.4f} · z {target:.4f}"
    assert problems == []


def test_model_fit_and_drift_sections_in_chromium(tmp_path, browser, misfit_fit, drift_world):
    """The fit's model-fit check and a drift folder as the page shows them (conftest's shared fit and drift run)."""
    fit = misfit_fit / "fit"
    record = json.loads((fit / "check_fit" / "check_fit.json").read_text(encoding="utf-8"))
    name = json.loads((fit / "diagnostics.json").read_text(encoding="utf-8"))["benchmark"]
    out = tmp_path / "fit.html"
    done = run_script("explore_benchmarks.py", fit / "difficulty.csv", "--drift", f"{name}={drift_world['out']}",
                      "--output", out)
    assert done.returncode == 0, done.stderr
    page, problems = open_page(browser, out)
    section = page.locator("[data-role=model-fit]")
    assert section.locator("[data-role=model-fit-summary]").text_content() == record["summary"]
    rows = section.locator("[data-role=fit-items] tbody tr")
    assert rows.count() == len(record["flagged_items"])
    assert sorted(rows.locator("td[data-key=item]").all_text_contents()) == sorted(record["flagged_items"])
    assert any("ability falls" in t for t in rows.locator("td[data-key=reason]").all_text_contents())
    assert section.locator("[data-role=fit-models] td[data-key=model]").all_text_contents() == record["flagged_models"]
    drift = page.locator("[data-role=drift]")
    assert "1 of 10 models flagged" in drift.locator("[data-role=drift-summary]").text_content()
    flagged = drift.locator("[data-role=drift-models] tbody tr.flag")
    assert flagged.count() == 1 and flagged.locator("td[data-key=model]").text_content() == "m03"
    figure = drift.locator("[data-role=drift-figure]")
    assert figure.get_attribute("data-model") == "m03"
    assert figure.evaluate("img => img.complete && img.naturalWidth > 100")   # the embedded PNG decodes
    page.screenshot(path=str(tmp_path / "fit.png"), full_page=True)
    assert problems == []
