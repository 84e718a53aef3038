"""The falsification probe: one fact changed per reference answer must turn the gate red.

Real pipeline on the 43 judged items (the packaged embedding model, pgvector retrieval, the
calibrated thresholds); the wrong answers come through the generator seam
(:mod:`rag_fact_edits`), never through the evidence. Degenerate generators (empty answers,
every retrieved chunk pasted in) and an incomplete knowledge base must fail too.
"""

from __future__ import annotations

import ast
import inspect
import random
from collections.abc import Sequence

import pytest
import rag_fact_edits as edits
from rag_judging import failed_gates, judge

from vitrine._outcomes import ExitCode
from vitrine.rag._alignment import knowledge_entities
from vitrine.rag._chunking import KnowledgeBase
from vitrine.rag._dataset import DatasetItem, RagThresholds, load_thresholds
from vitrine.rag._generator import ExtractiveGenerator, GeneratedAnswer, Generator
from vitrine.rag._ingest import ingest
from vitrine.rag._metrics import Metric
from vitrine.rag._pipeline import EvalOutcome
from vitrine.rag._vectorstore import RetrievedChunk, VectorStore

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TABLE = "falsification_chunks"


@pytest.fixture(scope="module")
def thresholds() -> RagThresholds:
    from vitrine_shop.rag import THRESHOLDS_PATH

    return load_thresholds(THRESHOLDS_PATH)


@pytest.fixture(scope="module")
def judged(shop_items, thresholds) -> list[DatasetItem]:
    items = [i for i in shop_items if i.id in set(thresholds.held_out_ids)]
    assert len(items) == 43 and {i.set for i in items} == {"judged"}
    return items


@pytest.fixture(scope="module")
def falsify_store(database, shop_kb, minilm):
    with VectorStore(database) as store:
        ingest(shop_kb, minilm, store, TABLE)
        yield store


@pytest.fixture(scope="module")
def entities(shop_kb) -> frozenset[str]:
    return knowledge_entities(c.text for c in shop_kb.chunks)


def test_the_probe_shares_no_code_with_the_calibration_negatives():
    tree = ast.parse(inspect.getsource(edits))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "vitrine.rag._facts" not in imported
    assert "vitrine.rag._calibrate" not in imported
    assert not any(
        getattr(v, "__module__", "") == "vitrine.rag._facts" for v in vars(edits).values()
    )


@pytest.mark.parametrize("kind", edits.KINDS)
async def test_each_single_fact_edit_is_caught_and_fails_the_run(
    kind, judged, shop_kb, minilm, falsify_store, thresholds, entities
):
    result, _ = await edits.run_class(
        kind,
        judged,
        edits.Pages.of(shop_kb),
        embedder=minilm,
        store=falsify_store,
        table=TABLE,
        thresholds=thresholds,
        entities=entities,
    )
    assert result.edited >= 15, f"{kind} applied to only {result.edited} items"
    assert result.rate >= 0.9, f"{kind}: caught {result.caught}/{result.edited}, {result.missed}"
    assert result.exit_code == ExitCode.MEASURED_FAILURE


async def test_the_unedited_references_pass_and_carry_no_wrong_fact(
    judged, shop_kb, minilm, falsify_store, thresholds, entities
):
    result, outcome = await edits.run_class(
        None,
        judged,
        edits.Pages.of(shop_kb),
        embedder=minilm,
        store=falsify_store,
        table=TABLE,
        thresholds=thresholds,
        entities=entities,
    )
    assert result.edited == 0
    flagged = [r.item.id for r in outcome.results if r.scores[Metric.FACT_AGREEMENT].failed is True]
    assert flagged == []
    assert outcome.exit_code is ExitCode.PASS


class EmptyWhenWeak:
    """The extractive answers, but "" (not an abstention) whenever retrieval looks weak."""

    provenance = "offline-deterministic"
    generator_id = "empty-when-weak"

    def __init__(self, inner: ExtractiveGenerator, cut: float) -> None:
        self._inner, self._cut = inner, cut
        self.emptied = 0

    async def generate(self, question: str, retrieved: Sequence[RetrievedChunk]) -> GeneratedAnswer:
        if not retrieved or retrieved[0].similarity < self._cut:
            self.emptied += 1
            return GeneratedAnswer("", (), False)
        return await self._inner.generate(question, retrieved)


