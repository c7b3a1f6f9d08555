"""Robustness of the 1PL difficulties (paper, Appendix Tables 6–10).

* Table 6 — the 1PL fit's MCMC diagnostics: max R-hat, min bulk ESS, divergent transitions
  (:func:`benchmeasure.irt.diagnostics.summarize_diagnostics` over θ and b). Either from a
  1PL fit run here, or read from the ``diagnostics.json`` of an existing ``scripts/fit_irt.py``
  output folder (:func:`read_fit_dir`, checked against the matrix); that folder's
  ``difficulty.csv`` then serves as the full fit of Table 7 and its ``posterior.zarr`` (when
  fit_irt.py ran with ``--save-posterior``) as the 1PL draws of Table 8. Only Table 8 without
  a saved posterior needs a 1PL refit.
* Table 7 — leave-one-model-out: refit the 1PL without each model in turn and correlate the
  refit's posterior-mean difficulties with the full fit's (Pearson and Spearman); report the
  mean and the minimum over the M refits. Refits run in parallel processes.
* Table 8 — 1PL against 2PL (:mod:`benchmeasure.irt.alternatives`) by BIC:

      BIC = k·ln(n) − 2·ln L̂,   ΔBIC = BIC₂PL − BIC₁PL  (positive favours the 1PL).

  ln L̂ is the largest total log-likelihood over the posterior draws (a draw-based stand-in
  for the maximized likelihood; with the weak Normal(0, 1) priors the best draws lie close
  to the maximum), computed as the *binomial* log-probability of the observed counts,
  including log C(K, Y) (:func:`benchmeasure.irt.likelihood.log_likelihood` with
  ``with_constant=True``). n is the number of binomial observations, the M·N
  model–item cells; k counts the free parameters: M + N for the 1PL (θ, b), M + 2N for the
  2PL (θ, b, a). The constant cancels in ΔBIC; the choice of n does not: taking the M·N·K
  individual trials as n instead would add N·ln K to ΔBIC, favouring the 1PL more.
* Table 9 — the 2PL fit's diagnostics (over θ, b, a) beside the 1PL's.
* Table 10 — multidimensional IRT with D latent dimensions (2 and 3 in the paper) and its
  diagnostics (over θ, b, log a). These models are identified only up to relabelling of
  the dimensions, so poor mixing is expected and reported as is.
"""

from __future__ import annotations

import concurrent.futures as futures
import multiprocessing
import os
from dataclasses import dataclass

import numpy as np
from scipy.stats import pearsonr, spearmanr

from benchmeasure.base.errors import fail
from benchmeasure.base.files import sha256_file
from benchmeasure.core.matrix import ResponseMatrix
from benchmeasure.irt.fit import available_cpus
from benchmeasure.irt.fit_folder import read_fit_folder
from benchmeasure.irt.likelihood import log_likelihood

# draws per block when evaluating the log-likelihood of every posterior draw
_BLOCK_CELLS = 5_000_000


def table_diagnostics(summary: dict) -> dict:
    """The three Table 6/9/10 figures (``max_r_hat``, ``min_ess_bulk``, ``divergences``) plus the rest."""
    out = {"max_r_hat": summary.get("max_r_hat"), "min_ess_bulk": summary.get("min_ess_bulk"),
           "divergences": summary.get("divergences")}
    out.update(summary)
    return out


# what Table 6 keeps of a fit_irt.py diagnostics.json besides the three figures
_FIT_DIR_KEYS = ("max_r_hat", "min_ess_bulk", "divergences", "converged", "worst_r_hat", "worst_ess_bulk",
                 "leapfrog_steps_per_draw", "max_tree_depth_hits")


