"""Why an HTTP subject gave no response, typed by whether trying again can help.

Transient failures (a 5xx, a 429, a refused or dropped connection, a timeout) subclass
``ConnectionError`` (a timeout also ``TimeoutError``), so ``vitrine.evaluate(..., retries=N)``
retries them with its default ``retry_on``. Permanent failures (any other 4xx, a reply that is
not JSON or lacks the answer) subclass ``ValueError``: they are never retried by default, and
the trial is left not measured with the error's sentence.
"""

from __future__ import annotations

from vitrine.errors import (
    EndpointError,
    EndpointTimeoutError,
    PermanentEndpointError,
    SubjectInputError,
    TransientEndpointError,
)

__all__ = [
    "EndpointError",
    "EndpointTimeoutError",
    "PermanentEndpointError",
    "SubjectInputError",
    "TransientEndpointError",
]
