"""Evaluation scores to Langfuse's scores API, sent at the end of the process.

Scores are queued as results are recorded (nothing slow on a trial's path) and posted one by
one when tracing shuts down. A score that cannot be delivered is logged and counted; it never
fails the evaluation that produced it.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from vitrine._redact import describe_exception
from vitrine.tracing._settings import LangfuseTarget

__all__ = ["Score", "ScoreSender"]

_log = logging.getLogger(__name__)
_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Score:
    """One evaluation score, attached to a trace and the span (observation) it judged."""

    trace_id: str
    observation_id: str | None
    name: str
    value: float | str
    comment: str | None

    def body(self) -> dict[str, object]:
        """The JSON body of ``POST /api/public/scores``."""
        body: dict[str, object] = {
            "traceId": self.trace_id,
            "name": self.name,
            "value": self.value,
            "dataType": "CATEGORICAL" if isinstance(self.value, str) else "NUMERIC",
        }
        if self.observation_id is not None:
            body["observationId"] = self.observation_id
        if self.comment:
            body["comment"] = self.comment
        return body


@dataclass(slots=True)
class ScoreSender:
    """Queues scores for one Langfuse project and posts them on :meth:`flush`."""

    target: LangfuseTarget
    pending: list[Score] = field(default_factory=list)
    sent: int = 0
    failed: int = 0

    def add(self, score: Score) -> None:
        """Queue one score."""
        self.pending.append(score)

    def flush(self) -> None:
        """Post every queued score; count and log (once) those that fail."""
        scores, self.pending = self.pending, []
        for score in scores:
            try:
                self._post(score)
            except (OSError, ValueError) as exc:
                self.failed += 1
                if self.failed == 1:
                    _log.warning(
                        "Langfuse did not accept a score (later failures are only counted): %s",
                        describe_exception(exc),
                    )
            else:
                self.sent += 1
        if self.failed:
            _log.warning("%d of %d Langfuse scores were not delivered", self.failed, len(scores))

    def _post(self, score: Score) -> None:
        request = urllib.request.Request(
            self.target.scores_url,
            data=json.dumps(score.body()).encode("utf-8"),
            headers={
                "Authorization": self.target.authorization,
                "Content-Type": "application/json",
            },
            method="POST",
        )
        # The URL is the configured Langfuse host, never a value read from a response.
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
            if response.status >= 300:
                raise urllib.error.HTTPError(
                    self.target.scores_url, response.status, "not accepted", response.headers, None
                )
