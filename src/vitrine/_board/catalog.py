"""The board's header index: one small row per sealed run or session, whatever wrote it.

Opening every artifact to list it is what makes a viewer slow on thousands of logs, so the
index is built from headers only and cached twice: the store-wide run index
(``runs-index/recent.jsonl``) is append-only, so only the bytes appended since the last look
are parsed; every other artifact's header is kept with the size and modification time of the
file it came from, in memory and in ``<root>/board/headers.json``, and re-read only when that
file changes. The artifacts stay the evidence: a run page always reads the run itself.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from vitrine.store._files import atomic_write_json
from vitrine.store._index import RunIndexEntry, index_path, index_problem, recover_index
from vitrine.store._private import private_dirs
from vitrine.store._seal import RECEIPT_SEAL_FIELD, SEAL_FIELD, seal_problem

__all__ = [
    "DOCUMENTS",
    "KINDS",
    "SEALED",
    "VERDICTS",
    "Catalog",
    "RunHeader",
    "verdict_of_exit",
]

# The kinds of evidence the board lists, in the order its filter offers them.
KINDS: Mapping[str, str] = {
    "benchmark": "benchmark run",
    "offline": "offline suite",
    "live": "live session",
    "redteam": "red-team run",
    "rag": "RAG evaluation",
    "behaviour": "behaviour report",
    "mutants": "mutant matrix",
}
# The file that holds each kind's document, inside the directory a header's location names.
DOCUMENTS: Mapping[str, str] = {
    "offline": "report.json",
    "rag": "report.json",
    "behaviour": "behaviour-report.json",
    "live": "outcome.json",
    "redteam": "redteam.json",
    "mutants": "matrix.json",
}
VERDICTS = (
    "pass",
    "warn",
    "fail",
    "not measured",
    "infrastructure",
    "invalid",
    "unknown",
    "unverified",
)
# The field that holds each kind's seal (every kind but benchmark runs, whose index lines are
# checked against the run's sealed manifest): a document that fails it is listed "unverified"
# and refused on its page, never shown as its claim.
SEALED: Mapping[str, str] = {
    "offline": SEAL_FIELD,
    "live": RECEIPT_SEAL_FIELD,
    "redteam": SEAL_FIELD,
    "rag": SEAL_FIELD,
    "behaviour": SEAL_FIELD,
    "mutants": SEAL_FIELD,
}

_EXIT_VERDICTS = {0: "pass", 1: "fail", 2: "invalid", 3: "not measured", 4: "infrastructure"}
_RUN_VERDICTS = {"PASS": "pass", "WARN": "warn", "FAIL": "fail", "PENDING": "not measured"}
_CACHE_FILE = "headers.json"
_CACHE_VERSION = 3  # 2: sealed documents checked; 3: mutant sessions keyed by folder, modes


def verdict_of_exit(code: object) -> str:
    """The board's verdict word for a process exit code (``unknown`` when there is none)."""
    return _EXIT_VERDICTS.get(code, "unknown") if isinstance(code, int) else "unknown"


@dataclass(frozen=True, slots=True)
class RunHeader:
    """What the index shows and filters on; ``location`` is relative to the store root."""

    kind: str
    key: str
    title: str
    suite: str
    plan: str
    arm: str
    verdict: str
    timestamp: str
    definition_hash: str
    location: str
    # An offline suite report's mode ("suite" for --all, "self-test", a suite's own mode).
    mode: str = ""
    # An offline suite report: whether it ran the registered controls.
    ran_controls: bool = False
    # An offline suite report that passed: the runs in it that failed, as its gates expected
    # (calibration arms, deliberately broken to prove a check can turn red).
    expected_failures: tuple[str, ...] = ()
    # A benchmark run that failed inside a suite session that passed: an expected failure.
    expected: bool = False
    # A benchmark run: where its line starts in the run index, so the line itself is read again
    # to check it against the run's sealed manifest (an offset, not the line's hash: the board
    # keeps one for every run of the store).
    index_offset: int = -1

    @property
    def ref(self) -> str:
        """The path of this run's page on the board."""
        return f"{self.kind}/{self.key}"

    @property
    def date(self) -> str:
        return self.timestamp[:10]


