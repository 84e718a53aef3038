"""Text that is safe to show: secrets redacted, lengths bounded, exceptions in one sentence."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine._redact import (
        REDACTED as REDACTED,
        bound_text as bound_text,
        describe_exception as describe_exception,
        redact_credentials as redact_credentials,
        register_secret as register_secret,
        sanitize_text as sanitize_text,
    )

__getattr__, __dir__ = lazy_exports(__name__)
