"""The pgvector table against a real PostgreSQL: idempotent ingestion, atomic replacement."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from vitrine.rag._chunking import Chunk, load_knowledge_base
from vitrine.rag._ingest import ingest
from vitrine.rag._vectorstore import StoredRow, VectorStore


class AxisEmbedder:
    """Deterministic 8-dimensional vectors from the text's characters: no model needed."""

    @property
    def model_id(self) -> str:
        return "axis-8"

    def embed(self, texts):
        matrix = np.zeros((len(texts), 8), dtype=np.float32)
        for row, text in enumerate(texts):
            for n, ch in enumerate(text.encode()):
                matrix[row, (ch + n) % 8] += 1.0
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture
def small_kb(tmp_path: Path):
    root = tmp_path / "kb"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\n## One\n\nFirst text.\n\n## Two\n\nSecond text.\n")
    (root / "b.md").write_text("# Beta\n\n## Three\n\nThird text.\n")
    return load_knowledge_base(root)


def test_reingesting_the_same_content_keeps_the_same_ids_and_rows(store: VectorStore, small_kb):
    first = ingest(small_kb, AxisEmbedder(), store, "t_idempotent", force=True)
    rows_before = store.rows("t_idempotent")
    second = ingest(small_kb, AxisEmbedder(), store, "t_idempotent", force=True)
    assert not first.skipped and not second.skipped
    assert store.rows("t_idempotent") == rows_before
    assert store.ids("t_idempotent") == ["a#one.0", "a#two.0", "b#three.0"]
    assert ingest(small_kb, AxisEmbedder(), store, "t_idempotent").skipped


def test_an_interrupted_ingestion_leaves_the_previous_table_intact(store: VectorStore, small_kb):
    ingest(small_kb, AxisEmbedder(), store, "t_interrupt", force=True)
    before = store.rows("t_interrupt")
    vectors = AxisEmbedder().embed([c.embedding_text for c in small_kb.chunks])

    def rows_then_interrupt() -> Iterator[StoredRow]:
        replacement = Chunk("z#new.0", "z.md", "Z", ("New",), 0, "Replacement text.")
        yield StoredRow(replacement, vectors[0])
        raise KeyboardInterrupt  # as if the operator pressed Ctrl-C mid-load

    with pytest.raises(KeyboardInterrupt):
        store.replace(
            "t_interrupt",
            rows_then_interrupt(),
            embedding_model="axis-8",
            dimension=8,
            content_hash="other",
        )
    assert store.rows("t_interrupt") == before
    assert store.info("t_interrupt__staging") is None
    info = store.info("t_interrupt")
    assert info is not None and info.content_hash == small_kb.content_hash


def test_search_ranks_by_cosine_similarity(store: VectorStore, small_kb):
    ingest(small_kb, AxisEmbedder(), store, "t_search", force=True)
    target = small_kb.chunks[1]
    query = AxisEmbedder().embed([target.embedding_text])[0]
    hits = store.search("t_search", query, 2)
    assert hits[0].id == target.id
    assert hits[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].similarity >= hits[1].similarity


def test_a_second_process_reuses_the_running_server_and_its_data(
    store: VectorStore, small_kb, vitrine_home: Path
):
    ingest(small_kb, AxisEmbedder(), store, "t_shared", force=True)
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from vitrine.rag._database import database_url
        from vitrine.rag._vectorstore import VectorStore
        with VectorStore(database_url(Path({str(vitrine_home)!r}))) as store:
            print(",".join(store.ids("t_shared")))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "a#one.0,a#two.0,b#three.0"
    # The child detached on exit; this process still holds the server.
    assert store.ids("t_shared") == ["a#one.0", "a#two.0", "b#three.0"]


def test_unsafe_table_names_are_refused(store: VectorStore):
    with pytest.raises(ValueError, match="not a plain lower-case SQL identifier"):
        store.ids('x"; DROP TABLE y; --')


def test_search_uses_the_hnsw_index_and_exact_search_scans(store: VectorStore):
    # Enough rows that the planner prefers the index (on a handful it rightly sorts them all).
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((3000, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = (
        StoredRow(Chunk(f"p#s.{n}", "p.md", "P", ("s",), n, f"row {n}"), v)
        for n, v in enumerate(vectors)
    )
    store.replace("t_plan", rows, embedding_model="random", dimension=8, content_hash="x")
    query = vectors[0]
    approximate = store.explain("t_plan", query, 4)
    exact = store.explain("t_plan", query, 4, exact=True)
    assert "Index Scan using t_plan_embedding_idx" in approximate
    assert "Seq Scan" in exact and "t_plan_embedding_idx" not in exact
    ann = store.search("t_plan", query, 4)
    brute = store.search("t_plan", query, 4, exact=True)
    assert ann[0].id == brute[0].id == "p#s.0"
    assert len({h.id for h in ann} & {h.id for h in brute}) >= 3  # approximate, nearly exact


@pytest.mark.parametrize(
    ("stuck", "message"),
    # Stuck: a model call in a worker thread can ignore the interruption; the watchdog still
    # stops the database and exits.
    [(False, "interrupted"), (True, "terminated")],
    ids=["unwinds", "stuck"],
)
def test_sigterm_stops_the_embedded_server(tmp_path: Path, stuck: bool, message: str):
    home = tmp_path / "home"
    script = textwrap.dedent(
        f"""
        import sys, time
        from vitrine.rag import _command as command
        from vitrine.rag._database import database_url
        from pathlib import Path

        command._TERM_GRACE_S = 1.0

        def slow_ingest(args):
            database_url(Path({str(home)!r}))
            try:
                print("server up", flush=True)  # inside the try: no window before it
                time.sleep(60)
            except KeyboardInterrupt:
                if not {stuck!r}:
                    raise
                time.sleep(60)
            return 0

        command._ingest = slow_ingest
        sys.exit(command.main(["ingest"]))
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "server up"
        assert (home / "pg" / "postmaster.pid").exists()
        child.terminate()  # SIGTERM
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 4
    assert message in err
    assert not (home / "pg" / "postmaster.pid").exists(), "PostgreSQL outlived the process"
