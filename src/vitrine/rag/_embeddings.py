"""Embedders for the RAG layer: the suite's own (dev) or an OpenAI-compatible endpoint (prod).

The dev embedder is whatever the suite's RAG component supplies (the shop ships a local model),
so the harness stays free of subject code. The prod embedder calls ``POST {base}/embeddings``
with the standard library: one synchronous request per batch is all ingestion needs, and a
missing key is refused before anything is read, embedded or written.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from vitrine._redact import register_secret, sanitize_text
from vitrine.errors import EmbeddingConfigError, EmbeddingError

__all__ = [
    "EmbeddingConfigError",
    "EmbeddingError",
    "EmbeddingMode",
    "OpenAIEmbedder",
    "ProdEmbeddingConfig",
    "TextEmbedder",
    "table_for_mode",
]

Vectors = npt.NDArray[np.float32]

_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_DEFAULT_MODEL = "text-embedding-3-small"
_BATCH = 64


class EmbeddingMode(StrEnum):
    DEV = "dev"
    PROD = "prod"


def table_for_mode(mode: EmbeddingMode) -> str:
    """Separate tables per mode: vectors of two models must never share an index."""
    return "knowledge_chunks_dev" if mode is EmbeddingMode.DEV else "knowledge_chunks"


@runtime_checkable
class TextEmbedder(Protocol):
    """Unit-length float32 vectors, one row per text."""

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


@dataclass(frozen=True, slots=True)
class ProdEmbeddingConfig:
    api_key: str
    base_url: str
    model: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ProdEmbeddingConfig:
        env = os.environ if environ is None else environ
        key = env.get("OPENAI_API_KEY", "").strip()
        if not key:
            raise EmbeddingConfigError(
                "--embedding-mode prod needs OPENAI_API_KEY (and optionally OPENAI_BASE_URL "
                "and VITRINE_EMBEDDING_MODEL); nothing was ingested or written"
            )
        base = env.get("OPENAI_BASE_URL", "").strip() or _DEFAULT_BASE_URL
        if not base.startswith(("https://", "http://")):
            raise EmbeddingConfigError("OPENAI_BASE_URL must be an http(s) URL")
        model = env.get("VITRINE_EMBEDDING_MODEL", "").strip() or _DEFAULT_MODEL
        register_secret(key)  # so no error message or artifact can ever carry it
        return cls(key, base.rstrip("/"), model)


class OpenAIEmbedder:
    """``POST {base_url}/embeddings`` in batches; vectors re-normalised to unit length."""

    def __init__(self, config: ProdEmbeddingConfig, *, timeout_s: float = 60.0) -> None:
        self._config = config
        self._timeout = timeout_s

    @property
    def model_id(self) -> str:
        return self._config.model

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = []
        for start in range(0, len(texts), _BATCH):
            rows.extend(self._batch(list(texts[start : start + _BATCH])))
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        matrix = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32)

    def _batch(self, texts: list[str]) -> list[list[float]]:
        body = json.dumps({"model": self._config.model, "input": texts}).encode()
        request = urllib.request.Request(
            f"{self._config.base_url}/embeddings",
            data=body,
            headers={
                "Authorization": f"Bearer {self._config.api_key}",
                "Content-Type": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                payload = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise EmbeddingError(f"embeddings endpoint answered HTTP {exc.code}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise EmbeddingError(
                f"embeddings endpoint unreachable: {sanitize_text(str(exc), 200)}"
            ) from exc
        except ValueError as exc:
            raise EmbeddingError("embeddings endpoint returned invalid JSON") from exc
        try:
            data = sorted(payload["data"], key=lambda item: int(item["index"]))
            vectors = [[float(x) for x in item["embedding"]] for item in data]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError("embeddings response lacks data[].embedding") from exc
        if len(vectors) != len(texts):
            raise EmbeddingError(f"asked for {len(texts)} embeddings, received {len(vectors)}")
        return vectors