@dataclass(frozen=True)
class SavedFit:
    """A ``scripts/fit_irt.py`` output folder that belongs to the matrix being analysed.

    Attributes
    ----------
    folder : str
    diagnostics : dict
        Its ``diagnostics.json``.
    b_mean : ndarray, shape (N,)
        Posterior-mean difficulties from its ``difficulty.csv``, matrix order.
    posterior : str or None
        Path of its ``posterior.zarr`` when that fit saved one, else None.
    posterior_note : str
        Why ``posterior`` is None (for the log), or where it is.
    """

    folder: str
    diagnostics: dict
    b_mean: np.ndarray
    posterior: str | None
    posterior_note: str

    def table6(self) -> dict:
        """Table 6's figures (and the other convergence keys) with their source and the fit's settings."""
        summary = table_diagnostics({k: self.diagnostics[k] for k in _FIT_DIR_KEYS if k in self.diagnostics})
        summary["source"] = os.path.join(self.folder, "diagnostics.json")
        summary["fit_settings"] = self.diagnostics.get("settings")
        return summary

    def draws(self, matrix: ResponseMatrix) -> tuple[np.ndarray, np.ndarray]:
        """θ draws (S, M) and b draws (S, N) from ``posterior.zarr``, checked against the matrix's labels."""
        from benchmeasure.analyses.posterior_metrics import read_posterior_b

        models, theta = read_posterior_b(self.posterior, "theta")
        items, b = read_posterior_b(self.posterior, "b")
        if models != list(matrix.models) or items != list(matrix.items):
            fail(f"{self.posterior}: its models/items differ from the matrix's (a posterior of another fit?)")
        return theta, b


def read_fit_dir(folder, matrix_path, matrix: ResponseMatrix, guessing, guessing_csv=None) -> SavedFit:
    """Read and check the outputs of ``scripts/fit_irt.py`` in ``folder`` (Table 6 without refitting).

    Parameters
    ----------
    folder : path
        Holds ``diagnostics.json`` and ``difficulty.csv`` (and ``posterior.zarr`` with ``--save-posterior``).
    matrix_path : path
        The matrix of this analysis; its SHA-256 must equal the fit's ``input.sha256``.
    matrix : ResponseMatrix
        Read from ``matrix_path``; ``n_trials`` must equal the fit's, items must match ``difficulty.csv``.
    guessing : float or list of float
        This analysis's guessing floor; must be the fit's.
    guessing_csv : path, optional
        The per-item guessing file, compared with the fit's by SHA-256.

    Rejected with one line (InputError): a missing folder or file, a diagnostics.json that is not
    fit_irt.py's, another matrix, other n_trials, other guessing, a ``--method map`` fit (it has
    no MCMC diagnostics).
    """
    folder = os.fspath(folder)
    saved = read_fit_folder(folder, name=f"--fit-dir {folder}")  # the files, checked once (irt.fit_folder)
    diagnostics = saved.diagnostics
    path = os.path.join(folder, "diagnostics.json")
    source, settings = diagnostics["input"], diagnostics["settings"]
    if source["sha256"] != sha256_file(matrix_path):
        fail(f"{path}: the fit's matrix ({source.get('path')}, sha256 {str(source['sha256'])[:12]}…) is not "
             f"{matrix_path} (sha256 {sha256_file(matrix_path)[:12]}…)")
    if source["n_trials"] != matrix.n_trials:
        fail(f"{path}: the fit used n_trials {source['n_trials']}, this run --n-trials {matrix.n_trials}")
    fit_g = settings.get("guessing")
    if guessing_csv is not None:
        same = isinstance(fit_g, dict) and fit_g.get("sha256") == sha256_file(guessing_csv)
        ours = f"--guessing-csv {guessing_csv}"
    else:
        same = isinstance(fit_g, (int, float)) and float(fit_g) == float(guessing)
        ours = f"--guessing {guessing}"
    if not same:
        theirs = (f"--guessing-csv {fit_g.get('per_item_csv')}" if isinstance(fit_g, dict)
                  else f"--guessing {fit_g}")
        fail(f"{path}: the fit used {theirs}, this run {ours}; give the fit's guessing")
    if diagnostics["method"] != "nuts":
        fail(f"{path}: a --method {diagnostics['method']} fit has no MCMC diagnostics for Table 6; "
             f"refit with --method nuts or leave out --fit-dir")
    difficulty = saved.difficulty()
    if difficulty.item_ids != list(matrix.items):
        fail(f"{difficulty.path}: its items differ from the matrix's columns (in order)")
    return SavedFit(folder, diagnostics, np.asarray(difficulty.values, dtype=float), saved.posterior,
                    saved.posterior_note)


