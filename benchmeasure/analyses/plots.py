"""Figures of the difficulty measure: ECDF against the uniform reference, largest gaps shaded.

* :func:`plot_benchmarks` — paper Figures 3 and 6: one panel per benchmark, the ECDF of
  its normalized difficulties (black step), the uniform ECDF F(z) = z (grey dashed; the
  area between the two curves is DDM up to the finite-grid offset), and the five widest
  gaps shaded in colour and labelled with their width.
* :func:`plot_before_after` — paper Figure 5: the ECDF before (orange) and after (blue)
  gap filling, the widest *original* gaps shaded, and Max Gap before → after annotated.

Inputs are normalized difficulties z in [0, 1] (see :mod:`benchmeasure.core.metrics`). Each
figure is saved as PNG (200 dpi) and PDF beside it. matplotlib with the Agg backend, so
no display is needed.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from benchmeasure.base.errors import fail
from benchmeasure.base.files import all_or_nothing, atomic_write
from benchmeasure.core.metrics import ddm, largest_gaps, max_gap

GAP_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e")
BEFORE, AFTER = "#e6801a", "#1f5fbf"


def _ecdf(ax, z, **style):
    """Draw the ECDF of ``z`` (shape (n,)) as a right-continuous step from (0, 0) to (1, 1)."""
    x = np.sort(np.asarray(z, dtype=float))
    n = x.size
    xs = np.r_[0.0, x, 1.0]
    ys = np.r_[0.0, np.arange(1, n + 1) / n, 1.0]
    ax.step(xs, ys, where="post", **style)


def _shade_gaps(ax, gaps, label_widths=True):
    for gap, colour in zip(gaps, GAP_COLOURS):
        ax.axvspan(gap.left, gap.right, color=colour, alpha=0.22, lw=0)
        if label_widths:
            # stagger the labels vertically so neighbouring narrow gaps stay legible
            y = 0.95 - 0.085 * (gap.rank - 1)
            ax.text(gap.midpoint, y, f"{gap.width:.3f}", ha="center", va="top", fontsize=7.5,
                    color=colour, fontweight="bold",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})


def _frame(ax):
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("normalized difficulty z")
    ax.set_aspect("equal")
    ax.grid(alpha=0.25, lw=0.5)


#: the figure formats written, by file suffix
FORMATS = (".png", ".pdf", ".svg")


def figure_paths(output) -> list[Path]:
    """The files to write: ``output`` (one path or several), each named with one of :data:`FORMATS`.

    The figure is drawn once and saved in each file's own format, so ``fig.png`` and ``fig.pdf`` are the
    same figure; nothing is written that was not named.
    """
    paths = [Path(p) for p in ([output] if isinstance(output, (str, Path)) else output)]
    for path in paths:
        if path.suffix.lower() not in FORMATS:
            fail(f"{path}: name the figure .png, .pdf or .svg (one --output per file to write)")
    return paths


def _save(fig, output) -> list[Path]:
    """Write the figure to every path of ``output`` (:func:`figure_paths`), all or none; return the paths."""
    paths = figure_paths(output)
    try:
        with all_or_nothing():
            for path in paths:
                with atomic_write(path, mode="wb") as handle:
                    fig.savefig(handle, format=path.suffix[1:].lower(), dpi=200, bbox_inches="tight")
    finally:
        plt.close(fig)
    return paths


def plot_benchmarks(panels: list[tuple[str, list]], output, top_k: int = 5,
                    columns: int | None = None) -> list[Path]:
    """ECDF panels, one per benchmark (paper Figures 3 and 6).

    Parameters
    ----------
    panels : list of (name, z)
        Benchmark name and its normalized difficulties, each z a sequence of length n ≥ 2.
    output : path or list of paths
        The figure file(s), each .png, .pdf or .svg (:func:`figure_paths`).
    top_k : int
        How many of the widest gaps to shade (the paper shades 5).
    columns : int, optional
        Panels per row (default: up to 3).
    """
    count = len(panels)
    columns = columns or min(3, count)
    rows = math.ceil(count / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.1 * columns, 3.25 * rows), squeeze=False)
    for ax, (name, z) in zip(axes.flat, panels):
        _shade_gaps(ax, largest_gaps(z, top_k))
        ax.plot([0, 1], [0, 1], ls="--", color="0.45", lw=1.1, label="uniform")
        _ecdf(ax, z, color="black", lw=1.4, label="benchmark")
        _frame(ax)
        ax.set_title(f"{name} (n = {len(z)})\nDDM {ddm(z):.3f} · Max Gap {max_gap(z):.3f}", fontsize=9)
        ax.set_ylabel("ECDF")
    for ax in list(axes.flat)[count:]:
        ax.axis("off")
    axes.flat[0].legend(loc="lower right", fontsize=7.5, frameon=True)
    fig.tight_layout()
    return _save(fig, output)


def plot_before_after(name: str, z_before, z_after, output, top_k: int = 3) -> list[Path]:
    """Before/after gap filling on one benchmark (paper Figure 5).

    Parameters
    ----------
    name : str
    z_before : sequence of float, length n
        Normalized difficulties of the original benchmark.
    z_after : sequence of float, length n' ≥ n
        Normalized difficulties after adding the filled items.
    output : path or list of paths
        The figure file(s), each .png, .pdf or .svg (:func:`figure_paths`).
    top_k : int
        How many of the widest original gaps to shade (BenchFill targets 3).
    """
    fig, ax = plt.subplots(figsize=(3.6, 3.6))
    _shade_gaps(ax, largest_gaps(z_before, top_k), label_widths=False)
    ax.plot([0, 1], [0, 1], ls="--", color="0.55", lw=1.0)
    _ecdf(ax, z_before, color=BEFORE, lw=1.6, label=f"before (n = {len(z_before)})")
    _ecdf(ax, z_after, color=AFTER, lw=1.3, label=f"after (n = {len(z_after)})")
    _frame(ax)
    ax.set_ylabel("ECDF")
    ax.set_title(name, fontsize=10)
    ax.text(0.03, 0.97, f"Max Gap {max_gap(z_before):.3f} → {max_gap(z_after):.3f}", transform=ax.transAxes,
            ha="left", va="top", fontsize=8.5, bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "0.7"})
    ax.legend(loc="lower right", fontsize=7.5)
    fig.tight_layout()
    return _save(fig, output)
