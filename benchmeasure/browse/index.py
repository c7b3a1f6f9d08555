"""The persistent index folder of ``benchmeasure browse``.

Layout (every file named in ``manifest.json``, which is written last and atomically, so a failed or
interrupted ``browse index`` leaves the previous index as it was)::

    INDEX/manifest.json                      format, encoder, lexical folder, benchmarks in index order
    INDEX/benchmarks/NAME-HASH/items.jsonl   {"item_id", "text", "b"} per item (b: fitted difficulty or null)
    INDEX/benchmarks/NAME-HASH/ids.json      the item IDs, in order (read at query time)
    INDEX/benchmarks/NAME-HASH/b.npy         difficulties (float64, NaN where none was fitted)
    INDEX/benchmarks/NAME-HASH/b_sd.npy      their posterior sds (float64, NaN where unknown; absent if none)
    INDEX/benchmarks/NAME-HASH/embeddings.npy  unit vectors, int8, items × 384 (dense indexes only)
    INDEX/benchmarks/NAME-HASH/scale.npy     float32, 384: vector = embeddings × scale (per dimension)
    INDEX/lexical-HASH/                      the BM25 index over every benchmark's texts (bm25s files)

HASH is the start of the SHA-256 of the content, so a folder never changes once written. Adding a benchmark
embeds its items only; the others keep their vectors, and only the lexical index (seconds) is rebuilt. Each
benchmark's entry records its sources and difficulty file with their SHA-256, the fields read, the command and
the package versions.

Vectors are stored as int8 with one scale per dimension (the largest magnitude in that dimension over the
benchmark's items, over 127): a quarter of float32, half of float16, and a query scores 100,000 items in about
50 ms straight from the memory-mapped file (widening float16 costs about 0.5 s). The rounding moves a cosine by
a few 1e-4 (``tests/test_browse.py`` bounds it). Benchmarks indexed with float16 vectors (before int8) are still read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from benchmeasure.base.errors import fail
from benchmeasure.base.files import atomic_write, make_parents, provenance, read_jsonl_objects, remove_empty_folders
from benchmeasure.browse import dense, lexical

log = logging.getLogger(__name__)

FORMAT = "benchmeasure-browse-index/1"
MANIFEST = "manifest.json"
DTYPE = "int8, one float32 scale per dimension"
BLOCK = 1024  # rows widened to float32 at a time by Index.cosines: small enough to stay in cache and below
# the size at which the BLAS splits a matrix-vector product over threads (which, on a busy machine, cost 10x)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        fail(f"--benchmark {name!r}: use letters, digits, '.', '_' and '-' (at most 100, not starting with "
             "'.', '_' or '-')")
    return name


HEX16 = re.compile(r"[0-9a-f]{16}")


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def read_manifest(folder: str | Path) -> dict:
    """The index's manifest, checked field by field: a manifest edited by hand (a field missing, of the wrong type,
    a folder outside the index) is one error line naming the file and the field, never a traceback."""
    path = Path(folder) / MANIFEST
    if not Path(folder).is_dir():
        fail(f"{folder}: no such index folder; build one with: benchmeasure browse index FILE.jsonl "
             "--benchmark NAME --id-field F --text-field F --output-dir INDEX")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except FileNotFoundError:
        fail(f"{folder}: not a browse index (no {MANIFEST}); build one with benchmeasure browse index")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        fail(f"{path}: cannot read the index manifest ({' '.join(str(exc).split())[:160]})")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        fail(f"{path}: not a {FORMAT} manifest; rebuild the index")
    check_manifest(manifest, path)
    return manifest


def check_manifest(manifest: dict, path) -> None:
    """Fail naming ``path`` and the field unless ``manifest`` has every field a query or an update reads."""
    def bad(field: str, what: str):
        fail(f"{path}: field {field!r} {what}; the manifest was edited or damaged: restore it, or rebuild the index")

    for key in ("dense", "lexical", "benchmarks"):
        if key not in manifest:
            bad(key, "is missing")
    dense = manifest["dense"]
    if dense is not None:
        if not isinstance(dense, dict):
            bad("dense", "must be null (lexical-only) or an object")
        if not _count(dense.get("dimension")) or dense.get("dimension") == 0:
            bad("dense.dimension", "must be a positive integer")
    benchmarks = manifest["benchmarks"]
    if not isinstance(benchmarks, dict):
        bad("benchmarks", "must be an object (benchmark name → entry)")
    total = 0
    for name, entry in benchmarks.items():
        where = f"benchmarks.{name}"
        if not NAME.fullmatch(name):
            bad(where, "is not a benchmark name (letters, digits, '.', '_', '-')")
        if not isinstance(entry, dict):
            bad(where, "must be an object")
        folder = entry.get("folder")
        if not isinstance(folder, str) or not re.fullmatch(rf"benchmarks/{re.escape(name)}-[0-9a-f]{{16}}", folder):
            bad(f"{where}.folder", f"must be 'benchmarks/{name}-' and 16 hex digits (a folder inside the index)")
        if not _count(entry.get("items")) or entry["items"] == 0:
            bad(f"{where}.items", "must be a positive integer")
        for key in ("with_difficulty", "with_sd"):
            if key in entry or key == "with_difficulty":
                if not _count(entry.get(key)) or entry[key] > entry["items"]:
                    bad(f"{where}.{key}", f"must be an integer from 0 to the items ({entry['items']})")
        if not isinstance(entry.get("items_sha256"), str) or not re.fullmatch(r"[0-9a-f]{64}", entry["items_sha256"]):
            bad(f"{where}.items_sha256", "must be a SHA-256 in hex")
        total += entry["items"]
    lexical = manifest["lexical"]
    if lexical is None and benchmarks:
        bad("lexical", "is null, but the index holds benchmarks")
    if lexical is not None:
        if not isinstance(lexical, dict):
            bad("lexical", "must be an object")
        folder = lexical.get("folder")
        if not isinstance(folder, str) or not re.fullmatch(r"lexical-[0-9a-f]{16}", folder):
            bad("lexical.folder", "must be 'lexical-' and 16 hex digits (a folder inside the index)")
        if lexical.get("items") != total or not _count(lexical.get("items")):
            bad("lexical.items", f"must be the number of items of every benchmark ({total})")


def read_stored_records(folder: str | Path, name: str, entry: dict) -> list[dict]:
    """The stored records ``{"item_id", "text", "b"}`` of one benchmark, checked (read by '\n' only: a text may
    hold U+2028 and its kin raw)."""
    path = Path(folder) / entry["folder"] / "items.jsonl"
    records = []
    for line, record in read_jsonl_objects(path, ("item_id", "text")):
        b = record.get("b")
        if not isinstance(record["item_id"], str) or not isinstance(record["text"], str) or not (
                b is None or (isinstance(b, (int, float)) and not isinstance(b, bool) and np.isfinite(b))):
            fail(f"{path} line {line}: not a stored item (item_id and text strings, b a finite number or null); "
                 "rebuild the index")
        records.append(record)
    if len(records) != entry["items"]:
        fail(f"{path}: {len(records)} items, its manifest names {entry['items']}; rebuild the index")
    return records


@dataclass
class Index:
    """What a query needs: every item's benchmark, ID and difficulty, its vectors, the lexical index."""

    folder: Path
    manifest: dict
    benchmarks: list[str]     # one per item, in index order
    item_ids: list[str]
    b: np.ndarray             # float64, NaN where no difficulty was fitted
    b_sd: np.ndarray          # float64, the posterior sd of b; NaN where unknown
    stored_vectors: list | None  # per benchmark (memory-mapped array, scale or None); None: lexical-only index
    retriever: object

    @property
    def dense(self) -> bool:
        return self.stored_vectors is not None

    @cached_property
    def vectors(self) -> np.ndarray | None:
        """Every vector as float32 items × 384 (the bench tiles them; a query uses :meth:`cosines`)."""
        if self.stored_vectors is None:
            return None
        return np.concatenate([np.asarray(v, dtype=np.float32) * (1.0 if scale is None else scale)
                               for v, scale in self.stored_vectors])

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of the items at ``rows`` (index order), float32."""
        out = np.empty((len(rows), self.stored_vectors[0][0].shape[1]), dtype=np.float32)
        start = 0
        for stored, scale in self.stored_vectors:
            here = (rows >= start) & (rows < start + len(stored))
            picked = np.asarray(stored[rows[here] - start], dtype=np.float32)
            out[here] = picked if scale is None else picked * scale
            start += len(stored)
        return out

    def cosines(self, vector: np.ndarray) -> np.ndarray:
        """Cosine of every item with the unit ``vector``, read in blocks from the memory-mapped files."""
        out = np.empty(len(self.item_ids), dtype=np.float32)
        start = 0
        for stored, scale in self.stored_vectors:
            query = (vector if scale is None else vector * scale).astype(np.float32)
            for block in range(0, len(stored), BLOCK):
                rows = np.asarray(stored[block:block + BLOCK], dtype=np.float32)
                out[start + block:start + block + len(rows)] = rows @ query
            start += len(stored)
        return out

    def has_difficulty(self, name: str) -> bool:
        return self.manifest["benchmarks"][name]["with_difficulty"] > 0


def load_index(folder: str | Path) -> Index:
    folder = Path(folder)
    manifest = read_manifest(folder)
    names, ids, bs, sds, vectors = [], [], [], [], []
    for name, entry in manifest["benchmarks"].items():
        where = folder / entry["folder"]
        try:
            item_ids = json.loads((where / "ids.json").read_text(encoding="utf-8"))
            b = np.load(where / "b.npy", allow_pickle=False)
            sd = np.load(where / "b_sd.npy", allow_pickle=False) if (where / "b_sd.npy").exists() else \
                np.full(len(b), np.nan)
            if manifest["dense"] is not None:
                stored = np.load(where / "embeddings.npy", mmap_mode="r", allow_pickle=False)
                scale = np.load(where / "scale.npy", allow_pickle=False) if stored.dtype == np.int8 else None
                if stored.ndim != 2 or stored.shape[1] != manifest["dense"]["dimension"] or (
                        scale is not None and scale.shape != (stored.shape[1],)):
                    raise ValueError(f"embeddings of shape {stored.shape}, the manifest's dimension is "
                                     f"{manifest['dense']['dimension']}")
                vectors.append((stored, scale))
        except (OSError, ValueError, TypeError) as exc:
            fail(f"{where}: cannot read benchmark {name!r} of the index ({' '.join(str(exc).split())[:160]}); "
                 "rebuild the index")
        if not isinstance(item_ids, list) or not all(isinstance(i, str) for i in item_ids) \
                or len(set(item_ids)) != len(item_ids):
            fail(f"{where}/ids.json: not a list of distinct item IDs; rebuild the index")
        if b.ndim != 1 or sd.shape != b.shape or b.dtype.kind != "f" or sd.dtype.kind != "f" or np.isinf(b).any():
            fail(f"{where}: b.npy / b_sd.npy are not one finite difficulty (or NaN) per item; rebuild the index")
        if len(item_ids) != entry["items"] or len(b) != entry["items"] or (vectors and len(vectors[-1][0]) != len(b)):
            fail(f"{where}: benchmark {name!r} does not hold the {entry['items']} items its manifest names; "
                 "rebuild the index")
        if int(np.isfinite(b).sum()) != entry["with_difficulty"]:
            fail(f"{where}: benchmark {name!r} has {int(np.isfinite(b).sum())} fitted difficulties, its manifest "
                 f"names {entry['with_difficulty']}; rebuild the index")
        names += [name] * len(item_ids)
        ids += item_ids
        bs.append(b)
        sds.append(sd)
    if not ids:
        fail(f"{folder}: the index holds no items")
    return Index(folder, manifest, names, ids, np.concatenate(bs), np.concatenate(sds),
                 vectors if manifest["dense"] is not None else None,
                 lexical.load(folder / manifest["lexical"]["folder"]))


def read_stored_items(folder: str | Path, name: str) -> list[dict]:
    """The stored records (item_id, text, b) of one benchmark of the index."""
    manifest = read_manifest(folder)
    if name not in manifest["benchmarks"]:
        fail(f"{folder}: no benchmark {name!r} in the index (it has {', '.join(manifest['benchmarks'])})")
    return read_stored_records(folder, name, manifest["benchmarks"][name])


_LINE_BREAKS = {0x2028: "\\u2028", 0x2029: "\\u2029", 0x85: "\\u0085"}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 items × d, float32 scale per dimension) with vectors ≈ int8 × scale (module docstring)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    scale = np.abs(vectors).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    return np.clip(np.rint(vectors / scale), -127, 127).astype(np.int8), scale.astype(np.float32)


def _write_benchmark(staging: Path, items, difficulty: dict | None, vectors,
                     sd: dict | None = None) -> tuple[bytes, np.ndarray]:
    b = np.array([difficulty.get(i.item_id, np.nan) if difficulty else np.nan for i in items], dtype=np.float64)
    b_sd = np.array([sd.get(i.item_id, np.nan) if sd else np.nan for i in items], dtype=np.float64)
    b_sd[np.isnan(b)] = np.nan
    records = [{"item_id": i.item_id, "text": i.text, "b": None if np.isnan(v) else float(v)}
               for i, v in zip(items, b)]
    if sd:
        for record, v in zip(records, b_sd):
            record["b_sd"] = None if np.isnan(v) else float(v)
        np.save(staging / "b_sd.npy", b_sd, allow_pickle=False)
    # one record per '\n'-ended line; the Unicode line and paragraph separators (and NEL) are escaped too, so
    # that a reader splitting lines the Unicode way (str.splitlines) also sees one record per line
    lines = [json.dumps(record, ensure_ascii=False).translate(_LINE_BREAKS) for record in records]
    content = ("\n".join(lines) + "\n").encode("utf-8")
    (staging / "items.jsonl").write_bytes(content)
    (staging / "ids.json").write_text(json.dumps([i.item_id for i in items], ensure_ascii=False), encoding="utf-8")
    np.save(staging / "b.npy", b, allow_pickle=False)
    if vectors is not None:
        stored, scale = quantize(vectors)
        np.save(staging / "embeddings.npy", stored, allow_pickle=False)
        np.save(staging / "scale.npy", scale, allow_pickle=False)
    return content, b


def add_benchmark(folder: str | Path, name: str, items: list, *, sources: list[dict], settings: dict,
                  difficulty: dict | None, difficulty_source: dict | None, lexical_only: bool,
                  replace: bool = False, vectors: np.ndarray | None = None, sd: dict | None = None) -> dict:
    """Add (or with ``replace``, replace) benchmark ``name``; return its manifest entry.

    ``difficulty`` maps item ID → fitted b (None: no difficulty), ``sd`` item ID → its posterior sd.
    ``vectors`` are precomputed embeddings (the bench uses them to build large indexes); by default the
    encoder embeds ``items``.
    """
    folder = Path(folder)
    manifest = read_manifest(folder) if (folder / MANIFEST).exists() else {
        "format": FORMAT, "dense": None if lexical_only else {
            "model": dense.MODEL_NAME, "sha256": dense.MODEL_SHA256, "dimension": dense.DIMENSION,
            "dtype": DTYPE, "max_tokens": dense.MAX_TOKENS},
        "lexical": None, "benchmarks": {}}
    if manifest["dense"] is None and not lexical_only:
        fail(f"{folder}: this index was built with --lexical-only; add to it with --lexical-only, or build a new "
             "index with embeddings")
    if manifest["dense"] is not None and lexical_only:
        fail(f"{folder}: this index holds embeddings; every benchmark added to it is embedded (drop --lexical-only)")
    if name in manifest["benchmarks"] and not replace:
        fail(f"{folder}: benchmark {name!r} is already in the index; pass --replace to index it again")
    if manifest["dense"] is not None and vectors is None:
        log.info("embedding %d items of %s with %s", len(items), name, dense.MODEL_NAME)
        vectors = dense.encoder().embed([i.text for i in items])
    new_index = not folder.exists()
    made: list[Path] = []  # what this call created, removed again if it fails (nothing partial is left)
    parents = make_parents(folder)  # the index folder and the ancestors it lacked (a failure removes them too)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder))
    done = False
    try:
        content, b = _write_benchmark(staging, items, difficulty, vectors, sd)
        digest = _sha256(content)
        entry = {"folder": f"benchmarks/{name}-{digest[:16]}", "items": len(items),
                 "with_difficulty": int(np.isfinite(b).sum()), "items_sha256": digest,
                 "with_sd": int(sum(np.isfinite(b[k]) and i.item_id in (sd or {}) for k, i in enumerate(items))),
                 "embeddings_sha256": None if vectors is None else _sha256(
                     (staging / "embeddings.npy").read_bytes() + (staging / "scale.npy").read_bytes()),
                 "sources": sources, "difficulty": difficulty_source, "settings": settings,
                 **provenance(["numpy", "bm25s", "PyStemmer", *dense.PACKAGES])}
        old = manifest["benchmarks"].get(name)
        benchmarks = {**manifest["benchmarks"], name: entry}
        target = folder / entry["folder"]
        if not target.exists():
            if not target.parent.exists():
                target.parent.mkdir(parents=True)
                made.append(target.parent)
            os.rename(staging, target)  # same file system: the folder appears whole
            made.append(target)
            staging.mkdir()
        texts = []
        for other, e in benchmarks.items():
            texts += [record["text"] for record in read_stored_records(folder, other, e)]
        keys = [lexical.TOKENIZER, lexical.FORMAT, *(e["items_sha256"] for e in benchmarks.values())]
        lexical_hash = _sha256("".join(keys).encode())[:16]
        lexical_folder = f"lexical-{lexical_hash}"
        if not (folder / lexical_folder).exists():
            lexical.build(texts, staging / "lexical")
            shutil.move(str(staging / "lexical"), str(folder / lexical_folder))
            made.append(folder / lexical_folder)
        previous_lexical = (manifest.get("lexical") or {}).get("folder")
        manifest = {**manifest, "benchmarks": benchmarks,
                    "lexical": {"folder": lexical_folder, "items": len(texts), "k1": lexical.K1, "b": lexical.B,
                                "tokenizer": lexical.TOKENIZER}}
        with atomic_write(folder / MANIFEST) as handle:
            json.dump(manifest, handle, indent=2, ensure_ascii=False, allow_nan=False)
            handle.write("\n")
        done = True
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if not done:
            if new_index:
                shutil.rmtree(folder, ignore_errors=True)
                remove_empty_folders(parents)
            for path in reversed(made):
                shutil.rmtree(path, ignore_errors=True)
    if previous_lexical and previous_lexical != lexical_folder:
        shutil.rmtree(folder / previous_lexical, ignore_errors=True)
    if old and old["folder"] != entry["folder"]:
        shutil.rmtree(folder / old["folder"], ignore_errors=True)
    return entry
