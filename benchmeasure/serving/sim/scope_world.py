"""A simulated model for dynamic-benchmark searches (``benchmeasure scope``) with known P(correct).

It answers the questions of the built-in arithmetic template (:mod:`benchmeasure.scope.arithmetic`):
it reads the configuration back from the question, errs with that configuration's
:func:`~benchmeasure.scope.arithmetic.error_probability` (world seed ``seed``) for the model's ability θ
(the 1PL: P(error) = σ(b − θ)), and otherwise gives the right number. Default models: ``sim-solver``
(θ = 0), ``sim-weak`` (θ = −1), ``sim-strong`` (θ = 1). A wrong answer is the right one plus a nonzero
offset. Served over real HTTP by
:mod:`benchmeasure.serving.sim.server` (``serve(ScopeWorld(…))`` or
``python -m benchmeasure.serving.sim.server --scope``).
"""

from __future__ import annotations

from benchmeasure.scope.arithmetic import config_of_question, error_probability, solve

DEFAULT_MODELS = {"sim-solver": 0.0, "sim-weak": -1.0, "sim-strong": 1.0}


class ScopeWorld:
    def __init__(self, seed: int = 0, models: dict | None = None):
        self.seed = seed
        self.models = dict(models or DEFAULT_MODELS)

    def model_names(self) -> list:
        return list(self.models)

    def respond(self, model: str, prompt: str, n: int, rng) -> list:
        if model not in self.models:
            raise KeyError(model)
        config = config_of_question(prompt)
        if config is None:
            raise ValueError("not a question of the arithmetic template")
        p_error, right = error_probability(config, self.seed, self.models[model]), int(solve(prompt))
        texts = []
        for _ in range(n):
            wrong = rng.random() < p_error
            texts.append(f"The answer is {right + rng.choice([-1, 1]) * rng.randint(1, 9) if wrong else right}.")
        return texts
