"""Adapter for the procedural tasks of the ``reasoning-gym`` package (Apache-2.0; pinned in
``requirements-dev.txt`` and the ``scope`` extra): ``--generator benchmeasure.scope.rg:<task>``, e.g.
``benchmeasure.scope.rg:basic_arithmetic``.

A configuration's parameters are the task's configuration fields (its difficulty knobs, e.g.
``min_terms``); a parameter ``X`` for which the task has ``min_X`` and ``max_X`` sets both, so
``terms: {type: int, low: 2, high: 6}`` pins the number of terms. Each pull builds the task's dataset of
one item with the pull's seed (offline, no download) and grades the reply with the task's own
``score_answer`` (a score of 1 is correct), after the task's ``<answer>`` extraction when present.
"""

from __future__ import annotations

import dataclasses

INSTRUCTION = "\n\nGive only the final answer."


def _library():
    try:
        import reasoning_gym
    except ImportError as exc:
        from benchmeasure.base.extras import missing_packages

        raise RuntimeError(missing_packages("the reasoning-gym tasks", ["reasoning-gym"], "scope")) from exc
    return reasoning_gym


def task_generator(task: str):
    library = _library()
    from reasoning_gym.factory import DATASETS

    if task not in DATASETS:
        raise AttributeError(f"reasoning-gym has no task {task!r} (e.g. basic_arithmetic, leg_counting, "
                             f"chain_sum; {len(DATASETS)} tasks)")
    fields = {f.name for f in dataclasses.fields(DATASETS[task][1])}

    def generator(config: dict, seed: int):
        options = {}
        for name, value in config.items():
            if name not in fields and f"min_{name}" in fields and f"max_{name}" in fields:
                options[f"min_{name}"] = options[f"max_{name}"] = value
            elif name in fields:
                options[name] = value
            else:
                raise ValueError(f"task {task} has no setting {name!r} (its settings: {', '.join(sorted(fields))})")
        dataset = library.create_dataset(task, seed=seed, size=1, **options)
        entry = dataset[0]

        def grader(response: str) -> bool:
            text = response.strip()
            try:
                from reasoning_gym.utils import extract_answer

                text = extract_answer(response) or text
            except ImportError:
                pass
            return float(dataset.score_answer(text.strip(), entry) or 0.0) >= 1.0

        return entry["question"] + INSTRUCTION, str(entry["answer"]), grader

    generator.__name__ = task
    return generator


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return task_generator(name)
