"""The benchmark explorer: one self-contained HTML page, like the paper's project page.

:mod:`.collect` gathers the benchmarks and computes their numbers with the package's own
metrics, :mod:`.filled` reads BenchFill runs and mass-fill outputs, :mod:`.page` writes the
shipped ``template.html`` with the data inlined. ``scripts/explore_benchmarks.py`` (the
``explore`` command) is the front end.
"""
