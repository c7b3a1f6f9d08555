"""BenchBrowser for this project: find the items that test a use case, and show whether they measure it.

* :mod:`~benchmeasure.browse.items` reads item texts from JSON Lines files (id and text fields named by the user);
* :mod:`~benchmeasure.browse.index` keeps the persistent index folder (items, fitted difficulties, dense
  embeddings in int8 with a scale per dimension, the lexical index, a manifest with content hashes and provenance);
* :mod:`~benchmeasure.browse.lexical` (BM25, ``bm25s``), :mod:`~benchmeasure.browse.dense` (all-MiniLM-L6-v2,
  int8 ONNX shipped in a wheel, run with onnxruntime) and :mod:`~benchmeasure.browse.fusion` (reciprocal rank
  fusion, filters) answer a query;
* :mod:`~benchmeasure.browse.evaluation` scores a retriever against labelled queries (P@k, nDCG@k, MRR);
* :mod:`~benchmeasure.browse.report` is the validity evidence for 1–4 facet queries: overlap and sources of the
  retrieved slices, each slice's difficulty coverage (ECDF, DDM, Max Gap) and the models' ranking on the slice
  against the full benchmark (Kendall τ with a bootstrap interval, the models that move most);
* :mod:`~benchmeasure.browse.fit_view` shows each listed item's fit from a ``check-fit`` of its benchmark.
"""
