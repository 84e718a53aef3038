"""Shared RAG fixtures: one embedded PostgreSQL per session, started by the product's own code."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from vitrine.rag._chunking import KnowledgeBase, load_knowledge_base
from vitrine.rag._dataset import DatasetItem, load_dataset
from vitrine.rag._vectorstore import VectorStore


@pytest.fixture(scope="session")
def shop_kb() -> KnowledgeBase:
    from vitrine_shop.rag import KNOWLEDGE_DIR

    return load_knowledge_base(KNOWLEDGE_DIR)


@pytest.fixture(scope="session")
def shop_items() -> list[DatasetItem]:
    from vitrine_shop.rag import DATASET_PATH

    return load_dataset(DATASET_PATH)


@pytest.fixture(scope="session")
def vitrine_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A store root for the session; the embedding cache lives in it so later tests run warm."""
    root = tmp_path_factory.mktemp("rag-home")
    previous = {k: os.environ.get(k) for k in ("VITRINE_HOME", "VITRINE_CACHE_DIR")}
    os.environ["VITRINE_HOME"] = str(root)
    os.environ["VITRINE_CACHE_DIR"] = str(root / "cache")
    yield root
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def database(vitrine_home: Path) -> Iterator[str]:
    """A real PostgreSQL with pgvector through the same path `vitrine rag` uses."""
    os.environ.pop("VITRINE_DATABASE_URL", None)
    from vitrine.rag._database import database_url, release_embedded_servers

    yield database_url(vitrine_home)
    release_embedded_servers()


@pytest.fixture
def store(database: str) -> Iterator[VectorStore]:
    with VectorStore(database) as vector_store:
        yield vector_store


@pytest.fixture(scope="session")
def minilm(vitrine_home: Path) -> object:
    pytest.importorskip("sentence_transformers")
    from vitrine_shop.embeddings import MiniLMEmbedder

    return MiniLMEmbedder(vitrine_home / "cache")
