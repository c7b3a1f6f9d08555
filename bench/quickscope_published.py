"""Run the published QuickScope code (github narunraman/quickscope, MIT; Lundy, Raman & Leyton-Brown, 2026)
unmodified, driven by the scope bench over a pipe. This file is ours; it contains none of their code.

It runs in a separate environment that has the published code's dependencies (numpy, scikit-learn,
xgboost, ConfigSpace, pandas, pyyaml — their optimizer module imports them) and imports the published
package from a snapshot of its repository (``--src``: a checkout or ``git archive`` of it) *without*
running the package's top-level ``__init__`` (which imports the LLM clients: openai, anthropic, datasets):
``quickscope`` and ``quickscope.optimization`` are registered as bare packages over the snapshot's folders,
then ``quickscope.optimization.coup_optimization`` (their ``CoupBO`` wrapper and ``CoupConfig``) and
``quickscope.dataflow`` (their ``hinge-error-rate`` transform) are imported as published.

Protocol (one JSON object per line): the bench writes the run's settings ``{"space", "delta", "threshold",
"seed", "budget", "batch"}`` (optionally ``n_initial`` and ``exploration_param``, their ``CoupConfig`` fields, and
``show_pool``: first write ``{"pool": [config, …]}``, the starting pool in their index order); then the driver
writes ``{"pulls": [config, …], "certified": [index, …]}`` (their ``CoupBO.suggest``; the configurations
their own bound has certified so far, by their index) and reads ``{"errors": [bool, …]}`` (told back with
``CoupBO.tell`` as utility = error), until the budget is spent; last it writes ``{"done": true, "certified":
[config, …], "pool": n}`` (the configurations their own bound certified, and their pool size).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import types


def load(src: str):
    for name, folder in (("quickscope", "quickscope"), ("quickscope.optimization", "quickscope/optimization")):
        package = types.ModuleType(name)
        package.__path__ = [f"{src}/{folder}"]
        sys.modules[name] = package
    # their `resources` package (the transform registry loads it) comes from PYTHONPATH, set by bench_scope.py
    return importlib.import_module("quickscope.optimization.coup_optimization")


def config_space(space: dict, seed: int):
    from ConfigSpace import ConfigurationSpace
    from ConfigSpace.hyperparameters import (
        CategoricalHyperparameter,
        UniformFloatHyperparameter,
        UniformIntegerHyperparameter,
    )

    cs = ConfigurationSpace(seed=seed)
    for name, spec in space.items():
        if spec["type"] == "int":
            cs.add(UniformIntegerHyperparameter(name, lower=spec["low"], upper=spec["high"]))
        elif spec["type"] == "float":
            cs.add(UniformFloatHyperparameter(name, lower=spec["low"], upper=spec["high"]))
        else:
            cs.add(CategoricalHyperparameter(name, choices=list(spec["choices"])))
    return cs


def plain(config) -> dict:
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in dict(config).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", required=True, help="a snapshot of github.com/narunraman/quickscope")
    args = parser.parse_args()
    module = load(args.src)
    import numpy as np

    run = json.loads(sys.stdin.readline())
    np.random.seed(run["seed"])  # their COUP draws its ties and bootstrap halves from numpy's global generator
    cfg = module.CoupConfig(seed=run["seed"], delta=run["delta"], utility_transform="hinge-error-rate",
                            utility_transform_kwargs={"hinge_point": run["threshold"]},
                            certification_threshold=run["threshold"],
                            **{k: run[k] for k in ("n_initial", "exploration_param") if k in run})
    bo = module.CoupBO(config_space(run["space"], run["seed"]), cfg)
    if run.get("show_pool"):  # the starting pool in their index order (the bench mirrors it)
        print(json.dumps({"pool": [plain(bo.coup.configs[i]["config"]) for i in range(bo.coup.n)]}), flush=True)
    spent = 0
    while spent < run["budget"]:
        entries = bo.suggest(min(run["batch"], run["budget"] - spent))
        if not entries:
            break
        print(json.dumps({"pulls": [plain(e["params"]) for e in entries],
                          "certified": sorted(int(i) for i in bo.coup.certified_configs)}), flush=True)
        errors = json.loads(sys.stdin.readline())["errors"]
        bo.tell([{"ticket_id": e["ticket_id"], "utility": float(err)} for e, err in zip(entries, errors)])
        spent += len(entries)
    certified = [plain(bo.coup.configs[i]["config"]) for i in sorted(bo.coup.certified_configs)]
    print(json.dumps({"done": True, "certified": certified, "pool": int(bo.coup.n)}), flush=True)


if __name__ == "__main__":
    main()
