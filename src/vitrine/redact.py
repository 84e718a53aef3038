"""Bounding and scrubbing of text that may reach an artifact.

Reasons, previews and explanations come from exceptions, providers and models: any of them may
carry an endpoint URL, an API key or a huge payload. Everything that is persisted passes through
``sanitize_text`` so that no artifact needs to be trusted to have been careful.
"""

from __future__ import annotations

import re
import threading

__all__ = [
    "DEFAULT_REASON_LIMIT",
    "bound_text",
    "describe_exception",
    "forget_secrets",
    "register_secret",
    "sanitize_text",
]

DEFAULT_REASON_LIMIT = 240

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>)]+")
_HOST_PORT = re.compile(r"\b(?:[a-zA-Z0-9-]+\.)+[a-zA-Z]{2,}(?::\d+)?(?:/[^\s'\"<>)]*)?")
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]+")
_KEY_VALUE = re.compile(
    r"(?i)\b(api[_-]?key|access[_-]?token|secret|password|passwd|token|authorization)"
    r"(\s*[:=]\s*)(['\"]?)[^\s'\",;]+\3"
)
# Provider keys are long opaque tokens; a 32+ character run of key alphabet is never prose.
_OPAQUE_TOKEN = re.compile(r"\b(?:sk|pk|rk|key|az)[-_][A-Za-z0-9_-]{12,}\b|\b[A-Za-z0-9_-]{32,}\b")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

_secrets_lock = threading.Lock()
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a configured credential or endpoint so every later scrub removes it verbatim."""
    if value and len(value) >= 4:
        with _secrets_lock:
            _secrets.add(value)


def forget_secrets() -> None:
    with _secrets_lock:
        _secrets.clear()


def bound_text(text: str, limit: int) -> str:
    """Cut to at most ``limit`` characters, marking the cut so a reader knows text is missing."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + "…"


def sanitize_text(text: str, limit: int = DEFAULT_REASON_LIMIT) -> str:
    """Scrub credentials, URLs, host names and control characters, then bound the length."""
    if _secrets:
        with _secrets_lock:
            known = sorted(_secrets, key=len, reverse=True)
        for secret in known:
            if secret in text:
                text = text.replace(secret, "[redacted]")
    text = _URL.sub("[url]", text)
    text = _BEARER.sub("Bearer [redacted]", text)
    text = _KEY_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}[redacted]", text)
    text = _OPAQUE_TOKEN.sub("[redacted]", text)
    text = _HOST_PORT.sub(_host_or_keep, text)
    text = _CONTROL.sub(" ", text)
    return bound_text(" ".join(text.split()), limit)


def _host_or_keep(match: re.Match[str]) -> str:
    token = match.group(0)
    # File names such as report.json or module paths such as vitrine.stats are not hosts.
    if "/" in token or ":" in token or (token.count(".") >= 2 and not _looks_like_code(token)):
        return "[host]"
    return token


def _looks_like_code(token: str) -> bool:
    return token.startswith(("vitrine", "vitrine_shop")) or token.endswith((".py", ".json"))


def describe_exception(exc: BaseException, limit: int = DEFAULT_REASON_LIMIT) -> str:
    """A safe one-line account of an exception: its type and a scrubbed, bounded message."""
    name = type(exc).__name__
    message = str(exc)
    if not message:
        return name
    return sanitize_text(f"{name}: {message}", limit)
