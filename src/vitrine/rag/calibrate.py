"""Threshold calibration from the gap between matched and mismatched score distributions.

For every quantity a threshold is compared against, two per-item distributions are measured on
the ground-truth dataset:

- *matched*: the quantity as the dataset intends it (a question against its own relevant
  chunks, its own reference answer, its own retrieval);
- *mismatched*: the same quantity with the item paired to another item's material (a fixed
  rotation of the answerable items by half their number, so no item meets its own topic).

Where the distributions are separated (the mismatched 95th percentile lies below the matched
5th percentile), the threshold is the midpoint of that gap. Where they overlap, it is the
midpoint of the two means and the evidence says ``overlap``. The abstention accuracy is a rate
of a binary outcome with no such pair of distributions, so its threshold is a stated policy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from vitrine.rag.chunking import KnowledgeBase, split_sentences
from vitrine.rag.dataset import THRESHOLDS_SCHEMA_VERSION, DatasetItem
from vitrine.rag.embeddings import TextEmbedder
from vitrine.rag.metrics import (
    Metric,
    answer_relevancy_from_vectors,
    claim_support,
    context_precision,
    context_recall_ids,
)
from vitrine.rag.pipeline import retrieve
from vitrine.rag.vectorstore import VectorStore

__all__ = ["ABSTENTION_POLICY", "COVERAGE_THRESHOLD", "Gap", "calibrate", "gap_threshold"]

ABSTENTION_POLICY = 0.8
COVERAGE_THRESHOLD = 0.8


@dataclass(frozen=True, slots=True)
class Gap:
    """Two distributions and the threshold placed between them."""

    name: str
    matched: tuple[float, ...]
    mismatched: tuple[float, ...]
    threshold: float
    rule: str  # "gap midpoint" or "overlap: midpoint of means"

    def evidence(self) -> dict[str, Any]:
        m, x = np.asarray(self.matched), np.asarray(self.mismatched)
        return {
            "matched": {"n": int(m.size), "p5": _q(m, 0.05), "mean": float(m.mean())},
            "mismatched": {"n": int(x.size), "p95": _q(x, 0.95), "mean": float(x.mean())},
            "threshold": round(self.threshold, 4),
            "rule": self.rule,
        }


def _q(values: np.ndarray[Any, Any], q: float) -> float:
    return float(np.quantile(values, q))


def gap_threshold(name: str, matched: Sequence[float], mismatched: Sequence[float]) -> Gap:
    if not matched or not mismatched:
        raise ValueError(f"{name}: calibration needs both distributions to be non-empty")
    m, x = np.asarray(matched, dtype=float), np.asarray(mismatched, dtype=float)
    low_matched, high_mismatched = _q(m, 0.05), _q(x, 0.95)
    if high_mismatched < low_matched:
        return Gap(
            name,
            tuple(matched),
            tuple(mismatched),
            (high_mismatched + low_matched) / 2,
            "gap midpoint (mismatched p95, matched p5)",
        )
    return Gap(
        name,
        tuple(matched),
        tuple(mismatched),
        float((m.mean() + x.mean()) / 2),
        "overlap: midpoint of means",
    )


def _rotation(n: int) -> list[int]:
    """Partner index per item: a rotation by half, so every item is paired with a far one."""
    shift = max(1, n // 2)
    return [(i + shift) % n for i in range(n)]


def calibrate(
    kb: KnowledgeBase,
    items: Sequence[DatasetItem],
    *,
    embedder: TextEmbedder,
    store: VectorStore,
    table: str,
    top_k: int,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Measure the distributions and return the thresholds document (not yet written)."""
    answerable = [i for i in items if i.has_relevant_chunk]
    if len(answerable) < 2:
        raise ValueError("calibration needs at least two answerable items to pair them")
    chunks = kb.by_id()
    partner = _rotation(len(answerable))

    progress("embedding questions and chunks")
    ids = list(chunks)
    chunk_vecs = embedder.embed([chunks[c].embedding_text for c in ids])
    question_vecs = embedder.embed([i.question for i in answerable])
    row = {cid: n for n, cid in enumerate(ids)}
    relevant_sims: list[float] = []
    irrelevant_sims: list[float] = []
    for q, item in enumerate(answerable):
        sims = chunk_vecs @ question_vecs[q]
        wanted = {row[c] for c in item.relevant_chunk_ids}
        relevant_sims.extend(float(sims[r]) for r in wanted)
        irrelevant_sims.extend(float(sims[r]) for r in range(len(ids)) if r not in wanted)
    relevance = gap_threshold("question-chunk cosine", relevant_sims, irrelevant_sims)

    progress("embedding reference and chunk sentences")
    references = [split_sentences(i.reference_answer) for i in answerable]
    contexts = [
        [s for c in i.relevant_chunk_ids for s in split_sentences(chunks[c].text)]
        for i in answerable
    ]
    ref_vecs = [embedder.embed(r) for r in references]
    ctx_vecs = [embedder.embed(c) for c in contexts]
    claim_matched = [
        float(np.max(ctx_vecs[n] @ v)) for n in range(len(answerable)) for v in ref_vecs[n]
    ]
    claim_mismatched = [
        float(np.max(ctx_vecs[partner[n]] @ v)) for n in range(len(answerable)) for v in ref_vecs[n]
    ]
    claim = gap_threshold("claim-sentence cosine", claim_matched, claim_mismatched)

    def faithfulness(n: int, ctx: int) -> float:
        support = claim_support(
            references[n],
            ref_vecs[n],
            contexts[ctx],
            ctx_vecs[ctx],
            cosine_threshold=claim.threshold,
            coverage_threshold=COVERAGE_THRESHOLD,
        )
        return sum(s.supported for s in support) / len(support)

    def relevancy(n: int, answer: int) -> float:
        return answer_relevancy_from_vectors(question_vecs[n], ref_vecs[answer])

    progress(f"retrieving top-{top_k} for every question")
    retrieved = [
        [c.id for c in r.chunks]
        for r in retrieve([i.question for i in answerable], embedder, store, table, top_k)
    ]

    def precision(n: int, query: int) -> float:
        wanted = set(answerable[n].relevant_chunk_ids)
        return context_precision([c in wanted for c in retrieved[query]])

    def recall(n: int, query: int) -> float:
        return context_recall_ids(retrieved[query], answerable[n].relevant_chunk_ids)

    measures: dict[Metric, Callable[[int, int], float]] = {
        Metric.FAITHFULNESS: faithfulness,
        Metric.ANSWER_RELEVANCY: relevancy,
        Metric.CONTEXT_PRECISION: precision,
        Metric.CONTEXT_RECALL: recall,
    }
    gaps = {
        metric: gap_threshold(
            metric.value,
            [fn(n, n) for n in range(len(answerable))],
            [fn(n, partner[n]) for n in range(len(answerable))],
        )
        for metric, fn in measures.items()
    }
    metrics = {m.value: round(g.threshold, 4) for m, g in gaps.items()}
    metrics[Metric.ABSTENTION.value] = ABSTENTION_POLICY
    return {
        "schema_version": THRESHOLDS_SCHEMA_VERSION,
        "calibrated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "embedding_model": embedder.model_id,
        "top_k": top_k,
        "knowledge_base_hash": kb.content_hash,
        "items": {"answerable": len(answerable), "total": len(items)},
        "retrieval": {
            "relevance_threshold": round(relevance.threshold, 4),
            "claim_cosine_threshold": round(claim.threshold, 4),
        },
        "metrics": metrics,
        "evidence": {
            "relevance_threshold": relevance.evidence(),
            "claim_cosine_threshold": claim.evidence(),
            **{m.value: g.evidence() for m, g in gaps.items()},
            Metric.ABSTENTION.value: {
                "rule": "policy: abstain on unanswerable and answer answerable questions in at "
                f"least {ABSTENTION_POLICY:.0%} of items"
            },
        },
    }
