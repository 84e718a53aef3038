"""Session receipts: one sanitized ``outcome.json`` per session and an index of all of them.

Layout under a receipts root (for live plans ``<store root>/live``)::

    live-sessions/<session-id>/outcome.json
    live-sessions/index.json

A receipt is a plain JSON document built by the caller from an explicit allow-list. The store
does not trust the caller to have been careful: every string in the document, keys included,
passes through :func:`~vitrine.redact.sanitize_text` on the way to disk. Receipts and the index
are sealed. The index is rewritten atomically with the new entry appended (never an in-place
edit); its reader refuses an index that fails its seal, and the next write rebuilds it from the
sealed receipts themselves, so an edited or damaged index never hides or misstates a session.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vitrine._redact import sanitize_text
from vitrine.errors import InvalidArgumentError, WrongTypeError
from vitrine.store._errors import TamperedRunError, UnsupportedSchemaError
from vitrine.store._files import atomic_write_json, read_json
from vitrine.store._naming import RUN_ID_PATTERN, new_run_id
from vitrine.store._private import PRIVATE_FILE, private_dirs
from vitrine.store._seal import RECEIPT_SEAL_FIELD, require_seal, sealed

__all__ = [
    "RECEIPT_SCHEMA",
    "RECEIPT_SCHEMA_VERSION",
    "SUPPORTED_RECEIPT_VERSIONS",
    "ReceiptIndexEntry",
    "ReceiptStore",
    "new_session_id",
    "sanitize_document",
]

RECEIPT_SCHEMA = "vitrine-session-receipt"
RECEIPT_SCHEMA_VERSION = 1
SUPPORTED_RECEIPT_VERSIONS = frozenset({1})
INDEX_SCHEMA_VERSION = 1
SESSIONS_DIR = "live-sessions"
OUTCOME_FILE = "outcome.json"
INDEX_FILE = "index.json"

# Long enough for a 1,000-character answer preview; every other field is shorter.
STRING_LIMIT = 1000
_MAX_DEPTH = 32


def new_session_id() -> str:
    """Same shape as a run id: sorts in time order, unique within a second."""
    return new_run_id()


def sanitize_document(value: Any, *, limit: int = STRING_LIMIT, _depth: int = 0) -> Any:
    """A JSON-only copy of ``value`` with every string scrubbed and bounded.

    Only JSON types survive: an object that is not a mapping, sequence, string, number, bool or
    None is refused rather than described, because describing it (its repr) is exactly the
    unrestricted runtime text a receipt must not hold.
    """
    if _depth > _MAX_DEPTH:
        raise InvalidArgumentError(
            "a receipt nests deeper than 32 levels: refuse rather than truncate"
        )
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        # NaN and infinities are not JSON; an absent number is stated as null.
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return sanitize_text(value, limit)
    if isinstance(value, Mapping):
        return {
            sanitize_text(str(k), 200): sanitize_document(v, limit=limit, _depth=_depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [sanitize_document(v, limit=limit, _depth=_depth + 1) for v in value]
    raise WrongTypeError(f"a receipt holds JSON values only, not {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class ReceiptIndexEntry:
    session_id: str
    plan: str
    started_at: str
    finished_at: str
    exit_code: int
    exit_reason: str
    outcome: str  # relative to the receipts root

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "plan": self.plan,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "exit_code": self.exit_code,
            "exit_reason": self.exit_reason,
            "outcome": self.outcome,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReceiptIndexEntry:
        return cls(
            str(data["session_id"]),
            str(data["plan"]),
            str(data.get("started_at") or ""),
            str(data.get("finished_at") or ""),
            int(data["exit_code"]),
            str(data.get("exit_reason") or ""),
            str(data["outcome"]),
        )


class ReceiptStore:
    """Receipts under ``<root>/live-sessions``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @property
    def sessions_dir(self) -> Path:
        return self.root / SESSIONS_DIR

    @property
    def index_path(self) -> Path:
        return self.sessions_dir / INDEX_FILE

    def outcome_path(self, session_id: str) -> Path:
        if not RUN_ID_PATTERN.match(session_id):
            raise InvalidArgumentError(f"{session_id!r} is not a session id (see new_session_id)")
        return self.sessions_dir / session_id / OUTCOME_FILE

    def write(self, session_id: str, document: Mapping[str, Any]) -> Path:
        """Persist one receipt and append it to the index; returns the outcome path."""
        path = self.outcome_path(session_id)
        body = sanitize_document(dict(document))
        body.update(
            schema=RECEIPT_SCHEMA, schema_version=RECEIPT_SCHEMA_VERSION, session_id=session_id
        )
        body = sealed(body, RECEIPT_SEAL_FIELD)  # an exit code edited afterwards no longer matches
        private_dirs(path.parent)  # the store root too, when a session is its first writer
        atomic_write_json(path, body, private=True)
        entry = self._entry_of(session_id, body)
        with self._index_lock():
            try:
                known = self.entries()
            except (TamperedRunError, UnsupportedSchemaError):
                known = self._rebuilt_entries()  # from the sealed receipts, which are the evidence
            entries = [e for e in known if e.session_id != session_id]
            entries.append(entry)
            index = {
                "schema_version": INDEX_SCHEMA_VERSION,
                "sessions": [e.to_dict() for e in entries],
            }
            atomic_write_json(self.index_path, sealed(index), private=True)
        return path

    def _entry_of(self, session_id: str, body: Mapping[str, Any]) -> ReceiptIndexEntry:
        return ReceiptIndexEntry(
            session_id,
            str(body.get("plan") or ""),
            str(body.get("started_at") or ""),
            str(body.get("finished_at") or ""),
            int(body.get("exit_code", 4)),
            str(body.get("exit_reason") or ""),
            self.outcome_path(session_id).relative_to(self.root).as_posix(),
        )

    def _rebuilt_entries(self) -> list[ReceiptIndexEntry]:
        """The index as the receipts on disk state it, oldest first; a receipt that fails its
        own checks is left out (reading it says why)."""
        try:
            names = sorted(os.listdir(self.sessions_dir))  # noqa: PTH208 - names only
        except OSError:
            return []
        out: list[ReceiptIndexEntry] = []
        for name in names:
            if not RUN_ID_PATTERN.match(name) or not self.outcome_path(name).is_file():
                continue
            try:
                out.append(self._entry_of(name, self.read(name)))
            except (OSError, ValueError, TypeError, TamperedRunError, UnsupportedSchemaError):
                continue
        return out

    def read(self, session_id: str) -> dict[str, Any]:
        """Read one receipt; refuses a schema version this reader does not know and a receipt
        whose seal does not match (:class:`TamperedRunError`)."""
        data = read_json(self.outcome_path(session_id))
        version = data.get("schema_version")
        if data.get("schema") != RECEIPT_SCHEMA or version not in SUPPORTED_RECEIPT_VERSIONS:
            raise UnsupportedSchemaError(
                f"receipt {session_id} has schema {data.get('schema')!r} version {version!r}; "
                f"this reader knows {RECEIPT_SCHEMA} {sorted(SUPPORTED_RECEIPT_VERSIONS)}"
            )
        require_seal(data, f"receipt {session_id}", TamperedRunError, RECEIPT_SEAL_FIELD)
        return data

    def entries(self) -> list[ReceiptIndexEntry]:
        """The index, oldest first; a missing index has none. An index that cannot be read, or
        fails its seal (edited, or written unsealed), is refused (:class:`TamperedRunError`)
        rather than shown; the next :meth:`write` rebuilds it from the receipts."""
        where = f"{SESSIONS_DIR}/{INDEX_FILE}"
        try:
            data = read_json(self.index_path)
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise TamperedRunError(f"the receipt index {where} cannot be read: {exc}") from exc
        if data.get("schema_version") != INDEX_SCHEMA_VERSION:
            version = str(data.get("schema_version"))[:20]
            raise UnsupportedSchemaError(
                f"the receipt index {where} has schema version {version!r}; this reader knows "
                f"{INDEX_SCHEMA_VERSION}"
            )
        require_seal(data, f"the receipt index {where}", TamperedRunError)
        raw = data.get("sessions")
        out: list[ReceiptIndexEntry] = []
        for item in raw if isinstance(raw, list) else []:
            if not isinstance(item, Mapping):
                continue
            try:
                out.append(ReceiptIndexEntry.from_dict(item))
            except (KeyError, TypeError, ValueError):
                continue  # one damaged entry must not hide the others
        return out

    @contextlib.contextmanager
    def _index_lock(self) -> Iterator[None]:
        # Two sessions finishing together must not both read the old index and drop one entry.
        private_dirs(self.sessions_dir)
        lock_path = self.sessions_dir / ".index.lock"
        with os.fdopen(os.open(lock_path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE), "a") as handle:
            try:
                import fcntl  # noqa: PLC0415 - POSIX only, so it is tried where it is needed
            except ImportError:  # no advisory locks on this platform: last writer wins
                yield
                return
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
