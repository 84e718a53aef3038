"""Each metric pinned against values worked out by hand on small fixtures."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from vitrine._outcomes import ExitCode, MeasurementState, Observation
from vitrine.providers._base import ChatCompletion, ChatRequest, Provenance
from vitrine.rag._generator import GeneratedAnswer
from vitrine.rag._metrics import (
    HeuristicScorer,
    LlmScorer,
    Method,
    Metric,
    ScoringInput,
    aggregate,
    answer_relevancy_from_vectors,
    bootstrap_interval,
    claim_support,
    context_precision,
    context_recall_ids,
)
from vitrine.rag._pipeline import gate_exit_code
from vitrine.rag._vectorstore import RetrievedChunk

THRESHOLDS = {m: 0.5 for m in Metric}


class TableEmbedder:
    """Vectors written out by hand per text; unknown texts are orthogonal to everything."""

    def __init__(self, table: dict[str, Sequence[float]]) -> None:
        self._table = table

    @property
    def model_id(self) -> str:
        return "hand-written"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = [self._table.get(t, (0.0, 0.0, 0.0)) for t in texts]
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(texts), 3)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1.0, norms)


def chunk(cid: str, text: str, rank: int) -> RetrievedChunk:
    return RetrievedChunk(cid, "page.md", "Page > Section", text, 0.9, rank)


def test_context_precision_is_the_mean_of_precision_at_each_relevant_rank():
    # relevant at ranks 1 and 3: (1/1 + 2/3) / 2 = 0.8333...
    assert context_precision([True, False, True, False]) == pytest.approx(5 / 6)
    # relevant at ranks 2 and 4: (1/2 + 2/4) / 2 = 0.5
    assert context_precision([False, True, False, True]) == pytest.approx(0.5)
    assert context_precision([True, True]) == 1.0
    assert context_precision([False, False, False]) == 0.0


def test_context_recall_is_the_share_of_relevant_ids_retrieved():
    assert context_recall_ids(["a", "b", "c"], ["a", "d"]) == 0.5
    assert context_recall_ids(["d", "a"], ["a", "d"]) == 1.0
    with pytest.raises(ValueError, match="does not apply"):
        context_recall_ids(["a"], [])


def test_claim_is_supported_by_cosine_or_by_word_coverage():
    claims = ["first claim", "Delivery costs CHF 7.90.", "made up"]
    claim_vecs = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    context = ["Standard delivery costs CHF 7.90 in Switzerland."]
    context_vecs = np.array([[0.8, 0.0, 0.6]], dtype=np.float32)
    result = claim_support(
        claims, claim_vecs, context, context_vecs, cosine_threshold=0.7, coverage_threshold=0.8
    )
    # claim 1: cosine 0.8 >= 0.7; claim 2: cosine 0 but {delivery, costs, chf, 7.90} all in
    # the context; claim 3: cosine 0.6 and no word in common
    assert [r.supported for r in result] == [True, True, False]
    assert [round(r.max_cosine, 3) for r in result] == [0.8, 0.0, 0.6]
    assert result[1].coverage == 1.0


def test_answer_relevancy_is_the_mean_cosine_with_negatives_as_zero():
    question = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    others = np.array([[0.6, 0.8, 0.0], [-1.0, 0.0, 0.0]], dtype=np.float32)
    assert answer_relevancy_from_vectors(question, others) == pytest.approx(0.3)


def scoring_input(answer: GeneratedAnswer, *, answerable: bool = True) -> ScoringInput:
    return ScoringInput(
        "q1",
        "How much is delivery?",
        "Delivery costs CHF 7.90.",
        ("p#a.0", "p#c.0") if answerable else (),
        answerable,
        (chunk("p#a.0", "Delivery costs CHF 7.90.", 1), chunk("p#b.0", "Unrelated text.", 2)),
        answer,
    )


EMBEDDER = TableEmbedder(
    {
        "How much is delivery?": (1, 0, 0),
        "Delivery costs CHF 7.90.": (1, 0, 0),
        "Unrelated text.": (0, 0, 1),
        "The moon is cheese.": (0.6, 0.8, 0),
    }
)


async def test_heuristic_scorer_scores_a_half_faithful_answer_by_hand():
    scorer = HeuristicScorer(EMBEDDER, THRESHOLDS, claim_cosine_threshold=0.7)
    answer = GeneratedAnswer("Delivery costs CHF 7.90. The moon is cheese.", ("p#a.0",), False)
    scores = await scorer.score(scoring_input(answer))
    # claims: cos 1.0 (supported) and cos 0.6 with no shared content word (unsupported)
    assert scores[Metric.FAITHFULNESS].value == 0.5
    # question vs the two sentences: (1.0 + 0.6) / 2
    assert scores[Metric.ANSWER_RELEVANCY].value == pytest.approx(0.8)
    # ranks: relevant, not relevant -> precision 1.0; recall: 1 of 2 relevant ids retrieved
    assert scores[Metric.CONTEXT_PRECISION].value == 1.0
    assert scores[Metric.CONTEXT_RECALL].value == 0.5
    assert scores[Metric.CONTEXT_RECALL].evidence["missing"] == ["p#c.0"]
    assert scores[Metric.COVERAGE].value == 1.0  # answered an answerable question
    assert scores[Metric.ABSTENTION].state is MeasurementState.NOT_APPLICABLE
    # every form but the table check, which the pipeline adds (it needs the store)
    assert {o.label for o in scores.values()} == {
        m.value for metric, m in scorer.forms.items() if metric is not Metric.SOURCES_INDEXED
    }
    assert scores[Metric.FACT_AGREEMENT].value == 1.0  # no claim contradicts its sentence
    assert all(
        label.startswith(("non-llm:", "exact:")) for label in (o.label for o in scores.values())
    )


async def test_an_unanswerable_item_gets_faithfulness_and_relevancy_only_as_the_spec_says():
    scorer = HeuristicScorer(EMBEDDER, THRESHOLDS, claim_cosine_threshold=0.7)
    abstained = GeneratedAnswer("I don't know.", (), True)
    scores = await scorer.score(scoring_input(abstained, answerable=False))
    for metric in (
        Metric.CONTEXT_PRECISION,
        Metric.CONTEXT_RECALL,
        Metric.COVERAGE,
        Metric.ANSWER_CORRECTNESS,
    ):
        assert scores[metric].state is MeasurementState.NOT_APPLICABLE
    # the abstention asserts nothing ungrounded; its relevancy is the formula's (orthogonal
    # to the question here, so 0): a correct refusal never lifts the relevancy mean
    assert scores[Metric.FAITHFULNESS].value == 1.0
    assert scores[Metric.ANSWER_RELEVANCY].is_measured
    assert scores[Metric.ANSWER_RELEVANCY].value == 0.0
    assert scores[Metric.ABSTENTION].value == 1.0


async def test_an_answer_to_an_unanswerable_question_is_scored_and_fails_the_abstention_rate():
    scorer = HeuristicScorer(EMBEDDER, THRESHOLDS, claim_cosine_threshold=0.7)
    answer = GeneratedAnswer("Delivery costs CHF 7.90.", ("p#a.0",), False)
    scores = await scorer.score(scoring_input(answer, answerable=False))
    # scored on its sentences like any answer (copied from the context: faithful, on topic)
    assert scores[Metric.FAITHFULNESS].value == 1.0
    assert scores[Metric.ANSWER_RELEVANCY].value == 1.0
    assert scores[Metric.ANSWER_CORRECTNESS].state is MeasurementState.NOT_APPLICABLE
    assert scores[Metric.CONTEXT_RECALL].state is MeasurementState.NOT_APPLICABLE
    assert scores[Metric.ABSTENTION].value == 0.0 and scores[Metric.ABSTENTION].failed


@pytest.mark.parametrize("text", ["", "   ", "Yes."])
@pytest.mark.parametrize("answerable", [True, False])
async def test_an_empty_or_contentless_answer_is_not_an_answer(text, answerable):
    scorer = HeuristicScorer(EMBEDDER, THRESHOLDS, claim_cosine_threshold=0.7)
    scores = await scorer.score(
        scoring_input(GeneratedAnswer(text, (), False), answerable=answerable)
    )
    rate = Metric.COVERAGE if answerable else Metric.ABSTENTION
    assert scores[rate].is_measured and scores[rate].value == 0.0 and scores[rate].failed
    assert scores[Metric.ANSWER_RELEVANCY].value == 0.0
    if answerable:
        assert scores[Metric.ANSWER_CORRECTNESS].value == 0.0


async def test_abstaining_on_an_answerable_question_fails_correctness_and_coverage():
    scorer = HeuristicScorer(EMBEDDER, THRESHOLDS, claim_cosine_threshold=0.7)
    scores = await scorer.score(scoring_input(GeneratedAnswer("I don't know.", (), True)))
    assert scores[Metric.ANSWER_CORRECTNESS].value == 0.0
    assert scores[Metric.COVERAGE].value == 0.0 and scores[Metric.COVERAGE].failed
    assert scores[Metric.FAITHFULNESS].state is MeasurementState.NOT_APPLICABLE
    assert scores[Metric.ABSTENTION].state is MeasurementState.NOT_APPLICABLE


async def test_a_falsified_number_is_unfaithful_although_it_embeds_like_the_context():
    embedder = TableEmbedder(
        {
            "How much is delivery?": (1, 0, 0),
            "Delivery costs CHF 7.90.": (1, 0, 0),
            "Delivery costs CHF 68.90.": (1, 0, 0),  # cosine 1.0 with the true sentence
        }
    )
    scorer = HeuristicScorer(embedder, THRESHOLDS, claim_cosine_threshold=0.7)
    answer = GeneratedAnswer("Delivery costs CHF 68.90.", ("p#a.0",), False)
    scores = await scorer.score(scoring_input(answer))
    faithfulness = scores[Metric.FAITHFULNESS]
    assert faithfulness.value == 0.0
    assert faithfulness.evidence["max_cosine"] == [1.0]
    assert faithfulness.evidence["fact_problems"] == [
        [
            "number 68.9 chf is not in the cited context",
            "says 68.9 chf where the context sentence it restates says 7.9 chf",
        ]
    ]
    assert scores[Metric.FACT_AGREEMENT].value == 0.0
    assert scores[Metric.ANSWER_CORRECTNESS].value == 0.0  # CHF 68.90 replaces CHF 7.90


async def test_extractive_faithfulness_is_labelled_structural():
    scorer = HeuristicScorer(
        EMBEDDER, THRESHOLDS, claim_cosine_threshold=0.7, structural_faithfulness=True
    )
    answer = GeneratedAnswer("Delivery costs CHF 7.90.", ("p#a.0",), False)
    scores = await scorer.score(scoring_input(answer))
    assert scores[Metric.FAITHFULNESS].label == "structural:extractive-copy-fact-checked"
    assert scores[Metric.FAITHFULNESS].value == 1.0


async def test_generation_failure_is_not_measured_never_zero():
    scorer = HeuristicScorer(EMBEDDER, THRESHOLDS, claim_cosine_threshold=0.7)
    scores = await scorer.score(scoring_input(GeneratedAnswer.failed("generator failed: x")))
    for metric in (
        Metric.FAITHFULNESS,
        Metric.ANSWER_RELEVANCY,
        Metric.ANSWER_CORRECTNESS,
        Metric.COVERAGE,
    ):
        assert scores[metric].state is MeasurementState.NOT_MEASURED
        assert scores[metric].value is None
    assert scores[Metric.ABSTENTION].state is MeasurementState.NOT_APPLICABLE  # answerable item
    assert scores[Metric.CONTEXT_PRECISION].is_measured  # retrieval happened regardless


class ScriptedJudge:
    """Answers each judge prompt by its response-format name; raises for names it lacks."""

    def __init__(self, replies: dict[str, object]) -> None:
        self._replies = replies

    @property
    def model_id(self) -> str:
        return "scripted-judge"

    @property
    def provenance(self) -> Provenance:
        return Provenance.OFFLINE_DETERMINISTIC

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        assert request.response_format is not None
        import json

        reply = self._replies[request.response_format.name]
        return ChatCompletion(json.dumps(reply))


async def test_llm_forms_compute_from_the_judges_verdicts():
    judge = ScriptedJudge(
        {
            "faithfulness": {
                "claims": [
                    {"claim": "a", "supported": True},
                    {"claim": "b", "supported": True},
                    {"claim": "c", "supported": False},
                ]
            },
            "answer_questions": {"questions": ["How much is delivery?", "The moon is cheese."]},
            "context_usefulness": {
                "verdicts": [{"id": "p#b.0", "useful": True}, {"id": "p#a.0", "useful": False}]
            },
            "context_recall": {"claims": [{"claim": "x", "supported": True}]},
            "answer_correctness": {
                "answer_claims": [
                    {"claim": "a", "in_reference": True},
                    {"claim": "b", "in_reference": False},
                ],
                "reference_claims": [
                    {"claim": "a", "in_answer": True},
                    {"claim": "c", "in_answer": False},
                ],
            },
        }
    )
    scorer = LlmScorer(judge, EMBEDDER, THRESHOLDS)
    answer = GeneratedAnswer("Delivery costs CHF 7.90.", ("p#a.0",), False)
    scores = await scorer.score(scoring_input(answer))
    assert scores[Metric.FAITHFULNESS].value == pytest.approx(2 / 3)
    assert scores[Metric.ANSWER_RELEVANCY].value == pytest.approx((1.0 + 0.6) / 2)
    # useful at rank 2 only (p#a.0 rank 1 judged not useful): precision@2 = 1/2
    assert scores[Metric.CONTEXT_PRECISION].value == 0.5
    assert scores[Metric.CONTEXT_RECALL].value == 1.0
    # tp 1, fp 1, fn 1: 1 / (1 + 0.5 * 2)
    assert scores[Metric.ANSWER_CORRECTNESS].value == 0.5
    assert scores[Metric.FAITHFULNESS].label == Method.LLM_FAITHFULNESS
    assert scores[Metric.ANSWER_CORRECTNESS].label == Method.LLM_CORRECTNESS
    assert scorer.judge_calls == 5


async def test_a_judge_failure_is_not_measured_for_that_metric_only():
    judge = ScriptedJudge({"context_recall": {"claims": [{"claim": "x", "supported": False}]}})
    scorer = LlmScorer(judge, EMBEDDER, THRESHOLDS)
    scores = await scorer.score(
        scoring_input(GeneratedAnswer("Delivery costs CHF 7.90.", (), False))
    )
    assert scores[Metric.FAITHFULNESS].state is MeasurementState.NOT_MEASURED
    assert "judge failed" in (scores[Metric.FAITHFULNESS].reason or "")
    assert scores[Metric.CONTEXT_RECALL].value == 0.0  # a measured zero, from a verdict


def test_aggregate_refuses_to_mix_methods():
    observations = [
        Observation.measured(1.0, True, label="non-llm:a"),
        Observation.measured(0.5, True, label="llm:b"),
    ]
    with pytest.raises(ValueError, match="must not be mixed"):
        aggregate(Metric.FAITHFULNESS, observations, 0.5)


def test_aggregate_mean_interval_and_gate():
    observations = [Observation.measured(v, v >= 0.5, label="m") for v in (1.0, 0.5, 0.0, 1.0)] + [
        Observation.not_applicable("n/a", label="m")
    ]
    result = aggregate(Metric.CONTEXT_RECALL, observations, 0.7)
    assert result.mean == pytest.approx(0.625)
    assert result.census.measured == 4 and result.census.not_applicable == 1
    assert result.interval is not None and result.interval[0] <= 0.625 <= result.interval[1]
    assert result.gate.failed  # 0.625 < 0.7
    assert bootstrap_interval([1.0, 0.5, 0.0, 1.0]) == bootstrap_interval([1.0, 0.5, 0.0, 1.0])


def test_aggregate_with_nothing_measured_is_not_measured():
    observations = [Observation.not_measured("judge failed", label="m")]
    result = aggregate(Metric.FAITHFULNESS, observations, 0.5)
    assert result.mean is None
    assert result.gate.state is MeasurementState.NOT_MEASURED


def test_a_metric_that_applied_to_no_item_is_not_applicable_not_a_pass():
    observations = [Observation.not_applicable("abstained", label="m")] * 3
    gate = aggregate(Metric.FAITHFULNESS, observations, 0.5).gate
    assert gate.state is MeasurementState.NOT_APPLICABLE
    failure = Observation.measured(0.0, False, label="m")
    # Alone it proves nothing (not measured); beside a measured failure the failure decides.
    assert gate_exit_code([gate]) is ExitCode.NOT_MEASURED
    assert gate_exit_code([gate, failure]) is ExitCode.MEASURED_FAILURE
    assert gate_exit_code([Observation.not_measured("x"), failure]) is ExitCode.NOT_MEASURED
