"""Connections that cannot hold the service open by sending half a request.

uvicorn closes a connection that stays idle between two requests (its keep-alive timeout), but
not one that has sent part of a request head and then nothing more: each such connection stays
open for ever, so a few hundred of them exhaust the process's descriptors. Here a connection
that has not completed a request head within :data:`REQUEST_HEAD_TIMEOUT_S` (a fresh one, or
one between requests) is closed. A request being answered, however slowly it streams, is never
cut.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["REQUEST_HEAD_TIMEOUT_S", "BoundedH11Protocol"]

REQUEST_HEAD_TIMEOUT_S = 15.0


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, closing connections that never finish a request head."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_check: asyncio.TimerHandle | None = None
        self._waiting_since: object = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._schedule_check()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_check is not None:
            self._head_check.cancel()
            self._head_check = None
        super().connection_lost(exc)

    def _waiting_for_a_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _schedule_check(self) -> None:
        # What the connection was waiting on at this check: the same cycle (or none) still
        # waiting at the next one means no request head arrived for a whole period.
        self._waiting_since = self.cycle if self._waiting_for_a_head() else None
        self._head_check = self.loop.call_later(REQUEST_HEAD_TIMEOUT_S, self._check)

    def _check(self) -> None:
        self._head_check = None
        if self.transport.is_closing():
            return
        if self._waiting_for_a_head() and self._waiting_since is self.cycle:
            self.transport.close()
            return
        self._schedule_check()