def _benchmark_header(
    entry: RunIndexEntry, prefix: str, offset: int, shared: dict[str, str]
) -> RunHeader:
    def one(text: str) -> str:
        # A store of 100,000 runs repeats a few dozen identities, arms and hashes: one copy
        # of each keeps the board's memory to the strings that differ per run.
        return shared.setdefault(text, text)

    definition = entry.definition
    return RunHeader(
        kind="benchmark",
        key=entry.run_id,
        title=one(f"{definition.get('key', '?')}@{definition.get('version', '?')}"),
        suite=one(str(definition.get("key") or "")),
        plan="",
        arm=one(entry.arm),
        verdict=_RUN_VERDICTS.get(entry.verdict, "unknown"),
        timestamp=entry.timestamp,
        definition_hash=one(str(definition.get("content_hash") or "")),
        location=prefix + entry.run_dir if prefix else entry.run_dir,
        index_offset=offset,
    )


# The index is parsed a slice at a time, so reading a large one never holds all of it at once.
_READ_CHUNK = 1 << 18


class _AppendedIndex:
    """One append-only run index, read incrementally: only new bytes are parsed."""

    def __init__(self, store: Path, prefix: str) -> None:
        self.store = store
        self.path = index_path(store)
        self.prefix = prefix  # where this store sits under the board's root
        self.headers: list[RunHeader] = []
        self.offset = 0
        self._identity: tuple[int, int] | None = None
        self._shared: dict[str, str] = {}

    def refresh(self) -> bool:
        """Read what was appended; True when the list changed."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            changed = bool(self.headers)
            self._reset(None)
            return changed
        identity = (stat.st_ino, stat.st_dev)
        changed = False
        if identity != self._identity or stat.st_size < self.offset:
            # Replaced or truncated: start over rather than trust an old offset.
            changed = bool(self.headers)
            self._reset(identity)
        if stat.st_size == self.offset:
            return changed
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            carry = b""
            while chunk := handle.read(_READ_CHUNK):
                data = carry + chunk
                end = data.rfind(b"\n") + 1  # a torn last line is left for the next look
                self._parse(data[:end], self.offset)
                self.offset += end
                carry = data[end:]
        return True

    def _reset(self, identity: tuple[int, int] | None) -> None:
        self.headers, self.offset, self._identity = [], 0, identity
        self._shared = {}

    def _parse(self, lines: bytes, offset: int) -> None:
        # Split at newlines only, so that each offset is exactly where readline finds the line.
        for line in lines.split(b"\n")[:-1]:
            entry = _entry(line)
            if entry is not None:
                self.headers.append(_benchmark_header(entry, self.prefix, offset, self._shared))
            offset += len(line) + 1

    def entry_at(self, header: RunHeader) -> RunIndexEntry | None:
        """The index line ``header`` was read from, read again now; None when it is gone."""
        if header.index_offset < 0:
            return None
        try:
            with self.path.open("rb") as handle:
                handle.seek(header.index_offset)
                entry = _entry(handle.readline())
        except OSError:
            return None
        return entry if entry is not None and entry.run_id == header.key else None


def _entry(line: bytes) -> RunIndexEntry | None:
    try:
        record = json.loads(line)
        return RunIndexEntry.from_record(record) if isinstance(record, dict) else None
    except (ValueError, KeyError, TypeError):
        return None  # one damaged line must not hide the runs around it


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _offline_header(doc: Mapping[str, Any], location: str) -> RunHeader | None:
    if not isinstance(doc.get("gates"), list):
        return None
    benchmarks = [b for b in doc.get("benchmarks") or () if isinstance(b, dict)]
    hashes = [b.get("content_hash") for b in benchmarks]
    passed = doc.get("exit_code") == 0
    failed_runs = tuple(
        str(run.get("run_id"))
        for bench in benchmarks
        for run in bench.get("runs") or ()
        if isinstance(run, dict) and run.get("verdict") == "FAIL"
    )
    return RunHeader(
        "offline",
        location.rsplit("/", 1)[-1],
        f"{_text(doc.get('suite'))} {_text(doc.get('plan'))}".strip(),
        _text(doc.get("suite")),
        _text(doc.get("plan")),
        "",
        verdict_of_exit(doc.get("exit_code")),
        _text(doc.get("started_at")),
        _text(hashes[0]) if hashes else "",
        location,
        mode=_text(doc.get("mode")),
        ran_controls=isinstance(doc.get("controls"), dict),
        expected_failures=failed_runs if passed else (),
    )


def _rag_header(doc: Mapping[str, Any], location: str) -> RunHeader | None:
    if not _text(doc.get("schema_version")).startswith("vitrine.rag-report"):
        return None
    return RunHeader(
        "rag",
        location.rsplit("/", 1)[-1],
        f"RAG evaluation ({len(doc.get('items') or ())} items)",
        "rag",
        "rag eval",
        _text(doc.get("generator")) if isinstance(doc.get("generator"), str) else "",
        verdict_of_exit(doc.get("exit_code")),
        _text(doc.get("created_at")),
        "",
        location,
    )


def _redteam_header(doc: Mapping[str, Any], location: str) -> RunHeader | None:
    if doc.get("schema") != "vitrine-redteam-run":
        return None
    target = _mapping(doc.get("target"))
    return RunHeader(
        "redteam",
        _text(doc.get("run_id")) or location.rsplit("/", 1)[-1],
        f"red team {_text(doc.get('kind'))} against {_text(target.get('name'))}",
        "redteam",
        _text(doc.get("kind")),
        _text(target.get("variant")),
        verdict_of_exit(doc.get("exit_code")),
        _text(doc.get("started_at")),
        "",
        location,
    )


def _behaviour_header(doc: Mapping[str, Any], location: str) -> RunHeader | None:
    if not _text(doc.get("schema")).startswith("vitrine.behaviour-report"):
        return None
    totals = _mapping(doc.get("totals"))
    status = doc.get("exit_status")
    return RunHeader(
        "behaviour",
        location.rsplit("/", 1)[-1],
        f"behaviour tests: {totals.get('passed', 0)} passed, {totals.get('failed', 0)} failed",
        "behaviour",
        "pytest",
        "",
        "pass" if status == 0 else "fail" if status == 1 else verdict_of_exit(status),
        _text(doc.get("created")),
        "",
        location,
    )


def _live_header(doc: Mapping[str, Any], location: str) -> RunHeader | None:
    if doc.get("schema") != "vitrine-session-receipt":
        return None
    definition = _mapping(doc.get("definition"))
    return RunHeader(
        "live",
        _text(doc.get("session_id")),
        f"live session {_text(doc.get('plan'))}",
        _text(definition.get("identity")).split("@", 1)[0],
        _text(doc.get("plan")),
        "",
        verdict_of_exit(doc.get("exit_code")),
        _text(doc.get("started_at")),
        _text(definition.get("content_hash")),
        location,
    )


def _mutants_header(doc: Mapping[str, Any], location: str) -> RunHeader | None:
    # The matrix is young and its shape may still grow: read only what is clearly there. The
    # key is the session folder, so every session has its own page.
    session = location.rsplit("/", 1)[-1]
    mutants = doc.get("mutants")
    count = len(mutants) if isinstance(mutants, list | dict) else 0
    return RunHeader(
        "mutants",
        session,
        f"mutant kill matrix ({count} mutants)",
        _text(doc.get("suite")),
        _text(doc.get("plan")),
        "",
        verdict_of_exit(doc.get("exit_code")),
        _text(doc.get("created_at")) or _text(doc.get("started_at")),
        "",
        location,
    )


HeaderReader = Callable[[Mapping[str, Any], str], "RunHeader | None"]


def _report_json_header(doc: Mapping[str, Any], location: str) -> RunHeader | None:
    # Offline suite reports and RAG reports share the file name; their schemas tell them apart.
    return _offline_header(doc, location) or _rag_header(doc, location)


def _report_readers(name: str) -> tuple[tuple[str, HeaderReader], ...]:
    """Which file of a ``reports/<name>`` directory holds its header, and how to read it."""
    if name.startswith("redteam-"):
        return (("redteam.json", _redteam_header),)
    return (("report.json", _report_json_header), ("behaviour-report.json", _behaviour_header))


def _mark_expected(runs: list[RunHeader], reports: Iterable[RunHeader]) -> list[RunHeader]:
    """``runs`` with each failed run that a passing suite session expected to fail marked so:
    the suite's own verdict, not a guess from the arm's name, says the failure was planned."""
    expected = {key for report in reports for key in report.expected_failures}
    if not expected:
        return runs
    return [
        replace(h, expected=True) if h.key in expected and h.verdict == "fail" else h for h in runs
    ]


def _sort_key(header: RunHeader) -> tuple[str, str]:
    return (header.timestamp, header.key)


class Catalog:
    """The header index of one store, refreshed cheaply on every read."""

    def __init__(self, root: Path, *, persist: bool = True) -> None:
        self.root = root
        self._persist = persist
        self._lock = threading.Lock()
        # The offline store, and the store that live plans keep under ``live/``.
        self._indexes = (_AppendedIndex(root, ""), _AppendedIndex(root / "live", "live/"))
        for index in self._indexes:
            recover_index(index.store)  # a run sealed by a killed process is listed too
        self._files: dict[str, tuple[int, int, RunHeader | None]] = {}
        self._dirty = False
        self._sorted: list[RunHeader] = []
        self._stale = True
        self._load_cache()

    # -- public ---------------------------------------------------------------------------

    def headers(self) -> list[RunHeader]:
        """Every run and session, newest first."""
        with self._lock:
            for index in self._indexes:
                self._stale |= index.refresh()
            file_headers = list(self._scan_files())
            if self._stale or self._dirty:
                runs = [h for index in self._indexes for h in index.headers]
                runs = _mark_expected(runs, file_headers)
                self._sorted = sorted([*runs, *file_headers], key=_sort_key, reverse=True)
                self._stale = False
            if self._dirty:
                self._save_cache()
            return self._sorted

    def verified(self, headers: Iterable[RunHeader]) -> list[RunHeader]:
        """``headers`` with each benchmark run's index verdict checked against the run's own
        sealed manifest (one small read a row, so only for the rows a page shows): an index
        line edited after the fact is shown ``unverified``, never as the verdict it claims."""
        return [self._checked(header) for header in headers]

    def _checked(self, header: RunHeader) -> RunHeader:
        if header.kind != "benchmark":
            return header
        # The live store's prefix is the longer one: try it before the root store's "".
        for index in sorted(self._indexes, key=lambda i: len(i.prefix), reverse=True):
            if header.location.startswith(index.prefix):
                entry = index.entry_at(header)
                if entry is not None and index_problem(index.store, entry) is None:
                    return header
                break
        return replace(header, verdict="unverified")

    def find(self, kind: str, key: str) -> RunHeader | None:
        for header in self.headers():
            if header.kind == kind and header.key == key:
                return header
        return None

    # -- artifacts with a header each ---------------------------------------------------------

    def _candidates(self) -> Iterator[tuple[str, tuple[tuple[str, HeaderReader], ...]]]:
        reports = self.root / "reports"
        for name in _listdir(reports):
            yield f"reports/{name}", _report_readers(name)
        sessions = self.root / "live" / "live-sessions"
        for name in _listdir(sessions):
            yield f"live/live-sessions/{name}", (("outcome.json", _live_header),)
        for name in _listdir(self.root / "mutants"):
            yield f"mutants/{name}", (("matrix.json", _mutants_header),)

    def _scan_files(self) -> Iterator[RunHeader]:
        seen: set[str] = set()
        for directory, readers in self._candidates():
            for file_name, reader in readers:
                relative = f"{directory}/{file_name}"
                header = self._header_of(relative, reader)
                seen.add(relative)
                if header is not None:
                    yield header
                    break
        for gone in set(self._files) - seen:
            del self._files[gone]
            self._dirty = True

    def _header_of(self, relative: str, reader: HeaderReader) -> RunHeader | None:
        path = self.root / relative
        try:
            stat = path.stat()
        except OSError:
            return None
        cached = self._files.get(relative)
        if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
            return cached[2]
        try:
            doc = json.loads(path.read_bytes())
        except (OSError, ValueError):
            doc = None
        header = reader(doc, relative.rsplit("/", 1)[0]) if isinstance(doc, dict) else None
        seal = SEALED.get(header.kind) if header is not None else None
        if header is not None and seal is not None and seal_problem(doc or {}, seal):
            header = replace(header, verdict="unverified")  # edited, or written unsealed
        self._files[relative] = (stat.st_mtime_ns, stat.st_size, header)
        self._dirty = True
        return header

    # -- the persisted copy -------------------------------------------------------------------

    @property
    def cache_path(self) -> Path:
        return self.root / "board" / _CACHE_FILE

    def _load_cache(self) -> None:
        if not self._persist:
            return
        try:
            data = json.loads(self.cache_path.read_bytes())
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or data.get("version") != _CACHE_VERSION:
            return
        files = data.get("files")
        for relative, value in files.items() if isinstance(files, dict) else ():
            try:
                mtime, size, fields = value
                if fields is not None:
                    fields["expected_failures"] = tuple(fields.get("expected_failures") or ())
                header = None if fields is None else RunHeader(**fields)
                self._files[str(relative)] = (int(mtime), int(size), header)
            except (TypeError, ValueError):
                continue

    def _save_cache(self) -> None:
        self._dirty = False
        if not self._persist:
            return
        try:
            private_dirs(self.cache_path.parent)
            atomic_write_json(
                self.cache_path,
                {
                    "version": _CACHE_VERSION,
                    "files": {
                        relative: [mtime, size, None if header is None else asdict(header)]
                        for relative, (mtime, size, header) in self._files.items()
                    },
                },
                private=True,
            )
        except OSError:
            pass  # a read-only store is still listed; only the next cold start is slower


def _listdir(directory: Path) -> Iterable[str]:
    try:
        return sorted(
            entry.name
            for entry in os.scandir(directory)
            if entry.is_dir() and not entry.name.startswith(".")
        )
    except OSError:
        return ()
