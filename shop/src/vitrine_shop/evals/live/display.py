"""The live console display: each trial as it finishes, then the suite's run and node lines."""

from __future__ import annotations

from vitrine.live import LiveProgress

__all__ = ["TrialDisplay"]

# LiveProgress counts each trial (a bar on a terminal, one line per trial in a log) and ends
# each run and node with a line; the shop's plans show exactly that.
TrialDisplay = LiveProgress
