"""Print a panel model's settings for the serving scripts (stdlib only; Python >= 3.11 for tomllib)."""

from __future__ import annotations

import shlex
from pathlib import Path

from benchmeasure.base.errors import command_parser, fail
from benchmeasure.verifier.panel import load_panel

EPILOG = """examples:
  benchmeasure panel-settings verifier/panels/paper.toml --list            # every model; hosted ones marked
  benchmeasure panel-settings verifier/panels/paper.toml --list --served   # only models with a [serve] table
  benchmeasure panel-settings verifier/panels/paper.toml --model QwQ-32B
  benchmeasure panel-settings verifier/panels/paper.toml --rewriter
  eval "$(benchmeasure panel-settings verifier/panels/paper.toml --model QwQ-32B)"
"""


def shell_lines(model) -> list[str]:
    """``KEY=value`` lines (values shell-quoted) for one model with a ``[serve]`` table."""
    serve = model.serve
    values = {
        "NAME": model.name,
        "SERVE_PATH": serve.path,
        "TP": str(serve.tensor_parallel_size),
        "GPU_IDS": ",".join(str(g) for g in serve.gpu_ids),
        "HOST": serve.host,
        "PORT": str(serve.port),
        "MAX_MODEL_LEN": "" if serve.max_model_len is None else str(serve.max_model_len),
        "EXTRA_ARGS": shlex.join(serve.extra_args),
        "SERVE_ENV": shlex.join(f"{k}={v}" for k, v in sorted(serve.env.items())),
        "BASE_URL_ENV": model.base_url_env or "",
        "API_KEY_ENV": model.api_key_env,
    }
    return [f"{key}={shlex.quote(value)}" for key, value in values.items()]


def hosted_endpoint(model) -> str:
    """Where a model without a [serve] table is reached, in words."""
    where = []
    if model.base_url_env:
        where.append(f"${model.base_url_env}")
    if model.base_url:
        where.append(model.base_url)
    return " else ".join(where) or "not set (give base_url or base_url_env)"


def main(argv=None) -> int:
    parser = command_parser(None,
                            "Print the serving settings of panel models as shell assignments "
                            "(used by scripts/setup_server.sh and scripts/setup_diff_minimax.sh).", EPILOG)
    parser.add_argument("config", type=Path, help="panel config (TOML)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true",
                      help="every panel model's name; a hosted model (no [serve] table) is followed by a tab and "
                           "where its endpoint comes from")
    parser.add_argument("--served", action="store_true",
                        help="with --list: only the models with a [serve] table, one bare name a line (for scripts)")
    what.add_argument("--model", help="settings of this panel model")
    what.add_argument("--rewriter", action="store_true", help="settings of the rewriter")
    args = parser.parse_args(argv)
    if args.served and not args.list:
        fail("--served goes with --list")
    panel = load_panel(args.config)
    if args.list:
        for model in panel.models:
            if model.serve is not None:
                print(model.name)
            elif not args.served:
                print(f"{model.name}\thosted (no [serve] table): endpoint {hosted_endpoint(model)}")
        return 0
    if args.rewriter:
        if panel.rewriter is None:
            fail(f"{args.config}: no [rewriter] table")
        model = panel.rewriter
    else:
        model = panel.model(args.model)
    if model.serve is None:
        fail(f"{args.config}: model {model.name!r} has no [serve] table (it is reached through its base URL)")
    print("\n".join(shell_lines(model)))
    return 0

