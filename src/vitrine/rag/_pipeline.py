"""The per-item pipeline and the whole evaluation: retrieve, answer, score, aggregate, gate.

Per item: embed the question, take the top-K chunks by pgvector cosine distance, generate a
grounded answer with citations, then score it with one scorer (one form per metric). Questions
are embedded in one batch; retrieval is timed per question so the benchmark can report
latency percentiles; generation and scoring run with bounded concurrency because live models
are called there.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from vitrine import tracing
from vitrine._outcomes import (
    ExitCode,
    MeasurementState,
    Observation,
    aggregate_exit_codes,
    exit_code_for_gate,
)
from vitrine.rag._dataset import DatasetItem, RagThresholds
from vitrine.rag._embeddings import TextEmbedder
from vitrine.rag._generator import GeneratedAnswer, Generator
from vitrine.rag._metrics import (
    Metric,
    MetricAggregate,
    Scorer,
    ScoringInput,
    aggregate,
    sources_indexed,
)
from vitrine.rag._vectorstore import RetrievedChunk, VectorStore
from vitrine.tracing._observations import record_observation

__all__ = [
    "DEFAULT_TOP_K",
    "EvalOutcome",
    "ItemResult",
    "Retrieval",
    "evaluate",
    "gate_exit_code",
    "retrieve",
]

DEFAULT_TOP_K = 4


@dataclass(frozen=True, slots=True)
class Retrieval:
    chunks: tuple[RetrievedChunk, ...]
    latency_s: float


@dataclass(frozen=True, slots=True)
class ItemResult:
    item: DatasetItem
    retrieval: Retrieval
    answer: GeneratedAnswer
    scores: dict[Metric, Observation]


@dataclass(frozen=True, slots=True)
class EvalOutcome:
    results: tuple[ItemResult, ...]
    aggregates: dict[Metric, MetricAggregate]
    exit_code: ExitCode
    top_k: int
    wall_s: float


def retrieve(
    questions: Sequence[str],
    embedder: TextEmbedder,
    store: VectorStore,
    table: str,
    top_k: int,
    *,
    exact: bool = False,
    ef_search: int | None = None,
) -> list[Retrieval]:
    vectors = embedder.embed(list(questions))
    out = []
    for vector in vectors:
        started = time.perf_counter()
        chunks = store.search(table, vector, top_k, exact=exact, ef_search=ef_search)
        out.append(Retrieval(tuple(chunks), time.perf_counter() - started))
    return out


async def evaluate(
    items: Sequence[DatasetItem],
    *,
    embedder: TextEmbedder,
    store: VectorStore,
    table: str,
    top_k: int,
    generator: Generator,
    scorer: Scorer,
    thresholds: RagThresholds,
    concurrency: int = 4,
    exact: bool = False,
    ef_search: int | None = None,
    progress: Callable[[int, int, str], None] = lambda done, total, event: None,
) -> EvalOutcome:
    """Answer and score ``items``.

    ``progress(done, total, event)`` is called when an item is answered (``"<id> answered"``)
    and when it is scored (``"<id> scored"``, ``done`` counting scored items), so a run whose
    model takes minutes per call still shows it is moving.
    """
    started = time.perf_counter()
    retrievals = retrieve(
        [i.question for i in items], embedder, store, table, top_k, exact=exact, ef_search=ef_search
    )
    indexed = frozenset(store.ids(table))
    gate = asyncio.Semaphore(concurrency)
    done = 0

    async def one(item: DatasetItem, retrieval: Retrieval) -> ItemResult:
        nonlocal done
        async with gate:
            with tracing.item_span("query", item.id):
                answer = await generator.generate(item.question, retrieval.chunks)
                progress(done, len(items), f"{item.id} answered")
                scoring = ScoringInput(
                    item.id,
                    item.question,
                    item.reference_answer,
                    item.relevant_chunk_ids,
                    item.has_relevant_chunk,
                    retrieval.chunks,
                    answer,
                )
                scores = await scorer.score(scoring)
                scores.setdefault(Metric.SOURCES_INDEXED, sources_indexed(scoring, indexed))
                _record_scores(scores)
        done += 1
        progress(done, len(items), f"{item.id} scored")
        return ItemResult(item, retrieval, answer, scores)

    results = await asyncio.gather(
        *(one(item, r) for item, r in zip(items, retrievals, strict=True))
    )
    aggregates = {
        metric: aggregate(metric, [r.scores[metric] for r in results], thresholds.metrics[metric])
        for metric in Metric
    }
    # On the span around the evaluation (the command's session): the run's verdict per metric.
    _record_scores({metric: a.gate for metric, a in aggregates.items()}, suffix=" mean")
    code = gate_exit_code(a.gate for a in aggregates.values())
    return EvalOutcome(tuple(results), aggregates, code, top_k, time.perf_counter() - started)


def _record_scores(scores: Mapping[Metric, Observation], suffix: str = "") -> None:
    """Each metric's observation as an evaluation of the open span, its value as the score
    (not measured or not applicable: no score)."""
    for metric, observation in scores.items():
        record_observation(f"{metric.value}{suffix}", observation, value_as_score=True)


def gate_exit_code(gates: Iterable[Observation]) -> ExitCode:
    """The run's exit code from its metric gates.

    A gate that applied to no item (every answer abstained, so no faithfulness exists) proves
    nothing and may not pass: alone it makes the run not measured. Next to a measured failure
    it adds nothing, because the failure is already the verdict: a generator that always
    abstains fails its answered-when-answerable rate and exits 1, not 3.
    """
    listed = list(gates)
    failed = any(g.is_measured and g.failed for g in listed)
    return aggregate_exit_codes(
        exit_code_for_gate(g)
        for g in listed
        if not (failed and g.state is MeasurementState.NOT_APPLICABLE)
    )
