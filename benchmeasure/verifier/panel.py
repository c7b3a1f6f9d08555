"""The verifier panel and the rewriter, read from a TOML config (stdlib ``tomllib``, Python >= 3.11).

A panel config lists each verifier model with how to reach it (served name, base URL or
the environment variable that holds it, API-key variable), how to sample from it
(temperature, top-p, max tokens, whether the server accepts ``n`` samples per request)
and, optionally, how to serve it with vLLM (checkpoint, tensor-parallel size, GPU ids,
port, maximum model length, extra ``vllm serve`` arguments). The rewriter has the same
fields. ``verifier/panels/paper.toml`` holds the six models of the paper's Table 4 and the
rewriter (MiniMax-M2.7, temperature 1.0, Section 5); see ``docs/verifier.md`` for the schema.

Resolution of a model's base URL, first match wins:

1. the environment variable named by ``base_url_env``, when it is set and non-empty;
2. ``base_url`` from the file;
3. ``http://<serve.host>:<serve.port>/v1`` when the model has a ``[model.serve]`` table.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.base.resources import example_path

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - exercised only on Python < 3.11
    tomllib = None

_MODEL_KEYS = {
    "name",
    "base_url",
    "base_url_env",
    "api_key_env",
    "temperature",
    "top_p",
    "max_tokens",
    "supports_n",
    "serve",
}
_SERVE_KEYS = {"path", "tensor_parallel_size", "gpu_ids", "port", "host", "max_model_len", "extra_args", "env"}
_TOP_KEYS = {"panel", "defaults", "rollouts", "model", "rewriter"}
_PANEL_KEYS = {"name", "expected_size", "note"}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"


@dataclass(frozen=True)
class Serving:
    """How to start one model with ``vllm serve``.

    Attributes
    ----------
    path : str
        Hugging Face repository id or local checkpoint folder.
    tensor_parallel_size : int
        ``--tensor-parallel-size``; must equal ``len(gpu_ids)`` when GPU ids are given.
    gpu_ids : tuple of int
        Devices for ``CUDA_VISIBLE_DEVICES``; empty leaves the variable unset.
    port : int
    host : str
    max_model_len : int or None
        ``--max-model-len``; None lets vLLM take the checkpoint's value.
    extra_args : tuple of str
        Passed to ``vllm serve`` verbatim, after the standard arguments.
    env : dict of str to str
        Extra environment variables for the server process.
    """

    path: str
    tensor_parallel_size: int = 1
    gpu_ids: tuple = ()
    port: int = 8000
    host: str = "127.0.0.1"
    max_model_len: int | None = None
    extra_args: tuple = ()
    env: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PanelModel:
    """One verifier model (or the rewriter): endpoint, sampling settings, optional serving.

    Attributes
    ----------
    name : str
        The served model name sent as ``model`` in requests and written in response rows.
    base_url, base_url_env : str or None
        A fixed OpenAI-compatible base URL (ending in ``/v1``) and/or the environment variable
        that overrides it.
    api_key_env : str
        Environment variable holding the API key; a local vLLM server accepts any value.
    temperature : float
    top_p : float or None
        None: the request leaves ``top_p`` to the server's default.
    max_tokens : int
    supports_n : bool
        Whether the server returns several samples for one request (``n``); False sends one
        request per trial.
    serve : Serving or None
    """

    name: str
    temperature: float
    top_p: float | None = None
    max_tokens: int = 4096
    supports_n: bool = True
    base_url: str | None = None
    base_url_env: str | None = None
    api_key_env: str = _DEFAULT_API_KEY_ENV
    serve: Serving | None = None

    def resolve_base_url(self, environ: Mapping | None = None) -> str:
        """The base URL to call, following the module's resolution order."""
        environ = os.environ if environ is None else environ
        if self.base_url_env and environ.get(self.base_url_env):
            return str(environ[self.base_url_env]).rstrip("/")
        if self.base_url:
            return self.base_url.rstrip("/")
        if self.serve is not None:
            return f"http://{self.serve.host}:{self.serve.port}/v1"
        hint = f"set ${self.base_url_env}" if self.base_url_env else "give base_url or a [serve] table"
        fail(f"panel model {self.name!r}: no base URL ({hint})")

    def api_key(self, environ: Mapping | None = None) -> str:
        """The API key from ``api_key_env``; ``"EMPTY"`` when unset (what local vLLM accepts)."""
        environ = os.environ if environ is None else environ
        return str(environ.get(self.api_key_env) or "EMPTY")

    def sampling(self) -> dict:
        """Keyword arguments for ``chat.completions.create`` (without ``n``)."""
        args = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.top_p is not None:
            args["top_p"] = self.top_p
        return args


