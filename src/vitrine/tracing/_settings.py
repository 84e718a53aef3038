"""Where traces go, read from the command line and the environment; nothing when unset.

Tracing is off unless one of these names an OTLP/HTTP endpoint, first match wins:

1. ``vitrine --trace-to URL``;
2. ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as it is, as the OpenTelemetry spec says);
3. ``OTEL_EXPORTER_OTLP_ENDPOINT`` (``/v1/traces`` appended);
4. ``VITRINE_PHOENIX_URL``: an Arize Phoenix server, its OTLP endpoint ``{URL}/v1/traces``;
5. ``LANGFUSE_PUBLIC_KEY``, ``LANGFUSE_SECRET_KEY`` and ``LANGFUSE_HOST`` together: Langfuse's
   OTLP endpoint ``{LANGFUSE_HOST}/api/public/otel/v1/traces`` with Basic authentication.

``OTEL_EXPORTER_OTLP_HEADERS`` (``key=value,key=value``, values URL-encoded) adds headers.
Phoenix receives check results as span annotations only when ``VITRINE_PHOENIX_URL`` names it,
whichever endpoint the traces go to: a URL alone never says what server answers there.
Message content is captured only with ``--trace-content`` or
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import unquote, urlsplit

from vitrine._redact import register_secret
from vitrine.errors import TracingConfigError

__all__ = [
    "CONTENT_VARIABLE",
    "LangfuseTarget",
    "PhoenixTarget",
    "TraceSettings",
    "TracingConfigError",
    "resolve_settings",
    "validate_endpoint",
]

TRACES_VARIABLE = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"
HEADERS_VARIABLE = "OTEL_EXPORTER_OTLP_HEADERS"
CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
PHOENIX_VARIABLE = "VITRINE_PHOENIX_URL"
_LANGFUSE_VARIABLES = ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "LANGFUSE_HOST")
_TRACES_PATH = "/v1/traces"
_EMPTY: Mapping[str, str] = MappingProxyType({})

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LangfuseTarget:
    """A Langfuse project: its host and the key pair that authenticates as it."""

    host: str
    public_key: str
    secret_key: str = field(repr=False)

    @property
    def authorization(self) -> str:
        """The Basic ``Authorization`` header value Langfuse expects (public:secret)."""
        pair = f"{self.public_key}:{self.secret_key}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")

    @property
    def traces_url(self) -> str:
        """Langfuse's OTLP/HTTP traces endpoint."""
        return f"{self.host}/api/public/otel{_TRACES_PATH}"

    @property
    def scores_url(self) -> str:
        """Langfuse's scores API."""
        return f"{self.host}/api/public/scores"


@dataclass(frozen=True, slots=True)
class PhoenixTarget:
    """An Arize Phoenix server: its base URL, and the headers its API takes."""

    url: str
    headers: Mapping[str, str] = field(default_factory=lambda: _EMPTY, repr=False)

    @property
    def traces_url(self) -> str:
        """Phoenix's OTLP/HTTP traces endpoint."""
        return f"{self.url}{_TRACES_PATH}"

    @property
    def annotations_url(self) -> str:
        """Phoenix's span annotations API."""
        return f"{self.url}/v1/span_annotations"


@dataclass(frozen=True, slots=True)
class TraceSettings:
    """A configured trace destination: the OTLP URL, its headers, and what to capture."""

    traces_url: str
    headers: Mapping[str, str] = field(default_factory=lambda: _EMPTY, repr=False)
    capture_content: bool = False
    langfuse: LangfuseTarget | None = None
    service_name: str = "vitrine"
    phoenix: PhoenixTarget | None = None


