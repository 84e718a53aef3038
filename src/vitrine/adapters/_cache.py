"""The opt-in model-call cache: a request asked before is answered from disk, not the model.

A key is the SHA-256 of the whole request in canonical form: the method, the URL (scheme,
host, port, path and query: another server or API version is another answer), the JSON body
with its keys sorted (model, messages, tools, temperature, seed, stream: everything the
client sent), and the few headers that change the answer (:data:`ANSWER_HEADERS`). The
other headers (the key, the user agent, the SDK's retry count and timeouts) do not change
what the model says and are left out, so a retried request finds the same entry.

One file per key, ``<dir>/<first two hex digits>/<key>.json``, written to a temporary sibling
and renamed over the target: a crash leaves the old entry or the new one, never half of one.
Only successful answers are stored; an error (any status but 200) is never cached, so a
transient 5xx cannot become the permanent answer.

A paid service is never answered from the cache unless the cache was built with
``allow_paid=True``: a live run exists to measure the model as it answers today.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from vitrine._redact import sanitize_text
from vitrine.errors import InvalidArgumentError, InvalidDataError, UsageError
from vitrine.store._files import atomic_write_json

__all__ = ["ANSWER_HEADERS", "CachedAnswer", "ModelCallCache", "paid_plan_scope"]

FORMAT = "vitrine-model-call-cache"
VERSION = 1

# Headers that choose what answers: the organization and project (their models, fine-tunes
# and policies), beta features, and Azure's API version when sent as a header. Everything
# else is transport.
ANSWER_HEADERS = ("openai-organization", "openai-project", "openai-beta", "api-version")

# Hosts whose every request bills, whatever the environment declares.
_BILLING_HOSTS = ("api.openai.com",)
_BILLING_SUFFIXES = (".openai.azure.com", ".azure.com", ".anthropic.com", ".openai.com")

# Set while a paid live plan runs (``vitrine --eval-plan ... --confirm-paid``).
_PAID_PLAN: ContextVar[str | None] = ContextVar("vitrine_paid_plan", default=None)


@contextmanager
def paid_plan_scope(plan: str | None) -> Iterator[None]:
    """Mark the code inside as a run of the paid plan ``plan`` (None: not paid), so a model-call
    cache inside it refuses to answer unless it was built with ``allow_paid=True``."""
    token = _PAID_PLAN.set(plan)
    try:
        yield
    finally:
        _PAID_PLAN.reset(token)


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """A stored answer: what the server sent, byte for byte, and where it was read from."""

    status: int
    content_type: str
    body: bytes
    path: Path


def _free_host(host: str) -> bool:
    """A service on this machine costs nothing; any other is paid unless declared free."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _billing_host(host: str) -> bool:
    return host in _BILLING_HOSTS or host.endswith(_BILLING_SUFFIXES)