@dataclass(frozen=True)
class Panel:
    """A verifier panel and its rewriter.

    Attributes
    ----------
    name : str
    models : tuple of PanelModel
        In file order; names are unique.
    rewriter : PanelModel or None
    rollouts : dict of str to int
        Trials per item per benchmark key; ``"default"`` covers the others.
    expected_size : int or None
        How many models the full panel has (12 in the paper); ``missing`` counts the
        slots the user still has to fill.
    source : str
        The file it was read from.
    """

    name: str
    models: tuple
    rewriter: PanelModel | None = None
    rollouts: dict = field(default_factory=dict)
    expected_size: int | None = None
    source: str = ""

    @property
    def missing(self) -> int:
        """Number of panel slots not yet configured (0 when complete or no size is declared)."""
        return max(0, (self.expected_size or 0) - len(self.models))

    def model(self, name: str) -> PanelModel:
        """The model called ``name`` (or the rewriter); InputError naming the choices otherwise."""
        for candidate in self.models:
            if candidate.name == name:
                return candidate
        if self.rewriter is not None and self.rewriter.name == name:
            return self.rewriter
        choices = ", ".join(m.name for m in self.models)
        fail(f"{self.source or 'panel'}: no model named {name!r} (models: {choices})")

    def n_trials(self, benchmark: str) -> int:
        """Trials per item for ``benchmark`` (the ``[rollouts]`` table)."""
        if benchmark in self.rollouts:
            return self.rollouts[benchmark]
        if "default" in self.rollouts:
            return self.rollouts["default"]
        fail(f"{self.source or 'panel'}: no rollouts entry for benchmark {benchmark!r} and no default")


def load_panel(path: str | os.PathLike) -> Panel:
    """Read and validate a panel config.

    Parameters
    ----------
    path : path-like
        A TOML file with ``[panel]``, ``[defaults]``, ``[rollouts]``, ``[[model]]`` and
        ``[rewriter]`` tables (see ``docs/verifier.md``).

    Returns
    -------
    Panel

    Raises
    ------
    InputError
        Unreadable file, TOML syntax error, unknown or mistyped key, duplicate model name,
        tensor-parallel size that does not match the GPU ids, duplicate port.
    """
    if tomllib is None:
        fail("reading panel configs needs Python >= 3.11 (tomllib)")
    if not os.path.exists(path):  # a shipped panel by name (paper, cpu_smollm) or by its checkout path
        path = example_path(path, "panel")
    where = str(path)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        fail(f"{where}: panel config not found")
    except OSError as exc:
        fail(f"{where}: cannot read panel config ({exc.strerror})")
    except tomllib.TOMLDecodeError as exc:
        fail(f"{where}: not valid TOML ({exc})")
    return panel_from_dict(data, where)


def panel_from_dict(data: Mapping, where: str = "panel") -> Panel:
    """Build a :class:`Panel` from parsed TOML (see :func:`load_panel`)."""
    _no_unknown(data, _TOP_KEYS, where)
    head = _table(data, "panel", where)
    _no_unknown(head, _PANEL_KEYS, f"{where} [panel]")
    defaults = _table(data, "defaults", where)
    _no_unknown(defaults, _MODEL_KEYS - {"name", "serve", "base_url", "base_url_env"}, f"{where} [defaults]")
    entries = data.get("model", [])
    if not isinstance(entries, list):
        fail(f"{where}: 'model' must be an array of tables ([[model]])")
    models = tuple(_model({**defaults, **entry}, f"{where} [[model]] #{i + 1}") for i, entry in enumerate(entries))
    names = [m.name for m in models]
    for name in names:
        if names.count(name) > 1:
            fail(f"{where}: model name {name!r} appears more than once")
    rewriter = None
    if "rewriter" in data:
        rewriter = _model({**defaults, **_table(data, "rewriter", where)}, f"{where} [rewriter]")
    ports: dict = {}
    for entry in [*models, *([rewriter] if rewriter else [])]:
        if entry.serve is not None:
            key = (entry.serve.host, entry.serve.port)
            if key in ports:
                fail(f"{where}: models {ports[key]!r} and {entry.name!r} both serve on port {entry.serve.port}")
            ports[key] = entry.name
    rollouts = {}
    for key, value in _table(data, "rollouts", where).items():
        rollouts[key] = _int(value, f"{where} [rollouts] {key}", minimum=1)
    expected = head.get("expected_size")
    if expected is not None:
        expected = _int(expected, f"{where} [panel] expected_size", minimum=1)
    name = head.get("name", Path(where).stem)
    return Panel(str(name), models, rewriter, rollouts, expected, where)