def validate_endpoint(url: str, *, setting: str) -> str:
    """Return ``url`` without a trailing slash, or refuse it with a sentence naming ``setting``."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        hostname = parts.hostname
    except ValueError as exc:  # an unclosed [IPv6 bracket, a bad netloc
        raise TracingConfigError(f"{setting} is not a URL ({exc}): {text!r}") from None
    if parts.netloc.count("[") > 1 or parts.netloc.count("]") > 1:
        raise TracingConfigError(f"{setting} is not a URL (brackets in its host): {text!r}")
    if parts.scheme not in ("http", "https") or not hostname:
        raise TracingConfigError(
            f"{setting} must be an http:// or https:// URL with a host, such as "
            f"http://127.0.0.1:4318, got {text!r}"
        )
    if parts.query or parts.fragment:
        raise TracingConfigError(
            f"{setting} must not carry a query or a fragment: OTLP/HTTP posts to a plain path"
        )
    try:
        _ = parts.port
    except ValueError as exc:
        raise TracingConfigError(f"{setting} has an invalid port: {text!r}") from exc
    return text.rstrip("/")


def resolve_settings(
    env: Mapping[str, str] | None = None,
    *,
    trace_to: str | None = None,
    trace_content: bool = False,
) -> TraceSettings | None:
    """The trace destination the flags and ``env`` ask for, or None when tracing is off."""
    env = os.environ if env is None else env
    langfuse = _langfuse(env)
    phoenix_url = env.get(PHOENIX_VARIABLE, "").strip()
    phoenix = (
        # Phoenix's base URL; its OTLP path, given by mistake, would hide its API's paths.
        PhoenixTarget(
            validate_endpoint(phoenix_url, setting=PHOENIX_VARIABLE).removesuffix(_TRACES_PATH)
        )
        if phoenix_url
        else None
    )
    headers = _parse_headers(env.get(HEADERS_VARIABLE, ""))
    if trace_to is not None:
        url = _with_traces_path(validate_endpoint(trace_to, setting="--trace-to"))
    elif env.get(TRACES_VARIABLE, "").strip():
        url = validate_endpoint(env[TRACES_VARIABLE], setting=TRACES_VARIABLE)
    elif env.get(ENDPOINT_VARIABLE, "").strip():
        url = _with_traces_path(
            validate_endpoint(env[ENDPOINT_VARIABLE], setting=ENDPOINT_VARIABLE)
        )
    elif phoenix is not None:
        url = phoenix.traces_url
    elif langfuse is not None:
        url = langfuse.traces_url
    else:
        return None
    authorized = any(name.lower() == "authorization" for name in headers)
    if langfuse is not None and url == langfuse.traces_url and not authorized:
        headers = {**headers, "Authorization": langfuse.authorization}
    for value in headers.values():
        register_secret(value)
    capture = trace_content or env.get(CONTENT_VARIABLE, "").strip().lower() == "true"
    frozen = MappingProxyType(dict(headers))
    if phoenix is not None and url == phoenix.traces_url:
        # The headers that authenticate the spans to this Phoenix authenticate its API too;
        # headers meant for another collector never reach it.
        phoenix = PhoenixTarget(phoenix.url, frozen)
    return TraceSettings(url, frozen, capture, langfuse, phoenix=phoenix)


def _with_traces_path(base: str) -> str:
    return base if base.endswith(_TRACES_PATH) else base + _TRACES_PATH


def _langfuse(env: Mapping[str, str]) -> LangfuseTarget | None:
    values = [env.get(name, "").strip() for name in _LANGFUSE_VARIABLES]
    if not any(values):
        return None
    if not all(values):
        missing = [n for n, v in zip(_LANGFUSE_VARIABLES, values, strict=True) if not v]
        # A half-configured Langfuse must not stop an evaluation, but it must not pass unseen.
        _log.warning("Langfuse is not used: %s not set", ", ".join(missing))
        return None
    public_key, secret_key, host = values
    register_secret(secret_key)
    return LangfuseTarget(validate_endpoint(host, setting="LANGFUSE_HOST"), public_key, secret_key)


def _parse_headers(text: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise TracingConfigError(
                f"{HEADERS_VARIABLE} must be comma-separated key=value pairs; one item has no "
                "key or no '='"
            )
        headers[unquote(name.strip())] = unquote(value.strip())
    return headers
