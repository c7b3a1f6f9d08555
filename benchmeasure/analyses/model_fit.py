"""Does the 1PL fit this benchmark? Item fit, model (person) fit and whole-fit posterior predictive checks in one
pass over the posterior draws (a few at a time, so memory stays at a few (M, N) arrays per draw).

Item and model p-values (:mod:`.item_fit`, :mod:`.person_fit`) are adjusted across items, and across models, with
Benjamini–Hochberg; a unit is flagged when its q-value is at most the false discovery rate. The whole fit compares
replicated with observed data: the distribution of the models' accuracies (sorted) and accuracy by ability group,
each with a posterior predictive p-value of a χ²-type distance to the replicated mean.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from benchmeasure.analyses.item_fit import (
    ITEM_SUMS,
    Cells,
    ability_groups,
    benjamini_hochberg,
    combined,
    default_groups,
    item_batch,
    misfit_reason,
    point_biserial,
)
from benchmeasure.analyses.person_fit import MODEL_SUMS, difficulty_bands, model_batch

ITEM_COLUMNS = ["item", "models", "accuracy", "b_mean", "point_biserial", "infit", "outfit", "chi2_groups",
                "p_curve", "z_slope", "p_slope", "p_unsolved", "p_value", "q_value", "flagged", "against_ability",
                "reason"]
MODEL_COLUMNS = ["model", "items", "accuracy", "theta_mean", "lz", "p_lz", "z_slope", "p_slope", "chi2_bands",
                 "p_curve", "p_value", "q_value", "flagged", "reason"]


@dataclass
class FitCheck:
    """The check's results: item and model rows (dicts in :data:`ITEM_COLUMNS` / :data:`MODEL_COLUMNS` order),
    the whole-fit record, settings, and the curves the figure draws."""

    items: list
    models: list
    whole: dict
    settings: dict
    curves: dict = field(default_factory=dict)

    def flagged_items(self) -> list:
        return [row for row in self.items if row["flagged"]]

    def flagged_models(self) -> list:
        return [row for row in self.models if row["flagged"]]

    def summary(self) -> str:
        """One line: items and models flagged, the whole-fit p-values (a p-value at its floor 1 / (draws + 1), no
        replicated data set reaching the observed one, is written "p ≤ floor"), never-solved items, the draws."""
        fdr = self.settings["fdr"]
        against = sum(1 for row in self.items if row["against_ability"])
        never = self.whole["never_solved"]
        draws = self.settings["draws"]

        def p(key):
            value, floor = self.whole[key]["p_value"], 1.0 / (1 + draws)
            return f"p ≤ {floor:.2g}" if value <= floor * (1 + 1e-9) else f"p = {value:.2f}"

        return (f"model fit: {len(self.flagged_items()):,} of {len(self.items):,} items flagged "
                f"(FDR {fdr * 100:g} %; {against:,} run against ability), {len(self.flagged_models())} of "
                f"{len(self.models)} models; score distribution {p('score_distribution')}, "
                f"accuracy by ability {p('accuracy_by_ability')}, ability × difficulty {p('ability_by_difficulty')}; "
                f"{never['observed']:,} items never solved (replicated {never['replicated_mean']:.0f}); "
                f"{draws:,} draw{'s' if draws != 1 else ''}")


def run_check(inputs, *, draws: int = 200, groups: int | None = None, bands: int = 10, fdr: float = 0.05,
              seed: int = 0, on_batch=None) -> FitCheck:
    """Check the fit in ``inputs`` (:class:`.fit_inputs.FitInputs`) on ``draws`` posterior draws.

    ``on_batch(done, total)`` is called after each batch (progress)."""
    from benchmeasure.analyses.fit_inputs import draw_batches

    m = inputs.matrix
    k = np.asarray(m.cell_trials() * np.ones(m.counts.shape, dtype=np.int64), dtype=float)
    y = m.counts.astype(float) * (k > 0)
    n_models, n_items = y.shape
    groups = min(groups or default_groups(n_models), n_models)
    bands = min(bands, n_items)
    membership = ability_groups(inputs.theta.mean, groups)
    band_of = difficulty_bands(inputs.b.mean, bands)
    unsolved = (y.sum(axis=0) == 0) & (k.sum(axis=0) > 0)
    item_sums = {name: np.zeros(n_items) for name in ITEM_SUMS}
    model_sums = {name: np.zeros(n_models) for name in MODEL_SUMS}
    rng = np.random.default_rng(seed + 1)
    model_trials = np.maximum(k.sum(axis=1), 1)
    group_trials = np.maximum(membership @ k.sum(axis=1), 1)
    rep_scores, rep_groups, obs_groups_fit, rep_unsolved, table_obs, table_rep = [], [], [], [], [], []
    observed_table = membership @ y @ band_of
    k_int = k.astype(np.int64)
    max_k = int(k_int.max())
    done = 0
    for theta, b in draw_batches(inputs, draws, seed):
        cells = Cells(y, k, theta, b, inputs.guessing)
        for name, value in item_batch(y, k, cells, theta, membership, unsolved).items():
            item_sums[name] += value
        for name, value in model_batch(y, k, cells, b, band_of).items():
            model_sums[name] += value
        # replicated per-model totals: a sum of binomials, drawn as its exact law's normal limit would blur the
        # tails of small panels, so each cell is drawn (uniforms against p, one per trial)
        for s in range(theta.shape[0]):
            totals, zero, replicated = _replicated(rng, k_int, cells.p[s], max_k)
            rep_unsolved.append(zero)
            # ability group × difficulty band: the interaction both margins (sufficient for θ and b) leave free
            expected = membership @ cells.kp[s] @ band_of
            variance = np.maximum(membership @ cells.var[s] @ band_of, 1e-9)
            table_obs.append(float(((observed_table - expected) ** 2 / variance).sum()))
            table_rep.append(float(((membership @ replicated @ band_of - expected) ** 2 / variance).sum()))
            rep_scores.append(np.sort(totals / model_trials))
            rep_groups.append(membership @ totals / group_trials)
            obs_groups_fit.append(membership @ cells.kp[s].sum(axis=1) / group_trials)
        done += theta.shape[0]
        if on_batch is not None:
            on_batch(done, draws)
    item_mean = {name: value / done for name, value in item_sums.items()}
    model_mean = {name: value / done for name, value in model_sums.items()}
    theta_mean = inputs.theta.mean
    items = _item_rows(m, y, k, inputs, item_mean, point_biserial(y, k, theta_mean), fdr)
    models = _model_rows(m, y, k, inputs, model_mean, fdr)
    observed_scores = np.sort(y.sum(axis=1) / model_trials)
    observed_groups = membership @ y.sum(axis=1) / group_trials
    whole = {
        "score_distribution": _ppp_curve(observed_scores, np.asarray(rep_scores), "sorted model accuracy"),
        "accuracy_by_ability": {**_ppp_curve(observed_groups, np.asarray(rep_groups), "accuracy of ability group"),
                                "group_theta": [float(theta_mean[membership[g] > 0].mean()) for g in range(groups)],
                                "fitted": np.asarray(obs_groups_fit).mean(axis=0).tolist()},
        "ability_by_difficulty": {
            "what": f"successes of {groups} ability groups × {bands} difficulty bands, observed vs replicated",
            "discrepancy_mean": float(np.mean(table_obs)),
            "replicated_mean": float(np.mean(table_rep)),
            "p_value": float((1 + np.sum(np.asarray(table_rep) >= np.asarray(table_obs))) / (1 + len(table_rep))),
            "note": "realized-discrepancy χ² over the table; small p: the 1PL's common slope misfits this panel "
                    "(curves steeper or flatter than σ(θ − b))"},
        "never_solved": {"observed": int(unsolved.sum()), "replicated_mean": float(np.mean(rep_unsolved)),
                         "replicated_90": np.quantile(rep_unsolved, [0.05, 0.95]).tolist(),
                         "note": "items nobody solved in any trial; the 1PL absorbs each into a large b, so this "
                                 "count, not a per-item test, is what the fit can say about unsolvable items"},
    }
    settings = {"draws": done, "groups": groups, "difficulty_bands": bands, "fdr": fdr, "seed": seed,
                "draws_source": inputs.draws_note}
    curves = {"groups": membership, "y": y, "k": k}
    return FitCheck(items, models, whole, settings, curves)


def _replicated(rng, k: np.ndarray, p: np.ndarray, max_k: int) -> tuple:
    """Per-model totals of one replicated matrix y_rep ~ Binomial(K, p) (cells with K = 0 give 0), and how many of
    its items nobody solved."""
    y = (rng.random(p.shape, dtype=np.float32) < p) & (k > 0) if max_k == 1 else rng.binomial(k, p)
    return y.sum(axis=1).astype(float), int((y.sum(axis=0) == 0).sum()), y.astype(float)


def _ppp_curve(observed: np.ndarray, replicated: np.ndarray, what: str) -> dict:
    """Observed vs replicated curve: the replicated mean and 90 % band per point, and the posterior predictive
    p-value of D(x) = Σ (x − mean)² / var (replicated D at least the observed one)."""
    mean = replicated.mean(axis=0)
    var = np.maximum(replicated.var(axis=0), 1e-12)
    d_obs = float((((observed - mean) ** 2) / var).sum())
    d_rep = (((replicated - mean) ** 2) / var).sum(axis=1)
    p = float((1 + (d_rep >= d_obs).sum()) / (1 + len(d_rep)))
    low, high = np.quantile(replicated, [0.05, 0.95], axis=0)
    return {"what": what, "observed": observed.tolist(), "replicated_mean": mean.tolist(),
            "replicated_90": [low.tolist(), high.tolist()], "discrepancy": d_obs, "p_value": p}


def _item_rows(m, y, k, inputs, s: dict, pbis: np.ndarray, fdr: float) -> list:
    # p_unsolved (the fitted probability that nobody solves the item, at its own b) stays descriptive: the 1PL
    # fits an all-zero column with a large b, so it has no power against an unsolvable item (docs/model_fit.md)
    p_value = combined(s["p_curve"], s["p_slope"])
    q_value = benjamini_hochberg(p_value)
    q_slope = benjamini_hochberg(s["p_slope"])
    accuracy = y.sum(axis=0) / np.maximum(k.sum(axis=0), 1)
    answered = (k > 0).sum(axis=0)
    rows = []
    for i, item in enumerate(m.items):
        flagged = bool(q_value[i] <= fdr)
        against = bool(q_slope[i] <= fdr and pbis[i] < 0)
        reason = misfit_reason(against, pbis[i], s["p_curve"][i], s["p_slope"][i]) if flagged or against else ""
        rows.append({"item": item, "models": int(answered[i]), "accuracy": float(accuracy[i]),
                     "b_mean": float(inputs.b.mean[i]), "point_biserial": float(pbis[i]),
                     "infit": float(s["infit"][i]), "outfit": float(s["outfit"][i]),
                     "chi2_groups": float(s["chi2"][i]), "p_curve": float(s["p_curve"][i]),
                     "z_slope": float(s["z_slope"][i]), "p_slope": float(s["p_slope"][i]),
                     "p_unsolved": float(s["p_unsolved"][i]), "p_value": float(p_value[i]),
                     "q_value": float(q_value[i]), "flagged": flagged or against, "against_ability": against,
                     "reason": reason})
    return rows


def _model_rows(m, y, k, inputs, s: dict, fdr: float) -> list:
    # the flag is directional (aberrant rows: better on hard items than on easy ones, an unlikely row); the
    # difficulty-band χ² is descriptive: on thousands of items it rejects the 1PL's common slope for most real models
    p_value = combined(s["p_slope"], s["p_lz"])
    q_value = benjamini_hochberg(p_value)
    accuracy = y.sum(axis=1) / np.maximum(k.sum(axis=1), 1)
    answered = (k > 0).sum(axis=1)
    rows = []
    for j, model in enumerate(m.models):
        flagged = bool(q_value[j] <= fdr)
        reason = ""
        if flagged:
            smallest = min(("p_slope", "p_lz"), key=lambda name: s[name][j])
            reason = {"p_slope": "does better on hard items and worse on easy ones than its ability predicts: "
                                 "mis-scored or misaligned results?",
                      "p_lz": "its responses are unlikely under the 1PL (low lz)"}[smallest]
        rows.append({"model": model, "items": int(answered[j]), "accuracy": float(accuracy[j]),
                     "theta_mean": float(inputs.theta.mean[j]), "lz": float(s["lz"][j]),
                     "p_lz": float(s["p_lz"][j]), "z_slope": float(s["z_slope"][j]),
                     "p_slope": float(s["p_slope"][j]), "chi2_bands": float(s["chi2"][j]),
                     "p_curve": float(s["p_curve"][j]), "p_value": float(p_value[j]),
                     "q_value": float(q_value[j]), "flagged": flagged, "reason": reason})
    return rows
