"""Suite graphs and their timelines: which node is running, which finished, and how.

A suite declares its nodes up front (a preview a person can read before anything runs); each
node then starts once and ends once. ``close`` refuses to leave a node active, so a completed
suite can never show a stale STARTED row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from vitrine.errors import TimelineError
from vitrine.reports._model import TimelineEntry

__all__ = [
    "NodeEnded",
    "NodeStarted",
    "NodeStatus",
    "SuiteNode",
    "Timeline",
    "TimelineError",
]


class NodeStatus(StrEnum):
    """Where one node of a suite timeline stands."""

    PENDING = "PENDING"
    ACTIVE = "ACTIVE"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"


@dataclass(frozen=True, slots=True)
class SuiteNode:
    id: str
    kind: str  # gate | diagnostic | predicate | persistence | controls | terminal
    label: str


@dataclass(frozen=True, slots=True)
class NodeStarted:
    node: str


@dataclass(frozen=True, slots=True)
class NodeEnded:
    node: str
    status: NodeStatus
    detail: str = ""


@dataclass
class _State:
    status: NodeStatus = NodeStatus.PENDING
    started: float | None = None
    ended: float | None = None
    detail: str = ""


@dataclass
class Timeline:
    nodes: Sequence[SuiteNode]
    sink: Callable[[object], None] | None = None
    _states: dict[str, _State] = field(default_factory=dict)
    _origin: float = field(default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        ids = [n.id for n in self.nodes]
        if len(ids) != len(set(ids)):
            raise TimelineError("suite nodes must have unique ids")
        self._states = {n.id: _State() for n in self.nodes}

    def _state(self, node: str) -> _State:
        try:
            return self._states[node]
        except KeyError:
            raise TimelineError(f"unknown suite node {node!r}") from None

    def start(self, node: str) -> None:
        state = self._state(node)
        if state.status is not NodeStatus.PENDING:
            raise TimelineError(f"node {node!r} started twice")
        state.status, state.started = NodeStatus.ACTIVE, time.perf_counter()
        self._emit(NodeStarted(node))

    def end(self, node: str, status: NodeStatus = NodeStatus.COMPLETED, detail: str = "") -> None:
        state = self._state(node)
        if state.status is not NodeStatus.ACTIVE:
            raise TimelineError(f"node {node!r} ended without being started")
        if status in (NodeStatus.ACTIVE, NodeStatus.PENDING):
            raise TimelineError(f"node {node!r} cannot end as {status.value}")
        state.status, state.ended, state.detail = status, time.perf_counter(), detail
        self._emit(NodeEnded(node, status, detail))

    def skip(self, node: str, detail: str) -> None:
        state = self._state(node)
        if state.status is not NodeStatus.PENDING:
            raise TimelineError(f"node {node!r} cannot be skipped after it started")
        state.status, state.detail = NodeStatus.SKIPPED, detail
        self._emit(NodeEnded(node, NodeStatus.SKIPPED, detail))

    def active(self) -> list[str]:
        return [n for n, s in self._states.items() if s.status is NodeStatus.ACTIVE]

    def close(self, detail: str = "suite ended before this node ran") -> None:
        """End the suite: active nodes are failed, pending ones skipped; none stays open."""
        for node, state in self._states.items():
            if state.status is NodeStatus.ACTIVE:
                self.end(node, NodeStatus.FAILED, "still running when the suite ended")
            elif state.status is NodeStatus.PENDING:
                self.skip(node, detail)

    def entries(self) -> list[TimelineEntry]:
        out = []
        for node in self.nodes:
            state = self._states[node.id]
            started = 0.0 if state.started is None else state.started - self._origin
            duration = (
                0.0 if state.started is None or state.ended is None else state.ended - state.started
            )
            out.append(
                TimelineEntry(
                    node=node.id,
                    kind=node.kind,
                    status=state.status.value,
                    started_s=round(started, 4),
                    duration_s=round(duration, 4),
                    detail=state.detail,
                )
            )
        return out

    def _emit(self, event: object) -> None:
        if self.sink is None:
            return
        try:
            self.sink(event)
        except Exception:  # a broken display must never break the suite it displays
            self.sink = None
