"""BenchFill's verifier side: validity checks, panel rollouts, grading (paper, Section 4, Figure 4)."""
