"""One figure per flagged model of ``benchmeasure drift``: its adjusted residual per bin with the fitted step."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from benchmeasure.base.files import atomic_write


def figure_name(model: str) -> str:
    """A file name for ``model`` (characters other than letters, digits, ``.``, ``_``, ``-`` become ``_``)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", model).lstrip(".") or "_"


def step_figure(path, model: str, data: dict) -> None:
    """Write ``path`` (PNG): each bin's logit offset from the model's no-step θ (±1.96 s.e.) and the step."""
    labels, offset, se = data["labels"], np.asarray(data["offset"]), np.asarray(data["se"])
    x = np.arange(len(labels))
    shown = np.isfinite(offset)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.3 * len(labels)), 3.6))
    ax.errorbar(x[shown], offset[shown], yerr=1.96 * se[shown], fmt="o", ms=3, color="#333", lw=0.8,
                label="bin offset (leave-out difficulties)")
    t = data["tau_bin"]
    pre = data["theta_pre"] - data["theta"]
    post = data["theta_post"] - data["theta"]
    ax.plot([-0.5, t - 0.5], [pre, pre], color="#c0392b", lw=2, label=f"step δ = {data['delta']:+.2f}")
    ax.plot([t - 0.5, len(labels) - 0.5], [post, post], color="#c0392b", lw=2)
    ax.axvline(t - 0.5, color="#c0392b", ls=":", lw=1)
    ax.axhline(0, color="#999", lw=0.6)
    step = max(1, len(labels) // 12)
    ax.set_xticks(x[::step], [labels[k][:7] for k in x[::step]], rotation=45, ha="right", fontsize=7)
    ax.set_xlabel(data["by"])
    ax.set_ylabel("adjusted residual (logits)")
    ax.set_title(f"{model}: better before {labels[t]}?", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    with atomic_write(path, mode="wb") as handle:
        fig.savefig(handle, format="png", dpi=120)
    plt.close(fig)
