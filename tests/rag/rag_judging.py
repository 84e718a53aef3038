"""One way for the RAG tests to judge a generator: the calibrated scorer over the top four
chunks, as `vitrine rag eval` runs it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vitrine.rag._dataset import DatasetItem, RagThresholds
from vitrine.rag._embeddings import TextEmbedder
from vitrine.rag._generator import Generator
from vitrine.rag._metrics import HeuristicScorer, Metric
from vitrine.rag._pipeline import EvalOutcome, evaluate
from vitrine.rag._vectorstore import VectorStore


async def judge(
    items: Sequence[DatasetItem],
    generator: Generator,
    *,
    embedder: TextEmbedder,
    store: VectorStore,
    table: str,
    thresholds: RagThresholds,
    **scoring: Any,
) -> EvalOutcome:
    """``scoring`` goes to the calibrated scorer (``entities=``, ``structural_faithfulness=``)."""
    scorer = HeuristicScorer.calibrated(embedder, thresholds, **scoring)
    return await evaluate(
        items,
        embedder=embedder,
        store=store,
        table=table,
        top_k=4,
        generator=generator,
        scorer=scorer,
        thresholds=thresholds,
    )


def failed_gates(outcome: EvalOutcome) -> set[Metric]:
    return {m for m, a in outcome.aggregates.items() if a.gate.is_measured and a.gate.failed}
