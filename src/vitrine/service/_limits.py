"""Bounded server state: conversation sessions with expiry, and per-client token buckets.

Both stores are bounded in entries, not only in time, so a client that opens sessions (or
rotates addresses) as fast as it can costs the server a fixed amount of memory. Sessions are
also bounded per client, so one client's load evicts its own oldest conversations before
anyone else's. Both take the clock as an argument so tests can move time instead of sleeping.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from vitrine.errors import InvalidArgumentError

__all__ = ["MAX_RETRY_AFTER_S", "Session", "SessionStore", "TokenBuckets"]

Clock = Callable[[], float]
# A Retry-After past an hour tells a client nothing useful; it also keeps the header short.
MAX_RETRY_AFTER_S = 3600


@dataclass(slots=True)
class Session:
    id: str
    persona_id: str | None
    owner: str = ""  # the client that opened the session (its address)
    turns: list[str] = field(default_factory=list)
    last_used: float = 0.0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class SessionStore:
    """Sessions by id, least recently used first out, each expiring after ``ttl_s`` idle.

    A conversation keeps at most ``max_turns`` user turns; older turns fall off the front, so
    a long session stays a bounded prompt rather than growing without end. One owner holds at
    most ``per_owner`` sessions: opening one more evicts that owner's least recently used one.
    """

    def __init__(
        self,
        *,
        max_sessions: int = 1000,
        ttl_s: float = 1800.0,
        max_turns: int = 20,
        per_owner: int | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        if (
            max_sessions < 1
            or ttl_s <= 0
            or max_turns < 1
            or (per_owner is not None and per_owner < 1)
        ):
            raise InvalidArgumentError("session limits must be positive")
        self.max_sessions = max_sessions
        self.per_owner = per_owner
        self.ttl_s = ttl_s
        self.max_turns = max_turns
        self._clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def __len__(self) -> int:
        self._expire()
        return len(self._sessions)

    def create(self, persona_id: str | None, owner: str = "") -> Session:
        self._expire()
        if self.per_owner is not None:
            owned = [key for key, session in self._sessions.items() if session.owner == owner]
            for key in owned[: max(0, len(owned) - self.per_owner + 1)]:
                del self._sessions[key]
        while len(self._sessions) >= self.max_sessions:
            self._sessions.popitem(last=False)
        # Unguessable: a session id is a bearer token for its conversation.
        session = Session(
            "s-" + secrets.token_urlsafe(12), persona_id, owner, last_used=self._clock()
        )
        self._sessions[session.id] = session
        return session

    def get(self, session_id: str, owner: str | None = None) -> Session | None:
        """The live session, or None; with ``owner``, None also for another owner's session."""
        self._expire()
        session = self._sessions.get(session_id)
        if session is None or (owner is not None and session.owner != owner):
            return None
        session.last_used = self._clock()
        self._sessions.move_to_end(session_id)
        return session

    def conversation(self, session: Session, message: str) -> tuple[str, ...]:
        """The turns an answer to ``message`` sees, without recording ``message`` yet."""
        return (*session.turns, message)[-self.max_turns :]

    def add_turn(self, session: Session, message: str) -> tuple[str, ...]:
        """Record an answered turn; only answered turns become part of the conversation."""
        session.turns[:] = self.conversation(session, message)
        session.last_used = self._clock()
        return tuple(session.turns)

    def _expire(self) -> None:
        cutoff = self._clock() - self.ttl_s
        while self._sessions:
            oldest = next(iter(self._sessions.values()))
            if oldest.last_used > cutoff:
                break
            self._sessions.popitem(last=False)


class TokenBuckets:
    """One token bucket per client key: ``capacity`` burst, ``rate`` tokens per second."""

    def __init__(
        self,
        *,
        capacity: float = 30.0,
        rate: float = 10.0,
        max_clients: int = 10_000,
        clock: Clock = time.monotonic,
    ) -> None:
        if not (math.isfinite(capacity) and math.isfinite(rate)):
            raise InvalidArgumentError("a rate limit needs finite numbers")
        if capacity < 1 or rate <= 0 or max_clients < 1:
            raise InvalidArgumentError(
                "a rate limit needs capacity >= 1, rate > 0 and max_clients >= 1"
            )
        self.capacity = capacity
        self.rate = rate
        self.max_clients = max_clients
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, key: str) -> float:
        """Take one token; return 0.0 when allowed, else the seconds until one is available."""
        now = self._clock()
        tokens, stamp = self._buckets.pop(key, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - stamp) * self.rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / self.rate
        self._buckets[key] = (tokens, now)
        # Evicting the least recently seen client forgets its debt, which only ever lets a
        # client through early: acceptable for a memory bound.
        while len(self._buckets) > self.max_clients:
            self._buckets.popitem(last=False)
        return wait

    @staticmethod
    def retry_after(wait_s: float) -> int:
        """Whole seconds for a ``Retry-After`` header, between 1 and :data:`MAX_RETRY_AFTER_S`."""
        if not math.isfinite(wait_s):
            return MAX_RETRY_AFTER_S
        return min(MAX_RETRY_AFTER_S, max(1, math.ceil(wait_s)))
