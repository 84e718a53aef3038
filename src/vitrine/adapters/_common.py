"""What the framework adapters share: argument text as a mapping, outputs as answers.

Nothing here imports a framework, so each adapter module needs only its own SDK.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from vitrine._bench.model import Case
from vitrine._journal import TrialJournal
from vitrine._redact import bound_text

__all__ = [
    "RESULT_SUMMARY_CHARS",
    "answer_of",
    "default_input",
    "model_calls_seen",
    "summary",
    "tool_arguments",
]

RESULT_SUMMARY_CHARS = 200


def tool_arguments(text: str | Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A tool call's arguments as a mapping: ``{}`` for none, ``{"_raw": text}`` for text that
    is not a JSON object (what the model sent is kept, never dropped)."""
    if isinstance(text, Mapping):
        return MappingProxyType(dict(text))
    if not text:
        return MappingProxyType({})
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return MappingProxyType({"_raw": text})
    return MappingProxyType(value if isinstance(value, dict) else {"_raw": text})


def answer_of(output: Any) -> tuple[str | None, Mapping[str, Any]]:
    """A final output as the answer text and, for a structured output, its fields."""
    if output is None:
        return None, MappingProxyType({})
    if isinstance(output, str):
        return output, MappingProxyType({})
    dump = getattr(output, "model_dump", None)
    fields: Any
    if callable(dump):  # a pydantic model: both frameworks' structured outputs
        fields = dump(mode="json")
    elif dataclasses.is_dataclass(output) and not isinstance(output, type):
        fields = dataclasses.asdict(output)
    elif isinstance(output, Mapping):
        fields = dict(output)
    else:
        return str(output), MappingProxyType({})
    text = json.dumps(fields, ensure_ascii=False, default=str)
    return text, MappingProxyType(fields if isinstance(fields, dict) else {"value": fields})


def summary(value: Any) -> str:
    """A tool result as the bounded text a :class:`~vitrine.ToolCallRecord` keeps."""
    if value is None:
        return ""
    return bound_text(value if isinstance(value, str) else str(value), RESULT_SUMMARY_CHARS)


def default_input(case: Case) -> Any:
    """A case's input as a prompt: text or a list as it is, anything else as its JSON."""
    value = case.input
    if isinstance(value, str | list):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def model_calls_seen(journal: TrialJournal | None, before: int) -> bool:
    """Whether an instrumented client journaled model calls since ``before`` were counted.

    Those records carry the client's own retries; the framework's view of the same calls
    would count them twice.
    """
    return journal is not None and len(journal.model_calls) > before