def endpoint_is_paid(url: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether requests to ``url`` are billed: loopback is free; a service the operator
    declared free (``VITRINE_PROVIDER_COST=free``, as for ``--provider openai``) is free unless
    it is OpenAI's, Azure's or Anthropic's own, which always bill; anything else is paid."""
    host = (urlsplit(url).hostname or "").lower()
    if _free_host(host):
        return False
    if _billing_host(host):
        return True
    return (environ.get("VITRINE_PROVIDER_COST") or "paid").strip().lower() != "free"


def canonical_url(url: str) -> str:
    """The URL as the key sees it: lower-case scheme and host, explicit port, sorted query."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    host = (parts.hostname or "").lower()
    return f"{scheme}://{host}:{port}{parts.path}" + (f"?{query}" if query else "")


class ModelCallCache:
    """An on-disk cache of model answers, passed to ``instrument_openai(client, cache=...)``.

    ``path`` is a directory (made on first store). Inside a trial, a request the cache holds
    is answered from disk without reaching the server; its
    :class:`~vitrine.adapters.ModelCallRecord` says ``cached=True`` and the trial's
    provenance gains ``+model-cache``. A request it does not hold goes to the server, and a
    200 answer is stored. Errors are never stored.

    Under a paid live plan, or for a request to a paid service (anything but loopback, unless
    declared free with ``VITRINE_PROVIDER_COST=free``; OpenAI's and Azure's own hosts always
    bill), the cache refuses with a :class:`~vitrine.errors.UsageError` unless
    ``allow_paid=True``: a paid run is meant to measure the live model, and reusing yesterday's
    answer must be asked for. An entry that cannot be read (a damaged or foreign file) raises
    :class:`~vitrine.errors.InvalidDataError` naming the file, never a bare traceback;
    delete the file to ask the model again.
    """

    def __init__(self, path: str | os.PathLike[str], *, allow_paid: bool = False) -> None:
        if not isinstance(path, str | os.PathLike) or not os.fspath(path):
            raise InvalidArgumentError(f"ModelCallCache needs a directory path, got {path!r}")
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise InvalidArgumentError(
                f"ModelCallCache path {self.path} is a file; it must be a directory"
            )
        self.allow_paid = bool(allow_paid)
        self.hits = 0
        self.misses = 0
        self.stores = 0

    def __repr__(self) -> str:
        return f"ModelCallCache({str(self.path)!r}, allow_paid={self.allow_paid})"

    # -- keys ------------------------------------------------------------------------------

    @staticmethod
    def key(method: str, url: str, headers: Mapping[str, str], body: bytes) -> str:
        """The entry key of a request: SHA-256 of its canonical form (see the module doc)."""
        lowered = {name.lower(): value for name, value in headers.items()}
        try:
            parsed: Any = json.loads(body) if body else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            parsed = {"raw": base64.b64encode(body).decode("ascii")}
        canonical = json.dumps(
            {
                "v": VERSION,
                "method": method.upper(),
                "url": canonical_url(url),
                "headers": {h: lowered[h] for h in ANSWER_HEADERS if h in lowered},
                "body": parsed,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        return hashlib.sha256(canonical.encode()).hexdigest()

    def entry_path(self, key: str) -> Path:
        """Where the entry of ``key`` lives."""
        return self.path / key[:2] / f"{key}.json"

    # -- the paid lane ---------------------------------------------------------------------

    def refuse_if_paid(self, url: str) -> None:
        """Raise :class:`UsageError` when a request to ``url`` may not be answered from here."""
        if self.allow_paid:
            return
        plan = _PAID_PLAN.get()
        if plan is not None:
            raise UsageError(
                f"the model-call cache at {self.path} refuses to answer inside the paid plan "
                f"{plan!r}: a paid run measures the live model. Build it with "
                "ModelCallCache(..., allow_paid=True) to reuse stored answers anyway, or drop "
                "cache=... from instrument_openai"
            )
        if endpoint_is_paid(url):
            raise UsageError(
                f"the model-call cache at {self.path} refuses a paid service "
                f"({sanitize_text(canonical_url(url).split('/')[2])}): answers from a paid "
                "model are reused only when asked for. Build it with "
                "ModelCallCache(..., allow_paid=True), or declare a self-hosted service free "
                "with VITRINE_PROVIDER_COST=free"
            )

    # -- reading and writing ---------------------------------------------------------------

    def lookup(self, key: str) -> CachedAnswer | None:
        """The stored answer of ``key``, or None; a damaged entry raises naming its file."""
        path = self.entry_path(key)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            self.misses += 1
            return None
        except OSError as exc:
            raise InvalidDataError(
                f"model-call cache entry {path} cannot be read ({exc.strerror or exc})"
            ) from exc
        answer = self._decode(path, key, raw)
        self.hits += 1
        return answer

    @staticmethod
    def _decode(path: Path, key: str, raw: bytes) -> CachedAnswer:
        def damaged(why: str) -> InvalidDataError:
            return InvalidDataError(
                f"model-call cache entry {path} is damaged ({why}); delete it to ask the model "
                "again"
            )

        try:
            entry = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise damaged("not JSON") from exc
        if not isinstance(entry, dict) or entry.get("format") != FORMAT:
            raise damaged(f"not a {FORMAT} entry")
        if entry.get("version") != VERSION:
            raise damaged(f"format version {entry.get('version')!r}, this vitrine reads {VERSION}")
        if entry.get("key") != key:
            raise damaged("it holds another request's answer")
        response = entry.get("response")
        if not isinstance(response, dict):
            raise damaged("no response")
        status, body, encoding = (
            response.get("status"),
            response.get("body"),
            response.get("encoding", "utf-8"),
        )
        if status != 200 or not isinstance(body, str) or encoding not in ("utf-8", "base64"):
            raise damaged("its response is not a stored answer")
        try:
            data = base64.b64decode(body, validate=True) if encoding == "base64" else body.encode()
        except ValueError as exc:
            raise damaged("its body does not decode") from exc
        content_type = response.get("content_type")
        return CachedAnswer(
            200, content_type if isinstance(content_type, str) else "application/json", data, path
        )

    def store(
        self, key: str, *, method: str, url: str, model: str | None, content_type: str, body: bytes
    ) -> Path:
        """Store a successful answer under ``key`` atomically; returns the entry's path."""
        path = self.entry_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            text, encoding = body.decode(), "utf-8"
        except UnicodeDecodeError:
            text, encoding = base64.b64encode(body).decode("ascii"), "base64"
        atomic_write_json(
            path,
            {
                "format": FORMAT,
                "version": VERSION,
                "key": key,
                # The path, not the host: an entry should not carry where the service lives.
                "request": {"method": method.upper(), "path": urlsplit(url).path, "model": model},
                "response": {
                    "status": 200,
                    "content_type": content_type,
                    "encoding": encoding,
                    "body": text,
                },
                "stored_at": datetime.now(UTC).isoformat(timespec="seconds"),
            },
            private=True,
        )
        self.stores += 1
        return path
