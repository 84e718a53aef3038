"""Threshold calibration on the calibration items, judged on the judged items, with the spread.

For every quantity a threshold is compared against, two per-item distributions are measured:

- *matched*: the quantity as the dataset intends it (a question against its own relevant
  chunks, its own reference answer, its own retrieval);
- *negative*: the same quantity made wrong. For retrieval and relevancy, the item paired with
  another item's material (a rotation of the answerable items by half their number, so no item
  meets its own topic); for relevancy also the item's own reference padded with that other
  item's passage, since an answer that pastes in everything retrieved is not a relevant one.
  For faithfulness and correctness also the item's own material with its facts falsified
  (:func:`vitrine.rag._facts.falsify`: numbers moved, negations flipped), because a wrong
  number on the right topic is the failure those metrics exist to catch.

Where the distributions are separated (the negative 95th percentile lies below the matched
5th percentile), the threshold is the midpoint of that gap; where they overlap, the midpoint of
the two means, marked ``overlap``. Thresholds are fitted on the *calibration* items only (the
dataset declares them: the shop's 53 items after the specification's 43; a dataset that
declares no sets is split at random). The document also reports, on the *judged* items,
whether the matched mean passes and the negative mean fails each fitted threshold, and repeats
fit-and-judge over random halvings of the calibration items to show how much the thresholds
and verdicts move. ``vitrine rag eval`` then judges the judged items by default, so no gate
judges an item its threshold was fitted on. The two abstention rates, the wrong-facts rate and
the indexed-sources check are outcomes of a binary decision with no such pair of
distributions; their bars are stated policies.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from vitrine.errors import InvalidArgumentError
from vitrine.rag._alignment import align, knowledge_entities
from vitrine.rag._chunking import KnowledgeBase, split_sentences
from vitrine.rag._dataset import THRESHOLDS_SCHEMA_VERSION, DatasetItem, declared_split
from vitrine.rag._embeddings import TextEmbedder
from vitrine.rag._facts import falsify
from vitrine.rag._metrics import (
    Metric,
    answer_claims,
    answer_correctness,
    answer_relevancy_from_vectors,
    claim_support,
    context_precision,
    context_recall_ids,
)
from vitrine.rag._pipeline import retrieve
from vitrine.rag._vectorstore import VectorStore

__all__ = [
    "ABSTENTION_POLICY",
    "COVERAGE_THRESHOLD",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "FACT_POLICY",
    "Gap",
    "calibrate",
    "gap_threshold",
    "split_items",
]

# At least three in four unanswerable questions declined and three in four answerable ones
# answered. Any bar above 0 fails a generator that never (or always) abstains; 0.75 leaves room
# for one miss in a held-out split of four unanswerable questions.
ABSTENTION_POLICY = 0.75
# At most one answer in twenty may state a fact its source contradicts: a mean over items would
# let a wrong fact in a quarter of the answers pass beside the right ones.
FACT_POLICY = 0.95
COVERAGE_THRESHOLD = 0.8
DEFAULT_SEED = 20260612
DEFAULT_RESAMPLES = 30

Vectors = npt.NDArray[np.float32]


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
        raise InvalidArgumentError(f"{name}: calibration needs both distributions to be non-empty")
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


def split_items(
    items: Sequence[DatasetItem], seed: int, *, dev_share: float = 0.5
) -> tuple[list[str], list[str]]:
    """(dev ids, held-out ids): answerable and unanswerable items each shuffled and halved."""
    rng = random.Random(seed)
    dev: list[str] = []
    held_out: list[str] = []
    for answerable in (True, False):
        ids = [i.id for i in items if i.has_relevant_chunk is answerable]
        rng.shuffle(ids)
        cut = round(len(ids) * dev_share)
        dev.extend(ids[:cut])
        held_out.extend(ids[cut:])
    return sorted(dev), sorted(held_out)


def _rotation(rows: Sequence[int]) -> dict[int, int]:
    """Partner per item: a rotation by half, so every item is paired with a far one."""
    shift = max(1, len(rows) // 2)
    return {row: rows[(n + shift) % len(rows)] for n, row in enumerate(rows)}


Measure = Callable[[int, int], float]


@dataclass(frozen=True, slots=True)
class _Quantity:
    """One calibrated quantity: matched value per item, and its negatives."""

    name: str
    matched: Callable[[int], Sequence[float]]
    negatives: Callable[[int, int], Sequence[float]]  # (item, partner) -> values

    def fit(self, rows: Sequence[int]) -> Gap:
        partner = _rotation(rows)
        matched = [v for r in rows for v in self.matched(r)]
        negative = [v for r in rows for v in self.negatives(r, partner[r])]
        return gap_threshold(self.name, matched, negative)

    def judge(self, rows: Sequence[int], threshold: float) -> dict[str, Any]:
        """Held-out verdicts: the matched mean should pass, the negative mean should fail."""
        gap = self.fit(rows)
        matched = float(np.mean(gap.matched))
        negative = float(np.mean(gap.mismatched))
        return {
            "matched_mean": round(matched, 4),
            "negative_mean": round(negative, 4),
            "matched_passes": matched >= threshold,
            "negative_fails": negative < threshold,
        }


class _Material:
    """Every vector and per-item text calibration needs, computed once for all splits."""

    def __init__(
        self,
        kb: KnowledgeBase,
        answerable: Sequence[DatasetItem],
        embedder: TextEmbedder,
        retrieved: Sequence[Sequence[str]],
    ) -> None:
        chunks = kb.by_id()
        self.entities = knowledge_entities(c.text for c in kb.chunks)
        self.items = answerable
        self.retrieved = retrieved
        ids = list(chunks)
        row = {cid: n for n, cid in enumerate(ids)}
        self.chunk_vecs = embedder.embed([chunks[c].embedding_text for c in ids])
        self.question_vecs = embedder.embed([i.question for i in answerable])
        self.wanted_rows = [{row[c] for c in i.relevant_chunk_ids} for i in answerable]
        self.references = [answer_claims(i.reference_answer) for i in answerable]
        self.falsified = [[falsify(s) for s in sentences] for sentences in self.references]
        self.contexts = [
            [s for c in i.relevant_chunk_ids for s in split_sentences(chunks[c].text)]
            for i in answerable
        ]
        # The ideal extractive answer: the relevant chunks' sentences the reference restates,
        # in reading order (not every sentence of the chunk: an answer is not the page).
        self.ideal_texts = [
            " ".join(
                s
                for s in context
                if any(s in align(claim, context, self.entities).sentences for claim in refs)
            )
            or " ".join(context)
            for context, refs in zip(self.contexts, self.references, strict=True)
        ]
        self.ref_vecs = [embedder.embed(r) for r in self.references]
        self.fals_vecs = [embedder.embed(r) for r in self.falsified]
        self.ctx_vecs = [embedder.embed(c) for c in self.contexts]
        whole = embedder.embed(
            [
                *(i.reference_answer for i in answerable),
                *self.ideal_texts,
                *(falsify(t) for t in self.ideal_texts),
            ]
        )
        n = len(answerable)
        self.reference_vecs, self.ideal_vecs, self.fals_ideal_vecs = (
            whole[:n],
            whole[n : 2 * n],
            whole[2 * n :],
        )

    def question_chunk(self, n: int) -> list[float]:
        sims = self.chunk_vecs @ self.question_vecs[n]
        return [float(sims[r]) for r in self.wanted_rows[n]]

    def question_other_chunks(self, n: int, _partner: int) -> list[float]:
        sims = self.chunk_vecs @ self.question_vecs[n]
        return [float(sims[r]) for r in range(len(sims)) if r not in self.wanted_rows[n]]

    def claim_cosine(self, n: int, ctx: int) -> list[float]:
        return [float(np.max(self.ctx_vecs[ctx] @ v)) for v in self.ref_vecs[n]]

    def faithfulness(self, claims: int, ctx: int, cosine: float, *, falsified: bool) -> float:
        support = claim_support(
            self.falsified[claims] if falsified else self.references[claims],
            self.fals_vecs[claims] if falsified else self.ref_vecs[claims],
            self.contexts[ctx],
            self.ctx_vecs[ctx],
            cosine_threshold=cosine,
            coverage_threshold=COVERAGE_THRESHOLD,
            question=self.items[claims].question,
            entities=self.entities,
        )
        return sum(s.supported for s in support) / len(support)

    def correctness(self, n: int, answer: int, *, falsified: bool) -> float:
        text = falsify(self.ideal_texts[answer]) if falsified else self.ideal_texts[answer]
        vector = self.fals_ideal_vecs[answer] if falsified else self.ideal_vecs[answer]
        value, _ = answer_correctness(
            text,
            self.items[n].reference_answer,
            float(vector @ self.reference_vecs[n]),
            question=self.items[n].question,
            entities=self.entities,
        )
        return value

    def is_fact_bearing(self, n: int) -> bool:
        return self.falsified[n] != self.references[n]


def _quantities(
    material: _Material, claim_cosine: Callable[[], float], relevance: Callable[[], float]
) -> dict[str, _Quantity]:
    m = material

    def faithful_negatives(n: int, partner: int) -> list[float]:
        cosine = claim_cosine()
        values = [m.faithfulness(n, partner, cosine, falsified=False)]
        if m.is_fact_bearing(n):
            values.append(m.faithfulness(n, n, cosine, falsified=True))
        return values

    def correct_negatives(n: int, partner: int) -> list[float]:
        values = [m.correctness(n, partner, falsified=False)]
        if m.is_fact_bearing(n):
            values.append(m.correctness(n, n, falsified=True))
        return values

    def precision(n: int, query: int) -> float:
        wanted = set(m.items[n].relevant_chunk_ids)
        return context_precision([c in wanted for c in m.retrieved[query]])

    def recall(n: int, query: int) -> float:
        return context_recall_ids(m.retrieved[query], m.items[n].relevant_chunk_ids)

    def relevancy(n: int, answer: int) -> float:
        return answer_relevancy_from_vectors(
            m.question_vecs[n], m.ref_vecs[answer], on_topic=relevance()
        )

    def padded(n: int, partner: int) -> float:
        """The item's own reference padded with another topic's passage: an answer that
        pastes in more than it was asked (the conciseness the metric must see)."""
        return answer_relevancy_from_vectors(
            m.question_vecs[n],
            np.vstack([m.ref_vecs[n], m.ctx_vecs[partner]]),
            on_topic=relevance(),
        )

    def paired(fn: Measure, name: str) -> _Quantity:
        return _Quantity(name, lambda n: [fn(n, n)], lambda n, p: [fn(n, p)])

    return {
        "relevance_threshold": _Quantity(
            "question-chunk cosine", m.question_chunk, m.question_other_chunks
        ),
        "claim_cosine_threshold": _Quantity(
            "claim-sentence cosine",
            lambda n: m.claim_cosine(n, n),
            m.claim_cosine,
        ),
        Metric.FAITHFULNESS.value: _Quantity(
            "faithfulness",
            lambda n: [m.faithfulness(n, n, claim_cosine(), falsified=False)],
            faithful_negatives,
        ),
        Metric.ANSWER_RELEVANCY.value: _Quantity(
            "answer relevancy",
            lambda n: [relevancy(n, n)],
            lambda n, p: [relevancy(n, p), padded(n, p)],
        ),
        Metric.ANSWER_CORRECTNESS.value: _Quantity(
            "answer correctness",
            lambda n: [m.correctness(n, n, falsified=False)],
            correct_negatives,
        ),
        Metric.CONTEXT_PRECISION.value: paired(precision, "context precision"),
        Metric.CONTEXT_RECALL.value: paired(recall, "context recall"),
    }


_FIRST = ("claim_cosine_threshold", "relevance_threshold")


def _fit(
    quantities: dict[str, _Quantity], rows: Sequence[int], cosine: list[float]
) -> dict[str, Gap]:
    """Fit every quantity on ``rows``; the claim cosine and the relevance cut-off first, since
    faithfulness and answer relevancy use them (``cosine`` holds the two, in that order)."""
    first = {name: quantities[name].fit(rows) for name in _FIRST}
    cosine[:] = [first[name].threshold for name in _FIRST]
    return {name: first.get(name) or q.fit(rows) for name, q in quantities.items()}


def calibrate(
    kb: KnowledgeBase,
    items: Sequence[DatasetItem],
    *,
    embedder: TextEmbedder,
    store: VectorStore,
    table: str,
    top_k: int,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Fit on a dev split, judge on the held-out split, resample; return the thresholds
    document (not yet written)."""
    answerable = [i for i in items if i.has_relevant_chunk]
    if len(answerable) < 8:
        raise InvalidArgumentError(
            f"calibration needs at least 8 answerable items to split and pair them, got "
            f"{len(answerable)}"
        )
    progress(f"retrieving top-{top_k} for every question")
    retrieved = [
        [c.id for c in r.chunks]
        for r in retrieve([i.question for i in answerable], embedder, store, table, top_k)
    ]
    progress("embedding questions, chunks, references and falsified references")
    material = _Material(kb, answerable, embedder, retrieved)
    cosine = [0.0, 0.0]
    quantities = _quantities(material, lambda: cosine[0], lambda: cosine[1])
    index = {item.id: n for n, item in enumerate(answerable)}

    def rows_of(ids: Sequence[str]) -> list[int]:
        return [index[i] for i in ids if i in index]

    declared = declared_split(list(items))
    dev, held_out = declared if declared is not None else split_items(items, seed)
    calibration = [i for i in items if i.id in set(dev)]
    progress(
        f"fitting on {len(dev)} calibration items, judging {len(held_out)} "
        + ("judged items (the split the dataset declares)" if declared else "held-out items")
    )
    gaps = _fit(quantities, rows_of(dev), cosine)
    judged = {
        name: quantities[name].judge(rows_of(held_out), g.threshold) for name, g in gaps.items()
    }

    progress(f"{resamples} resampled splits")
    spread: dict[str, list[float]] = {name: [] for name in quantities}
    passes: dict[str, int] = dict.fromkeys(quantities, 0)
    catches: dict[str, int] = dict.fromkeys(quantities, 0)
    for r in range(resamples):
        # Resampled within the calibration items only: the judged items never fit a threshold.
        dev_r, held_r = split_items(calibration, seed + 1 + r)
        fitted = _fit(quantities, rows_of(dev_r), cosine)
        for name, gap in fitted.items():
            verdict = quantities[name].judge(rows_of(held_r), gap.threshold)
            spread[name].append(gap.threshold)
            passes[name] += verdict["matched_passes"]
            catches[name] += verdict["negative_fails"]
    cosine[:] = [gaps[name].threshold for name in _FIRST]

    metric_names = [m.value for m in Metric if m.value in gaps]
    metrics = {name: round(gaps[name].threshold, 4) for name in metric_names}
    metrics[Metric.ABSTENTION.value] = ABSTENTION_POLICY
    metrics[Metric.COVERAGE.value] = ABSTENTION_POLICY
    metrics[Metric.FACT_AGREEMENT.value] = FACT_POLICY
    metrics[Metric.SOURCES_INDEXED.value] = 1.0
    policy = {
        "rule": f"policy: at least {ABSTENTION_POLICY:.0%} of the items of its kind",
    }
    policies = {
        Metric.ABSTENTION.value: policy,
        Metric.COVERAGE.value: policy,
        Metric.FACT_AGREEMENT.value: {
            "rule": f"policy: at least {FACT_POLICY:.0%} of the answers state no fact that "
            "contradicts the sentence they restate or the reference answer"
        },
        Metric.SOURCES_INDEXED.value: {
            "rule": "policy: every chunk a reference answer rests on is in the searched table"
        },
    }
    return {
        "schema_version": THRESHOLDS_SCHEMA_VERSION,
        "calibrated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "embedding_model": embedder.model_id,
        "top_k": top_k,
        "knowledge_base_hash": kb.content_hash,
        "items": {"answerable": len(answerable), "total": len(items)},
        "split": {
            "seed": seed,
            "declared_by_dataset": declared is not None,
            "dev": dev,
            "held_out": held_out,
        },
        "retrieval": {
            "relevance_threshold": round(gaps["relevance_threshold"].threshold, 4),
            "claim_cosine_threshold": round(gaps["claim_cosine_threshold"].threshold, 4),
        },
        "metrics": metrics,
        "evidence": {
            **{name: {**g.evidence(), "held_out": judged[name]} for name, g in gaps.items()},
            **policies,
        },
        "resamples": {
            "splits": resamples,
            "seeds": f"{seed + 1}..{seed + resamples}",
            **{
                name: {
                    "threshold_min": round(min(values), 4),
                    "threshold_median": round(float(np.median(values)), 4),
                    "threshold_max": round(max(values), 4),
                    "held_out_matched_passes": passes[name],
                    "held_out_negative_fails": catches[name],
                }
                for name, values in spread.items()
            },
        },
    }
