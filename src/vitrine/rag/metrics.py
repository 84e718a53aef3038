"""The RAG metrics, each in an LLM-judged form and a clearly labelled non-LLM form.

Every per-item score is an :class:`~vitrine.outcomes.Observation` whose ``label`` is the method
that produced it, so a report can never mix forms silently: one run uses one form per metric,
and :func:`aggregate` refuses observations of one metric produced by different methods.

States follow vitrine's rules. A metric that does not apply to an item (retrieval metrics on a
question the knowledge base cannot answer; answer metrics on an abstention, which makes no
claims) is ``not_applicable``; a judge or generator failure is ``not_measured``. Neither is
ever a zero. Definitions are in ``docs/rag.md``; the pure functions here are the formulas.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from vitrine.outcomes import Census, Observation
from vitrine.providers.base import ChatMessage, ChatModel, ChatRequest, ResponseFormat
from vitrine.rag.chunking import split_sentences
from vitrine.rag.embeddings import TextEmbedder
from vitrine.rag.generator import GeneratedAnswer
from vitrine.rag.vectorstore import RetrievedChunk
from vitrine.redact import describe_exception

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
    "answer_relevancy_from_vectors",
    "bootstrap_interval",
    "claim_support",
    "content_words",
    "context_precision",
    "context_recall_ids",
]

BOOTSTRAP_SEED = 20260612
BOOTSTRAP_RESAMPLES = 2000


class Metric(StrEnum):
    FAITHFULNESS = "faithfulness"
    ANSWER_RELEVANCY = "answer_relevancy"
    CONTEXT_PRECISION = "context_precision"
    CONTEXT_RECALL = "context_recall"
    ABSTENTION = "abstention_accuracy"


class Method(StrEnum):
    """How a score was computed; the prefix says whether a language model was involved."""

    CLAIM_SUPPORT = "non-llm:claim-support-heuristic"
    SENTENCE_RELEVANCY = "non-llm:question-vs-answer-sentences"
    CHUNK_ID_PRECISION = "non-llm:chunk-id-rank-weighted-precision"
    CHUNK_ID_RECALL = "non-llm:chunk-id-recall"
    LLM_FAITHFULNESS = "llm:answer-claims-verified"
    LLM_RELEVANCY = "llm:generated-questions-cosine"
    LLM_PRECISION = "llm:chunk-usefulness-rank-weighted-precision"
    LLM_RECALL = "llm:reference-claims-attributed"
    ABSTENTION = "exact:abstains-iff-unanswerable"


# ----------------------------------------------------------------------------------------------
# The formulas
# ----------------------------------------------------------------------------------------------

_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        """a an and are as at be by can do does for from has have how i if in is it its of on or
        our than that the their them then there these they this to up was we what when where
        which who will with within you your yours not no only also any all per""",
    )
)


def content_words(text: str) -> set[str]:
    """Lower-cased words and numbers minus stop words: what a claim asserts."""
    return {w for w in re.findall(r"[\w.,]*\w", text.casefold()) if w not in _STOPWORDS}


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
        raise ValueError("recall is undefined without relevant chunks: the metric does not apply")
    found = set(retrieved)
    return sum(1 for chunk_id in relevant if chunk_id in found) / len(relevant)


@dataclass(frozen=True, slots=True)
class ClaimSupport:
    claim: str
    max_cosine: float
    coverage: float  # share of the claim's content words present in the context
    supported: bool


def claim_support(
    claims: Sequence[str],
    claim_vectors: npt.NDArray[np.float32],
    context_sentences: Sequence[str],
    context_vectors: npt.NDArray[np.float32],
    *,
    cosine_threshold: float,
    coverage_threshold: float,
) -> list[ClaimSupport]:
    """A claim is supported when its best cosine to a context sentence reaches
    ``cosine_threshold`` or at least ``coverage_threshold`` of its content words occur in the
    context (which catches a paraphrase that keeps the facts: numbers, names, terms)."""
    context_words: set[str] = set()
    for sentence in context_sentences:
        context_words |= content_words(sentence)
    results = []
    for row, claim in enumerate(claims):
        best = (
            float(np.max(context_vectors @ claim_vectors[row])) if len(context_sentences) else 0.0
        )
        words = content_words(claim)
        coverage = len(words & context_words) / len(words) if words else 0.0
        supported = best >= cosine_threshold or coverage >= coverage_threshold
        results.append(ClaimSupport(claim, best, coverage, supported))
    return results


def answer_relevancy_from_vectors(
    question: npt.NDArray[np.float32], others: npt.NDArray[np.float32]
) -> float:
    """Mean cosine between the question and each other text, negatives counted as 0."""
    if len(others) == 0:
        raise ValueError("relevancy needs at least one answer sentence or generated question")
    return float(np.mean(np.clip(others @ question, 0.0, 1.0)))


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


def _gaps(item: ScoringInput, forms: Mapping[Metric, Method]) -> dict[Metric, Observation]:
    """The observations fixed by applicability alone, before any metric is computed."""
    out: dict[Metric, Observation] = {}
    if not item.has_relevant_chunk:
        why = "the knowledge base holds no relevant chunk for this question"
        for metric in (Metric.CONTEXT_PRECISION, Metric.CONTEXT_RECALL):
            out[metric] = Observation.not_applicable(why, label=forms[metric])
    answer_metrics = (Metric.FAITHFULNESS, Metric.ANSWER_RELEVANCY, Metric.ABSTENTION)
    if item.answer.error is not None:
        for metric in answer_metrics:
            out[metric] = Observation.not_measured(item.answer.error, label=forms[metric])
    elif item.answer.abstained:
        why = "the answer abstained, so it makes no claims to check"
        for metric in (Metric.FAITHFULNESS, Metric.ANSWER_RELEVANCY):
            out[metric] = Observation.not_applicable(why, label=forms[metric])
    return out


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


def _abstention(item: ScoringInput, thresholds: Mapping[Metric, float]) -> Observation:
    expected = not item.has_relevant_chunk
    correct = item.answer.abstained == expected
    return _measured(
        Metric.ABSTENTION,
        1.0 if correct else 0.0,
        thresholds,
        Method.ABSTENTION,
        {"abstained": item.answer.abstained, "should_abstain": expected},
    )


class HeuristicScorer:
    """The non-LLM forms: chunk ids for retrieval, embeddings and word overlap for answers."""

    def __init__(
        self,
        embedder: TextEmbedder,
        thresholds: Mapping[Metric, float],
        *,
        claim_cosine_threshold: float,
        coverage_threshold: float = 0.8,
    ) -> None:
        self._embedder = embedder
        self._thresholds = thresholds
        self.claim_cosine_threshold = claim_cosine_threshold
        self.coverage_threshold = coverage_threshold

    @property
    def forms(self) -> Mapping[Metric, Method]:
        return {
            Metric.FAITHFULNESS: Method.CLAIM_SUPPORT,
            Metric.ANSWER_RELEVANCY: Method.SENTENCE_RELEVANCY,
            Metric.CONTEXT_PRECISION: Method.CHUNK_ID_PRECISION,
            Metric.CONTEXT_RECALL: Method.CHUNK_ID_RECALL,
            Metric.ABSTENTION: Method.ABSTENTION,
        }

    async def score(self, item: ScoringInput) -> dict[Metric, Observation]:
        out = _gaps(item, self.forms)
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
        if Metric.ABSTENTION not in out:
            out[Metric.ABSTENTION] = _abstention(item, t)
        if Metric.FAITHFULNESS in out and Metric.ANSWER_RELEVANCY in out:
            return out
        claims = split_sentences(item.answer.answer)
        if not claims:
            why = "the answer is empty although it did not abstain"
            out.setdefault(
                Metric.FAITHFULNESS, Observation.not_applicable(why, label=Method.CLAIM_SUPPORT)
            )
            out.setdefault(
                Metric.ANSWER_RELEVANCY,
                Observation.not_applicable(why, label=Method.SENTENCE_RELEVANCY),
            )
            return out
        context = [s for chunk in item.retrieved for s in split_sentences(chunk.text)]
        vectors = self._embedder.embed([item.question, *claims, *context])
        question_vec = vectors[0]
        claim_vecs = vectors[1 : 1 + len(claims)]
        context_vecs = vectors[1 + len(claims) :]
        if Metric.FAITHFULNESS not in out:
            support = claim_support(
                claims,
                claim_vecs,
                context,
                context_vecs,
                cosine_threshold=self.claim_cosine_threshold,
                coverage_threshold=self.coverage_threshold,
            )
            value = sum(s.supported for s in support) / len(support)
            out[Metric.FAITHFULNESS] = _measured(
                Metric.FAITHFULNESS,
                value,
                t,
                Method.CLAIM_SUPPORT,
                {
                    "claims": len(support),
                    "supported": sum(s.supported for s in support),
                    "max_cosine": [round(s.max_cosine, 4) for s in support],
                    "word_coverage": [round(s.coverage, 4) for s in support],
                },
            )
        if Metric.ANSWER_RELEVANCY not in out:
            out[Metric.ANSWER_RELEVANCY] = _measured(
                Metric.ANSWER_RELEVANCY,
                answer_relevancy_from_vectors(question_vec, claim_vecs),
                t,
                Method.SENTENCE_RELEVANCY,
                {"sentences": len(claims)},
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
    ) -> None:
        self._judge = judge
        self._embedder = embedder
        self._thresholds = thresholds
        self._questions = generated_questions
        self.judge_calls = 0

    @property
    def judge_id(self) -> str:
        return self._judge.model_id

    @property
    def forms(self) -> Mapping[Metric, Method]:
        return {
            Metric.FAITHFULNESS: Method.LLM_FAITHFULNESS,
            Metric.ANSWER_RELEVANCY: Method.LLM_RELEVANCY,
            Metric.CONTEXT_PRECISION: Method.LLM_PRECISION,
            Metric.CONTEXT_RECALL: Method.LLM_RECALL,
            Metric.ABSTENTION: Method.ABSTENTION,
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
            raise ValueError("the judge did not return a JSON object")
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
            Metric.CONTEXT_PRECISION: self._precision,
            Metric.CONTEXT_RECALL: self._recall,
        }
        for metric, compute in steps.items():
            if metric not in out:
                out[metric] = await self._guarded(metric, compute, item)
        if Metric.ABSTENTION not in out:
            out[Metric.ABSTENTION] = _abstention(item, self._thresholds)
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

    async def _relevancy(self, item: ScoringInput) -> Observation:
        data = await self._ask(
            "answer_questions",
            f"Write {self._questions} different questions that the following ANSWER answers. "
            f"Use only the ANSWER.\n\nANSWER:\n{item.answer.answer}",
            _QUESTIONS_SCHEMA,
        )
        generated = [str(q) for q in data["questions"] if str(q).strip()]
        if not generated:
            raise ValueError("the judge generated no questions")
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
            raise ValueError(f"the judge gave no verdict for {len(missing)} retrieved chunks")
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
            raise ValueError("the judge found no claims in the reference answer")
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
        """The metric's verdict: its mean against its threshold, or not measured."""
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
        raise ValueError("an interval needs at least one measured value")
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
        raise ValueError(
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
