"""Retrieval-augmented generation: ingestion into pgvector, retrieval and answer metrics.

``vitrine rag`` drives it; a suite declares its knowledge base and generator as a
:class:`RagComponent`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine.rag._component import (
        RagComponent as RagComponent,
        extractive_generator as extractive_generator,
    )
    from vitrine.rag._embeddings import (
        TextEmbedder as TextEmbedder,
    )

__getattr__, __dir__ = lazy_exports(__name__)
