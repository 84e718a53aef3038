"""What a suite supplies for RAG evaluation: pages, dataset, thresholds, embedder, generator.

A suite declares ``components={"rag": "module:attr"}`` naming a :class:`RagComponent`; the
``vitrine rag`` command loads it only when it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vitrine.rag.dataset import RagThresholds
from vitrine.rag.embeddings import TextEmbedder
from vitrine.rag.generator import ExtractiveGenerator, Generator

__all__ = ["GeneratorFactory", "RagComponent", "extractive_generator"]

GeneratorFactory = Callable[[TextEmbedder, RagThresholds], Generator]


def extractive_generator(embedder: TextEmbedder, thresholds: RagThresholds) -> Generator:
    """The offline default: extractive answers that abstain below the calibrated relevance."""
    return ExtractiveGenerator(embedder, thresholds.relevance_threshold)


@dataclass(frozen=True)
class RagComponent:
    name: str
    knowledge_dir: Path
    dataset_path: Path
    thresholds_path: Path
    dev_embedder: Callable[[], TextEmbedder]
    default_generator: GeneratorFactory = extractive_generator