def _model(entry: Mapping, where: str) -> PanelModel:
    if not isinstance(entry, Mapping):
        fail(f"{where}: must be a table")
    _no_unknown(entry, _MODEL_KEYS, where)
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        fail(f"{where}: 'name' (the served model name) is required")
    where = f"{where} ({name})"
    if "temperature" not in entry:
        fail(f"{where}: 'temperature' is required")
    temperature = _float(entry["temperature"], f"{where} temperature", 0.0, 2.0)
    top_p = None if entry.get("top_p") is None else _float(entry["top_p"], f"{where} top_p", 0.0, 1.0)
    if top_p == 0.0:
        fail(f"{where}: top_p must be > 0")
    max_tokens = _int(entry.get("max_tokens", 4096), f"{where} max_tokens", minimum=1)
    supports_n = entry.get("supports_n", True)
    if not isinstance(supports_n, bool):
        fail(f"{where}: supports_n must be true or false")
    base_url = _opt_str(entry.get("base_url"), f"{where} base_url")
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        fail(f"{where}: base_url must start with http:// or https://, got {base_url!r}")
    base_url_env = _env_name(entry.get("base_url_env"), f"{where} base_url_env")
    api_key_env = _env_name(entry.get("api_key_env", _DEFAULT_API_KEY_ENV), f"{where} api_key_env")
    serve = _serving(entry["serve"], f"{where} [serve]") if "serve" in entry else None
    return PanelModel(name, temperature, top_p, max_tokens, supports_n, base_url, base_url_env, api_key_env, serve)


def _serving(entry: Mapping, where: str) -> Serving:
    if not isinstance(entry, Mapping):
        fail(f"{where}: must be a table")
    _no_unknown(entry, _SERVE_KEYS, where)
    path = _opt_str(entry.get("path"), f"{where} path")
    if not path:
        fail(f"{where}: 'path' (Hugging Face id or local folder) is required")
    tp = _int(entry.get("tensor_parallel_size", 1), f"{where} tensor_parallel_size", minimum=1)
    gpu_ids = entry.get("gpu_ids", [])
    if not isinstance(gpu_ids, list):
        fail(f"{where}: gpu_ids must be a list of integers")
    gpu_ids = tuple(_int(g, f"{where} gpu_ids", minimum=0) for g in gpu_ids)
    if len(set(gpu_ids)) != len(gpu_ids):
        fail(f"{where}: gpu_ids repeat a device: {list(gpu_ids)}")
    if gpu_ids and len(gpu_ids) != tp:
        fail(f"{where}: tensor_parallel_size {tp} does not match {len(gpu_ids)} gpu_ids {list(gpu_ids)}")
    port = _int(entry.get("port", 8000), f"{where} port", minimum=1)
    if port > 65535:
        fail(f"{where}: port {port} is out of range")
    host = _opt_str(entry.get("host", "127.0.0.1"), f"{where} host") or "127.0.0.1"
    max_len = entry.get("max_model_len")
    max_len = None if max_len is None else _int(max_len, f"{where} max_model_len", minimum=1)
    extra = entry.get("extra_args", [])
    if not isinstance(extra, list) or not all(isinstance(a, str) for a in extra):
        fail(f"{where}: extra_args must be a list of strings")
    env = entry.get("env", {})
    if not isinstance(env, Mapping):
        fail(f"{where}: env must be a table of strings")
    for key, value in env.items():
        _env_name(key, f"{where} env")
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            fail(f"{where}: env {key} must be a string or number")
    return Serving(path, tp, gpu_ids, port, host, max_len, tuple(extra), {k: str(v) for k, v in env.items()})


def _table(data: Mapping, key: str, where: str) -> Mapping:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        fail(f"{where}: [{key}] must be a table")
    return value


def _no_unknown(entry: Mapping, allowed: set, where: str) -> None:
    unknown = sorted(set(entry) - allowed)
    if unknown:
        fail(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _int(value, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        fail(f"{where}: must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _float(value, where: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        fail(f"{where}: must be a number in [{low}, {high}], got {value!r}")
    return float(value)


def _opt_str(value, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        fail(f"{where}: must be a string, got {value!r}")
    return value


def _env_name(value, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _ENV_NAME.match(value):
        fail(f"{where}: {value!r} is not an environment variable name")
    return value
