"""The RAG metrics, each in an LLM-judged form and a clearly labelled non-LLM form.

Every per-item score is an :class:`~vitrine.outcomes.Observation` whose ``label`` is the method
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
from vitrine.rag.facts import extract_facts, quantity_conflicts, unsupported_facts
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
    "answer_claims",
    "answer_correctness",
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
    ANSWER_CORRECTNESS = "answer_correctness"
    CONTEXT_PRECISION = "context_precision"
    CONTEXT_RECALL = "context_recall"
    # Two rates, never merged: a generator that never abstains and one that always does must
    # each fail one of them, whatever the dataset's share of unanswerable questions.
    ABSTENTION = "abstains_when_unanswerable"
    COVERAGE = "answers_when_answerable"


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


# ----------------------------------------------------------------------------------------------
# The formulas
# ----------------------------------------------------------------------------------------------

_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        """a an and are as at be by can do does for from has have how i if in is it its of on or
        our than that the their them then there these they this to up was we what when where
        which who will with within you your yours not no yes only also any all per""",
    )
)


def content_words(text: str) -> set[str]:
    """Lower-cased words and numbers minus stop words: what a claim asserts."""
    return {w for w in re.findall(r"[\w.,]*\w", text.casefold()) if w not in _STOPWORDS}


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
        raise ValueError("recall is undefined without relevant chunks: the metric does not apply")
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
) -> list[ClaimSupport]:
    """A claim is supported when it is close to the context and carries no fact the context
    lacks.

    Close: its best cosine to a context sentence reaches ``cosine_threshold``, or at least
    ``coverage_threshold`` of its content words occur in the context (a paraphrase that keeps
    the terms). Facts (with ``check_facts``): its numbers and names occur in the context and
    its polarity matches the sentence it is closest to (see :mod:`vitrine.rag.facts`), because
    similarity alone cannot tell "30 days" from "91 days".
    """
    context_words: set[str] = set()
    for sentence in context_sentences:
        context_words |= content_words(sentence)
    evidence = " ".join(context_sentences)
    results = []
    for row, claim in enumerate(claims):
        similarities = context_vectors @ claim_vectors[row] if len(context_sentences) else None
        best = float(np.max(similarities)) if similarities is not None else 0.0
        aligned = (
            context_sentences[int(np.argmax(similarities))] if similarities is not None else None
        )
        words = content_words(claim)
        coverage = len(words & context_words) / len(words) if words else 0.0
        close = best >= cosine_threshold or coverage >= coverage_threshold
        problems = tuple(unsupported_facts(claim, evidence, aligned)) if check_facts else ()
        results.append(ClaimSupport(claim, best, coverage, close and not problems, problems))
    return results


def _stems(text: str) -> set[str]:
    return {w.rstrip("s")[:5] for w in content_words(text) if not w[0].isdigit()}


_LEADING_VERDICT = re.compile(r"^\s*(yes|no)\b", re.IGNORECASE)


def answer_correctness(
    answer: str, reference: str, similarity: float
) -> tuple[float, dict[str, Any]]:
    """The non-LLM correctness of ``answer`` against ``reference`` and its evidence.

    0 when a fact conflicts: a unit whose values all differ from the reference's ("CHF 110"
    for "CHF 49"), or an opposite leading yes/no. Otherwise the mean of the texts' cosine
    ``similarity`` (negatives as 0), the share of the reference's terms the answer uses (its
    content words without a plural s, compared by their first five letters so "collect" meets
    "collection"), and,
    when the reference states numbers, the share of them the answer states. Similarity alone
    rates an on-topic answer to another question as half right; the terms and numbers do not.
    """
    got, wanted = extract_facts(answer), extract_facts(reference)
    conflicts = quantity_conflicts(got, wanted)
    said = _LEADING_VERDICT.match(answer)
    expected = _LEADING_VERDICT.match(reference)
    if expected and said and said.group(1).casefold() != expected.group(1).casefold():
        conflicts.append(
            f"the reference answers {expected.group(1)!r}, the answer {said.group(1)!r}"
        )
    recall = len(wanted.values & got.values) / len(wanted.values) if wanted.values else None
    terms = _stems(reference)
    term_recall = len(terms & _stems(answer)) / len(terms) if terms else 1.0
    sim = max(0.0, min(1.0, similarity))
    parts = [sim, term_recall] + ([] if recall is None else [recall])
    value = 0.0 if conflicts else sum(parts) / len(parts)
    evidence = {
        "similarity": round(sim, 4),
        "reference_terms_used": round(term_recall, 4),
        "reference_numbers_stated": None if recall is None else round(recall, 4),
        "conflicts": conflicts,
    }
    return value, evidence


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
    """The observations fixed by applicability and abstention alone, before any computation."""
    out: dict[Metric, Observation] = {}
    if not item.has_relevant_chunk:
        why = "the knowledge base holds no relevant chunk for this question"
        for metric in (Metric.CONTEXT_PRECISION, Metric.CONTEXT_RECALL, Metric.COVERAGE):
            out[metric] = Observation.not_applicable(why, label=forms[metric])
    else:
        why = "the question is answerable, so abstaining is not expected of it"
        out[Metric.ABSTENTION] = Observation.not_applicable(why, label=forms[Metric.ABSTENTION])
    expected = not item.has_relevant_chunk
    rate = Metric.ABSTENTION if expected else Metric.COVERAGE  # the one rate this item is in
    if item.answer.error is not None:
        for metric in (*ANSWER_METRICS, rate):
            out[metric] = Observation.not_measured(item.answer.error, label=forms[metric])
        return out
    correct = item.answer.abstained == expected
    out[rate] = Observation.measured(
        1.0 if correct else 0.0,
        correct,
        evidence={"abstained": item.answer.abstained, "should_abstain": expected},
        label=forms[rate],
    )
    if item.answer.abstained:
        why = "the answer abstained, so it makes no claims to check"
        out[Metric.FAITHFULNESS] = Observation.not_applicable(why, label=forms[Metric.FAITHFULNESS])
        out[Metric.ANSWER_RELEVANCY] = Observation.not_applicable(
            why, label=forms[Metric.ANSWER_RELEVANCY]
        )
        if expected:
            out[Metric.ANSWER_CORRECTNESS] = Observation.not_applicable(
                "the right answer to an unanswerable question is to abstain, which it did",
                label=forms[Metric.ANSWER_CORRECTNESS],
            )
        else:
            out[Metric.ANSWER_CORRECTNESS] = Observation.measured(
                0.0,
                False,
                evidence={"why": "abstained although the pages answer the question"},
                label=forms[Metric.ANSWER_CORRECTNESS],
            )
    elif expected:
        # Whatever it says, an answer to a question the pages cannot answer is not grounded in
        # them: it may not count as a faithful or relevant pass on its sentences' merits.
        for metric in ANSWER_METRICS:
            out[metric] = Observation.measured(
                0.0,
                False,
                evidence={"why": "answered a question the knowledge base cannot answer"},
                label=forms[metric],
            )
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
    ) -> None:
        self._embedder = embedder
        self._thresholds = thresholds
        self.claim_cosine_threshold = claim_cosine_threshold
        self.coverage_threshold = coverage_threshold
        self.structural_faithfulness = structural_faithfulness

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
        if all(metric in out for metric in ANSWER_METRICS):
            return out
        claims = answer_claims(item.answer.answer)
        if not claims:
            why = "the answer is empty although it did not abstain"
            for metric in ANSWER_METRICS:
                out.setdefault(metric, Observation.not_applicable(why, label=forms[metric]))
            return out
        context = [s for chunk in _cited_chunks(item) for s in split_sentences(chunk.text)]
        vectors = self._embedder.embed(
            [item.question, item.answer.answer, item.reference, *claims, *context]
        )
        question_vec, answer_vec, reference_vec = vectors[0], vectors[1], vectors[2]
        claim_vecs = vectors[3 : 3 + len(claims)]
        context_vecs = vectors[3 + len(claims) :]
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
                answer_relevancy_from_vectors(question_vec, claim_vecs),
                t,
                Method.SENTENCE_RELEVANCY,
                {"sentences": len(claims)},
            )
        if Metric.ANSWER_CORRECTNESS not in out:
            value, evidence = answer_correctness(
                item.answer.answer, item.reference, float(answer_vec @ reference_vec)
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
            Metric.ANSWER_CORRECTNESS: Method.LLM_CORRECTNESS,
            Metric.CONTEXT_PRECISION: Method.LLM_PRECISION,
            Metric.CONTEXT_RECALL: Method.LLM_RECALL,
            Metric.ABSTENTION: Method.ABSTENTION,
            Metric.COVERAGE: Method.COVERAGE,
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
            Metric.ANSWER_CORRECTNESS: self._correctness,
            Metric.CONTEXT_PRECISION: self._precision,
            Metric.CONTEXT_RECALL: self._recall,
        }
        for metric, compute in steps.items():
            if metric not in out:
                out[metric] = await self._guarded(metric, compute, item)
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
            raise ValueError("the judge found no claims in the reference answer")
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
