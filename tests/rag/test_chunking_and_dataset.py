"""Chunk ids are stable and readable, and the dataset's chunk ids resolve against them."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest

from vitrine.rag._chunking import chunk_page, load_knowledge_base, split_sentences
from vitrine.rag._dataset import DatasetError, load_dataset, unresolved_chunk_ids

PAGE = """---
title: Delivery
---
Intro line about parcels.

## Standard delivery

Two to three days. Costs CHF 7.90.

### Saturday

Costs CHF 15.
"""


def test_chunk_ids_come_from_page_heading_path_and_ordinal():
    chunks = chunk_page("help/delivery.md", PAGE)
    assert [c.id for c in chunks] == [
        "help-delivery#intro.0",
        "help-delivery#standard-delivery.0",
        "help-delivery#standard-delivery/saturday.0",
    ]
    assert chunks[2].reference == "Delivery > Standard delivery > Saturday"
    assert chunk_page("help/delivery.md", PAGE) == chunks  # same input, same chunks


def test_a_long_section_splits_within_the_size_with_overlap():
    sentences = [f"Sentence number {n} says something about returns." for n in range(30)]
    page = "# Returns\n\n## Rules\n\n" + " ".join(sentences)
    chunks = chunk_page("returns.md", page, max_chars=300, overlap_chars=120)
    assert len(chunks) > 3
    assert all(len(c.text) <= 300 for c in chunks)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    for before, after in itertools.pairwise(chunks):
        last = split_sentences(before.text)[-1]
        assert after.text.startswith(last), "the next chunk repeats the boundary sentence"


def test_a_page_without_title_or_with_repeated_sections_is_refused():
    with pytest.raises(ValueError, match="needs a title"):
        chunk_page("x.md", "## Only a section\n\ntext")
    with pytest.raises(ValueError, match="duplicate section"):
        chunk_page("x.md", "# T\n\n## Same\n\na\n\n## Same\n\nb")


def test_the_shop_knowledge_base_has_20_to_40_titled_pages(shop_kb):
    assert 20 <= len(shop_kb.pages) <= 40
    assert len({c.id for c in shop_kb.chunks}) == len(shop_kb.chunks)
    assert all(c.title for c in shop_kb.chunks)


def test_a_20_to_40_kb_page_packs_into_bounded_overlapping_chunks():
    def paragraph(s: int, p: int) -> str:
        return " ".join(
            f"Clause {s}.{p}.{n} explains a rule about orders, returns and payment."
            for n in range(9)
        )

    sections = [
        f"## Section {s}\n\n" + "\n\n".join(paragraph(s, p) for p in range(4)) for s in range(12)
    ]
    page = "# Terms\n\n" + "\n\n".join(sections)
    assert 20_000 <= len(page) <= 40_000
    chunks = chunk_page("terms.md", page)
    assert all(len(c.text) <= 900 for c in chunks)
    for s in range(12):
        section = [c for c in chunks if c.heading_path == (f"Section {s}",)]
        assert [c.ordinal for c in section] == list(range(len(section)))
        assert len(section) >= 3
        for before, after in itertools.pairwise(section):
            previous, following = split_sentences(before.text), split_sentences(after.text)
            # The next chunk opens with the previous chunk's closing sentences.
            overlap = following[: following.index(previous[-1]) + 1]
            assert overlap == previous[-len(overlap) :]
            assert sum(len(x) + 1 for x in overlap) <= 160 + 1


def test_the_shop_pages_include_long_sections_split_into_several_chunks(shop_kb):
    assert max(c.ordinal for c in shop_kb.chunks) >= 1
    assert any(len(c.text) > 700 for c in shop_kb.chunks)


def test_dataset_keeps_the_43_originals_and_adds_independent_items(shop_items):
    ids = [i.id for i in shop_items]
    assert ids[:43] == [f"rag-{n:02d}" for n in range(1, 44)]
    assert len(shop_items) >= 83
    unanswerable = [i for i in shop_items if not i.has_relevant_chunk]
    assert len(unanswerable) >= 12
    assert all(not i.relevant_chunk_ids for i in unanswerable)
    multi_hop = [
        i for i in shop_items[43:] if len({c.split("#")[0] for c in i.relevant_chunk_ids}) > 1
    ]
    assert len(multi_hop) >= 2


def test_every_relevant_chunk_id_resolves_against_the_chunker(shop_kb, shop_items):
    broken = unresolved_chunk_ids(shop_items, shop_kb)
    assert not broken, (
        "dataset items name chunks the knowledge base no longer produces (a page heading was "
        f"renamed or a page removed): {broken}"
    )


def test_renaming_a_heading_breaks_the_ids_that_name_it(tmp_path: Path, shop_items):
    from vitrine_shop.rag import KNOWLEDGE_DIR

    copy = tmp_path / "kb"
    shutil.copytree(KNOWLEDGE_DIR, copy)
    page = copy / "delivery-options.md"
    page.write_text(page.read_text().replace("## Express delivery", "## Fast delivery"))
    broken = unresolved_chunk_ids(shop_items, load_knowledge_base(copy))
    assert broken == {"rag-12": ["delivery-options#express-delivery.0"]}


def test_dataset_flag_contradicting_its_chunk_ids_is_refused(tmp_path: Path):
    path = tmp_path / "d.json"
    path.write_text(
        '{"schema_version": 1, "items": [{"id": "a", "question": "q", "reference_answer": "r",'
        ' "relevant_chunk_ids": [], "has_relevant_chunk": true}]}'
    )
    with pytest.raises(DatasetError, match="has_relevant_chunk=True but 0"):
        load_dataset(path)
