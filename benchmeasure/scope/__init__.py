"""Certified search of dynamic benchmarks: find the configurations of a question generator that a model
reliably fails, with noise-aware bounds and few model calls (the problem QuickScope poses: Lundy, Raman &
Leyton-Brown, 2026, arXiv 2604.17842).

Modules: :mod:`.space` (the parameter space file), :mod:`.generators` (``module:function`` generators,
the built-in arithmetic template in :mod:`.arithmetic`, reasoning-gym tasks in :mod:`.rg`),
:mod:`.bounds` (binary-KL confidence bounds and the certifier), :mod:`.arms` (the pool of evaluated
configurations), :mod:`.strategies` (uniform; quickscope, our implementation of QuickScope's published
allocation; lucb; shared), :mod:`.utility` (error, complexity, band), :mod:`.journal` (crash-safe record of
model calls), :mod:`.runner` (one search).
"""
