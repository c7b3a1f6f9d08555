"""Simulation mode: an OpenAI-compatible server whose models follow a known 1PL ground truth."""
