"""What a suite supplies for RAG evaluation: pages, dataset, thresholds, embedder, generator.

A suite declares ``components={"rag": "module:attr"}`` naming a :class:`RagComponent`; the
``vitrine rag`` command loads it only when it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from vitrine.rag._dataset import RagThresholds
from vitrine.rag._embeddings import TextEmbedder
from vitrine.rag._generator import ExtractiveGenerator, Generator

__all__ = ["EmbedderFactory", "GeneratorFactory", "RagComponent", "extractive_generator"]

GeneratorFactory = Callable[[TextEmbedder, RagThresholds], Generator]


class EmbedderFactory(Protocol):
    """Builds the dev embedder; ``cache_dir`` is where its vector cache goes (the command's
    store root, so ``--output`` moves it), None for the embedder's own default."""

    def __call__(self, cache_dir: Path | None = None) -> TextEmbedder: ...


def extractive_generator(embedder: TextEmbedder, thresholds: RagThresholds) -> Generator:
    """The offline default: extractive answers that abstain below the calibrated relevance."""
    return ExtractiveGenerator(embedder, thresholds.relevance_threshold)


@dataclass(frozen=True)
class RagComponent:
    name: str
    knowledge_dir: Path
    dataset_path: Path
    thresholds_path: Path
    dev_embedder: EmbedderFactory
    default_generator: GeneratorFactory = extractive_generator
