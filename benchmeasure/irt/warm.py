"""On a machine whose kernel cache is empty, compile what a fit needs after sampling in a second process.

A first fit compiles every kernel it touches, one after the other on one core: the route's log density (about
20 s on the 2-core development machine), then the exact b draws and the summaries (about 12 s more; the
calibrated intervals', about 1 s, belong to a layer above and compile in the fit). None of the later ones
depends on the density, so while the fit compiles its density this
module, run as a child process (``python -m benchmeasure.irt.warm KIND``), calls those kernels on a tiny matrix of
the same kind; Numba writes each to the kernel cache (:mod:`benchmeasure.base.kernel_cache`), and the fit loads
them from there when it reaches them. Nothing is shared but the cache: if the fit gets there first it compiles the
kernel itself (both succeed, the entries are identical), and a child that fails costs nothing but its time.

``KIND`` is what decides which kernels a fit uses: ``plain`` (complete matrix, no guessing floor), ``guessing``,
``holes``, ``holes-guessing``. The child is started by :func:`start` only when the cache is cold, is ended by
:func:`stop` when the fit no longer needs it, and exits with its parent (:mod:`benchmeasure.base.lifetime`).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

KINDS = ("plain", "guessing", "holes", "holes-guessing")


def kind_of(trials, guessing) -> str:
    """The :data:`KINDS` entry of a fit with this trials matrix (None: complete) and guessing floor."""
    guessed = bool(np.any(np.asarray(guessing, dtype=float) > 0.0))
    holes = trials is not None
    return {(False, False): "plain", (False, True): "guessing", (True, False): "holes",
            (True, True): "holes-guessing"}[(holes, guessed)]


def _tiny(kind: str, seed: int = 0):
    """A 4 × 12 matrix of the kind: (counts, K, guessing, trials or None)."""
    rng = np.random.default_rng(seed)
    k = 3
    trials = np.full((4, 12), k, dtype=np.int64)
    if kind.startswith("holes"):
        trials[0, :3] = 0
        trials[1, 3] = 1
    counts = rng.binomial(trials, 0.5)
    guessing = np.where(np.arange(12) % 3 == 0, 0.25, 0.0) if kind.endswith("guessing") else 0.0
    return counts, k, guessing, (trials if kind.startswith("holes") else None)


def compile_after_sampling(kind: str) -> None:
    """Call every kernel a collapsed fit of ``kind`` runs after NUTS, with the argument types the fit uses."""
    from benchmeasure.irt.diagnostics import summarize_draws
    from benchmeasure.irt.routes.collapsed.difficulties import draw_difficulties
    from benchmeasure.irt.routes.collapsed.marginal import collapsed_data

    counts, k, guessing, trials = _tiny(kind)
    data = collapsed_data(counts, k, guessing, trials)
    theta_draws = np.random.default_rng(1).normal(size=(2, 20, counts.shape[0]))
    b_draws = draw_difficulties(data, theta_draws, 1)   # not the quadrature check: it runs the density's kernel,
    summarize_draws(b_draws)                            # which the fit is compiling meanwhile
    summarize_draws(theta_draws)


def start(kind: str):
    """The child compiling the after-sampling kernels of ``kind``, or None when they are already compiled."""
    from benchmeasure.base.kernel_cache import is_warm
    from benchmeasure.irt.draw_summary import summarize_block

    if is_warm(summarize_block):
        return None
    import os

    from benchmeasure.base.lifetime import PARENT_PID_ENV, die_with_parent

    try:
        return subprocess.Popen([sys.executable, "-m", "benchmeasure.irt.warm", kind], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={**os.environ, PARENT_PID_ENV: str(os.getpid())},
                                preexec_fn=die_with_parent(os.getpid()))
    except OSError:
        return None


def stop(child) -> None:
    """End the child if it still runs (each cache entry is written to a temporary file and renamed: a child
    ended mid-write leaves no damaged entry)."""
    if child is not None and child.poll() is None:
        child.terminate()
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] not in KINDS:
        print(f"usage: python -m benchmeasure.irt.warm {{{','.join(KINDS)}}}", file=sys.stderr)
        return 2
    from benchmeasure.base.lifetime import exit_with_parent

    exit_with_parent()
    compile_after_sampling(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
