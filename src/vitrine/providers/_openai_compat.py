"""A :class:`~vitrine.providers.ChatModel` over any OpenAI-compatible endpoint.

:class:`OpenAICompatibleModel` posts chat-completion requests in the wire format that OpenAI,
Azure OpenAI deployments and OpenAI-compatible servers (vLLM, Ollama, a llama.cpp server, a
gateway) share, through :class:`~vitrine.providers._http_transport.PooledJsonClient`: aiohttp
with one keep-alive connection pool per event loop, and only the fields vitrine reads taken
from each reply. The OpenAI SDK is not on this path: its per-request machinery cost 3 to
17 ms of client CPU a request (measured at 50 and 200 concurrent requests), several times
what the rest of a trial costs. aiohttp is imported when a model is created, so merely
importing this module (or running ``vitrine --help``) does not pay for it.

What this layer adds to a bare HTTP call:

- **Its own retries.** Every call goes through
  :func:`vitrine.providers._retry.call_with_retry`, so each attempt is recorded and a
  throttled-then-recovered call is visible as such; a ``Retry-After`` is honoured.
- **Typed, sanitized failures.** Every failure becomes a
  :class:`~vitrine.errors.ProviderError` whose detail holds only the HTTP status, its
  standard phrase and, from a fixed allow-list, the provider's error code (or, below HTTP, the
  transport's exception class). The provider's own message, the URL and the key never enter
  it, and no exception is chained, so not even a traceback carries the raw error body.
- **Scrubbed logs.** The HTTP stacks vitrine uses log at INFO/DEBUG; a filter on those
  loggers passes each line through :func:`vitrine.redact.sanitize_text`.
- **Honest usage.** Token counts come from the response; a cost is recorded only when the
  provider reports one in ``usage`` (some gateways do), never estimated.
- **Servers as users run them.** Tools are always offered with ``tool_choice: "auto"`` (a
  llama.cpp server leaves tools out of the prompt without it). Structured output climbs a
  ladder (:data:`StructuredOutput`): ``json_schema``, else ``json_object`` carrying the
  schema, else ``prompt`` (the schema in a system instruction, the caller validates), chosen
  by settings or by :func:`vitrine.providers.probe_structured_output`, never by
  retrying an error that means "unsupported". With ``stream`` on, the reply is read as a
  stream, so a cancelled or timed-out request closes its connection and the server stops
  generating instead of finishing an answer nobody reads. Requests that offer tools are not
  streamed: llama.cpp's server cannot choose a tool automatically on a stream.

Provenance is whatever the configuration says: a remote endpoint is PAID, and so is a base URL
that points at a server on this machine unless the operator declares it free (see
:mod:`vitrine.providers._config`), because vitrine cannot tell from a URL who pays for it.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Literal
from urllib.parse import quote, urlsplit

from vitrine._bench.response import TokenUsage
from vitrine._redact import register_secret, sanitize_text
from vitrine.errors import InvalidArgumentError
from vitrine.providers._base import (
    ChatCompletion,
    ChatRequest,
    Provenance,
    ProviderError,
    ProviderFailure,
    ToolCallRequest,
)
from vitrine.providers._grammar import grammar_safe
from vitrine.providers._http_transport import (
    PooledJsonClient,
    failure_for_status,
    retry_after_s,
    safe_error_code,
)
from vitrine.providers._retry import AttemptSink, ProviderBackoff, RetryAfterError, call_with_retry

__all__ = [
    "STRUCTURED_OUTPUT_MODES",
    "OpenAICompatibleModel",
    "StructuredOutput",
    "TokenLimitParameter",
    "credentialed_url_problem",
    "hosts",
    "map_sdk_error",
    "schema_instruction",
    "scrub_sdk_logs",
]

TokenLimitParameter = Literal["max_tokens", "max_completion_tokens"]
# How a request asks for structured output, from the most to the least supported by servers.
StructuredOutput = Literal["json_schema", "json_object", "prompt"]
STRUCTURED_OUTPUT_MODES: tuple[StructuredOutput, ...] = ("json_schema", "json_object", "prompt")
_SCHEMA_INSTRUCTION = (
    "Reply with one JSON object only, no other text. It must validate against this JSON "
    "schema:\n{schema}"
)

_LOGGER_PREFIXES = ("openai", "anthropic", "httpx", "httpcore", "aiohttp")
_OPENAI_BASE_URL = "https://api.openai.com/v1"
# String-length bounds that OpenAI's strict mode refuses; such a schema is sent unstrict.
_STRICT_UNSUPPORTED = frozenset({"minLength", "maxLength"})


class OpenAICompatibleModel:
    """One model (or Azure deployment) behind an OpenAI-compatible chat-completions endpoint.

    Give ``azure_endpoint`` (and ``api_version``) for Azure OpenAI, where ``model`` is the
    deployment name; otherwise ``base_url`` (None for api.openai.com). ``max_output_tokens``
    caps every request's own ``max_output_tokens``; ``token_limit_parameter`` names the field
    that carries it (current OpenAI models take ``max_completion_tokens``; many compatible
    servers only know ``max_tokens``). ``timeout_s`` bounds each attempt; ``retry`` governs
    the attempts; ``on_attempt`` hears about each one.

    One instance may serve many concurrent trials: its connection pool is created per event
    loop and shared by all calls on that loop, up to ``max_connections`` at once (calls beyond
    that wait for a free connection).
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        azure_endpoint: str | None = None,
        api_version: str | None = None,
        provenance: Provenance = Provenance.PAID,
        timeout_s: float = 120.0,
        retry: ProviderBackoff | None = None,
        max_output_tokens: int | None = None,
        token_limit_parameter: TokenLimitParameter = "max_completion_tokens",
        on_attempt: AttemptSink | None = None,
        structured_output: StructuredOutput = "json_schema",
        stream: bool = False,
        max_connections: int = 1000,
    ) -> None:
        if not model:
            raise InvalidArgumentError(
                "an OpenAI-compatible model needs a model or deployment name"
            )
        if azure_endpoint is not None and base_url is not None:
            raise InvalidArgumentError(
                "give either base_url (OpenAI-compatible) or azure_endpoint (Azure)"
            )
        if azure_endpoint is not None and not api_version:
            raise InvalidArgumentError(
                "an Azure OpenAI endpoint needs an api_version, e.g. 2024-10-21"
            )
        if timeout_s <= 0:
            raise InvalidArgumentError(f"timeout_s must be positive, got {timeout_s}")
        if max_output_tokens is not None and max_output_tokens < 1:
            raise InvalidArgumentError(
                f"max_output_tokens must be at least 1, got {max_output_tokens}"
            )
        if structured_output not in STRUCTURED_OUTPUT_MODES:
            raise InvalidArgumentError(
                f"structured_output must be one of {STRUCTURED_OUTPUT_MODES}, "
                f"got {structured_output!r}"
            )
        register_secret(api_key)
        for endpoint in (base_url, azure_endpoint, *hosts(base_url, azure_endpoint)):
            register_secret(endpoint, endpoint=True)
        for name, endpoint in (("base_url", base_url), ("azure_endpoint", azure_endpoint)):
            if endpoint and "@" in urlsplit(endpoint).netloc:
                raise InvalidArgumentError(credentialed_url_problem(name))
        self._model = model
        self._azure = azure_endpoint is not None
        self._provenance = provenance
        self._timeout_s = timeout_s
        self._retry = retry or ProviderBackoff()
        self._ceiling = max_output_tokens
        self._token_parameter = token_limit_parameter
        self._on_attempt = on_attempt
        self.structured_output: StructuredOutput = structured_output
        self.stream = stream
        # Imported here, not on the first call: a missing 'live' extra is refused at once, and
        # the HTTP stack's loggers must exist before they can be scrubbed.
        import aiohttp  # noqa: F401

        url, headers = _endpoint(model, api_key, base_url, azure_endpoint, api_version)
        self._http = PooledJsonClient(
            url, headers, timeout_s=timeout_s, max_connections=max_connections
        )
        scrub_sdk_logs()

    def __repr__(self) -> str:
        # The key and the endpoint stay out of every repr, log line and traceback local.
        return f"OpenAICompatibleModel({self.model_id!r}, provenance={self._provenance.value!r})"

    @property
    def model_id(self) -> str:
        kind = "azure" if self._azure else "openai"
        return f"{kind}:{self._model}"

    @property
    def provenance(self) -> Provenance:
        return self._provenance

    @property
    def max_output_tokens(self) -> int | None:
        return self._ceiling

    @property
    def retry_policy(self) -> ProviderBackoff:
        return self._retry

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        return await self.complete_with(request, self._retry)

    async def complete_with(
        self,
        request: ChatRequest,
        retry: ProviderBackoff,
        structured_output: StructuredOutput | None = None,
    ) -> ChatCompletion:
        """One logical call under ``retry`` and, if given, another structured-output mode."""
        arguments = self._arguments(request, structured_output or self.structured_output)
        return await call_with_retry(
            lambda: self._attempt(arguments),
            retry,
            model_id=self.model_id,
            purpose=request.purpose,
            on_attempt=self._on_attempt,
        )

    async def aclose(self) -> None:
        """Close the HTTP connections opened on the running event loop."""
        await self._http.aclose()

    # -- one attempt -------------------------------------------------------------------------

    async def _attempt(self, arguments: Mapping[str, Any]) -> ChatCompletion:
        # A request that offers tools is not streamed: llama.cpp's server refuses automatic
        # tool choice on a stream ("not supported") and answers a text turn there empty.
        if self.stream and "tools" not in arguments:
            return await self._streamed_attempt(arguments)
        return _completion(await self._http.post(arguments))

    async def _streamed_attempt(self, arguments: Mapping[str, Any]) -> ChatCompletion:
        chunks = _ChunkAssembler()
        streamed = {**arguments, "stream": True, "stream_options": {"include_usage": True}}
        async for chunk in self._http.stream(streamed):
            chunks.add(chunk)
        return _completion(chunks.body())

    def _arguments(self, request: ChatRequest, mode: StructuredOutput) -> dict[str, Any]:
        limit = request.max_output_tokens
        if self._ceiling is not None:
            limit = min(limit, self._ceiling)
        messages = [message.to_openai() for message in request.messages]
        if self._provenance is Provenance.LOCAL:
            # llama.cpp's server refuses an assistant turn whose content is null, which is how
            # a turn with only tool calls is written; an empty string means the same.
            for message in messages:
                if message["role"] == "assistant" and message["content"] is None:
                    message["content"] = ""
        arguments: dict[str, Any] = {"model": self._model, self._token_parameter: limit}
        if request.tools:
            tools = [tool.to_openai() for tool in request.tools]
            if self._provenance is Provenance.LOCAL:
                # A server on this machine (llama.cpp's, say) compiles each tool's parameters
                # into a grammar, and a regex such as GLX-\d{4} makes it fail (the request is
                # dropped); the tools still validate every argument they receive.
                for tool in tools:
                    tool["function"]["parameters"] = grammar_safe(tool["function"]["parameters"])
            arguments["tools"] = tools
            # Some servers (llama.cpp's) leave the tools out of the prompt unless asked.
            arguments["tool_choice"] = "auto"
        if request.response_format is not None:
            response_format = request.response_format.to_openai()
            schema = response_format["json_schema"]["schema"]
            if mode == "json_schema":
                # Strict mode rejects a schema with optional properties or open objects
                # outright (HTTP 400); such a schema is still sent, as guidance, unstrict.
                response_format["json_schema"]["strict"] = _strict_ready(schema)
                arguments["response_format"] = response_format
            else:
                messages.insert(0, schema_instruction(schema))
                if mode == "json_object":
                    # The schema rides along: llama.cpp's server turns it into a grammar,
                    # others ignore it and still return a JSON object.
                    arguments["response_format"] = {
                        "type": "json_object",
                        "schema": grammar_safe(schema),
                    }
        arguments["messages"] = messages
        if request.temperature is not None:
            arguments["temperature"] = request.temperature
        return arguments


