"""A live progress display for suites: node transitions and runs as they finish.

It consumes the same typed events the timeline records, on stderr, so stdout stays clean for
the summary and reports.
"""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.markup import escape

from vitrine._bench.events import RunCompleted, TrialCompleted
from vitrine._progress import NodeEnded, NodeStarted, NodeStatus

__all__ = ["LiveProgress"]

_STYLE = {
    NodeStatus.COMPLETED: "green",
    NodeStatus.FAILED: "red",
    NodeStatus.SKIPPED: "dim",
}


class LiveProgress:
    """One console line per finished trial and run, for an operator watching a live plan."""

    def __init__(self, stream: TextIO) -> None:
        self._console = Console(file=stream, highlight=False)
        self._trials = 0

    def handle(self, event: object) -> None:
        if isinstance(event, TrialCompleted):
            self._trials += 1
        elif isinstance(event, RunCompleted):
            self._console.print(
                f"  [dim]run[/dim] {escape(event.run_id)} {escape(event.verdict)} "
                f"[dim]({event.duration_s:.2f}s, {self._trials} trials so far)[/dim]"
            )
        elif isinstance(event, NodeStarted):
            self._console.print(f"[cyan]▶[/cyan] {escape(event.node)}")
        elif isinstance(event, NodeEnded):
            style = _STYLE.get(event.status, "white")
            detail = f" [dim]{escape(event.detail)}[/dim]" if event.detail else ""
            self._console.print(
                f"[{style}]■ {escape(event.node)} {event.status.value}[/{style}]{detail}"
            )
