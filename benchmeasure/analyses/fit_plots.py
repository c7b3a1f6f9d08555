"""The check-fit figure: observed vs fitted response curves of the flagged items (at most 12 panels)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmeasure.base.files import atomic_write

MAX_PANELS = 12


def plot_item_fit(check, inputs, path: Path) -> None:
    """Write ``path`` (PNG): one panel per flagged item, smallest q-value first; an explanatory panel when none is
    flagged. Each panel shows every model's success rate on the item against its θ, the ability groups' observed
    rates and the 1PL curve at the posterior means."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(check.flagged_items(), key=lambda row: row["q_value"])[:MAX_PANELS]
    index = {item: i for i, item in enumerate(inputs.matrix.items)}
    y, k, groups = check.curves["y"], check.curves["k"], check.curves["groups"]
    theta = inputs.theta.mean
    n = max(len(rows), 1)
    cols = min(4, n)
    lines = (n + cols - 1) // cols
    fig, axes = plt.subplots(lines, cols, figsize=(3.2 * cols, 2.6 * lines), squeeze=False)
    grid = np.linspace(theta.min() - 1.0, theta.max() + 1.0, 200)
    try:
        for ax in axes.flat[len(rows):]:
            ax.axis("off")
        if not rows:
            axes[0, 0].text(0.5, 0.5, "no item flagged", ha="center", va="center")
        for ax, row in zip(axes.flat, rows):
            i = index[row["item"]]
            present = k[:, i] > 0
            rate = np.where(present, y[:, i] / np.maximum(k[:, i], 1), np.nan)
            ax.scatter(theta[present], rate[present], s=10, color="0.6", label="models")
            trials = groups @ k[:, i]
            ok = trials > 0
            group_theta = (groups @ (theta * present)) / np.maximum(groups @ present.astype(float), 1)
            ax.plot(group_theta[ok], (groups @ y[:, i])[ok] / trials[ok], "o-", color="C3", label="observed (groups)")
            g = inputs.guessing[i]
            ax.plot(grid, g + (1 - g) / (1 + np.exp(-(grid - row["b_mean"]))), color="C0", label="1PL fit")
            ax.set_ylim(-0.05, 1.05)
            ax.set_title(f"{row['item'][:28]}  q = {row['q_value']:.2g}", fontsize=8)
            ax.set_xlabel("θ", fontsize=8)
            ax.tick_params(labelsize=7)
        if rows:
            axes.flat[0].legend(fontsize=6, loc="best")
        fig.suptitle("flagged items: observed vs fitted response curves", fontsize=10)
        fig.tight_layout()
        with atomic_write(path, mode="wb") as handle:
            fig.savefig(handle, format="png", dpi=120)
    finally:
        plt.close(fig)