def _endpoint(
    model: str,
    api_key: str,
    base_url: str | None,
    azure_endpoint: str | None,
    api_version: str | None,
) -> tuple[str, dict[str, str]]:
    """The chat-completions URL and the authentication header, as each service expects them."""
    if azure_endpoint is not None:
        deployment = quote(model, safe="")
        url = (
            f"{azure_endpoint.rstrip('/')}/openai/deployments/{deployment}/chat/completions"
            f"?api-version={quote(api_version or '', safe='')}"
        )
        return url, {"api-key": api_key}
    url = f"{(base_url or _OPENAI_BASE_URL).rstrip('/')}/chat/completions"
    return url, {"Authorization": f"Bearer {api_key}"}


def schema_instruction(schema: Any) -> dict[str, Any]:
    """A system message asking for one JSON object that validates against ``schema``."""
    text = _SCHEMA_INSTRUCTION.format(schema=json.dumps(schema, separators=(",", ":")))
    return {"role": "system", "content": text}


# -- responses --------------------------------------------------------------------------------


class _ChunkAssembler:
    """Rebuilds one chat-completion body from streamed chunks (content and tool-call deltas)."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: str | None = None
        self._usage: Any = None
        self._model = ""
        self._refusal = False

    def add(self, chunk: Any) -> None:
        if not isinstance(chunk, Mapping):
            return
        self._model = str(chunk.get("model") or self._model)
        if isinstance(chunk.get("usage"), Mapping):
            self._usage = chunk["usage"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return
        choice = choices[0]
        self._finish = str(choice.get("finish_reason") or self._finish or "") or None
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            return
        if isinstance(delta.get("content"), str):
            self._content.append(delta["content"])
        self._refusal = self._refusal or bool(delta.get("refusal"))
        for position, call in enumerate(delta.get("tool_calls") or ()):
            if isinstance(call, Mapping):
                self._add_call(call, position)

    def _add_call(self, call: Mapping[str, Any], position: int) -> None:
        index = call.get("index")
        slot = self._calls.setdefault(
            index if isinstance(index, int) else position,
            {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
        )
        if call.get("id"):
            slot["id"] = call["id"]
        function = call.get("function")
        if isinstance(function, Mapping):
            for key in ("name", "arguments"):
                if isinstance(function.get(key), str):
                    slot["function"][key] += function[key]

    def body(self) -> dict[str, Any]:
        # A stream that finished without a content delta said nothing, which a non-streamed
        # reply reports as "" (llama.cpp's server does this when a model opts out of tools).
        finished = self._finish is not None and not self._calls and not self._refusal
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self._content) if self._content or finished else None,
            "refusal": self._refusal or None,
        }
        if self._calls:
            message["tool_calls"] = [self._calls[i] for i in sorted(self._calls)]
        choice = {"index": 0, "message": message, "finish_reason": self._finish or "stop"}
        return {"model": self._model, "choices": [choice], "usage": self._usage}


def _completion(body: Any) -> ChatCompletion:
    """Read a chat-completion body defensively: any field may be missing or of the wrong type."""
    choices = body.get("choices") if isinstance(body, Mapping) else None
    if not isinstance(choices, list):
        raise ProviderError(ProviderFailure.BAD_RESPONSE, "the response is not a chat completion")
    if not choices:
        raise ProviderError(ProviderFailure.BAD_RESPONSE, "the response has no choices")
    choice = choices[0] if isinstance(choices[0], Mapping) else {}
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise ProviderError(ProviderFailure.BAD_RESPONSE, "the first choice has no message")
    calls: list[ToolCallRequest] = []
    for index, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not function.get("name"):
            continue  # not a function call (a future call type): nothing the caller can run
        calls.append(
            ToolCallRequest(
                str(call.get("id") or f"call-{index}"),
                str(function["name"]),
                # Passed through as text even when it is not JSON: the caller decides what a
                # malformed call means (the agent answers it with an error the model can read).
                str(function.get("arguments") or ""),
            )
        )
    content = message.get("content")
    if not isinstance(content, str):
        content = None
    if content is None and not calls:
        why = "the model refused" if message.get("refusal") else "no content"
        raise ProviderError(
            ProviderFailure.BAD_RESPONSE, f"{why} and no tool calls in the response"
        )
    return ChatCompletion(
        content=content,
        tool_calls=tuple(calls),
        usage=_usage(body.get("usage")),
        finish_reason=str(choice.get("finish_reason") or "stop"),
        model=str(body.get("model") or ""),
    )


def _usage(usage: Any) -> TokenUsage | None:
    if not isinstance(usage, Mapping):
        return None
    cost = usage.get("cost")  # reported by some gateways; never estimated here
    reported = (
        float(cost)
        if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost)
        else None
    )
    return TokenUsage(
        _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")), reported
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _strict_ready(schema: Any) -> bool:
    """Whether OpenAI's strict structured-output mode accepts ``schema`` as it is."""
    if isinstance(schema, list):
        return all(_strict_ready(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if _STRICT_UNSUPPORTED & set(schema):
        return False
    properties = schema.get("properties")
    if schema.get("type") == "object" or isinstance(properties, dict):
        if schema.get("additionalProperties") is not False:
            return False
        if set(properties or {}) != set(schema.get("required") or ()):
            return False
    return all(_strict_ready(value) for value in schema.values())


# -- failures ---------------------------------------------------------------------------------


def map_sdk_error(exc: Exception, sdk: ModuleType) -> ProviderError:
    """The typed, sanitized account of an exception from ``sdk`` (the ``openai`` or the
    ``anthropic`` package, which share their exception names). Never reads its message."""
    name = type(exc).__name__
    if isinstance(exc, TimeoutError | sdk.APITimeoutError):
        return ProviderError(ProviderFailure.TIMEOUT, f"no response within the timeout ({name})")
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderError(ProviderFailure.UNAVAILABLE, f"could not reach the endpoint ({name})")
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        detail = f"HTTP {status} ({name}{safe_error_code(getattr(exc, 'code', None))})"
        failure = failure_for_status(status)
        advice = retry_after_s(getattr(getattr(exc, "response", None), "headers", None))
        if advice is not None and failure.retryable:
            return RetryAfterError(failure, detail, retry_after_s=advice)
        return ProviderError(failure, detail)
    if isinstance(exc, sdk.APIResponseValidationError | ValueError):
        # ValueError covers a body that is not JSON at all (json.JSONDecodeError).
        return ProviderError(ProviderFailure.BAD_RESPONSE, f"malformed response body ({name})")
    # Anything else from inside the SDK (a body it could not decode, say) is still a failure of
    # the provider call, not of the caller; it stays typed so one trial cannot crash a run.
    return ProviderError(ProviderFailure.BAD_RESPONSE, f"unexpected SDK failure ({name})")


def credentialed_url_problem(name: str) -> str:
    """Why a base URL holding ``user:password@`` is refused, in one sentence."""
    return (
        f"{name} holds credentials (user:password@); vitrine sends them only in a header, "
        "from the API key setting, so take them out of the URL"
    )


def hosts(*urls: str | None) -> list[str]:
    """The netlocs and host names of ``urls``, to be registered as secrets."""
    found: list[str] = []
    for url in urls:
        if url:
            parts = urlsplit(url)
            found.extend(value for value in (parts.netloc, parts.hostname) if value)
    return found


class _ScrubFilter(logging.Filter):
    """Rewrites a log record's message through ``sanitize_text`` before any handler sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info or record.exc_text:
            # SDKs log status errors with exc_info; the formatted traceback quotes the request
            # URL, so it is scrubbed with the message instead of being formatted later.
            if not record.exc_text and record.exc_info:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            message = f"{message}\n{record.exc_text}"
            record.exc_info = None
            record.exc_text = None
        record.msg = sanitize_text(message, limit=2000)
        record.args = None
        record.stack_info = None
        return True


_SCRUB = _ScrubFilter()


def scrub_sdk_logs() -> None:
    """Put the scrubbing filter on every logger of the model SDKs and their HTTP stack."""
    # Filters on a logger apply only to records created on that very logger, not to those of
    # its children, so every existing logger of the SDK and its HTTP stack gets one.
    names = [
        name
        for name in list(logging.Logger.manager.loggerDict)
        if name.split(".")[0].startswith(_LOGGER_PREFIXES)
    ]
    for name in {*names, *_LOGGER_PREFIXES}:
        logger = logging.getLogger(name)
        if _SCRUB not in logger.filters:
            logger.addFilter(_SCRUB)
