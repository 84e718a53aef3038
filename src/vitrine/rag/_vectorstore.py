"""Chunks and their vectors in a PostgreSQL table with a pgvector column and an HNSW index.

A table is replaced, never edited: the new rows go into a staging table and the staging table is
renamed over the live one, all inside one transaction. A reader sees the old table or the new
one; an ingestion interrupted anywhere (an exception, Ctrl-C, a killed process) rolls back and
leaves the previous table exactly as it was.

The table comment records what was ingested (embedding model, dimension, knowledge-base hash),
so a query can refuse vectors from another model and an ingestion of identical content can be
skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from vitrine._redact import describe_exception
from vitrine.errors import InvalidArgumentError, VectorStoreError
from vitrine.rag._chunking import Chunk
from vitrine.rag._database import DatabaseUnavailable

if TYPE_CHECKING:
    import psycopg

__all__ = ["RetrievedChunk", "TableInfo", "VectorStore", "VectorStoreError"]

_TABLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")
_BATCH_ROWS = 1000  # rows per pipelined INSERT batch


@dataclass(frozen=True, slots=True)
class RetrievedChunk:
    id: str
    source: str
    reference: str
    text: str
    similarity: float  # cosine similarity, 1 - pgvector's cosine distance
    rank: int  # 1-based


@dataclass(frozen=True, slots=True)
class TableInfo:
    table: str
    rows: int
    embedding_model: str
    dimension: int
    content_hash: str


@dataclass(frozen=True, slots=True)
class StoredRow:
    chunk: Chunk
    vector: npt.NDArray[np.float32]


class VectorStore:
    """One connection to one database; tables are named per embedding mode by the caller."""

    def __init__(self, url: str) -> None:
        try:
            import psycopg
            from pgvector.psycopg import register_vector
        except ImportError as exc:
            raise DatabaseUnavailable(
                f"psycopg and pgvector are not installed ({describe_exception(exc)}); "
                "install vitrine with the 'rag' extra"
            ) from exc
        try:
            self._conn: psycopg.Connection[Any] = psycopg.connect(url, autocommit=True)
            self._conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(self._conn)
        except psycopg.Error as exc:
            raise DatabaseUnavailable(
                f"cannot use the database: {describe_exception(exc)}"
            ) from exc

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with _unavailable_on_connection_loss(), self._conn.transaction():
            yield self._conn

    def _execute(self, query: str, params: tuple[Any, ...] = ()) -> Any:
        with _unavailable_on_connection_loss():
            return self._conn.execute(query, params)

    def info(self, table: str) -> TableInfo | None:
        """What the live table holds, or None when it does not exist."""
        name = _checked(table)
        with _unavailable_on_connection_loss():
            row = self._conn.execute(
                "SELECT obj_description(to_regclass(%s), 'pg_class'), to_regclass(%s) IS NOT NULL",
                (name, name),
            ).fetchone()
            if row is None or not row[1]:
                return None
            count = self._conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()
        meta = json.loads(row[0]) if row[0] else {}
        return TableInfo(
            name,
            int(count[0]) if count else 0,
            str(meta.get("embedding_model", "")),
            int(meta.get("dimension", 0)),
            str(meta.get("content_hash", "")),
        )

    def replace(
        self,
        table: str,
        rows: Iterable[StoredRow],
        *,
        embedding_model: str,
        dimension: int,
        content_hash: str,
    ) -> int:
        """Load ``rows`` into a staging table and swap it in, atomically. Returns the row count.

        ``rows`` may be lazy; if it raises part-way, nothing of this call remains.
        """
        name = _checked(table)
        staging = f"{name}__staging"
        count = 0
        with self._transaction() as conn:
            conn.execute(f'DROP TABLE IF EXISTS "{staging}"')
            conn.execute(
                f'CREATE TABLE "{staging}" ('
                "id text PRIMARY KEY, source text NOT NULL, reference text NOT NULL, "
                "ordinal integer NOT NULL, content text NOT NULL, content_hash text NOT NULL, "
                f"embedding vector({int(dimension)}) NOT NULL)"
            )
            insert = f'INSERT INTO "{staging}" VALUES (%s, %s, %s, %s, %s, %s, %s)'
            batch: list[tuple[Any, ...]] = []
            with conn.cursor() as cursor:
                for row in rows:
                    chunk = row.chunk
                    if row.vector.shape != (dimension,):
                        raise VectorStoreError(
                            f"chunk {chunk.id}: vector of shape {row.vector.shape}, "
                            f"expected ({dimension},)"
                        )
                    batch.append(
                        (
                            chunk.id,
                            chunk.source,
                            chunk.reference,
                            chunk.ordinal,
                            chunk.text,
                            chunk.content_hash,
                            row.vector,
                        )
                    )
                    count += 1
                    if len(batch) >= _BATCH_ROWS:
                        # A primary-key violation means the chunker produced a duplicate id;
                        # it aborts the whole swap instead of keeping one of the two rows.
                        cursor.executemany(insert, batch)
                        batch.clear()
                if batch:
                    cursor.executemany(insert, batch)
            # The HNSW build is fast only while its graph fits in maintenance_work_mem (64 MB
            # by default: about 30,000 vectors of 384 dimensions); beyond, it slows severalfold.
            conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
            conn.execute(
                f'CREATE INDEX "{staging}_embedding_idx" ON "{staging}" '
                "USING hnsw (embedding vector_cosine_ops)"
            )
            meta = json.dumps(
                {
                    "embedding_model": embedding_model,
                    "dimension": dimension,
                    "content_hash": content_hash,
                },
                sort_keys=True,
            )
            conn.execute(f"COMMENT ON TABLE \"{staging}\" IS '{_literal(meta)}'")
            conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            conn.execute(f'ALTER TABLE "{staging}" RENAME TO "{name}"')
            conn.execute(f'ALTER INDEX "{staging}_pkey" RENAME TO "{name}_pkey"')
            conn.execute(f'ALTER INDEX "{staging}_embedding_idx" RENAME TO "{name}_embedding_idx"')
        return count

    def drop(self, table: str) -> None:
        self._execute(f'DROP TABLE IF EXISTS "{_checked(table)}"')

    def ids(self, table: str) -> list[str]:
        rows = self._execute(f'SELECT id FROM "{_checked(table)}" ORDER BY id').fetchall()
        return [str(r[0]) for r in rows]

    def rows(self, table: str) -> list[tuple[Any, ...]]:
        """Every row in id order (for idempotence checks and debugging)."""
        return list(
            self._execute(
                f"SELECT id, source, reference, ordinal, content, content_hash, embedding::text "
                f'FROM "{_checked(table)}" ORDER BY id'
            ).fetchall()
        )

    def _query(self, table: str, top_k: int, *, exact: bool) -> str:
        name = _checked(table)
        if top_k < 1:
            raise InvalidArgumentError(f"top_k must be at least 1, got {top_k}")
        # The HNSW index serves only ``ORDER BY embedding <=> $1 LIMIT k``: any second sort key
        # (an id tie-break) forces a sequential scan, so the approximate query has none. The
        # exact query keeps the tie-break and runs with index scans disabled.
        order = "embedding <=> %s, id" if exact else "embedding <=> %s"
        return (
            "SELECT id, source, reference, content, 1 - (embedding <=> %s) AS similarity "
            f'FROM "{name}" ORDER BY {order} LIMIT %s'
        )

    def _planner(
        self, conn: psycopg.Connection[Any], *, exact: bool, ef_search: int | None
    ) -> None:
        """Session settings of one search: exact scans every row; the approximate search is
        made to use the HNSW index (on a small table the planner would otherwise pick a
        sequential scan, and "HNSW search" would be a label, not what ran)."""
        if exact:
            conn.execute("SET LOCAL enable_indexscan = off")
            return
        conn.execute("SET LOCAL enable_seqscan = off")
        if ef_search is not None:
            conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")

    def search(
        self,
        table: str,
        vector: npt.NDArray[np.float32],
        top_k: int,
        *,
        exact: bool = False,
        ef_search: int | None = None,
    ) -> list[RetrievedChunk]:
        """The ``top_k`` nearest chunks by cosine distance, nearest first.

        By default through the HNSW index (approximate, as users run it; ``ef_search`` is the
        size of its candidate list, pgvector's default 40); ``exact`` scans every row, the
        reference the index's recall is measured against.
        """
        query = self._query(table, top_k, exact=exact)
        with self._transaction() as conn:
            self._planner(conn, exact=exact, ef_search=ef_search)
            rows = conn.execute(query, (vector, vector, top_k)).fetchall()
        return [
            RetrievedChunk(str(r[0]), str(r[1]), str(r[2]), str(r[3]), float(r[4]), rank)
            for rank, r in enumerate(rows, start=1)
        ]

    def explain(
        self,
        table: str,
        vector: npt.NDArray[np.float32],
        top_k: int,
        *,
        exact: bool = False,
        ef_search: int | None = None,
    ) -> str:
        """PostgreSQL's plan for :meth:`search`, to show which scan serves it."""
        query = self._query(table, top_k, exact=exact)
        with self._transaction() as conn:
            self._planner(conn, exact=exact, ef_search=ef_search)
            rows = conn.execute(f"EXPLAIN {query}", (vector, vector, top_k)).fetchall()
        return "\n".join(str(r[0]) for r in rows)

    def scan(
        self,
        table: str,
        vector: npt.NDArray[np.float32],
        top_k: int,
        *,
        exact: bool = False,
        ef_search: int | None = None,
    ) -> str:
        """What the planner runs for :meth:`search`: "HNSW index scan" or "sequential scan"."""
        plan = self.explain(table, vector, top_k, exact=exact, ef_search=ef_search)
        return (
            "HNSW index scan" if f"{_checked(table)}_embedding_idx" in plan else ("sequential scan")
        )


@contextmanager
def _unavailable_on_connection_loss() -> Iterator[None]:
    """A lost or refused connection is the database being unavailable (infrastructure, exit
    4), never an error of the data: the server stopped, the network dropped, it restarts."""
    import psycopg

    try:
        yield
    except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
        raise DatabaseUnavailable(
            f"the database connection failed: {describe_exception(exc)}"
        ) from exc


def _checked(table: str) -> str:
    # Table names are interpolated into SQL (identifiers cannot be parameters), so only plain
    # lower-case identifiers are accepted.
    if not _TABLE_NAME.match(table):
        raise InvalidArgumentError(f"table name {table!r} is not a plain lower-case SQL identifier")
    return table


def _literal(text: str) -> str:
    return text.replace("'", "''")
