"""Grounded answer generators: a scripted extractive one (offline) and any ChatModel (live).

Both return the same :class:`GeneratedAnswer`: the answer text, the chunk ids it cites, and
whether it abstained. Abstaining is an explicit outcome, not an empty string, because for a
question the knowledge base cannot answer it is the right behaviour and is scored as such.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from vitrine._redact import bound_text, describe_exception
from vitrine.providers._base import ChatMessage, ChatModel, ChatRequest, ResponseFormat
from vitrine.rag._chunking import split_sentences
from vitrine.rag._embeddings import TextEmbedder
from vitrine.rag._vectorstore import RetrievedChunk

__all__ = [
    "ABSTENTION_TEXT",
    "ANSWER_LIMIT",
    "ChatModelGenerator",
    "ExtractiveGenerator",
    "GeneratedAnswer",
    "Generator",
]

ANSWER_LIMIT = 2000  # model output is untrusted and bounded wherever it is stored
ABSTENTION_TEXT = "I don't know: the shop's help pages do not answer this question."


@dataclass(frozen=True, slots=True)
class GeneratedAnswer:
    answer: str
    citations: tuple[str, ...]
    abstained: bool
    error: str | None = None  # set when generation failed; the item is then not measured
    # Citations the generator gave that are not among the retrieved chunks.
    invalid_citations: tuple[str, ...] = field(default=())

    @classmethod
    def failed(cls, why: str) -> GeneratedAnswer:
        return cls("", (), False, error=why)


@runtime_checkable
class Generator(Protocol):
    @property
    def generator_id(self) -> str: ...

    @property
    def provenance(self) -> str: ...

    async def generate(
        self, question: str, retrieved: Sequence[RetrievedChunk]
    ) -> GeneratedAnswer: ...


class ExtractiveGenerator:
    """Answers with the retrieved sentences closest to the question, citing their chunks.

    It abstains when no retrieved chunk reaches ``relevance_threshold`` (cosine similarity of
    question and chunk), the cut-off calibration places between relevant and irrelevant chunks.
    Copying sentences makes it faithful by construction; it exists so that retrieval, citation,
    abstention and every metric run end to end without a model or credentials.
    """

    # Read by the command: faithfulness of copied sentences is structural, and is labelled so.
    faithful_by_construction = True

    def __init__(
        self,
        embedder: TextEmbedder,
        relevance_threshold: float,
        *,
        max_sentences: int = 2,
    ) -> None:
        self._embedder = embedder
        self.relevance_threshold = relevance_threshold
        self._max_sentences = max_sentences

    @property
    def generator_id(self) -> str:
        return (
            f"extractive(top {self._max_sentences} sentences, "
            f"abstain < {self.relevance_threshold:.3f})"
        )

    @property
    def provenance(self) -> str:
        return "offline-deterministic"

    async def generate(self, question: str, retrieved: Sequence[RetrievedChunk]) -> GeneratedAnswer:
        usable = [c for c in retrieved if c.similarity >= self.relevance_threshold]
        if not usable:
            return GeneratedAnswer(ABSTENTION_TEXT, (), True)
        # Overlapping chunks repeat their boundary sentences; each sentence is a candidate once.
        first: dict[str, str] = {}
        for chunk in usable:
            for sentence in split_sentences(chunk.text):
                first.setdefault(sentence, chunk.id)
        candidates = [(chunk_id, sentence) for sentence, chunk_id in first.items()]
        vectors = self._embedder.embed([question, *(s for _, s in candidates)])
        scores = vectors[1:] @ vectors[0]
        # Stable order on ties (the retrieval order) keeps the answer reproducible.
        order = sorted(range(len(candidates)), key=lambda i: (-float(scores[i]), i))
        picked = sorted(order[: self._max_sentences])  # keep reading order within the context
        sentences = [candidates[i][1] for i in picked]
        citations = tuple(dict.fromkeys(candidates[i][0] for i in picked))
        return GeneratedAnswer(" ".join(sentences), citations, False)


_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "citations": {"type": "array", "items": {"type": "string"}},
        "abstained": {"type": "boolean"},
    },
    "required": ["answer", "citations", "abstained"],
    "additionalProperties": False,
}

_SYSTEM = (
    "You answer customer questions for a Swiss online shop using ONLY the numbered context "
    "passages. Cite the id of every passage you use in 'citations'. If the passages do not "
    "contain the answer, set 'abstained' to true and say briefly that you do not know; never "
    "guess. Answer in at most three sentences."
)


class ChatModelGenerator:
    """Prompts a ChatModel with the retrieved chunks and asks for {answer, citations, abstained}."""

    def __init__(self, model: ChatModel, *, max_output_tokens: int = 600) -> None:
        self._model = model
        self._max_output_tokens = max_output_tokens

    @property
    def generator_id(self) -> str:
        return f"chat-model({self._model.model_id})"

    @property
    def provenance(self) -> str:
        return str(self._model.provenance.value)

    async def generate(self, question: str, retrieved: Sequence[RetrievedChunk]) -> GeneratedAnswer:
        context = "\n\n".join(f"[{c.id}] ({c.reference})\n{c.text}" for c in retrieved)
        request = ChatRequest(
            messages=(
                ChatMessage("system", _SYSTEM),
                ChatMessage("user", f"Context passages:\n{context}\n\nQuestion: {question}"),
            ),
            response_format=ResponseFormat("grounded_answer", _ANSWER_SCHEMA),
            max_output_tokens=self._max_output_tokens,
            temperature=0.0,
            purpose="rag-generator",
        )
        try:
            completion = await self._model.complete(request)
            data = json.loads(completion.content or "")
            answer = str(data["answer"])
            cited = [str(c) for c in data["citations"]]
            abstained = bool(data["abstained"])
        except Exception as exc:
            return GeneratedAnswer.failed(f"generator failed: {describe_exception(exc)}")
        known = {c.id for c in retrieved}
        return GeneratedAnswer(
            bound_text(answer, ANSWER_LIMIT),
            tuple(dict.fromkeys(c for c in cited if c in known)),
            abstained,
            invalid_citations=tuple(c for c in cited if c not in known)[:20],
        )
