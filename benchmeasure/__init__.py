"""Shared logic of the "Your Benchmark Is an Empirical Measure Over Difficulty" reproduction.

A benchmark of n items puts mass 1/n on each item's difficulty (paper, Section 2).
This package turns graded responses into count matrices (:mod:`benchmeasure.core.responses`),
fits item difficulties with a 1PL IRT model (:mod:`benchmeasure.irt`), and measures
the resulting empirical measure (:mod:`benchmeasure.core.metrics`).

Importing the package itself pulls in nothing beyond the standard library, so the
stdlib-only command ``scripts/diagnose_benchmark.py`` can use its modules.
"""

__version__ = "0.1.0"
