"""The runs index's filters and paging, read from and written back to the URL.

Every view of the index is a URL, so a filtered page can be linked. A value the board cannot
use is refused with a sentence (HTTP 400) rather than silently dropped, because a link that
quietly shows everything would mislead whoever follows it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from urllib.parse import urlencode

from vitrine._board.catalog import KINDS, VERDICTS, RunHeader
from vitrine.errors import QueryError

__all__ = ["DEFAULT_PER_PAGE", "MAX_PER_PAGE", "IndexQuery", "Page", "QueryError"]

DEFAULT_PER_PAGE = 50
MAX_PER_PAGE = 500
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_HASH = re.compile(r"^[A-Za-z0-9:]{1,80}$")


@dataclass(frozen=True, slots=True)
class IndexQuery:
    """One view of the runs index. Empty strings mean "any"."""

    kind: str = ""
    suite: str = ""
    plan: str = ""
    arm: str = ""
    verdict: str = ""
    since: str = ""
    until: str = ""
    hash: str = ""
    page: int = 1
    per: int = DEFAULT_PER_PAGE

    @classmethod
    def parse(cls, params: Mapping[str, Sequence[str]]) -> IndexQuery:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise QueryError(
                f"unknown filter {unknown[0]!r}: the index filters on "
                + ", ".join(sorted(known - {"page", "per"}))
            )
        values = {k: (v[-1].strip() if v else "") for k, v in params.items()}
        query = cls(
            **{k: v for k, v in values.items() if k not in {"page", "per"}},
            page=_whole(values.get("page"), "page", 1, 1_000_000, 1),
            per=_whole(values.get("per"), "per", 1, MAX_PER_PAGE, DEFAULT_PER_PAGE),
        )
        query.validate()
        return query

    def validate(self) -> None:
        if self.kind and self.kind not in KINDS:
            raise QueryError(f"kind {self.kind!r} is not one of: {', '.join(KINDS)}")
        if self.verdict and self.verdict not in VERDICTS:
            raise QueryError(f"verdict {self.verdict!r} is not one of: {', '.join(VERDICTS)}")
        for name in ("since", "until"):
            value = getattr(self, name)
            if value and not _DATE.match(value):
                raise QueryError(f"{name} must be a date written YYYY-MM-DD, got {value!r}")
        if self.since and self.until and self.since > self.until:
            raise QueryError(f"since {self.since} is after until {self.until}: no run can match")
        if self.hash and not _HASH.match(self.hash):
            raise QueryError("hash must be a definition content hash or a prefix of one")

    def matches(self, header: RunHeader) -> bool:
        return (
            (not self.kind or header.kind == self.kind)
            and (not self.suite or header.suite == self.suite)
            and (not self.plan or header.plan == self.plan)
            and (not self.arm or header.arm == self.arm)
            and (not self.verdict or header.verdict == self.verdict)
            and (not self.since or header.date >= self.since)
            and (not self.until or header.date <= self.until)
            and (not self.hash or _hash_matches(header.definition_hash, self.hash))
        )

    def url(self, **changes: object) -> str:
        """The index URL of this view with ``changes`` applied; defaults are left out."""
        view = replace(self, **changes)  # type: ignore[arg-type]
        defaults = IndexQuery()
        params = {
            f.name: getattr(view, f.name)
            for f in fields(view)
            if getattr(view, f.name) != getattr(defaults, f.name)
        }
        return "/" + (f"?{urlencode(params)}" if params else "")

    @property
    def active(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self) if f.name not in {"page", "per"})


def _hash_matches(stored: str, wanted: str) -> bool:
    bare = stored.removeprefix("sha256:")
    return stored.startswith(wanted) or bare.startswith(wanted.removeprefix("sha256:"))


def _whole(raw: str | None, name: str, low: int, high: int, default: int) -> int:
    if raw is None or raw == "":
        return default
    if not raw.isdigit():
        raise QueryError(f"{name} must be a whole number, got {raw!r}")
    value = int(raw)
    if not low <= value <= high:
        raise QueryError(f"{name} must lie between {low} and {high}, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class Page:
    """One page of matching headers and what the pager needs to say about the rest."""

    rows: list[RunHeader]
    total: int
    query: IndexQuery

    @classmethod
    def of(cls, headers: Sequence[RunHeader], query: IndexQuery) -> Page:
        matching = [h for h in headers if query.matches(h)] if query.active else headers
        start = (query.page - 1) * query.per
        return cls(list(matching[start : start + query.per]), len(matching), query)

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.query.per))

    @property
    def first_index(self) -> int:
        return (self.query.page - 1) * self.query.per + 1 if self.rows else 0

    @property
    def last_index(self) -> int:
        return self.first_index + len(self.rows) - 1 if self.rows else 0
