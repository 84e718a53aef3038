"""Split a folder of Markdown pages into retrievable chunks with stable, readable ids.

A chunk id is ``<page>#<heading path>.<ordinal>``
(``returns-and-withdrawal#how-to-send-a-return.0``):
derived from the source path, the slugs of the headings above the text and the chunk's position
under them, never from randomness or content. So re-ingesting the same pages yields the same
ids, a ground-truth dataset can name the chunks an answer needs, and editing one section moves
only that section's ids, which the dataset test then reports by name.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vitrine.errors import InvalidArgumentError, InvalidDataError

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_OVERLAP_CHARS",
    "Chunk",
    "KnowledgeBase",
    "chunk_page",
    "load_knowledge_base",
    "slugify",
    "split_sentences",
]

DEFAULT_MAX_CHARS = 900
DEFAULT_OVERLAP_CHARS = 160

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
# A sentence ends at . ! or ? followed by space and an upper-case letter or digit, which keeps
# "CHF 7.90", "e.g. the" and "St. Gallen" (abbreviation + capital is rare in these pages) whole.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_ABBREVIATIONS = ("St.", "e.g.", "i.e.", "approx.", "No.", "Nr.")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable passage and where it came from."""

    id: str
    source: str  # the page's path relative to the knowledge-base folder, POSIX form
    title: str
    heading_path: tuple[str, ...]
    ordinal: int
    text: str

    @property
    def reference(self) -> str:
        """A human-readable citation target: page title and section."""
        return " > ".join((self.title, *self.heading_path))

    @property
    def embedding_text(self) -> str:
        # The section heading carries much of a short passage's meaning ("Express delivery"),
        # so it is embedded with the body; the stored content stays the body alone.
        return f"{self.reference}\n{self.text}"

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.embedding_text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class KnowledgeBase:
    root: Path
    pages: tuple[str, ...]
    chunks: tuple[Chunk, ...]

    @property
    def content_hash(self) -> str:
        """One hash over every chunk id and text: equal hashes mean an identical ingestion."""
        payload = json.dumps([[c.id, c.embedding_text] for c in self.chunks], ensure_ascii=False)
        return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()

    def by_id(self) -> dict[str, Chunk]:
        return {chunk.id: chunk for chunk in self.chunks}


def slugify(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", folded.casefold()).strip("-")
    return slug or "section"


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph block; list markers and line breaks are flattened first."""
    flat = " ".join(line.strip().lstrip("-*").strip() for line in text.splitlines())
    flat = re.sub(r"\s+", " ", flat).strip()
    if not flat:
        return []
    pieces = _SENTENCE_END.split(flat)
    sentences: list[str] = []
    for piece in pieces:
        if sentences and sentences[-1].endswith(_ABBREVIATIONS):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return [s.strip() for s in sentences if s.strip()]


def _front_matter(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    if not lines or lines[0].strip() != "---":
        return {}, lines
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            fields = {}
            for line in lines[1:end]:
                key, sep, value = line.partition(":")
                if sep:
                    fields[key.strip().casefold()] = value.strip().strip("\"'")
            return fields, lines[end + 1 :]
    raise InvalidDataError("front matter opened with '---' is never closed")


def _pack(paragraphs: Sequence[str], max_chars: int, overlap_chars: int) -> list[str]:
    """Greedy packing of paragraphs (sentences when a paragraph alone is too long).

    Each new chunk after the first starts with the last sentences of the previous one, up to
    ``overlap_chars``, so a fact that straddles a boundary is retrievable from either side.
    """
    units: list[str] = []
    for paragraph in paragraphs:
        if len(paragraph) <= max_chars:
            units.append(paragraph)
        else:
            units.extend(split_sentences(paragraph))
    chunks: list[list[str]] = []
    current: list[str] = []
    size = 0
    for unit in units:
        if current and size + len(unit) + 2 > max_chars:
            chunks.append(current)
            carry: list[str] = []
            # The overlap may not push the next chunk past the size: it shrinks to what fits.
            room = min(overlap_chars, max_chars - len(unit) - 2)
            for sentence in reversed(split_sentences(current[-1])):
                if sum(len(s) + 1 for s in carry) + len(sentence) > room:
                    break
                carry.insert(0, sentence)
            current = [" ".join(carry)] if carry else []
            size = len(current[0]) if current else 0
        current.append(unit)
        size += len(unit) + 2
    if current:
        chunks.append(current)
    return ["\n\n".join(part) for part in chunks]


def chunk_page(
    source: str,
    text: str,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    overlap_chars: int = DEFAULT_OVERLAP_CHARS,
) -> list[Chunk]:
    """Chunks of one page: one or more per section, sections delimited by headings."""
    if overlap_chars >= max_chars:
        raise InvalidArgumentError(
            f"overlap ({overlap_chars}) must be smaller than the chunk size ({max_chars}), "
            "or packing could never advance"
        )
    fields, lines = _front_matter(text.splitlines())
    title = fields.get("title", "")
    page = slugify(Path(source).with_suffix("").as_posix().replace("/", "-"))
    sections: list[tuple[tuple[str, ...], list[str]]] = []
    stack: list[tuple[int, str]] = []
    body: list[str] = []

    def close_section() -> None:
        paragraphs = [p.strip() for p in "\n".join(body).split("\n\n") if p.strip()]
        if paragraphs:
            sections.append((tuple(h for _, h in stack), paragraphs))
        body.clear()

    for line in lines:
        match = _HEADING.match(line)
        if match is None:
            body.append(line)
            continue
        level, heading = len(match.group(1)), match.group(2).strip()
        if level == 1 and not title:
            close_section()
            title = heading  # the first-line title names the page, it is not a section
            continue
        close_section()
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
    close_section()
    if not title:
        raise InvalidDataError(
            f"{source}: a page needs a title (front matter 'title:' or a '# ' line)"
        )

    chunks: list[Chunk] = []
    seen: set[str] = set()
    for path, paragraphs in sections:
        anchor = "/".join(slugify(h) for h in path) or "intro"
        for ordinal, piece in enumerate(_pack(paragraphs, max_chars, overlap_chars)):
            chunk_id = f"{page}#{anchor}.{ordinal}"
            if chunk_id in seen:
                # Two sections with the same heading path would share ids and silently merge
                # in the store; refuse so the page gets distinct headings.
                raise InvalidDataError(f"{source}: duplicate section {' > '.join(path)!r}")
            seen.add(chunk_id)
            chunks.append(Chunk(chunk_id, source, title, path, ordinal, piece))
    return chunks


def load_knowledge_base(
    root: Path,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    overlap_chars: int = DEFAULT_OVERLAP_CHARS,
    exclude: Iterable[str] = (),
) -> KnowledgeBase:
    """Every ``*.md`` page under ``root`` in path order, chunked."""
    skipped = set(exclude)
    files = sorted(p for p in root.rglob("*.md") if p.is_file())
    pages: list[str] = []
    chunks: list[Chunk] = []
    for path in files:
        source = path.relative_to(root).as_posix()
        if source in skipped:
            continue
        pages.append(source)
        text = path.read_text(encoding="utf-8")
        chunks.extend(chunk_page(source, text, max_chars=max_chars, overlap_chars=overlap_chars))
    if not chunks:
        raise InvalidDataError(
            f"the knowledge base at {root.name!r} has no Markdown pages with text"
        )
    return KnowledgeBase(root, tuple(pages), tuple(chunks))
