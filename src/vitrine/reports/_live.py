"""A live progress display for suites: node transitions and runs as they finish.

It consumes the same typed events the timeline records, on stderr, so stdout stays clean for
the summary and reports; the trials of a run are counted by :class:`StepProgress`.
"""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.markup import escape

from vitrine._bench.events import RunCompleted, RunStarted, TrialCompleted
from vitrine._progress import NodeEnded, NodeStarted, NodeStatus
from vitrine._progress_bar import StepProgress

__all__ = ["LiveProgress"]

_STYLE = {
    NodeStatus.COMPLETED: "green",
    NodeStatus.FAILED: "red",
    NodeStatus.SKIPPED: "dim",
}


class LiveProgress:
    """Trials, runs and suite nodes as they finish, for an operator watching a plan.

    The trials of the runs under way are counted as steps: a bar on a terminal, one line per
    trial elsewhere (its case id and whether it was observed; never model output). Each run
    and node is one line once it ends.
    """

    def __init__(self, stream: TextIO) -> None:
        self._console = Console(file=stream, highlight=False)
        self._trials = 0
        self._steps = StepProgress.on(stream, "  trial")
        self._open_runs = 0

    def handle(self, event: object) -> None:
        if isinstance(event, RunStarted):
            # Runs that overlap share one count, so one bar never hides another.
            if self._open_runs:
                self._steps.extend(event.cases)
            else:
                self._steps.begin(event.cases)
            self._open_runs += 1
        elif isinstance(event, TrialCompleted):
            self._trials += 1
            state = "not measured" if event.error else "observed"
            self._steps.step(event.case_id, state, duration_s=event.duration_ms / 1000)
        elif isinstance(event, RunCompleted):
            self._open_runs = max(0, self._open_runs - 1)
            if not self._open_runs:
                self._steps.close()  # the bar leaves before the line that ends the run
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
