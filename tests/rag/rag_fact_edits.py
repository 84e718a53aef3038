"""One fact changed per reference answer, six ways: the falsification probe of the RAG gate.

Independent of :func:`vitrine.rag._facts.falsify` (the calibration's negative class, which moves
every number by a fixed shift and flips every polarity word at once): each edit here changes
exactly *one* fact, and draws the replacement from the knowledge base itself, so the wrong
answer reads as plausibly as the right one:

- ``number-off-page``: a number replaced by one that appears nowhere on the answer's page;
- ``number-same-page``: a number replaced by another number *on the same page* (the express
  price for the standard one), which a page-level check cannot see;
- ``name-off-page``: a name replaced by a name from another page;
- ``name-same-page``: a name replaced by another name on the same page (TWINT -> Visa);
- ``negation``: one negation added or dropped (cannot -> can, never <-> always, is -> is not);
- ``verb``: one verb replaced by another the knowledge base uses after the same word.

The edited answer is returned through the generator seam (:class:`EditingGenerator`), so the
whole pipeline (retrieval, citations, scoring, aggregation, exit code) judges it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from rag_judging import judge

from vitrine._outcomes import Observation
from vitrine.rag._chunking import KnowledgeBase
from vitrine.rag._dataset import DatasetItem, RagThresholds
from vitrine.rag._embeddings import TextEmbedder
from vitrine.rag._generator import ABSTENTION_TEXT, GeneratedAnswer
from vitrine.rag._metrics import Metric
from vitrine.rag._pipeline import EvalOutcome
from vitrine.rag._vectorstore import RetrievedChunk, VectorStore

KINDS = (
    "number-off-page",
    "number-same-page",
    "name-off-page",
    "name-same-page",
    "negation",
    "verb",
)

_NUMBER = re.compile(r"(?<![\w.,'])\d+(?:[.,']\d+)*(?![\w])")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_AUXILIARIES = ("can", "will", "must", "may", "to", "we", "you", "they", "is", "are", "be")
_STOP = _wordset(
    "a an the and or of in on at by for with from to is are be not no yes can will must may "
    "you we they it this that these those your our their also only within up per as if"
)
# Single edits, tried in order; the first that applies is made.
_NEGATION_EDITS = (
    (r"\bcannot\b", "can"),
    (r"\bcan't\b", "can"),
    (r"\bdo not\b", "do"),
    (r"\bdoes not\b", "does"),
    (r"\bis not\b", "is"),
    (r"\bare not\b", "are"),
    (r"\bwill not\b", "will"),
    (r"\bnever\b", "always"),
    (r"\balways\b", "never"),
    (r"\bnot\b ?", ""),
    (r"\bcan\b", "cannot"),
    (r"\bis\b", "is not"),
    (r"\bare\b", "are not"),
    (r"\bwill\b", "will not"),
)
_VERDICT = re.compile(r"^\s*(?:yes|no)\b[.,!]?\s*", re.IGNORECASE)


def _number_value(text: str) -> str:
    value = re.sub(r"[,'](?=\d{3}\b)", "", text).replace(",", ".")
    return value.rstrip("0").rstrip(".") if "." in value else value


_DATES = _wordset(
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April "
    "May June July August September October November December"
)


def _names(text: str) -> list[str]:
    """Capitalised words inside a sentence, in order (TWINT, Visa, Brunello); weekdays and
    months are dates, not names."""
    out = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        if word in _DATES:
            continue
        before = text[: match.start()].rstrip()
        if before and not before.endswith((".", "!", "?", ":", ";", "#")) and word[0].isupper():
            out.append(word)
    return out


@dataclass(frozen=True, slots=True)
class Pages:
    """The knowledge base seen page by page: its text, numbers, names and verb slots."""

    text: Mapping[str, str]  # page -> all its chunks' text
    lower_words: frozenset[str]  # every word the knowledge base writes in lower case

    @classmethod
    def of(cls, kb: KnowledgeBase) -> Pages:
        text: dict[str, list[str]] = {}
        for chunk in kb.chunks:
            text.setdefault(chunk.source, []).append(chunk.text)
        joined = {page: " ".join(parts) for page, parts in text.items()}
        lower = frozenset(w for t in joined.values() for w in _WORD.findall(t) if w[0].islower())
        return cls(joined, lower)

    def names(self, page: str) -> list[str]:
        names = _names(self.text[page])
        return list(dict.fromkeys(n for n in names if n.lower() not in self.lower_words))

    def numbers(self, page: str) -> list[str]:
        return list(dict.fromkeys(m.group(0) for m in _NUMBER.finditer(self.text[page])))

    def verbs_after(self, auxiliary: str) -> list[str]:
        """Lower-case words the knowledge base writes right after ``auxiliary``."""
        pattern = re.compile(rf"\b{auxiliary} ([a-z]+)\b")
        found = {m.group(1) for t in self.text.values() for m in pattern.finditer(t)}
        return sorted(w for w in found if w not in _STOP and len(w) > 3)


def _pages_of(item: DatasetItem) -> list[str]:
    return list(dict.fromkeys(c.split("#", 1)[0] + ".md" for c in item.relevant_chunk_ids))


def _replace_once(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def edit(kind: str, item: DatasetItem, pages: Pages) -> str | None:
    """The reference answer with one fact changed by ``kind``, or None where it has none."""
    answer = item.reference_answer
    rng = random.Random(f"{item.id}/{kind}")
    own = _pages_of(item)
    page_text = " ".join(pages.text[p] for p in own if p in pages.text)
    verdict = _VERDICT.match(answer)
    body_start = verdict.end() if verdict else 0
    if kind.startswith("number"):
        numbers = [m for m in _NUMBER.finditer(answer) if m.start() >= body_start]
        if not numbers:
            return None
        target = rng.choice(numbers)
        value = _number_value(target.group(0))
        on_page = {_number_value(n) for p in own for n in pages.numbers(p)}
        if kind == "number-same-page":
            stated = {_number_value(m.group(0)) for m in numbers}
            choices = [n for p in own for n in pages.numbers(p) if _number_value(n) not in stated]
            if not choices:
                return None
            new = rng.choice(choices)
        else:
            base = float(value)
            new = next(
                candidate
                for factor in (2, 3, 5, 7, 11, 13)
                if _number_value(candidate := _format_like(target.group(0), base * factor + factor))
                not in on_page
            )
        return _replace_once(answer, target.start(), target.end(), new)
    if kind.startswith("name"):
        names = [n for n in dict.fromkeys(_names(answer)) if n.lower() not in pages.lower_words]
        if not names:
            return None
        name = rng.choice(names)
        if kind == "name-same-page":
            choices = [n for p in own for n in pages.names(p) if n not in answer and n != name]
        else:
            elsewhere = [n for p in pages.text if p not in own for n in pages.names(p)]
            choices = sorted({n for n in elsewhere if n not in page_text})
        if not choices:
            return None
        return re.sub(rf"\b{re.escape(name)}\b", rng.choice(choices), answer, count=1)
    if kind == "negation":
        body = answer[body_start:]
        for pattern, new in _NEGATION_EDITS:
            changed, count = re.subn(pattern, new, body, count=1)
            if count:
                return answer[:body_start] + changed
        return None
    if kind == "verb":
        slots = []
        for auxiliary in _AUXILIARIES:
            for match in re.finditer(rf"\b{auxiliary} ([a-z]+)\b", answer):
                word = match.group(1)
                if word not in _STOP and len(word) > 3:
                    slots.append((auxiliary, match.start(1), match.end(1), word))
        rng.shuffle(slots)
        for auxiliary, start, end, word in slots:
            choices = [
                v
                for v in pages.verbs_after(auxiliary)
                if v[:4] != word[:4] and v not in page_text and v not in item.question.lower()
            ]
            if choices:
                return _replace_once(answer, start, end, rng.choice(choices))
        return None
    raise ValueError(f"unknown edit kind {kind!r}")


def _format_like(original: str, value: float) -> str:
    decimals = len(re.split(r"[.,]", original)[-1]) if re.search(r"[.,]\d{1,2}$", original) else 0
    return f"{value:.{decimals}f}" if decimals else str(int(value))


class EditingGenerator:
    """The reference answers, one fact changed by ``kind`` where the answer has one; abstains
    on the questions the pages cannot answer, like an ideal generator."""

    provenance = "offline-deterministic"

    def __init__(self, items: Sequence[DatasetItem], kind: str | None, pages: Pages) -> None:
        self._by_question = {i.question: i for i in items}
        self.kind = kind
        self.edits: dict[str, tuple[str, str]] = {}  # item id -> (reference, edited)
        for item in items:
            if kind is not None and item.has_relevant_chunk:
                changed = edit(kind, item, pages)
                if changed is not None and changed != item.reference_answer:
                    self.edits[item.id] = (item.reference_answer, changed)

    @property
    def generator_id(self) -> str:
        return f"reference-answers-edited({self.kind})"

    async def generate(self, question: str, retrieved: Sequence[RetrievedChunk]) -> GeneratedAnswer:
        item = self._by_question[question]
        if not item.has_relevant_chunk:
            return GeneratedAnswer(ABSTENTION_TEXT, (), True)
        text = self.edits.get(item.id, (None, item.reference_answer))[1]
        cited = tuple(c.id for c in retrieved if c.id in item.relevant_chunk_ids)
        return GeneratedAnswer(text, cited, False)


@dataclass(frozen=True, slots=True)
class ClassResult:
    """How one kind of edit fared: items edited, items caught (per route), the run's exit."""

    kind: str
    edited: int
    caught: int
    caught_by_context: int  # faithfulness (the claim against the sentence it restates)
    exit_code: int
    missed: tuple[str, ...]

    @property
    def rate(self) -> float:
        return self.caught / self.edited if self.edited else 0.0


