"""BenchFill: difficulty-targeted gap filling (paper, Section 4)."""