class Stuffing:
    """Every retrieved chunk pasted in as the answer, all cited, wherever the extractive
    generator would answer (it abstains where that one does, so only conciseness differs)."""

    provenance = "offline-deterministic"
    generator_id = "stuffing"

    def __init__(self, inner: ExtractiveGenerator) -> None:
        self._inner = inner

    async def generate(self, question: str, retrieved: Sequence[RetrievedChunk]) -> GeneratedAnswer:
        answer = await self._inner.generate(question, retrieved)
        if answer.abstained:
            return answer
        return GeneratedAnswer(
            "\n\n".join(c.text for c in retrieved), tuple(c.id for c in retrieved), False
        )


async def _judge(
    items: Sequence[DatasetItem],
    generator: Generator,
    *,
    minilm,
    store: VectorStore,
    thresholds: RagThresholds,
    entities: frozenset[str],
    table: str = TABLE,
) -> EvalOutcome:
    return await judge(
        items,
        generator,
        embedder=minilm,
        store=store,
        table=table,
        thresholds=thresholds,
        entities=entities,
    )


async def test_an_empty_answer_whenever_retrieval_is_weak_fails(
    judged, minilm, falsify_store, thresholds, entities
):
    inner = ExtractiveGenerator(minilm, thresholds.relevance_threshold)
    # Weak: below the median top similarity, so about half the questions get "".
    generator = EmptyWhenWeak(inner, 0.5)
    outcome = await _judge(
        judged,
        generator,
        minilm=minilm,
        store=falsify_store,
        thresholds=thresholds,
        entities=entities,
    )
    assert generator.emptied >= 5
    assert Metric.ABSTENTION in failed_gates(outcome) or Metric.COVERAGE in failed_gates(outcome)
    assert outcome.exit_code is ExitCode.MEASURED_FAILURE


async def test_an_always_empty_generator_answers_nothing_and_fails(
    judged, minilm, falsify_store, thresholds, entities
):
    generator = EmptyWhenWeak(ExtractiveGenerator(minilm, 0.0), cut=2.0)
    outcome = await _judge(
        judged,
        generator,
        minilm=minilm,
        store=falsify_store,
        thresholds=thresholds,
        entities=entities,
    )
    assert outcome.aggregates[Metric.COVERAGE].mean == 0.0
    assert outcome.aggregates[Metric.ABSTENTION].mean == 0.0
    assert outcome.exit_code is ExitCode.MEASURED_FAILURE


async def test_pasting_every_retrieved_chunk_fails(
    judged, minilm, falsify_store, thresholds, entities
):
    outcome = await _judge(
        judged,
        Stuffing(ExtractiveGenerator(minilm, thresholds.relevance_threshold)),
        minilm=minilm,
        store=falsify_store,
        thresholds=thresholds,
        entities=entities,
    )
    assert Metric.ANSWER_RELEVANCY in failed_gates(outcome)
    assert outcome.exit_code is ExitCode.MEASURED_FAILURE


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_a_knowledge_base_missing_30_percent_of_its_chunks_fails(
    seed, judged, shop_kb, minilm, falsify_store, thresholds, entities
):
    rng = random.Random(seed)
    kept = tuple(c for c in shop_kb.chunks if rng.random() >= 0.3)
    assert len(kept) <= 0.8 * len(shop_kb.chunks)
    table = f"falsify_missing_{seed}"
    ingest(KnowledgeBase(shop_kb.root, shop_kb.pages, kept), minilm, falsify_store, table)
    generator = ExtractiveGenerator(minilm, thresholds.relevance_threshold)
    outcome = await _judge(
        judged,
        generator,
        minilm=minilm,
        store=falsify_store,
        thresholds=thresholds,
        entities=entities,
        table=table,
    )
    indexed = outcome.aggregates[Metric.SOURCES_INDEXED]
    assert indexed.mean is not None and indexed.mean < 1.0
    assert Metric.SOURCES_INDEXED in failed_gates(outcome)
    assert outcome.exit_code is ExitCode.MEASURED_FAILURE
    falsify_store.drop(table)