def caught(scores: Mapping[Metric, Observation]) -> tuple[bool, bool]:
    """(caught at all, caught by faithfulness): an answer metric of the item failed."""

    def failed(metric: Metric) -> bool:
        obs = scores.get(metric)
        return obs is not None and obs.is_measured and obs.failed

    by_context = failed(Metric.FAITHFULNESS)
    return by_context or any(failed(m) for m in _ANSWER_CHECKS), by_context


_ANSWER_CHECKS = (Metric.FACT_AGREEMENT, Metric.ANSWER_CORRECTNESS, Metric.FAITHFULNESS)


async def run_class(
    kind: str | None,
    items: Sequence[DatasetItem],
    pages: Pages,
    *,
    embedder: TextEmbedder,
    store: VectorStore,
    table: str,
    thresholds: RagThresholds,
    entities: Collection[str],
) -> tuple[ClassResult, EvalOutcome]:
    """Judge ``items`` with the reference answers edited by ``kind`` (None: unedited)."""
    generator = EditingGenerator(items, kind, pages)
    outcome = await judge(
        items,
        generator,
        embedder=embedder,
        store=store,
        table=table,
        thresholds=thresholds,
        entities=entities,
    )
    hits = {r.item.id: caught(r.scores) for r in outcome.results if r.item.id in generator.edits}
    result = ClassResult(
        kind or "none",
        len(generator.edits),
        sum(h for h, _ in hits.values()),
        sum(c for _, c in hits.values()),
        int(outcome.exit_code),
        tuple(sorted(i for i, (h, _) in hits.items() if not h)),
    )
    return result, outcome