def max_draw_log_likelihood(counts, n_trials: int, theta, b, guessing=0.0, a=None) -> float:
    """Largest total binomial log-likelihood (with log C(K, Y)) over posterior draws.

    Parameters
    ----------
    counts : array_like of int, shape (M, N)
    n_trials : int
    theta : array_like, shape (S, M)
        Ability draws.
    b : array_like, shape (S, N)
        Difficulty draws.
    guessing : float or array_like of shape (N,)
    a : array_like, shape (S, N), optional
        Discrimination draws (2PL); None for the 1PL.
    """
    y = np.asarray(counts, dtype=float)
    theta, b = np.asarray(theta, dtype=float), np.asarray(b, dtype=float)
    g = np.broadcast_to(np.asarray(guessing, dtype=float), (y.shape[1],))
    block = max(1, _BLOCK_CELLS // y.size)
    best = -np.inf
    for start in range(0, theta.shape[0], block):
        stop = start + block
        eta = theta[start:stop, :, None] - b[start:stop, None, :]
        if a is not None:
            eta = np.asarray(a, dtype=float)[start:stop, None, :] * eta
        total = log_likelihood(y[None], n_trials, eta, g[None, None, :], with_constant=True).sum(axis=(1, 2))
        best = max(best, float(total.max()))
    return best


def bic(log_lik: float, parameters: int, observations: int) -> float:
    """BIC = k·ln(n) − 2·ln L̂."""
    return parameters * np.log(observations) - 2.0 * log_lik


def bic_comparison(ll_1pl: float, ll_2pl: float, n_models: int, n_items: int, n_cells: int | None = None) -> dict:
    """Table 8's row from the two maximized log-likelihoods (module docstring for k and n); with holes ``n_cells``
    is the number of present cells (an absent cell is no observation)."""
    n = n_models * n_items if n_cells is None else int(n_cells)
    b1 = bic(ll_1pl, n_models + n_items, n)
    b2 = bic(ll_2pl, n_models + 2 * n_items, n)
    return {"bic_1pl": float(b1), "bic_2pl": float(b2), "delta_bic": float(b2 - b1),
            "selected": "1PL" if b2 - b1 > 0 else "2PL", "log_lik_1pl": ll_1pl, "log_lik_2pl": ll_2pl,
            "n": n, "k_1pl": n_models + n_items, "k_2pl": n_models + 2 * n_items,
            "likelihood": "binomial with log C(K, Y), maximum over posterior draws",
            "n_definition": "model-item cells M*N" if n_cells is None else "present model-item cells (holes left out)"}


def correlation_summary(full_b, refit_bs: list) -> dict:
    """Table 7's row: mean and min Pearson and Spearman correlation of refits with the full fit.

    Parameters
    ----------
    full_b : array_like, shape (N,)
    refit_bs : list of array_like, each shape (N,)
    """
    pearson = [float(pearsonr(full_b, b).statistic) for b in refit_bs]
    spearman = [float(spearmanr(full_b, b).statistic) for b in refit_bs]
    return {"pearson_mean": float(np.mean(pearson)), "pearson_min": float(np.min(pearson)),
            "spearman_mean": float(np.mean(spearman)), "spearman_min": float(np.min(spearman)),
            "pearson": pearson, "spearman": spearman}


def _fit_b_mean(payload: tuple) -> list:
    """Worker: 1PL fit of one leave-one-out matrix; returns the posterior-mean difficulties."""
    models, items, counts, n_trials, guessing, settings, trials = payload
    from benchmeasure.irt.fit import fit_1pl

    matrix = ResponseMatrix(models, items, np.asarray(counts), n_trials,
                            None if trials is None else np.asarray(trials, dtype=np.int64))
    return fit_1pl(matrix, guessing=guessing, **settings).b_mean.tolist()


def leave_one_model_out(matrix: ResponseMatrix, full_b, guessing, settings: dict, workers: int) -> dict:
    """Refit without each model (in ``workers`` processes) and summarize the correlations.

    ``settings`` are :func:`benchmeasure.irt.fit.fit_1pl` keywords; refit j uses seed
    ``settings["seed"] + 1 + j`` so that every refit is reproducible and distinct.
    """
    payloads = []
    for j in range(len(matrix.models)):
        reduced = matrix.drop_model(j)
        refit_settings = dict(settings, seed=int(settings["seed"]) + 1 + j)
        payloads.append((reduced.models, reduced.items, reduced.counts.tolist(), reduced.n_trials,
                         guessing, refit_settings, None if reduced.trials is None else reduced.trials.tolist()))
    if workers <= 1:
        refits = [_fit_b_mean(p) for p in payloads]
    else:
        context = multiprocessing.get_context("spawn")
        with futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            refits = list(pool.map(_fit_b_mean, payloads))
    summary = correlation_summary(full_b, refits)
    summary["dropped_models"] = list(matrix.models)
    return summary


def run_robustness(matrix: ResponseMatrix, *, guessing=0.0, chains: int = 4, tune: int = 1000, draws: int = 1000,
                   target_accept: float = 0.95, seed: int = 0, loo: bool = False, with_bic: bool = False,
                   mirt_dims: tuple = (), workers: int | None = None, saved: SavedFit | None = None,
                   log=None) -> dict:
    """Run the requested analyses on ``matrix``; return the robustness record (JSON-ready).

    Keys: ``diagnostics_1pl`` always; ``leave_one_model_out`` with ``loo``; ``bic`` and
    ``diagnostics_2pl`` with ``with_bic``; ``mirt`` (``{"2": diagnostics, …}``) for each D in
    ``mirt_dims``.

    With ``saved`` (:func:`read_fit_dir`) Table 6 is that fit's, Table 7 correlates with its
    difficulties and Table 8 uses its saved posterior; the 1PL is refitted only for Table 8
    when it saved none. Without ``saved`` the 1PL is fitted here.
    """
    from benchmeasure.irt.alternatives import build_2pl, build_mirt, sample_model
    from benchmeasure.irt.fit import fit_1pl

    def say(message):
        if log is not None:
            log(message)

    cpus = available_cpus()
    settings = {"chains": chains, "tune": tune, "draws": draws, "target_accept": target_accept, "seed": seed}
    full = None
    if saved is None:
        say("1PL fit (Table 6)")
        full = fit_1pl(matrix, guessing=guessing, **settings)
    else:
        say(f"1PL diagnostics (Table 6) from {saved.folder}/diagnostics.json")
        if with_bic and saved.posterior is None:
            say(f"1PL refit for the BIC (Table 8): {saved.posterior_note}")
            full = fit_1pl(matrix, guessing=guessing, **settings)
    record = {"diagnostics_1pl": saved.table6() if saved is not None else table_diagnostics(full.diagnostics),
              "settings": dict(settings, guessing=np.asarray(guessing, dtype=float).tolist(),
                               mirt_dims=list(mirt_dims))}
    full_b = saved.b_mean if saved is not None else full.b_mean
    if loo:
        workers = workers or max(1, min(len(matrix.models), cpus))
        say(f"leave-one-model-out: {len(matrix.models)} refits in {workers} process(es) (Table 7)")
        # each worker runs its chains one after another so the processes do not oversubscribe the CPUs
        refit_settings = dict(settings, cores=max(1, cpus // workers))
        record["leave_one_model_out"] = leave_one_model_out(matrix, full_b, guessing, refit_settings, workers)
        record["leave_one_model_out"]["workers"] = workers
        record["leave_one_model_out"]["full_fit"] = (os.path.join(saved.folder, "difficulty.csv")
                                                     if saved is not None else "the 1PL fit of this run")
    if with_bic:
        say("2PL fit and BIC (Tables 8, 9)")
        model = build_2pl(matrix.counts, matrix.cell_trials(), guessing, matrix.models, matrix.items)
        idata, summary = sample_model(model, draws=draws, tune=tune, chains=chains, target_accept=target_accept,
                                      seed=seed, cores=min(chains, cpus), var_names=["theta", "b", "a"])
        record["diagnostics_2pl"] = table_diagnostics(summary)
        post = idata["posterior"]
        ll_2pl = max_draw_log_likelihood(matrix.counts, matrix.cell_trials(), _stack(post["theta"]), _stack(post["b"]),
                                         guessing, _stack(post["a"]))
        if full is None:
            theta_1pl, b_1pl = saved.draws(matrix)
            draws_1pl = saved.posterior
        else:
            theta_1pl, b_1pl = full.draws("theta"), full.draws("b")
            draws_1pl = "the 1PL fit of this run" if saved is None else "a 1PL refit (no saved posterior)"
        ll_1pl = max_draw_log_likelihood(matrix.counts, matrix.cell_trials(), theta_1pl, b_1pl, guessing)
        record["bic"] = bic_comparison(ll_1pl, ll_2pl, len(matrix.models), len(matrix.items),
                                       None if matrix.trials is None else matrix.present_cells)
        record["bic"]["draws_1pl"] = draws_1pl
    if mirt_dims:
        record["mirt"] = {}
        for dims in mirt_dims:
            say(f"MIRT with {dims} dimensions (Table 10)")
            model = build_mirt(matrix.counts, matrix.cell_trials(), dims, guessing, matrix.models, matrix.items)
            _, summary = sample_model(model, draws=draws, tune=tune, chains=chains, target_accept=target_accept,
                                      seed=seed, cores=min(chains, cpus), var_names=["theta", "b", "log_a"])
            record["mirt"][str(dims)] = table_diagnostics(summary)
    return record


def _stack(data_array) -> np.ndarray:
    """Posterior draws (chain, draw, …) flattened to (chain·draw, rest)."""
    values = np.asarray(data_array.values, dtype=float)
    return values.reshape(values.shape[0] * values.shape[1], -1)


def markdown(record: dict, name: str) -> str:
    """Tables 6–10 rows for one benchmark, in the paper's layout."""
    def diag(d):
        if d is None:
            return "— | — | —"
        r_hat = "—" if d["max_r_hat"] is None else f"{d['max_r_hat']:.2f}"
        ess = "—" if d["min_ess_bulk"] is None else f"{d['min_ess_bulk']:.0f}"
        return f"{r_hat} | {ess} | {d['divergences']}"

    lines = [f"# IRT robustness: {name}", "",
             "## Table 6: 1PL MCMC diagnostics", "",
             "| Benchmark | Max R-hat ↓ | Min Bulk ESS ↑ | # Divergent ↓ |", "|---|---|---|---|",
             f"| {name} | {diag(record['diagnostics_1pl'])} |", ""]
    absent = record.get("absent_cells") or {}
    if absent.get("total"):
        cells = record.get("models", 0) * record.get("items", 0)
        lines[1:1] = ["", f"Absent cells: {absent['total']} of {cells}, in {len(absent.get('per_model', {}))} "
                          f"model(s) and {len(absent.get('per_item', {}))} item(s) (every fit uses the masked "
                          "likelihood; per model and item in robustness.json)."]
    if record["diagnostics_1pl"].get("source"):
        lines[-1:-1] = ["", f"From {record['diagnostics_1pl']['source']} (benchmeasure fit)."]
    if "leave_one_model_out" in record:
        loo = record["leave_one_model_out"]
        lines += ["## Table 7: leave-one-model-out", "",
                  "| Benchmark | Pearson Mean | Pearson Min | Spearman Mean | Spearman Min |", "|---|---|---|---|---|",
                  f"| {name} | {loo['pearson_mean']:.4f} | {loo['pearson_min']:.4f} | {loo['spearman_mean']:.4f} | "
                  f"{loo['spearman_min']:.4f} |", ""]
    if "bic" in record:
        row = record["bic"]
        lines += ["## Table 8: BIC, 1PL vs 2PL", "",
                  "| Benchmark | BIC 1PL | BIC 2PL | ΔBIC | Selected |", "|---|---|---|---|---|",
                  f"| {name} | {row['bic_1pl']:.0f} | {row['bic_2pl']:.0f} | {row['delta_bic']:+.0f} | "
                  f"{row['selected']} |", "",
                  f"ln L̂: {row['likelihood']}; n = {row['n']} ({row['n_definition']}); "
                  f"k = {row['k_1pl']} (1PL), {row['k_2pl']} (2PL)"
                  + (f"; 1PL draws: {row['draws_1pl']}." if row.get("draws_1pl") else "."), "",
                  "## Table 9: 1PL and 2PL diagnostics", "",
                  "| Benchmark | 1PL Max R-hat | 1PL Min ESS | 1PL # Div. | 2PL Max R-hat | 2PL Min ESS | 2PL # Div. |",
                  "|---|---|---|---|---|---|---|",
                  f"| {name} | {diag(record['diagnostics_1pl'])} | {diag(record['diagnostics_2pl'])} |", ""]
    if record.get("mirt"):
        dims = list(record["mirt"])
        header = " | ".join(f"MIRT-{d} Max R-hat | MIRT-{d} Min ESS | MIRT-{d} # Div." for d in dims)
        lines += ["## Table 10: multidimensional IRT diagnostics", "",
                  f"| Benchmark | {header} |", "|---" * (1 + 3 * len(dims)) + "|",
                  f"| {name} | {' | '.join(diag(record['mirt'][d]) for d in dims)} |", ""]
    return "\n".join(lines)
