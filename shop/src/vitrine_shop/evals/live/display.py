"""The live console display: each trial as it finishes, then the suite's run and node lines."""

from __future__ import annotations

from typing import TextIO

from vitrine.live import LiveProgress
from vitrine.runs import TrialCompleted

__all__ = ["TrialDisplay"]


class TrialDisplay:
    """Adds one line per finished trial to :class:`LiveProgress`, which shows runs and nodes."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._progress = LiveProgress(stream)

    def handle(self, event: object) -> None:
        if isinstance(event, TrialCompleted):
            # Plain text: a case id and a sanitized reason, never model output.
            state = "not measured" if event.error else "observed"
            self._stream.write(
                f"  trial {event.case_id}: {state} ({event.duration_ms / 1000:.1f}s)\n"
            )
            self._stream.flush()
        self._progress.handle(event)
