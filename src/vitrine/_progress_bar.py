"""Progress over a counted set of steps, for the commands that run long.

On a terminal it is a rich bar (counts, elapsed, time left) that vanishes when the work ends, so
the report printed after it starts on a clean screen. Anywhere else (CI logs, pipes, a list in a
test) it is one plain line per finished step, ``mutants: [3/37] NC-02 killed (2.1 s; about
1m10s left)``, and never a carriage return. Without a destination it says nothing.

The lines go to the stream (or line writer) the command hands in, which is stderr for every
command: their stdout may be a report another program reads. rich is imported only when a bar
is drawn, so importing this module costs nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["StepProgress", "format_eta"]

LineWriter = Callable[[str], None]


def _short(seconds: float) -> str:
    """A duration a person reads at a glance: ``2.1 s``, ``1m10s``, ``2h05m``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def format_eta(elapsed_s: float, timed: int, remaining: int) -> str:
    """What is left, from the pace so far: ``done``, ``about 1m10s left``, or ``""`` (no pace)."""
    if remaining <= 0:
        return "done"
    if timed <= 0:
        return ""
    return f"about {_short(elapsed_s / timed * remaining)} left"


class StepProgress:
    """Counts finished steps and shows them: a bar on a terminal, else one line per step.

    ``begin(total)`` starts the count and the clock, ``step`` reports one finished step,
    ``skip`` one that finished without running (it does not set the pace), ``note`` a line
    that is not a step; ``close`` (or leaving the ``with`` block) removes the bar. The time
    left is the wall-clock pace since ``begin`` times the steps not yet finished, which holds
    for steps run one at a time and for steps run several at once.
    """

    def __init__(
        self,
        label: str,
        *,
        write: LineWriter | None = None,
        stream: TextIO | None = None,
        terminal: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self._write = write
        self._stream = stream
        self._terminal = terminal and stream is not None
        self._clock = clock
        self._started = clock()
        self._total = 0
        self._done = 0
        self._timed = 0
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    @classmethod
    def on(cls, stream: TextIO | None, label: str) -> StepProgress:
        """A bar when ``stream`` is a terminal, plain lines on it otherwise, silence for None."""
        if stream is None:
            return cls(label)
        isatty = getattr(stream, "isatty", None)
        terminal = bool(isatty()) if callable(isatty) else False
        write = None if terminal else _line_writer(stream)
        return cls(label, write=write, stream=stream, terminal=terminal)

    @classmethod
    def lines(cls, label: str, write: LineWriter | None) -> StepProgress:
        """Plain lines handed to ``write`` (None: silence)."""
        return cls(label, write=write)

    @property
    def enabled(self) -> bool:
        return self._write is not None or self._terminal

    @property
    def drawing(self) -> bool:
        """True while a bar is on the screen (a plain line would then tear it)."""
        return self._bar is not None

    @property
    def done(self) -> int:
        return self._done

    @property
    def total(self) -> int:
        return self._total

    def begin(self, total: int) -> None:
        """Start counting ``total`` steps from now (again, after a ``close``)."""
        self._total, self._done, self._timed = total, 0, 0
        self._started = self._clock()
        if self._terminal and total > 0:
            self._open_bar()

    def extend(self, more: int) -> None:
        """``more`` steps join those already counting (work that overlaps what is running)."""
        self._total += more
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, total=self._total)
        elif self._terminal and self._total > 0:
            self._open_bar()

    def step(self, name: str, outcome: str = "", *, duration_s: float | None = None) -> None:
        """One step finished; ``duration_s`` is its own time, shown beside the time left."""
        self._done += 1
        self._timed += 1
        self._show(name, outcome, duration_s)

    def skip(self, name: str, outcome: str) -> None:
        """One step that finished without running: counted, but it sets no pace."""
        self._done += 1
        self._show(name, outcome, None)

    def note(self, text: str) -> None:
        """A line that is not a step, printed above the bar or as a plain line."""
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        elif self._write is not None:
            self._write(text)
        elif self._terminal and self._stream is not None:
            _line_writer(self._stream)(text)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar, self._task = None, None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def line(self, name: str, outcome: str = "", duration_s: float | None = None) -> str:
        """The plain line for the step just counted."""
        eta = format_eta(self._clock() - self._started, self._timed, self._total - self._done)
        timing = "; ".join(
            part for part in (None if duration_s is None else _short(duration_s), eta) if part
        )
        text = f"{self.label}: [{self._done}/{self._total}] {name}"
        text += f" {outcome}" if outcome else ""
        return text + (f" ({timing})" if timing else "")

    def _show(self, name: str, outcome: str, duration_s: float | None) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self._done, last=f"{name} {outcome}".strip())
        elif self._write is not None:
            self._write(self.line(name, outcome, duration_s))

    def _open_bar(self) -> None:
        from rich.console import Console  # noqa: PLC0415 - only a drawn bar loads rich
        from rich.progress import (  # noqa: PLC0415
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.close()
        columns: list[Any] = [
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[last]}", style="dim", markup=False),
        ]
        self._bar = Progress(
            *columns,
            console=Console(file=self._stream, highlight=False),
            transient=True,
            # stdout may be machine output while stderr is a terminal: it is never routed into
            # the bar's stream. Other lines on stderr itself are printed above the bar.
            redirect_stdout=False,
            redirect_stderr=self._stream is sys.stderr,
        )
        self._task = self._bar.add_task(self.label, total=self._total, last="")
        self._bar.start()


def _line_writer(stream: TextIO) -> LineWriter:
    def write(text: str) -> None:
        stream.write(text + "\n")
        stream.flush()

    return write
