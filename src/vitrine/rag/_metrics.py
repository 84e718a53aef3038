"""The RAG metrics, each in an LLM-judged form and a clearly labelled non-LLM form.

Every per-item score is an :class:`~vitrine.Observation` whose ``label`` is the method
that produced it, so a report can never mix forms silently: one run uses one form per metric,
and :func:`aggregate` refuses observations of one metric produced by different methods.

States follow vitrine's rules. A metric that does not apply to an item (retrieval metrics on a
question the knowledge base cannot answer; faithfulness and relevancy of an abstention, which
makes no claims) is ``not_applicable``; a judge or generator failure is ``not_measured``.
Neither is ever a zero. Two outcomes are measured failures, never absences: an answer to a
question the pages cannot answer fails faithfulness, relevancy and correctness (whatever it
says is not grounded), and an abstention on an answerable question fails correctness.
Definitions are in ``docs/rag.md``; the pure functions here are the formulas.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from vitrine._outcomes import Census, Observation
from vitrine._redact import describe_exception
from vitrine.errors import InvalidArgumentError, InvalidDataError
from vitrine.providers._base import ChatMessage, ChatModel, ChatRequest, ResponseFormat
from vitrine.rag._alignment import (
    align,
    claim_problems,
    content_words,
    reference_conflicts,
    stems,
)
from vitrine.rag._chunking import split_sentences
from vitrine.rag._embeddings import TextEmbedder
from vitrine.rag._facts import extract_facts
from vitrine.rag._generator import GeneratedAnswer
from vitrine.rag._vectorstore import RetrievedChunk

if TYPE_CHECKING:
    from vitrine.rag._dataset import RagThresholds

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "HeuristicScorer",
    "LlmScorer",
    "Method",
    "Metric",
    "MetricAggregate",
    "Scorer",
    "ScoringInput",
    "aggregate",
    "answer_claims",
    "answer_correctness",
    "answer_precision",
    "answer_relevancy_from_vectors",
    "bootstrap_interval",
    "claim_support",
    "content_words",
    "context_precision",
    "context_problems",
    "context_recall_ids",
    "fact_agreement",
    "is_contentless",
    "sources_indexed",
]

BOOTSTRAP_SEED = 20260612
BOOTSTRAP_RESAMPLES = 2000


class Metric(StrEnum):
    FAITHFULNESS = "faithfulness"
    ANSWER_RELEVANCY = "answer_relevancy"
    ANSWER_CORRECTNESS = "answer_correctness"
    CONTEXT_PRECISION = "context_precision"
    CONTEXT_RECALL = "context_recall"
    # Two rates, never merged: a generator that never abstains and one that always does must
    # each fail one of them, whatever the dataset's share of unanswerable questions.
    ABSTENTION = "abstains_when_unanswerable"
    COVERAGE = "answers_when_answerable"
    # Stated policies, not calibrated means: a mean lets a few wrong answers hide among right
    # ones; these count the answers that carry one.
    FACT_AGREEMENT = "answers_without_wrong_facts"
    SOURCES_INDEXED = "supporting_chunks_indexed"


ANSWER_METRICS = (Metric.FAITHFULNESS, Metric.ANSWER_RELEVANCY, Metric.ANSWER_CORRECTNESS)


class Method(StrEnum):
    """How a score was computed; the prefix says whether a language model was involved.

    ``structural:`` marks a value fixed by how the answer was produced (an extractive generator
    copies its sentences, so its claims are supported by construction): it is still computed
    and gated, so a broken copier fails, but it says nothing about a model's grounding.
    """

    CLAIM_SUPPORT = "non-llm:claim-support-and-fact-check"
    STRUCTURAL_FAITHFULNESS = "structural:extractive-copy-fact-checked"
    SENTENCE_RELEVANCY = "non-llm:question-vs-answer-sentences"
    REFERENCE_CORRECTNESS = "non-llm:reference-similarity-and-fact-agreement"
    CHUNK_ID_PRECISION = "non-llm:chunk-id-rank-weighted-precision"
    CHUNK_ID_RECALL = "non-llm:chunk-id-recall"
    LLM_FAITHFULNESS = "llm:answer-claims-verified"
    LLM_RELEVANCY = "llm:generated-questions-cosine"
    LLM_CORRECTNESS = "llm:answer-vs-reference-claims-f1"
    LLM_PRECISION = "llm:chunk-usefulness-rank-weighted-precision"
    LLM_RECALL = "llm:reference-claims-attributed"
    ABSTENTION = "exact:abstains-on-unanswerable"
    COVERAGE = "exact:answers-answerable"
    FACT_CHECK = "non-llm:sentence-aligned-fact-check"
    SOURCES_INDEXED = "exact:supporting-chunk-ids-in-table"


# ----------------------------------------------------------------------------------------------
# The formulas
# ----------------------------------------------------------------------------------------------


def answer_claims(text: str) -> list[str]:
    """The answer's sentences that assert something: a bare "Yes." or "No." has no content
    word of its own (its claim is the next sentence; correctness checks the verdict)."""
    return [s for s in split_sentences(text) if content_words(s)]


def context_precision(relevance: Sequence[bool]) -> float:
    """Rank-weighted precision: the mean, over the ranks k holding a relevant chunk, of
    precision@k. 0.0 when no retrieved chunk is relevant."""
    hits = 0
    total = 0.0
    for rank, relevant in enumerate(relevance, start=1):
        if relevant:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


def context_recall_ids(retrieved: Sequence[str], relevant: Collection[str]) -> float:
    """Share of the relevant chunk ids found among the retrieved ones."""
    if not relevant:
        raise InvalidArgumentError(
            "recall is undefined without relevant chunks: the metric does not apply"
        )
    found = set(retrieved)
    return sum(1 for chunk_id in relevant if chunk_id in found) / len(relevant)


@dataclass(frozen=True, slots=True)
class ClaimSupport:
    claim: str
    max_cosine: float
    coverage: float  # share of the claim's content words present in the context
    supported: bool
    # Facts of the claim the context does not carry (a number, a name, a flipped negation).
    problems: tuple[str, ...] = ()


def claim_support(
    claims: Sequence[str],
    claim_vectors: npt.NDArray[np.float32],
    context_sentences: Sequence[str],
    context_vectors: npt.NDArray[np.float32],
    *,
    cosine_threshold: float,
    coverage_threshold: float,
    check_facts: bool = True,
    question: str = "",
    entities: Collection[str] = frozenset(),
) -> list[ClaimSupport]:
    """A claim is supported when it is close to the context and carries no fact the sentence
    it restates lacks.

    Close: its best cosine to a context sentence reaches ``cosine_threshold``, or at least
    ``coverage_threshold`` of its content words occur in the context (a paraphrase that keeps
    the terms). Facts (with ``check_facts``): the claim is aligned to the sentence(s) it
    restates and its numbers, names, polarity and predicate must agree with *those* sentences
    (:mod:`vitrine.rag._alignment`), because similarity alone cannot tell "30 days" from
    "91 days" and the page as a whole holds every number on it.
    """
    context_words: set[str] = set()
    for sentence in context_sentences:
        context_words |= content_words(sentence)
    evidence = " ".join(context_sentences)
    results = []
    for row, claim in enumerate(claims):
        similarities = context_vectors @ claim_vectors[row] if len(context_sentences) else None
        best = float(np.max(similarities)) if similarities is not None else 0.0
        words = content_words(claim)
        coverage = len(words & context_words) / len(words) if words else 0.0
        close = best >= cosine_threshold or coverage >= coverage_threshold
        problems = (
            tuple(
                claim_problems(
                    claim,
                    align(claim, context_sentences, entities),
                    evidence=evidence,
                    question=question,
                    entities=entities,
                )
            )
            if check_facts
            else ()
        )
        results.append(ClaimSupport(claim, best, coverage, close and not problems, problems))
    return results


def answer_precision(answer: str, reference: str, *, share: float = 0.5) -> float:
    """Share of the answer's sentences that are about the reference: at least ``share`` of
    their terms are the reference's. RAGAS's correctness counts an answer's extra claims as
    false positives; without it, pasting every retrieved chunk in would maximise recall."""
    claims = answer_claims(answer)
    if not claims:
        return 0.0
    terms = stems(reference)
    on_topic = [len(stems(c) & terms) >= share * len(stems(c)) for c in claims if stems(c)]
    return sum(on_topic) / len(on_topic) if on_topic else 0.0


def answer_correctness(
    answer: str,
    reference: str,
    similarity: float,
    *,
    question: str = "",
    entities: Collection[str] = frozenset(),
) -> tuple[float, dict[str, Any]]:
    """The non-LLM correctness of ``answer`` against ``reference`` and its evidence.

    0 when a fact conflicts (:func:`vitrine.rag._alignment.reference_conflicts`: a unit whose
    values all differ from the reference's, an opposite leading yes/no, another name in place
    of the reference's, a flipped polarity or swapped predicate in a sentence that restates the
    reference's). Otherwise the mean of the texts' cosine ``similarity`` (negatives as 0), the
    share of the reference's terms the answer uses (:func:`vitrine.rag._alignment.stems`), the
    share of the answer's sentences about the reference (:func:`answer_precision`), and, when
    the reference states numbers, the share of them the answer states. Similarity alone
    rates an on-topic answer to another question as half right; the terms and numbers do not.
    """
    got, wanted = extract_facts(answer), extract_facts(reference)
    conflicts = reference_conflicts(answer, reference, question=question, entities=entities)
    recall = len(wanted.values & got.values) / len(wanted.values) if wanted.values else None
    terms = stems(reference)
    term_recall = len(terms & stems(answer)) / len(terms) if terms else 1.0
    precision = answer_precision(answer, reference)
    sim = max(0.0, min(1.0, similarity))
    parts = [sim, term_recall, precision] + ([] if recall is None else [recall])
    value = 0.0 if conflicts else sum(parts) / len(parts)
    evidence = {
        "similarity": round(sim, 4),
        "reference_terms_used": round(term_recall, 4),
        "answer_sentences_on_reference": round(precision, 4),
        "reference_numbers_stated": None if recall is None else round(recall, 4),
        "conflicts": conflicts,
    }
    return value, evidence


def answer_relevancy_from_vectors(
    question: npt.NDArray[np.float32],
    others: npt.NDArray[np.float32],
    *,
    on_topic: float | None = None,
) -> float:
    """Mean cosine between the question and each other text, negatives counted as 0.

    With ``on_topic`` (a cosine cut-off), the mean is weighted by the share of the texts that
    reach it: an answer padded with sentences about other things (every retrieved chunk
    pasted in) is not a relevant answer, however relevant its first sentence.
    """
    if len(others) == 0:
        raise InvalidArgumentError(
            "relevancy needs at least one answer sentence or generated question"
        )
    cosines = others @ question
    value = float(np.mean(np.clip(cosines, 0.0, 1.0)))
    if on_topic is None:
        return value
    return value * float(np.mean(cosines >= on_topic))


# ----------------------------------------------------------------------------------------------
# Per-item scoring
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScoringInput:
    item_id: str
    question: str
    reference: str
    relevant_ids: tuple[str, ...]
    has_relevant_chunk: bool
    retrieved: tuple[RetrievedChunk, ...]
    answer: GeneratedAnswer


class Scorer(Protocol):
    @property
    def forms(self) -> Mapping[Metric, Method]: ...

    async def score(self, item: ScoringInput) -> dict[Metric, Observation]: ...


def is_contentless(answer: GeneratedAnswer) -> bool:
    """An answer that did not abstain and asserts nothing: empty, blank, or a bare "Yes."."""
    return not answer.abstained and not answer_claims(answer.answer)


def _gaps(item: ScoringInput, forms: Mapping[Metric, Method]) -> dict[Metric, Observation]:
    """The observations fixed by the item's kind and the answer's outcome, before any
    computation.

    The metric set per item kind follows the pipelines specification: a question the pages
    cannot answer gets faithfulness and answer relevancy (and the abstention rate), never the
    retrieval metrics or correctness, which need a reference grounded in the pages. Declining
    such a question asserts nothing the pages contradict: faithfulness 1; its relevancy is
    computed like any answer's. An answer to it is scored on its sentences like any other, and
    fails the abstention rate. An empty or contentless answer is no answer: it fails the rate
    of its kind.
    """
    out: dict[Metric, Observation] = {}

    def fixed(metric: Metric, value: float, why: str) -> None:
        out[metric] = Observation.measured(
            value, value >= 1.0, evidence={"why": why}, label=forms[metric]
        )

    def absent(metrics: Iterable[Metric], why: str) -> None:
        for metric in metrics:
            out.setdefault(metric, Observation.not_applicable(why, label=forms[metric]))

    expected = not item.has_relevant_chunk
    if expected:
        absent(
            (
                Metric.CONTEXT_PRECISION,
                Metric.CONTEXT_RECALL,
                Metric.COVERAGE,
                Metric.ANSWER_CORRECTNESS,
                Metric.SOURCES_INDEXED,
            ),
            "the knowledge base holds no relevant chunk for this question",
        )
    else:
        absent((Metric.ABSTENTION,), "the question is answerable, so abstaining is not expected")
    rate = Metric.ABSTENTION if expected else Metric.COVERAGE  # the one rate this item is in
    if item.answer.error is not None:
        for metric in (*ANSWER_METRICS, Metric.FACT_AGREEMENT, rate):
            out.setdefault(metric, Observation.not_measured(item.answer.error, label=forms[metric]))
        return out
    if is_contentless(item.answer):
        why = "the answer is empty or asserts nothing, and did not abstain: it is no answer"
        out[rate] = Observation.measured(
            0.0, False, evidence={"abstained": False, "contentless": True}, label=forms[rate]
        )
        absent((Metric.FAITHFULNESS, Metric.FACT_AGREEMENT), "an empty answer makes no claims")
        fixed(Metric.ANSWER_RELEVANCY, 0.0, why)
        if not expected:
            fixed(Metric.ANSWER_CORRECTNESS, 0.0, why)
        return out
    correct = item.answer.abstained == expected
    out[rate] = Observation.measured(
        1.0 if correct else 0.0,
        correct,
        evidence={"abstained": item.answer.abstained, "should_abstain": expected},
        label=forms[rate],
    )
    if item.answer.abstained:
        if expected:
            # Relevancy is left to the formula, as for any answer: a refusal does not restate
            # the question and scores low (RAGAS scores a noncommittal answer 0), so correct
            # abstentions never lift a mean that answered items fail.
            fixed(
                Metric.FAITHFULNESS,
                1.0,
                "declined a question the knowledge base cannot answer: nothing ungrounded",
            )
            absent((Metric.FACT_AGREEMENT,), "the answer abstained, so it states no fact")
        else:
            absent(
                (Metric.FAITHFULNESS, Metric.ANSWER_RELEVANCY, Metric.FACT_AGREEMENT),
                "the answer abstained, so it makes no claims to check",
            )
            fixed(Metric.ANSWER_CORRECTNESS, 0.0, "abstained although the pages answer it")
    return out


def sources_indexed(item: ScoringInput, indexed: Collection[str]) -> Observation:
    """Whether every chunk the reference answer rests on is in the searched table: a knowledge
    base missing chunks makes some answers impossible, whatever recall's mean says."""
    label = Method.SOURCES_INDEXED.value
    if not item.has_relevant_chunk:
        return Observation.not_applicable(
            "the knowledge base holds no relevant chunk for this question", label=label
        )
    missing = [c for c in item.relevant_ids if c not in indexed]
    return Observation.measured(
        0.0 if missing else 1.0,
        not missing,
        evidence={"missing": missing, "relevant": list(item.relevant_ids)},
        label=label,
    )


def fact_agreement(
    item: ScoringInput,
    claim_problems_found: Sequence[Sequence[str]],
    *,
    entities: Collection[str],
) -> Observation:
    """1 when no claim contradicts the sentence it restates and (for an answerable question)
    the answer contradicts no fact of the reference; 0 otherwise, with every problem named."""
    conflicts = (
        reference_conflicts(
            item.answer.answer, item.reference, question=item.question, entities=entities
        )
        if item.has_relevant_chunk
        else []
    )
    context = [list(p) for p in claim_problems_found]
    wrong = bool(conflicts) or any(context)
    return Observation.measured(
        0.0 if wrong else 1.0,
        not wrong,
        evidence={"context_problems": context, "reference_conflicts": conflicts},
        label=Method.FACT_CHECK.value,
    )


def context_problems(
    item: ScoringInput, claims: Sequence[str], *, entities: Collection[str]
) -> list[list[str]]:
    """Per claim, its facts the cited sentence it restates does not carry."""
    context = [s for chunk in _cited_chunks(item) for s in split_sentences(chunk.text)]
    evidence = " ".join(context)
    return [
        claim_problems(
            c,
            align(c, context, entities),
            evidence=evidence,
            question=item.question,
            entities=entities,
        )
        for c in claims
    ]


def _measured(
    metric: Metric,
    value: float,
    thresholds: Mapping[Metric, float],
    method: Method,
    evidence: Mapping[str, Any],
) -> Observation:
    return Observation.measured(
        value, value >= thresholds[metric], evidence=evidence, label=method.value
    )


def _cited_chunks(item: ScoringInput) -> tuple[RetrievedChunk, ...]:
    """The chunks the answer cites, or every retrieved chunk when it cites none of them."""
    cited = [c for c in item.retrieved if c.id in set(item.answer.citations)]
    return tuple(cited) or item.retrieved


class HeuristicScorer:
    """The non-LLM forms: chunk ids for retrieval, embeddings and fact checks for answers.

    ``structural_faithfulness`` labels faithfulness ``structural:`` for a generator that copies
    its sentences (the offline extractive one), whose support is a property of its construction.
    """

    def __init__(
        self,
        embedder: TextEmbedder,
        thresholds: Mapping[Metric, float],
        *,
        claim_cosine_threshold: float,
        coverage_threshold: float = 0.8,
        structural_faithfulness: bool = False,
        entities: Collection[str] = frozenset(),
        on_topic_threshold: float | None = None,
    ) -> None:
        self._embedder = embedder
        # The calibrated question-passage cut-off: answer sentences below it are off the question.
        self.on_topic_threshold = on_topic_threshold
        self._thresholds = thresholds
        self.claim_cosine_threshold = claim_cosine_threshold
        self.coverage_threshold = coverage_threshold
        self.structural_faithfulness = structural_faithfulness
        self.entities = frozenset(entities)  # the knowledge base's names

    @classmethod
    def calibrated(
        cls,
        embedder: TextEmbedder,
        thresholds: RagThresholds,
        *,
        structural_faithfulness: bool = False,
        entities: Collection[str] = frozenset(),
    ) -> HeuristicScorer:
        """The scorer with every cut-off a thresholds file fixes."""
        return cls(
            embedder,
            thresholds.metrics,
            claim_cosine_threshold=thresholds.claim_cosine_threshold,
            structural_faithfulness=structural_faithfulness,
            entities=entities,
            on_topic_threshold=thresholds.relevance_threshold,
        )

    @property
    def forms(self) -> Mapping[Metric, Method]:
        return {
            Metric.FAITHFULNESS: (
                Method.STRUCTURAL_FAITHFULNESS
                if self.structural_faithfulness
                else Method.CLAIM_SUPPORT
            ),
            Metric.ANSWER_RELEVANCY: Method.SENTENCE_RELEVANCY,
            Metric.ANSWER_CORRECTNESS: Method.REFERENCE_CORRECTNESS,
            Metric.CONTEXT_PRECISION: Method.CHUNK_ID_PRECISION,
            Metric.CONTEXT_RECALL: Method.CHUNK_ID_RECALL,
            Metric.ABSTENTION: Method.ABSTENTION,
            Metric.COVERAGE: Method.COVERAGE,
            Metric.FACT_AGREEMENT: Method.FACT_CHECK,
            Metric.SOURCES_INDEXED: Method.SOURCES_INDEXED,
        }

    async def score(self, item: ScoringInput) -> dict[Metric, Observation]:
        forms = self.forms
        out = _gaps(item, forms)
        t = self._thresholds
        retrieved_ids = [c.id for c in item.retrieved]
        if Metric.CONTEXT_PRECISION not in out:
            relevance = [cid in item.relevant_ids for cid in retrieved_ids]
            out[Metric.CONTEXT_PRECISION] = _measured(
                Metric.CONTEXT_PRECISION,
                context_precision(relevance),
                t,
                Method.CHUNK_ID_PRECISION,
                {"relevant_at_rank": relevance},
            )
        if Metric.CONTEXT_RECALL not in out:
            found = [cid for cid in item.relevant_ids if cid in retrieved_ids]
            out[Metric.CONTEXT_RECALL] = _measured(
                Metric.CONTEXT_RECALL,
                context_recall_ids(retrieved_ids, item.relevant_ids),
                t,
                Method.CHUNK_ID_RECALL,
                {"found": found, "missing": [c for c in item.relevant_ids if c not in found]},
            )
        if all(metric in out for metric in (*ANSWER_METRICS, Metric.FACT_AGREEMENT)):
            return out
        claims = answer_claims(item.answer.answer)
        context = [s for chunk in _cited_chunks(item) for s in split_sentences(chunk.text)]
        vectors = self._embedder.embed(
            [item.question, item.answer.answer, item.reference, *claims, *context]
        )
        question_vec, answer_vec, reference_vec = vectors[0], vectors[1], vectors[2]
        claim_vecs = vectors[3 : 3 + len(claims)]
        context_vecs = vectors[3 + len(claims) :]
        support = claim_support(
            claims,
            claim_vecs,
            context,
            context_vecs,
            cosine_threshold=self.claim_cosine_threshold,
            coverage_threshold=self.coverage_threshold,
            question=item.question,
            entities=self.entities,
        )
        if Metric.FACT_AGREEMENT not in out:
            out[Metric.FACT_AGREEMENT] = fact_agreement(
                item, [s.problems for s in support], entities=self.entities
            )
        if Metric.FAITHFULNESS not in out:
            value = sum(s.supported for s in support) / len(support)
            out[Metric.FAITHFULNESS] = _measured(
                Metric.FAITHFULNESS,
                value,
                t,
                forms[Metric.FAITHFULNESS],
                {
                    "claims": len(support),
                    "supported": sum(s.supported for s in support),
                    "max_cosine": [round(s.max_cosine, 4) for s in support],
                    "word_coverage": [round(s.coverage, 4) for s in support],
                    "fact_problems": [list(s.problems) for s in support],
                },
            )
        if Metric.ANSWER_RELEVANCY not in out:
            out[Metric.ANSWER_RELEVANCY] = _measured(
                Metric.ANSWER_RELEVANCY,
                answer_relevancy_from_vectors(
                    question_vec, claim_vecs, on_topic=self.on_topic_threshold
                ),
                t,
                Method.SENTENCE_RELEVANCY,
                {
                    "sentences": len(claims),
                    "question_cosine": [round(float(v @ question_vec), 4) for v in claim_vecs],
                    "on_topic_cut": self.on_topic_threshold,
                },
            )
        if Metric.ANSWER_CORRECTNESS not in out:
            value, evidence = answer_correctness(
                item.answer.answer,
                item.reference,
                float(answer_vec @ reference_vec),
                question=item.question,
                entities=self.entities,
            )
            out[Metric.ANSWER_CORRECTNESS] = _measured(
                Metric.ANSWER_CORRECTNESS, value, t, Method.REFERENCE_CORRECTNESS, evidence
            )
        return out


# ----------------------------------------------------------------------------------------------
# LLM-judged forms
# ----------------------------------------------------------------------------------------------

_JUDGE_SYSTEM = (
    "You are a careful evaluator of a retrieval-augmented assistant. Judge only from the text "
    "you are given; do not use outside knowledge. Reply with JSON that matches the schema."
)


def _schema(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }


def _list_of(item: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": _schema(item)}


_CLAIMS_SCHEMA = _schema(
    {"claims": _list_of({"claim": {"type": "string"}, "supported": {"type": "boolean"}})}
)
_QUESTIONS_SCHEMA = _schema({"questions": {"type": "array", "items": {"type": "string"}}})
_CORRECTNESS_SCHEMA = _schema(
    {
        "answer_claims": _list_of(
            {"claim": {"type": "string"}, "in_reference": {"type": "boolean"}}
        ),
        "reference_claims": _list_of(
            {"claim": {"type": "string"}, "in_answer": {"type": "boolean"}}
        ),
    }
)
_USEFUL_SCHEMA = _schema(
    {"verdicts": _list_of({"id": {"type": "string"}, "useful": {"type": "boolean"}})}
)


class LlmScorer:
    """The LLM-judged forms; any judge failure makes that metric not measured for the item."""

    def __init__(
        self,
        judge: ChatModel,
        embedder: TextEmbedder,
        thresholds: Mapping[Metric, float],
        *,
        generated_questions: int = 3,
        entities: Collection[str] = frozenset(),
    ) -> None:
        self._judge = judge
        self._embedder = embedder
        self._thresholds = thresholds
        self._questions = generated_questions
        self.entities = frozenset(entities)
        self.judge_calls = 0

    @property
    def judge_id(self) -> str:
        return self._judge.model_id

    @property
    def forms(self) -> Mapping[Metric, Method]:
        return {
            Metric.FAITHFULNESS: Method.LLM_FAITHFULNESS,
            Metric.ANSWER_RELEVANCY: Method.LLM_RELEVANCY,
            Metric.ANSWER_CORRECTNESS: Method.LLM_CORRECTNESS,
            Metric.CONTEXT_PRECISION: Method.LLM_PRECISION,
            Metric.CONTEXT_RECALL: Method.LLM_RECALL,
            Metric.ABSTENTION: Method.ABSTENTION,
            Metric.COVERAGE: Method.COVERAGE,
            # No judge call: the sentence-aligned check is the same in both forms.
            Metric.FACT_AGREEMENT: Method.FACT_CHECK,
            Metric.SOURCES_INDEXED: Method.SOURCES_INDEXED,
        }

    async def _ask(self, name: str, prompt: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        self.judge_calls += 1
        completion = await self._judge.complete(
            ChatRequest(
                messages=(ChatMessage("system", _JUDGE_SYSTEM), ChatMessage("user", prompt)),
                response_format=ResponseFormat(name, schema),
                max_output_tokens=1200,
                temperature=0.0,
                purpose="judge",
            )
        )
        data = json.loads(completion.content or "")
        if not isinstance(data, dict):
            raise InvalidDataError("the judge did not return a JSON object")
        return data

    async def _guarded(self, metric: Metric, compute: Any, item: ScoringInput) -> Observation:
        try:
            result: Observation = await compute(item)
        except Exception as exc:
            return Observation.not_measured(
                f"judge failed: {describe_exception(exc)}", label=self.forms[metric]
            )
        return result

    async def score(self, item: ScoringInput) -> dict[Metric, Observation]:
        out = _gaps(item, self.forms)
        steps = {
            Metric.FAITHFULNESS: self._faithfulness,
            Metric.ANSWER_RELEVANCY: self._relevancy,
            Metric.ANSWER_CORRECTNESS: self._correctness,
            Metric.CONTEXT_PRECISION: self._precision,
            Metric.CONTEXT_RECALL: self._recall,
        }
        for metric, compute in steps.items():
            if metric not in out:
                out[metric] = await self._guarded(metric, compute, item)
        if Metric.FACT_AGREEMENT not in out:
            claims = answer_claims(item.answer.answer)
            out[Metric.FACT_AGREEMENT] = fact_agreement(
                item,
                context_problems(item, claims, entities=self.entities),
                entities=self.entities,
            )
        return out

    def _context(self, item: ScoringInput) -> str:
        return "\n\n".join(f"[{c.id}]\n{c.text}" for c in item.retrieved)

    async def _faithfulness(self, item: ScoringInput) -> Observation:
        data = await self._ask(
            "faithfulness",
            "Break the ANSWER into short standalone factual claims. For each claim say whether "
            "the CONTEXT supports it.\n\n"
            f"CONTEXT:\n{self._context(item)}\n\nANSWER:\n{item.answer.answer}",
            _CLAIMS_SCHEMA,
        )
        verdicts = [bool(c["supported"]) for c in data["claims"]]
        if not verdicts:
            return Observation.not_applicable(
                "the judge found no factual claims in the answer", label=Method.LLM_FAITHFULNESS
            )
        return _measured(
            Metric.FAITHFULNESS,
            sum(verdicts) / len(verdicts),
            self._thresholds,
            Method.LLM_FAITHFULNESS,
            {"claims": len(verdicts), "supported": sum(verdicts)},
        )

    async def _correctness(self, item: ScoringInput) -> Observation:
        data = await self._ask(
            "answer_correctness",
            "Break the ANSWER and the REFERENCE ANSWER into short standalone factual claims. "
            "For each ANSWER claim say whether the REFERENCE states it (a claim that "
            "contradicts the reference, for example a different number, is not in it). For "
            "each REFERENCE claim say whether the ANSWER states it.\n\n"
            f"QUESTION: {item.question}\n\nREFERENCE ANSWER:\n{item.reference}\n\n"
            f"ANSWER:\n{item.answer.answer}",
            _CORRECTNESS_SCHEMA,
        )
        stated = [bool(c["in_reference"]) for c in data["answer_claims"]]
        covered = [bool(c["in_answer"]) for c in data["reference_claims"]]
        if not covered:
            raise InvalidDataError("the judge found no claims in the reference answer")
        # RAGAS's factual F1: true positives are answer claims the reference states, false
        # positives the other answer claims, false negatives the reference claims left out.
        tp, fp, fn = sum(stated), len(stated) - sum(stated), len(covered) - sum(covered)
        f1 = tp / (tp + 0.5 * (fp + fn)) if tp else 0.0
        return _measured(
            Metric.ANSWER_CORRECTNESS,
            f1,
            self._thresholds,
            Method.LLM_CORRECTNESS,
            {"true_positive": tp, "false_positive": fp, "false_negative": fn},
        )

    async def _relevancy(self, item: ScoringInput) -> Observation:
        data = await self._ask(
            "answer_questions",
            f"Write {self._questions} different questions that the following ANSWER answers. "
            f"Use only the ANSWER.\n\nANSWER:\n{item.answer.answer}",
            _QUESTIONS_SCHEMA,
        )
        generated = [str(q) for q in data["questions"] if str(q).strip()]
        if not generated:
            raise InvalidDataError("the judge generated no questions")
        vectors = self._embedder.embed([item.question, *generated])
        return _measured(
            Metric.ANSWER_RELEVANCY,
            answer_relevancy_from_vectors(vectors[0], vectors[1:]),
            self._thresholds,
            Method.LLM_RELEVANCY,
            {"generated_questions": generated},
        )

    async def _precision(self, item: ScoringInput) -> Observation:
        data = await self._ask(
            "context_usefulness",
            "For each CONTEXT passage (by id), say whether it was useful to arrive at the "
            "REFERENCE ANSWER to the QUESTION.\n\n"
            f"QUESTION: {item.question}\nREFERENCE ANSWER: {item.reference}\n\n"
            f"CONTEXT:\n{self._context(item)}",
            _USEFUL_SCHEMA,
        )
        verdict = {str(v["id"]): bool(v["useful"]) for v in data["verdicts"]}
        missing = [c.id for c in item.retrieved if c.id not in verdict]
        if missing:
            raise InvalidDataError(f"the judge gave no verdict for {len(missing)} retrieved chunks")
        relevance = [verdict[c.id] for c in item.retrieved]
        return _measured(
            Metric.CONTEXT_PRECISION,
            context_precision(relevance),
            self._thresholds,
            Method.LLM_PRECISION,
            {"useful_at_rank": relevance},
        )

    async def _recall(self, item: ScoringInput) -> Observation:
        data = await self._ask(
            "context_recall",
            "Break the REFERENCE ANSWER into short standalone claims. For each claim say "
            "whether it can be attributed to the CONTEXT.\n\n"
            f"REFERENCE ANSWER:\n{item.reference}\n\nCONTEXT:\n{self._context(item)}",
            _CLAIMS_SCHEMA,
        )
        verdicts = [bool(c["supported"]) for c in data["claims"]]
        if not verdicts:
            raise InvalidDataError("the judge found no claims in the reference answer")
        return _measured(
            Metric.CONTEXT_RECALL,
            sum(verdicts) / len(verdicts),
            self._thresholds,
            Method.LLM_RECALL,
            {"claims": len(verdicts), "attributed": sum(verdicts)},
        )


# ----------------------------------------------------------------------------------------------
# Aggregation
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetricAggregate:
    metric: Metric
    method: str
    threshold: float
    census: Census
    mean: float | None
    interval: tuple[float, float] | None
    interval_method: str

    @property
    def gate(self) -> Observation:
        """The metric's verdict: its mean against its threshold; not applicable when every
        item was not applicable (no failure hides there); else not measured."""
        if self.mean is None and self.census.not_applicable and not self.census.not_measured:
            return Observation.not_applicable(
                f"{self.metric.value}: the metric applied to no item ({self.census.describe()})",
                label=self.method,
            )
        if self.mean is None:
            return Observation.not_measured(
                f"{self.metric.value}: no item was measured ({self.census.describe()})",
                label=self.method,
            )
        return Observation.measured(self.mean, self.mean >= self.threshold, label=self.method)

    def to_dict(self) -> dict[str, Any]:
        gate = self.gate
        return {
            "metric": self.metric.value,
            "method": self.method,
            "threshold": self.threshold,
            "mean": self.mean,
            "interval": list(self.interval) if self.interval else None,
            "interval_method": self.interval_method,
            "census": self.census.to_dict(),
            "state": gate.state.value,
            "passed": gate.passed,
        }


def bootstrap_interval(
    values: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean over items, with a fixed seed."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise InvalidArgumentError("an interval needs at least one measured value")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def aggregate(
    metric: Metric, observations: Sequence[Observation], threshold: float
) -> MetricAggregate:
    measured = [o for o in observations if o.is_measured]
    methods = {o.label for o in observations}
    if len(methods) > 1:
        raise InvalidArgumentError(
            f"{metric.value} was computed by several methods ({sorted(methods)}); "
            "forms must not be mixed in one aggregate"
        )
    method = methods.pop() if methods else ""
    census = Census.of(observations)
    interval_method = (
        f"percentile bootstrap over items, {BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED}"
    )
    if not measured:
        return MetricAggregate(metric, method, threshold, census, None, None, interval_method)
    values = [float(o.value) for o in measured if o.value is not None]
    mean = float(np.mean(values))
    return MetricAggregate(
        metric, method, threshold, census, mean, bootstrap_interval(values), interval_method
    )
