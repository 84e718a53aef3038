"""The seal of a whole JSON document: a hash of everything in it but the seal itself.

Reports, live receipts and red-team run documents carry ``content_hash``, computed over their
canonical JSON (sorted keys, compact, UTF-8) without that field, so any edit after they were
written, a changed exit code included, no longer matches. Readers that decide from a document
check :func:`seal_problem` first and refuse, or flag, what fails.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["SEAL_FIELD", "document_hash", "seal_problem", "sealed"]

SEAL_FIELD = "content_hash"


def document_hash(body: Mapping[str, Any]) -> str:
    unsealed = {k: v for k, v in body.items() if k != SEAL_FIELD}
    canonical = json.dumps(unsealed, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def sealed(body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` with its seal added (replacing any seal it had)."""
    out = {k: v for k, v in body.items() if k != SEAL_FIELD}
    out[SEAL_FIELD] = document_hash(out)
    return out


def seal_problem(document: Mapping[str, Any]) -> str | None:
    """Why ``document`` cannot be trusted as written, or None when its seal matches."""
    seal = document.get(SEAL_FIELD)
    if not isinstance(seal, str) or not seal:
        return "it carries no seal, so an edit could not be told apart from what was written"
    if seal != document_hash(document):
        return "it does not match its seal: it was changed after it was written"
    return None
