"""Bounding and scrubbing of text that may reach an artifact.

Reasons, previews and explanations come from exceptions, providers and models: any of them may
carry an endpoint URL, an API key or a huge payload. Everything that is persisted passes through
``sanitize_text`` so that no artifact needs to be trusted to have been careful.

A model's own words are kept as they are (a URL or a host name in an answer is part of the
answer), except for credentials: :func:`redact_credentials` removes every credential vitrine
was given (keys, header values, the password of a URL, each registered with
:func:`register_secret`), any stretch of eight or more of a key's characters (so a partly
masked key does not survive either) and whatever has a credential's syntax (``user:password@``
in a URL, a ``Basic`` or ``Bearer`` value). Model replies pass through it where they enter
vitrine (:class:`vitrine.providers.ChatCompletion`), so answers, previews, traces,
receipts, board pages and served replies all hold the redacted text.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from urllib.parse import unquote, urlsplit

from vitrine.errors import InvalidArgumentError

__all__ = [
    "DEFAULT_REASON_LIMIT",
    "REDACTED",
    "bound_text",
    "describe_exception",
    "forget_secrets",
    "redact_credentials",
    "register_secret",
    "sanitize_text",
]

REDACTED = "[redacted]"

DEFAULT_REASON_LIMIT = 240

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>)]+")
_HOST_PORT = re.compile(r"\b(?:[a-zA-Z0-9-]+\.)+[a-zA-Z]{2,}(?::\d+)?(?:/[^\s'\"<>)]*)?")
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]+")
# A value assigned to a credential-named field, however short: ``api_key=...``, ``token: ...``,
# ``api-key: ...`` (Azure's header), ``key=...``. A plain ``key: ...`` is prose ("missing key:
# price"), so the bare word counts only with ``=``.
_KEY_VALUE = re.compile(
    r"(?i)\b((?:x-)?api[_-]?key|access[_-]?token|refresh[_-]?token|client[_-]?secret|secret"
    r"|password|passwd|token|authorization|subscription[_-]key|key(?=\s*=))"
    r"(\s*[:=]\s*)(['\"]?)[^\s'\",;]+\3"
)
# A long value in an assignment or header whose name says it is a credential, however the name
# is spelled: ``AZURE_OPENAI_API_KEY=...``, ``Ocp-Apim-Subscription-Key: ...``, ``X-Auth: ...``.
_NAMED_CREDENTIAL = re.compile(
    r"(?i)\b([\w-]*(?:key|token|secret|passw(?:or)?d|credential|auth|signature)[\w-]*)"
    r"(\s*[:=]\s*)(['\"]?)[A-Za-z0-9._~+/=-]{16,}\3"
)
# A long key-alphabet token with a digit right after the word that introduces a credential in
# an error message: "invalid key 0f3a...", "key-0f3a..." (Mailgun). A hex key of Azure's shape
# is only a secret in such a context; the same 32 hex characters elsewhere are a digest, and a
# digit-free run of words after "key" is an identifier ("key-facts-are-mentioned-in-full").
_KEY_CONTEXT = re.compile(
    r"(?i)\b((?:api[ _-]?)?key|token|secret|credential|password)(s?\b\W{1,3}(?:is\W{1,3})?)"
    r"(?=[A-Za-z_+/=-]*\d)[A-Za-z0-9_+/=-]{20,}"
)
# Shapes that are credentials wherever they appear: provider prefixes and JWTs.
_PREFIXED_KEY = re.compile(
    r"\b(?:sk|pk|rk)[-_][A-Za-z0-9_-]{12,}"
    r"|\b(?:ghp|gho|ghu|ghs|ghr|hf|glpat|xox[abprs])[-_][A-Za-z0-9_-]{16,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\bAIza[0-9A-Za-z_-]{35}"
)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
# A bare long token is a secret only when it mixes upper case, lower case and digits, as random
# keys do; digests are lower-case hex and identifiers (run ids, criterion ids, report folder
# names) are words, digits and separators, and none of them may be redacted.
_LONG_TOKEN = re.compile(r"\b[A-Za-z0-9_-]{32,}\b")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# Credentials in a model's text. A URL's user information (``scheme://user:password@``):
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@'\"<>]+@")
# ``Basic`` and ``Bearer`` values, kept apart from prose ("the bearer of", "basic steps") by
# what follows them: a Basic value is base64 of ``user:password``; a Bearer value a token.
_BASIC_VALUE = re.compile(r"(?i)\bbasic\s+([A-Za-z0-9+/_-]{4,}={0,2})")
_BEARER_VALUE = re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/=-]{8,})")
# Characters a key (or a masked rendering of one, "sk-ab…yz", "sk-ab**yz") is spelled with.
_KEY_CHARACTERS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~+/=-*…"
)
# A credential shorter than this is redacted only where its syntax says it is one: "test" as
# a key must not take the word out of every answer.
_CREDENTIAL_MIN = 6
# A stretch of this many of a key's characters, in a row, is that key (partly shown).
_FRAGMENT = 8

_secrets_lock = threading.Lock()
_secrets: set[str] = set()
_credentials: set[str] = set()
_fragments: set[str] = set()


def register_secret(value: str | None, *, endpoint: bool = False) -> None:
    """Remember a configured credential or endpoint so every later scrub removes it verbatim.

    An ``endpoint`` (a base URL, its host) is scrubbed from errors and logs but stays in a
    model's answer; everything else is a credential, redacted from answers too. A URL's user
    name and password are credentials either way.
    """
    if not value or len(value) < 4:
        return
    found = [] if endpoint else [value]
    if "://" in value:
        try:
            parts = urlsplit(value)
            user, password = parts.username, parts.password
        except ValueError:
            user = password = None
        found += [unquote(v) for v in (user, password) if v]
        if user and password:
            found.append(f"{user}:{password}")
    with _secrets_lock:
        _secrets.add(value)
        for credential in found:
            if len(credential) < 4:
                continue  # "u" as a user name: removing it would remove every "u"
            _credentials.add(credential)
            _fragments.update(_key_fragments(credential))


def forget_secrets() -> None:
    with _secrets_lock:
        _secrets.clear()
        _credentials.clear()
        _fragments.clear()


def _key_fragments(credential: str) -> set[str]:
    """The stretches of ``credential`` that identify it: random-looking, never plain words."""
    if len(credential) < 2 * _FRAGMENT:
        return set()
    windows = (credential[i : i + _FRAGMENT] for i in range(len(credential) - _FRAGMENT + 1))
    return {w for w in windows if _classes(w) >= 2}


def _classes(text: str) -> int:
    return sum(
        (
            any(c.isupper() for c in text),
            any(c.islower() for c in text),
            any(c.isdigit() for c in text),
        )
    )


def redact_credentials(text: str) -> str:
    """``text`` without any credential (see the module docstring); everything else unchanged."""
    with _secrets_lock:
        known = sorted(
            (c for c in _credentials if len(c) >= _CREDENTIAL_MIN), key=len, reverse=True
        )
        fragments = frozenset(_fragments)
    for credential in known:
        if credential in text:
            text = text.replace(credential, REDACTED)
    if fragments:
        text = _redact_fragments(text, fragments)
    # Each pattern only where its mark is (most replies have none): a scan costs little.
    if "@" in text and "://" in text:
        text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    lowered = text.lower()
    if "basic" in lowered:
        text = _BASIC_VALUE.sub(_basic_or_keep, text)
    if "bearer" in lowered:
        text = _BEARER_VALUE.sub(_bearer_or_keep, text)
    return text


def _redact_fragments(text: str, fragments: frozenset[str]) -> str:
    """Every key-spelled word that holds a stretch of a known key becomes ``[redacted]``."""
    hits = []
    for fragment in fragments:  # a few dozen per key, each found at C speed
        at = text.find(fragment)
        while at != -1:
            hits.append(at)
            at = text.find(fragment, at + 1)
    spans: list[tuple[int, int]] = []
    for at in sorted(hits):
        start, end = at, at + _FRAGMENT
        while start > 0 and text[start - 1] in _KEY_CHARACTERS:
            start -= 1
        while end < len(text) and text[end] in _KEY_CHARACTERS:
            end += 1
        if spans and start <= spans[-1][1]:  # the same word, or one that touches it
            before = spans.pop()
            start, end = before[0], max(before[1], end)
        spans.append((start, end))
    for start, end in reversed(spans):
        text = text[:start] + REDACTED + text[end:]
    return text


def _basic_or_keep(match: re.Match[str]) -> str:
    value = match.group(1)
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), altchars=None, validate=True)
    except (binascii.Error, ValueError):
        return match.group(0)
    shown = decoded.decode("utf-8", "replace")
    if ":" in shown and shown.isprintable():
        return match.group(0)[: match.start(1) - match.start(0)] + REDACTED
    return match.group(0)


def _bearer_or_keep(match: re.Match[str]) -> str:
    value = match.group(1)
    if not (any(c.isdigit() for c in value) or (_classes(value) >= 2 and len(value) >= 12)):
        return match.group(0)
    return match.group(0)[: match.start(1) - match.start(0)] + REDACTED


def bound_text(text: str, limit: int) -> str:
    """Cut to at most ``limit`` characters, marking the cut so a reader knows text is missing."""
    if limit < 1:
        raise InvalidArgumentError(f"limit must be at least 1, got {limit}")
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + "…"


def sanitize_text(text: str, limit: int = DEFAULT_REASON_LIMIT) -> str:
    """Scrub credentials, URLs, host names and control characters, then bound the length."""
    if _secrets:
        with _secrets_lock:
            known = sorted(_secrets | _credentials, key=len, reverse=True)
        for secret in known:
            if secret in text:
                text = text.replace(secret, REDACTED)
    text = redact_credentials(text)
    text = _URL.sub("[url]", text)
    text = _BEARER.sub("Bearer [redacted]", text)
    text = _JWT.sub("[redacted]", text)
    text = _PREFIXED_KEY.sub("[redacted]", text)
    text = _KEY_VALUE.sub(_keep_name, text)
    text = _NAMED_CREDENTIAL.sub(_keep_name, text)
    text = _KEY_CONTEXT.sub(_keep_name, text)
    text = _LONG_TOKEN.sub(_redact_if_random, text)
    text = _HOST_PORT.sub(_host_or_keep, text)
    text = _CONTROL.sub(" ", text)
    return bound_text(" ".join(text.split()), limit)


def _keep_name(match: re.Match[str]) -> str:
    """The credential's name and separator stay, so a reader still sees what was removed."""
    return f"{match.group(1)}{match.group(2)}[redacted]"


def _redact_if_random(match: re.Match[str]) -> str:
    token = match.group(0)
    # Three of each case: a stamped folder name such as ``...-20261130T180000Z-...`` carries
    # two capitals, a random key of this length carries a dozen.
    upper = sum(c.isupper() for c in token)
    lower = sum(c.islower() for c in token)
    random = upper >= 3 and lower >= 3 and any(c.isdigit() for c in token)
    return "[redacted]" if random else token


def _host_or_keep(match: re.Match[str]) -> str:
    token = match.group(0)
    # File names such as report.json or module paths such as vitrine._stats are not hosts.
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
