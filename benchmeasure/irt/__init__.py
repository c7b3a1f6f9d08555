"""Bayesian 1PL item response theory, as the paper's Appendix C.3 specifies."""
