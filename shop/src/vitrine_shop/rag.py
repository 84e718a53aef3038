"""The shop's RAG component: its help pages, the 43-question dataset and the local embedder."""

from __future__ import annotations

from pathlib import Path

from vitrine.rag import RagComponent, TextEmbedder, extractive_generator

__all__ = ["DATASET_PATH", "KNOWLEDGE_DIR", "RAG", "THRESHOLDS_PATH"]

_DATA = Path(__file__).parent / "data"
KNOWLEDGE_DIR = _DATA / "knowledge"
DATASET_PATH = _DATA / "rag_eval_dataset.json"
THRESHOLDS_PATH = _DATA / "rag_thresholds.json"


def _embedder(cache_dir: Path | None = None) -> TextEmbedder:
    # Imported here: the embeddings module pulls numpy and the catalogue, which `vitrine rag
    # --help` must not pay for.
    from vitrine_shop.embeddings import MiniLMEmbedder  # noqa: PLC0415

    return MiniLMEmbedder(cache_dir)


RAG = RagComponent(
    name="vitrine-shop-help-pages",
    knowledge_dir=KNOWLEDGE_DIR,
    dataset_path=DATASET_PATH,
    thresholds_path=THRESHOLDS_PATH,
    dev_embedder=_embedder,
    default_generator=extractive_generator,
)
