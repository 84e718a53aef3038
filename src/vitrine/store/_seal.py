"""The seal of a whole JSON document: a hash of everything in it but the seal itself.

Reports and red-team run documents carry ``content_hash``, live receipts ``receipt_seal`` (their
callers' documents may hold a ``content_hash`` of their own), computed over their canonical
JSON (sorted keys, compact, UTF-8) without that field, so any edit after they were written, a
changed exit code included, no longer matches. Readers that decide from a document
check :func:`seal_problem` first and refuse, or flag, what fails.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "RECEIPT_SEAL_FIELD",
    "SEAL_FIELD",
    "document_hash",
    "require_seal",
    "seal_problem",
    "sealed",
]

SEAL_FIELD = "content_hash"
RECEIPT_SEAL_FIELD = "receipt_seal"


def document_hash(body: Mapping[str, Any], field: str = SEAL_FIELD) -> str:
    unsealed = {k: v for k, v in body.items() if k != field}
    canonical = json.dumps(unsealed, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def sealed(body: Mapping[str, Any], field: str = SEAL_FIELD) -> dict[str, Any]:
    """``body`` with its seal in ``field`` (replacing any seal it had)."""
    out = {k: v for k, v in body.items() if k != field}
    out[field] = document_hash(out, field)
    return out


def seal_problem(document: Mapping[str, Any], field: str = SEAL_FIELD) -> str | None:
    """Why ``document`` cannot be trusted as written, or None when its seal in ``field``
    matches."""
    seal = document.get(field)
    if not isinstance(seal, str) or not seal:
        return "it carries no seal, so an edit could not be told apart from what was written"
    if seal != document_hash(document, field):
        return "it does not match its seal: it was changed after it was written"
    return None


def require_seal(
    document: Mapping[str, Any],
    where: str,
    error: Callable[[str], Exception],
    field: str = SEAL_FIELD,
) -> None:
    """Raise ``error("<where> cannot be trusted: <why>")`` unless ``document``'s seal matches."""
    problem = seal_problem(document, field)
    if problem is not None:
        raise error(f"{where} cannot be trusted: {problem}")
