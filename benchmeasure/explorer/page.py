"""Write the explorer as one self-contained HTML file: the shipped template with the data inlined.

The template (``template.html``, package data read with :mod:`importlib.resources`) holds the
page's HTML, CSS and hand-written JavaScript that draws SVG; nothing is fetched, so the
file works opened from disk with no network. The data goes in a
``<script type="application/json">`` element. Benchmark names, item IDs and question text
are user data, so the JSON is made inert there: every ``<``, ``>`` and ``&`` is written as a
``\\u003c``/``\\u003e``/``\\u0026`` escape (JSON has those characters only inside strings, so
the escapes decode to the same strings), which leaves no way to close the element or open a
comment; U+2028/U+2029 are escaped too. The page's Content-Security-Policy allows no
network access at all and runs only the template's own script (by its SHA-256), so even
markup that got in could neither run nor load anything. The script reads the data with ``JSON.parse`` and
puts every user string into the page with ``textContent``/``setAttribute``, never as markup.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from importlib import resources

PLACEHOLDER = "/*__EXPLORER_DATA__*/"
HASH_PLACEHOLDER = "/*__SCRIPT_HASH__*/"
_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                          "\u2029": "\\u2029"})
_CODE = re.compile(r'<script id="explorer-code">(.*?)</script>', re.S)


def inert_json(data) -> str:
    """``data`` as compact JSON safe to place inside an HTML ``<script>`` element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_ESCAPES)


def template() -> str:
    return resources.files("benchmeasure.explorer").joinpath("template.html").read_text(encoding="utf-8")


def render_within(data: dict, max_bytes: int, chars: int, recut, least: int = 1) -> tuple[str, int]:
    """The page for ``data`` and the question length it keeps: ``chars`` when the page fits in ``max_bytes``
    (0 = no limit), else the longest question text (``recut(data, n)``, ``least`` <= n < ``chars``) that fits,
    found by bisection; 0 (no text) when no such length fits."""
    page = render(data)
    if not max_bytes or len(page.encode("utf-8")) <= max_bytes or not chars:
        return page, chars
    best = (render(recut(data, 0)), 0)
    low, high = max(least, 1), chars - 1  # the answer is the largest n in [low, high] that fits, or 0
    while low <= high and len(best[0].encode("utf-8")) <= max_bytes:
        middle = low if best[1] == 0 else (low + high + 1) // 2  # the shortest first: often none fits
        candidate = render(recut(data, middle))
        if len(candidate.encode("utf-8")) > max_bytes:
            if best[1] == 0:
                break
            high = middle - 1
        else:
            best, low = (candidate, middle), middle + 1
    return best


def render(data: dict) -> str:
    """The complete page for ``data`` (:func:`benchmeasure.explorer.collect.page_data`)."""
    page = template()
    code = _CODE.findall(page)
    if page.count(PLACEHOLDER) != 1 or page.count(HASH_PLACEHOLDER) != 1 or len(code) != 1:
        raise RuntimeError("explorer template: expected one data placeholder, one script hash and one script")
    digest = base64.b64encode(hashlib.sha256(code[0].encode("utf-8")).digest()).decode("ascii")
    page = page.replace(HASH_PLACEHOLDER, f"'sha256-{digest}'")
    return page.replace(PLACEHOLDER, inert_json(data))
