"""Check results as span annotations in Arize Phoenix, posted at the end of the process.

Annotations are queued as results are recorded (nothing slow on a trial's path) and posted in
batches to ``POST {VITRINE_PHOENIX_URL}/v1/span_annotations`` when tracing shuts down, after the
spans they annotate were exported. Phoenix files an annotation whose span it has not ingested
yet and attaches it once the span arrives. Annotations that cannot be delivered are counted and
reported in one warning; they never fail the evaluation that produced them.
"""

from __future__ import annotations

import json
import logging
import math
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field

from vitrine._redact import describe_exception, sanitize_text
from vitrine.tracing._settings import PhoenixTarget
from vitrine.tracing._spans import EvaluationResult, MetadataValue

__all__ = ["Annotation", "AnnotationSender"]

_log = logging.getLogger(__name__)
_TIMEOUT_S = 10.0
_BATCH = 500
# Phoenix shows the label as the annotation's value: absence reads as words, never as a score.
_LABELS = {"not_measured": "not measured", "not_applicable": "not applicable"}


@dataclass(frozen=True, slots=True)
class Annotation:
    """One evaluation result, as an annotation by code of the span it judged."""

    span_id: str
    name: str
    label: str
    score: float | None
    explanation: str | None
    metadata: Mapping[str, MetadataValue]

    @classmethod
    def of(cls, span_id: str, result: EvaluationResult) -> Annotation:
        """The annotation of ``result`` on the span ``span_id``."""
        return cls(
            span_id,
            result.name,
            _LABELS.get(result.label, result.label),
            result.score,
            result.explanation,
            result.metadata,
        )

    def body(self) -> dict[str, object]:
        """One item of the ``data`` list of ``POST /v1/span_annotations``."""
        outcome: dict[str, object] = {"label": self.label}
        if self.score is not None:
            outcome["score"] = self.score
        if self.explanation:
            outcome["explanation"] = self.explanation
        return {
            "span_id": self.span_id,
            "name": self.name,
            "annotator_kind": "CODE",
            "result": outcome,
            "metadata": {k: _json_safe(v) for k, v in self.metadata.items() if v is not None},
        }


def _json_safe(value: MetadataValue) -> MetadataValue:
    # JSON has no infinity; a raw value that is one is kept as its words.
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


@dataclass(slots=True)
class AnnotationSender:
    """Queues annotations for one Phoenix and posts them on :meth:`flush`."""

    target: PhoenixTarget
    pending: list[Annotation] = field(default_factory=list)
    sent: int = 0
    failed: int = 0

    def add(self, annotation: Annotation) -> None:
        """Queue one annotation."""
        self.pending.append(annotation)

    def flush(self) -> None:
        """Post every queued annotation; count those that fail and warn once."""
        annotations, self.pending = self.pending, []
        for start in range(0, len(annotations), _BATCH):
            batch = annotations[start : start + _BATCH]
            try:
                self._post(batch)
            except (OSError, ValueError) as exc:
                # A Phoenix that refused or hung on one batch would do so for each of them:
                # the rest are counted as undelivered rather than each waiting out a timeout.
                self.failed += len(annotations) - start
                _log.warning(
                    "Phoenix at %s did not accept %d of %d check annotations: %s",
                    sanitize_text(self.target.url),
                    self.failed,
                    len(annotations),
                    describe_exception(exc),
                )
                return
            self.sent += len(batch)

    def _post(self, batch: list[Annotation]) -> None:
        request = urllib.request.Request(
            self.target.annotations_url,
            data=json.dumps({"data": [a.body() for a in batch]}).encode("utf-8"),
            headers={**self.target.headers, "Content-Type": "application/json"},
            method="POST",
        )
        # The URL is the configured Phoenix, never a value read from a response.
        with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
            if response.status >= 300:
                raise urllib.error.HTTPError(
                    self.target.annotations_url,
                    response.status,
                    "not accepted",
                    response.headers,
                    None,
                )
