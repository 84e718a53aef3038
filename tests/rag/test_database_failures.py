"""PostgreSQL failing at every stage is infrastructure (exit 4, one line), and the search is
what it says: the HNSW index when asked for, with its ef_search; the cache follows --output."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import psycopg
import pytest

from vitrine.rag._command import main
from vitrine.rag._database import DATABASE_URL_ENV, DatabaseUnavailable
from vitrine.rag._ingest import ingest
from vitrine.rag._vectorstore import VectorStore

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DEAD = "postgresql://vitrine@127.0.0.1:1/vitrine?connect_timeout=2"


def _one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _terminate(database: str, store: VectorStore) -> None:
    """Kill ``store``'s server process from another connection: the server going away."""
    pid = store._execute("SELECT pg_backend_pid()").fetchone()[0]
    with psycopg.connect(database, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", (pid,))


@pytest.mark.parametrize("command", [["ingest"], ["eval"], ["calibrate", "--dry-run"]])
def test_a_dead_port_exits_4_with_one_line(command, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(DATABASE_URL_ENV, DEAD)
    assert main([*command, "--output", str(tmp_path / "home")]) == 4
    line = _one_line_error(capsys.readouterr().err)
    assert "database" in line


def test_every_store_operation_reports_a_lost_connection_as_unavailable(database, shop_kb, minilm):
    vector = np.zeros(384, dtype=np.float32)
    vector[0] = 1.0
    for operation in (
        lambda s: s.search("t_lost", vector, 4),
        lambda s: s.info("t_lost"),
        lambda s: ingest(shop_kb, minilm, s, "t_lost", force=True),
        lambda s: s.ids("t_lost"),
    ):
        with VectorStore(database) as store:
            _terminate(database, store)
            with pytest.raises(DatabaseUnavailable, match="connection"):
                operation(store)


def test_the_server_going_away_between_ingestion_and_search_exits_4(
    vitrine_home, database, monkeypatch, tmp_path, capsys
):
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv(DATABASE_URL_ENV, database)
    original = VectorStore.search

    def search_after_the_server_left(self, *args, **kwargs):
        _terminate(database, self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(VectorStore, "search", search_after_the_server_left)
    report = tmp_path / "r.json"
    assert main(["eval", "--json-report", str(report)]) == 4
    line = _one_line_error(capsys.readouterr().err)
    assert "database connection failed" in line
    assert not report.exists()


def test_the_approximate_search_runs_on_the_index_and_the_exact_one_does_not(
    store, shop_kb, minilm
):
    ingest(shop_kb, minilm, store, "t_plan")
    vector = minilm.embed(["Can I pay with TWINT?"])[0]
    # 103 rows: left to itself the planner scans them all; the approximate search forces the index
    assert store.scan("t_plan", vector, 4) == "HNSW index scan"
    assert store.scan("t_plan", vector, 4, exact=True) == "sequential scan"
    assert "Index Scan using t_plan_embedding_idx" in store.explain("t_plan", vector, 4)
    wide = store.search("t_plan", vector, 4, ef_search=200)
    exact = store.search("t_plan", vector, 4, exact=True)
    assert [c.id for c in wide] == [c.id for c in exact]
    assert len(store.search("t_plan", vector, 4, ef_search=1)) >= 1


def test_ef_search_is_a_setting_of_eval(vitrine_home, database, tmp_path, capsys):
    pytest.importorskip("sentence_transformers")
    out = tmp_path / "r.json"
    main(["eval", "--limit", "3", "--ef-search", "100", "--json-report", str(out)])
    report = json.loads(out.read_text())
    assert report["search_plan"]["scan"] == "HNSW index scan"
    assert report["search_plan"]["ef_search"] == 100
    assert "HNSW search (HNSW index scan, ef_search 100)" in capsys.readouterr().out
    assert main(["eval", "--ef-search", "0"]) == 2


def test_the_embedding_cache_follows_output(database, monkeypatch, tmp_path):
    pytest.importorskip("sentence_transformers")
    monkeypatch.delenv("VITRINE_CACHE_DIR", raising=False)
    monkeypatch.setenv(DATABASE_URL_ENV, database)
    monkeypatch.chdir(tmp_path)
    output = tmp_path / "elsewhere"
    assert main(["ingest", "--force", "--output", str(output)]) == 0
    assert any((output / "cache" / "embeddings").rglob("*"))
    assert not (tmp_path / ".vitrine").exists()


def test_the_specifications_database_variable_is_an_alias(monkeypatch, tmp_path):
    from vitrine.rag._database import DATABASE_URL_ALIAS, database_url

    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    monkeypatch.setenv(DATABASE_URL_ALIAS, DEAD)
    assert database_url(tmp_path) == DEAD
    monkeypatch.setenv(DATABASE_URL_ENV, "postgresql://own/db")
    assert database_url(tmp_path) == "postgresql://own/db"  # vitrine's own name wins


def test_a_store_root_path_keeps_its_cache_beside_it(tmp_path: Path, monkeypatch):
    from vitrine.store._naming import cache_dir

    monkeypatch.delenv("VITRINE_CACHE_DIR", raising=False)
    assert cache_dir("embeddings", tmp_path) == tmp_path / "cache" / "embeddings"
    monkeypatch.setenv("VITRINE_CACHE_DIR", str(tmp_path / "explicit"))
    assert cache_dir("embeddings", tmp_path) == tmp_path / "explicit" / "embeddings"
