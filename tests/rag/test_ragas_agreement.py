"""vitrine's non-LLM metrics against RAGAS's on the same inputs (optional extra ``ragas``).

Agreement is checked where the definitions coincide, and a known difference is named:

- context precision: vitrine reports the rank-weighted form (mean of precision@k over the ranks
  holding a relevant chunk), which is RAGAS's ``NonLLMContextPrecisionWithReference``. RAGAS's
  ID-based precision (``IDBasedContextPrecision`` in later releases) is relevant/retrieved and
  ignores rank; vitrine keeps the rank because the generator reads the top chunks first, and
  its evidence (``relevant_at_rank``) lets anyone recompute the rank-free figure.
- context recall: share of the reference chunks retrieved, RAGAS's ``NonLLMContextRecall``.
  RAGAS matches chunks by string similarity (0.5 threshold), vitrine by id; distinct chunk texts
  make the two the same.
- answer correctness: its similarity part is RAGAS's ``SemanticSimilarity`` (cosine of the
  answer and reference embeddings) with the same embedder. RAGAS has no non-LLM counterpart of
  the fact part (its ``FactualCorrectness`` asks a model), so that part is pinned by vitrine's
  own tests and probes instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from vitrine.rag._ingest import ingest
from vitrine.rag._metrics import answer_correctness, context_precision, context_recall_ids
from vitrine.rag._pipeline import retrieve

ragas = pytest.importorskip("ragas", reason="the optional 'ragas' extra is not installed")
pytest.importorskip("rapidfuzz", reason="RAGAS's non-LLM metrics need rapidfuzz")

from ragas.dataset_schema import SingleTurnSample  # noqa: E402
from ragas.embeddings.base import BaseRagasEmbeddings  # noqa: E402
from ragas.metrics import (  # noqa: E402
    NonLLMContextPrecisionWithReference,
    NonLLMContextRecall,
    SemanticSimilarity,
)
from ragas.run_config import RunConfig  # noqa: E402


class SameEmbedder(BaseRagasEmbeddings):
    """RAGAS's embedding interface over vitrine's embedder, so both compare the same vectors."""

    def __init__(self, embedder: object) -> None:
        super().__init__()
        self._embedder = embedder
        self.run_config = RunConfig()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self._embedder.embed(list(texts))]  # type: ignore[attr-defined]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


def test_precision_recall_and_similarity_agree_with_ragas(shop_kb, shop_items, minilm, store):
    ingest(shop_kb, minilm, store, "t_ragas")
    items = [i for i in shop_items if i.has_relevant_chunk]
    chunks = shop_kb.by_id()
    retrievals = retrieve([i.question for i in items], minilm, store, "t_ragas", 4)
    precision, recall = NonLLMContextPrecisionWithReference(), NonLLMContextRecall()
    similarity = SemanticSimilarity(embeddings=SameEmbedder(minilm))
    differing: list[str] = []
    for item, retrieval in zip(items, retrievals, strict=True):
        retrieved = [c.id for c in retrieval.chunks]
        sample = SingleTurnSample(
            user_input=item.question,
            retrieved_contexts=[c.text for c in retrieval.chunks],
            reference_contexts=[chunks[c].text for c in item.relevant_chunk_ids],
            response=" ".join(c.text for c in retrieval.chunks[:1]),
            reference=item.reference_answer,
        )
        ours = (
            context_precision([c in item.relevant_chunk_ids for c in retrieved]),
            context_recall_ids(retrieved, item.relevant_chunk_ids),
        )
        theirs = (
            asyncio.run(precision.single_turn_ascore(sample)),
            asyncio.run(recall.single_turn_ascore(sample)),
        )
        if not np.allclose(ours, theirs, atol=1e-6):
            differing.append(f"{item.id}: vitrine {ours} vs RAGAS {theirs}")
        vectors = minilm.embed([sample.response, item.reference_answer])
        _, evidence = answer_correctness(
            sample.response, item.reference_answer, float(vectors[0] @ vectors[1])
        )
        ragas_similarity = asyncio.run(similarity.single_turn_ascore(sample))
        assert evidence["similarity"] == pytest.approx(max(0.0, ragas_similarity), abs=1e-3)
    # Overlapping chunks of one long section can look alike to RAGAS's string matching; any
    # such item is listed by name, and the bulk must agree exactly.
    assert len(differing) <= len(items) // 20, differing
