"""Suites: several benchmarks answered by the same models, put on one ability scale.

* :mod:`.reader` — long responses (``model,item_id[,trial],correct[,benchmark]``, plain or gzip) with holes and
  any number of trials per cell → a :class:`~.reader.Suite` (counts and trials per cell; 0 trials = absent).
* :mod:`.calibration` — the 1PL by marginal maximum a posteriori (EM over a fixed ability grid), exact for any
  pattern of holes; items may be held fixed (fixed-parameter calibration).
* :mod:`.predict` — a new model's full-benchmark accuracy from its anchor answers, with a predictive interval:
  one ability (grid posterior) or one ability per benchmark with correlated abilities (Laplace).
* :mod:`.chain` — the Growing Pains protocol: benchmarks arrive in order, anchors per benchmark, held-out models.
"""
