"""Why an HTTP subject gave no response, typed by whether trying again can help.

Transient failures (a 5xx, a 429, a refused or dropped connection, a timeout) subclass
``ConnectionError`` (a timeout also ``TimeoutError``), so ``vitrine.evaluate(..., retries=N)``
retries them with its default ``retry_on``. Permanent failures (any other 4xx, a reply that is
not JSON or lacks the answer) subclass ``ValueError``: they are never retried by default, and
the trial is left not measured with the error's sentence.
"""

from __future__ import annotations

from vitrine.errors import VitrineError

__all__ = [
    "EndpointError",
    "EndpointTimeoutError",
    "PermanentEndpointError",
    "SubjectInputError",
    "TransientEndpointError",
]


class EndpointError(VitrineError):
    """An HTTP subject's endpoint did not give a usable reply; ``status`` is its HTTP status."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status

    @property
    def transient(self) -> bool:
        """Whether the same request may succeed later."""
        return isinstance(self, TransientEndpointError)


class TransientEndpointError(EndpointError, ConnectionError):
    """A failure that may pass: server error, rate limit, connection lost. Retryable."""


class EndpointTimeoutError(TransientEndpointError, TimeoutError):
    """The endpoint did not answer within the subject's timeout. Retryable."""


class PermanentEndpointError(EndpointError, ValueError):
    """A failure the same request will meet again: a 4xx, a reply of the wrong shape."""


class SubjectInputError(ValueError, VitrineError):
    """A case whose input the subject cannot turn into a request; fix the case or the subject."""
