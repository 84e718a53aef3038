"""The OpenAI SDK, instrumented at its HTTP transport: every model call and tool call of a
trial, with the SDK's own retries, and no hand instrumentation.

Why the transport: it is the seam the SDK itself offers for its HTTP stack (``http_client``),
and the only place that sees each *attempt*. The SDK's ``max_retries`` loop sits above it and
sends ``x-stainless-retry-count`` on every attempt, so a transport counts the retries inside
each logical call; wrapping ``client.chat.completions.create`` would see one call and none of
its retries. It can also answer a request itself (the model-call cache) without the SDK
knowing, and it sees Chat Completions and the Responses API alike, streamed or not.

:func:`instrument_openai` wraps the transport of the client's own HTTP client in place, so
every copy the SDK makes (``with_options``, ``with_raw_response``) shares it, and the HTTP
settings (proxies, limits, TLS) stay as the user made them. :class:`OpenAITransport` and
:class:`AsyncOpenAITransport` are the same recorder for a client you build yourself.

Inside a trial, each ``POST .../chat/completions`` or ``POST .../responses`` becomes one
:class:`~vitrine.adapters.ModelCallRecord` in the journal and one ``chat {model}`` span whose
attempts are ``vitrine.provider.attempt`` events. Tool calls come from the conversation: a
call the model asked for (its id, name and JSON arguments) is recorded when a later request
carries its answer (a ``role: tool`` message, or a Responses ``function_call_output``).
Outside a trial every request passes through untouched.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import importlib
import json
import threading
import time
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import httpx2
import openai
from openai._base_client import AsyncHttpxClientWrapper
from openai._constants import DEFAULT_CONNECTION_LIMITS, DEFAULT_MAX_RETRIES

from vitrine._bench.response import AttemptOutcome, ModelCallRecord
from vitrine._journal import TrialJournal, current_journal
from vitrine._redact import describe_exception
from vitrine.adapters._cache import ModelCallCache
from vitrine.adapters._tools import RequestedCall, ToolLedger, parse_arguments
from vitrine.errors import InvalidArgumentError, ProviderError, UsageError, WrongTypeError
from vitrine.providers._base import ProviderFailure
from vitrine.providers._http_transport import failure_for_status
from vitrine.tracing import _semconv as sc
from vitrine.tracing._spans import Span, model_call, provider_attempt

__all__ = ["AIOHTTP_PROVENANCE", "AsyncOpenAITransport", "OpenAITransport", "instrument_openai"]

_C = TypeVar("_C", bound=openai.OpenAI | openai.AsyncOpenAI)
Transport = Literal["sdk", "aiohttp"]
# Added to a trial's provenance when its requests went out on the aiohttp transport that
# ``instrument_openai(..., transport="aiohttp")`` handed the client.
AIOHTTP_PROVENANCE = "+openai-aiohttp"

RETRY_HEADER = "x-stainless-retry-count"
STREAM_CUT = "the stream was closed before its end"
STREAM_UNREAD = "the stream was never read to its end before the trial ended"
# The statuses the SDK retries (its ``_should_retry``), unless ``x-should-retry`` says otherwise.
_RETRIED_STATUSES = frozenset({408, 409, 429})


def _api_of(method: str, path: str) -> str | None:
    """``chat`` or ``responses`` for a model call, None for any other request."""
    if method.upper() != "POST":
        return None
    path = path.rstrip("/")
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    return None


def _model_of(body: Mapping[str, Any], path: str) -> str:
    model = body.get("model")
    if isinstance(model, str) and model:
        return model
    parts = path.split("/")
    if "deployments" in parts and parts.index("deployments") + 1 < len(parts):
        return parts[parts.index("deployments") + 1]  # Azure names the deployment in the path
    return "unknown"


# -- reading what the SDK sent and what came back ----------------------------------------


def _results_sent(api: str, body: Mapping[str, Any]) -> Iterator[tuple[str, object]]:
    """The (call id, result) pairs of the tool answers a request carries to the model."""
    items = body.get("messages") if api == "chat" else body.get("input")
    if not isinstance(items, list):
        return
    for item in items:
        if not isinstance(item, Mapping):
            continue
        if api == "chat" and item.get("role") == "tool":
            call_id, result = item.get("tool_call_id"), item.get("content")
        elif api == "responses" and item.get("type") == "function_call_output":
            call_id, result = item.get("call_id"), item.get("output")
        else:
            continue
        if isinstance(call_id, str):
            yield call_id, result


@dataclass(slots=True)
class _Answer:
    """What one successful model answer said about itself."""

    model: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)  # id, name, arguments


def _count(usage: object, *keys: str) -> int | None:
    if not isinstance(usage, Mapping):
        return None
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _read_chat(data: Mapping[str, Any], answer: _Answer) -> None:
    answer.model = data.get("model") if isinstance(data.get("model"), str) else answer.model
    choices = data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        choice = choices[0]
        if isinstance(choice.get("finish_reason"), str):
            answer.finish_reason = choice["finish_reason"]
        message = choice.get("message")
        requested = message.get("tool_calls") if isinstance(message, Mapping) else None
        for call in requested or ():
            if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                function = call["function"]
                answer.tool_calls.append(
                    (str(call.get("id")), str(function.get("name")), str(function.get("arguments")))
                )
    if data.get("usage") is not None:
        answer.input_tokens = _count(data.get("usage"), "prompt_tokens", "input_tokens")
        answer.output_tokens = _count(data.get("usage"), "completion_tokens", "output_tokens")


def _read_responses(data: Mapping[str, Any], answer: _Answer) -> None:
    answer.model = data.get("model") if isinstance(data.get("model"), str) else answer.model
    status = data.get("status")
    details = data.get("incomplete_details")
    # The Responses API has no finish reason: its status says the same (``completed``), and
    # an incomplete answer's reason (``max_output_tokens``) says why it stopped.
    if isinstance(details, Mapping) and isinstance(details.get("reason"), str):
        answer.finish_reason = details["reason"]
    elif isinstance(status, str):
        answer.finish_reason = status
    for item in data.get("output") or ():
        if isinstance(item, Mapping) and item.get("type") == "function_call":
            answer.tool_calls.append(
                (str(item.get("call_id")), str(item.get("name")), str(item.get("arguments")))
            )
    answer.input_tokens = _count(data.get("usage"), "input_tokens")
    answer.output_tokens = _count(data.get("usage"), "output_tokens")


def _events(text: str) -> Iterator[Mapping[str, Any]]:
    """The JSON ``data`` of each server-sent event (``[DONE]`` and non-JSON data skipped)."""
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(
            line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")
        )
        if not data or data == "[DONE]":
            continue
        try:
            value = json.loads(data)
        except json.JSONDecodeError:
            continue
        if isinstance(value, Mapping):
            yield value


def _read_chat_stream(text: str, answer: _Answer) -> None:
    calls: dict[int, list[str]] = {}
    for chunk in _events(text):
        if isinstance(chunk.get("model"), str):
            answer.model = chunk["model"]
        if chunk.get("usage") is not None:
            answer.input_tokens = _count(chunk["usage"], "prompt_tokens")
            answer.output_tokens = _count(chunk["usage"], "completion_tokens")
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, Mapping):
                continue
            if isinstance(choice.get("finish_reason"), str):
                answer.finish_reason = choice["finish_reason"]
            delta = choice.get("delta")
            for part in (delta.get("tool_calls") or ()) if isinstance(delta, Mapping) else ():
                if not isinstance(part, Mapping):
                    continue
                call = calls.setdefault(int(part.get("index") or 0), ["", "", ""])
                call[0] = str(part.get("id") or call[0])
                function = part.get("function")
                if isinstance(function, Mapping):
                    call[1] += str(function.get("name") or "")
                    call[2] += str(function.get("arguments") or "")
    answer.tool_calls.extend((c[0], c[1], c[2]) for _, c in sorted(calls.items()) if c[0])


def _read_responses_stream(text: str, answer: _Answer) -> None:
    for event in _events(text):
        # The final event carries the whole response: usage, status and every output item.
        kind = event.get("type")
        response = event.get("response")
        if kind in ("response.completed", "response.incomplete", "response.failed") and (
            isinstance(response, Mapping)
        ):
            _read_responses(response, answer)
        elif isinstance(response, Mapping) and isinstance(response.get("model"), str):
            answer.model = response["model"]


def _read_answer(api: str, stream: bool, body: bytes) -> _Answer:
    answer = _Answer()
    text = body.decode("utf-8", errors="replace")
    if stream:
        (_read_chat_stream if api == "chat" else _read_responses_stream)(text, answer)
        return answer
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return answer
    if isinstance(data, Mapping):
        (_read_chat if api == "chat" else _read_responses)(data, answer)
    return answer


# -- one logical call across its attempts -------------------------------------------------


@dataclass(slots=True)
class _Call:
    """One logical model call: its attempts (the SDK's retries), its span and its record."""

    journal: TrialJournal
    fingerprint: str
    model: str
    api: str
    stream: bool
    started: float
    context: contextvars.Context
    scope: AbstractContextManager[Span] | None
    chat: Span
    retries: int = 0
    record: ModelCallRecord | None = None

    def attempt(self, ordinal: int, outcome: AttemptOutcome, failure: str | None) -> None:
        self.context.run(provider_attempt, ordinal, outcome.value, failure)

    def span(self, key: str, value: Any) -> None:
        if self.scope is not None:
            self.chat.set(key, value)

    def write(self, record: ModelCallRecord) -> None:
        """Put ``record`` into the journal, in place of this call's earlier attempt's."""
        calls = self.journal.model_calls
        if self.record is not None:
            for index in range(len(calls) - 1, -1, -1):
                if calls[index] is self.record:
                    calls[index] = record
                    self.record = record
                    return
        calls.append(record)
        self.record = record

    def close(self, error: BaseException | None = None) -> None:
        scope, self.scope = self.scope, None
        if scope is None:
            return
        if error is None:
            self.context.run(scope.__exit__, None, None, None)
        else:
            self.context.run(scope.__exit__, type(error), error, error.__traceback__)


@dataclass(slots=True)
class _OpenCalls:
    """One try's calls not yet closed: those whose last attempt failed (the SDK may retry
    them), by request fingerprint, and the attempts whose body is still being read."""

    waiting: dict[str, _Call] = field(default_factory=dict)
    reading: dict[int, tuple[_Recorder, _Exchange]] = field(default_factory=dict)

    def close(self) -> None:
        """The try ended: a stream nobody read to its end is recorded as cut; every span
        still open is closed."""
        for recorder, exchange in list(self.reading.values()):
            if not exchange.finished:
                recorder.finish(exchange, _Answer(), error=STREAM_UNREAD)
        self.reading.clear()
        for call in self.waiting.values():
            call.close()
        self.waiting.clear()


@dataclass(slots=True)
class _Exchange:
    """One attempt in flight: its call, its request as sent, and what to do with the answer."""

    call: _Call
    ordinal: int
    method: str
    url: str
    cache_key: str | None
    finished: bool = False


class _Recorder:
    """The logic both transports share; it never blocks on the network.

    A transport asks :meth:`opened` what to do with a request, sends it inside
    :meth:`sending` when it must, and hands the response to :meth:`watched`: only the send
    itself (and the reading of the body) differs between the sync and the async transport.
    """

    def __init__(
        self,
        *,
        cache: ModelCallCache | None,
        provider: str,
        max_retries: int,
        record_tools: bool,
    ) -> None:
        if cache is not None and not isinstance(cache, ModelCallCache):
            raise WrongTypeError(f"cache must be a ModelCallCache, got {type(cache).__name__}")
        if not isinstance(provider, str) or not provider:
            raise InvalidArgumentError(f"provider must be a non-empty string, got {provider!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgumentError(f"max_retries must be 0 or more, got {max_retries!r}")
        self.cache = cache
        self.provider = provider
        self.max_retries = max_retries
        self.record_tools = record_tools
        # Set by instrument_openai on the transport it handed the client; None otherwise.
        self.provenance: str | None = None

    # -- around the inner transport's send -------------------------------------------------

    def opened(self, request: httpx2.Request) -> _Exchange | httpx2.Response | None:
        """What to do with ``request``: None to pass it through untouched, the cache's answer
        (already recorded), or the exchange to send and watch."""
        exchange = self.begin(request)
        if exchange is None:
            return None
        with self.sending(exchange):
            hit = self.cached(exchange)
        if hit is not None:
            return _from_cache(request, *hit)
        if self.provenance is not None:
            exchange.call.journal.tag_provenance(self.provenance)
        return exchange

    def sending(self, exchange: _Exchange | None) -> AbstractContextManager[None]:
        """Around a send: what it raises is recorded as the attempt's failure, then goes on to
        the caller (nothing is recorded for a request passed through)."""
        return nullcontext() if exchange is None else self._failing(exchange)

    @contextmanager
    def _failing(self, exchange: _Exchange) -> Iterator[None]:
        try:
            yield
        except BaseException as exc:
            self.raised(exchange, exc)
            raise

    def watched(
        self,
        exchange: _Exchange | None,
        request: httpx2.Request,
        response: httpx2.Response,
        watch: Callable[[_Recorder, _Exchange, httpx2.Response], _SyncWatch | _AsyncWatch],
    ) -> httpx2.Response:
        """``response`` with its body watched by ``watch``, so the attempt is recorded once
        the caller has read it (or closed it unread); a passed-through one as it came."""
        if exchange is None:
            return response
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=watch(self, exchange, response),
            request=request,
            extensions=response.extensions,
        )

    # -- an attempt starts ------------------------------------------------------------------

    def begin(self, request: httpx2.Request) -> _Exchange | None:
        """The exchange to watch for ``request``, or None to pass it through untouched."""
        journal = current_journal()
        api = _api_of(request.method, request.url.path)
        if journal is None or api is None:
            return None
        raw = request.read()
        try:
            body: Any = json.loads(raw) if raw else {}
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = {}
        if not isinstance(body, Mapping):
            body = {}
        url = str(request.url)
        cache_key = None
        if self.cache is not None:
            self.cache.refuse_if_paid(url)
            cache_key = self.cache.key(request.method, url, request.headers, raw)
        if self.record_tools:
            ledger = ToolLedger.of(journal)
            for call_id, result in _results_sent(api, body):
                ledger.answered_with(call_id, result)
        try:
            ordinal = int(request.headers.get(RETRY_HEADER, "0")) + 1
        except ValueError:
            ordinal = 1
        fingerprint = hashlib.sha256(request.method.encode() + url.encode() + raw).hexdigest()
        call = self._call_for(journal, fingerprint, ordinal, api, body, request.url.path)
        exchange = _Exchange(call, ordinal, request.method, url, cache_key)
        self._calls(journal).reading[id(exchange)] = (self, exchange)
        return exchange

    def _call_for(
        self,
        journal: TrialJournal,
        fingerprint: str,
        ordinal: int,
        api: str,
        body: Mapping[str, Any],
        path: str,
    ) -> _Call:
        calls = self._calls(journal)
        earlier = calls.waiting.pop(fingerprint, None)
        if earlier is not None:
            if ordinal > 1 and earlier.retries == ordinal - 2:
                earlier.retries = ordinal - 1
                if earlier.scope is None:  # closed as final, yet the SDK retried after all
                    earlier.context, earlier.scope, earlier.chat = self._open_span(earlier.model)
                return earlier
            earlier.close()  # the SDK gave up on it; this is a new call with the same request
        model = _model_of(body, path)
        context, scope, chat = self._open_span(model)
        return _Call(
            journal,
            fingerprint,
            model,
            api,
            body.get("stream") is True,
            time.monotonic(),
            context,
            scope,
            chat,
            retries=ordinal - 1,
        )

    @staticmethod
    def _calls(journal: TrialJournal) -> _OpenCalls:
        """The open calls of ``journal``'s try (one set for every instrumented client)."""

        def make() -> _OpenCalls:
            calls = _OpenCalls()
            journal.at_end(calls.close)
            return calls

        return journal.adapter_state(_OpenCalls, make)

    def _open_span(
        self, model: str
    ) -> tuple[contextvars.Context, AbstractContextManager[Span], Span]:
        # The span is opened in a copy of the caller's context: it is the caller's child, yet
        # never the caller's current span, so it can stay open across the SDK's retries while
        # the caller's own spans are opened and closed around it.
        context = contextvars.copy_context()
        scope = model_call(model, provider=self.provider)
        chat = context.run(scope.__enter__)
        return context, scope, chat

    def cached(self, exchange: _Exchange) -> tuple[bytes, str] | None:
        """The stored answer for ``exchange`` (and its content type), recorded as cached."""
        if self.cache is None or exchange.cache_key is None:
            return None
        hit = self.cache.lookup(exchange.cache_key)
        if hit is None:
            return None
        call = exchange.call
        answer = _read_answer(call.api, call.stream, hit.body)
        call.attempt(exchange.ordinal, AttemptOutcome.USABLE, None)
        call.span(sc.MODEL_CALL_CACHED, True)
        # No tokens were spent on a cached answer: its counts stay out of the trial's usage.
        self.finish(exchange, answer, error=None, cached=True)
        return hit.body, hit.content_type

    # -- an attempt ends ---------------------------------------------------------------------

    def answered(
        self, exchange: _Exchange, status: int, headers: Mapping[str, str], body: bytes | None
    ) -> None:
        """The server answered ``status`` and the body was read (None: closed unread)."""
        if exchange.finished:
            return
        call = exchange.call
        if status == 200:
            answer = _Answer() if body is None else _read_answer(call.api, call.stream, body)
            call.attempt(exchange.ordinal, AttemptOutcome.USABLE, None)
            error = None if body is not None else STREAM_CUT
            self.finish(exchange, answer, error=error)
            if body is not None and self.cache is not None and exchange.cache_key is not None:
                self.cache.store(
                    exchange.cache_key,
                    method=exchange.method,
                    url=exchange.url,
                    model=call.model,
                    content_type=headers.get("content-type", "application/json"),
                    body=body,
                )
            return
        failure = failure_for_status(status)
        should = headers.get("x-should-retry")
        retried = (
            should == "true"
            or (should != "false" and (status in _RETRIED_STATUSES or status >= 500))
        ) and exchange.ordinal <= self.max_retries
        self._failed(exchange, failure, f"HTTP {status}", retried)

    def raised(self, exchange: _Exchange, exc: BaseException) -> None:
        """The attempt raised instead of answering (a timeout, a dropped connection)."""
        if exchange.finished:
            return
        if isinstance(exc, TimeoutError | httpx2.TimeoutException):
            failure = ProviderFailure.TIMEOUT
        elif isinstance(exc, httpx2.RequestError):
            failure = ProviderFailure.UNAVAILABLE
        elif isinstance(exc, Exception):
            failure = ProviderFailure.BAD_RESPONSE
        else:
            failure = ProviderFailure.CANCELLED
        # The SDK retries its HTTP stack's timeouts and request errors while it has retries
        # left; anything else (a cache refusal, a damaged entry) reaches the caller at once.
        retried = (
            isinstance(exc, httpx2.TimeoutException | httpx2.RequestError)
            and exchange.ordinal <= self.max_retries
        )
        self._failed(exchange, failure, describe_exception(exc), retried)

    def _failed(
        self, exchange: _Exchange, failure: ProviderFailure, why: str, retried: bool
    ) -> None:
        exchange.finished = True
        call = exchange.call
        self._calls(call.journal).reading.pop(id(exchange), None)
        outcome = (
            AttemptOutcome.CANCELLED
            if failure is ProviderFailure.CANCELLED
            else AttemptOutcome.PROVIDER_FAILURE
        )
        call.attempt(exchange.ordinal, outcome, failure.value)
        call.write(self._record(call, exchange, None, error=why, cached=False))
        if retried:
            # Kept open: the SDK will send the same request again with the next retry count.
            self._calls(call.journal).waiting[call.fingerprint] = call
        else:
            call.close(ProviderError(failure, why))

    def finish(
        self, exchange: _Exchange, answer: _Answer, *, error: str | None, cached: bool = False
    ) -> None:
        """The attempt got an answer (from the server or the cache): the call ends with it."""
        exchange.finished = True
        call = exchange.call
        self._calls(call.journal).reading.pop(id(exchange), None)
        call.span(sc.RESPONSE_MODEL, answer.model)
        call.span(
            sc.RESPONSE_FINISH_REASONS, [answer.finish_reason] if answer.finish_reason else None
        )
        call.span(sc.MODEL_CALL_SDK_RETRIES, exchange.ordinal - 1)
        if not cached:
            call.span(sc.INPUT_TOKENS, answer.input_tokens)
            call.span(sc.OUTPUT_TOKENS, answer.output_tokens)
        call.write(self._record(call, exchange, answer, error=error, cached=cached))
        call.close()
        if self.record_tools:
            ledger = ToolLedger.of(call.journal)
            now = time.monotonic()
            for call_id, name, arguments in answer.tool_calls:
                ledger.requested(
                    RequestedCall(call_id, name, parse_arguments(arguments), arguments, now)
                )

    def _record(
        self,
        call: _Call,
        exchange: _Exchange,
        answer: _Answer | None,
        *,
        error: str | None,
        cached: bool,
    ) -> ModelCallRecord:
        live = answer is not None and not cached
        return ModelCallRecord(
            call.model,
            self.provider,
            answer.input_tokens if live and answer is not None else None,
            answer.output_tokens if live and answer is not None else None,
            # The caller's wait: from the first attempt to this one's end, backoff included.
            (time.monotonic() - call.started) * 1000.0,
            None if answer is None else answer.finish_reason,
            exchange.ordinal - 1,
            cached,
            error,
        )


# -- the body watchers ---------------------------------------------------------------------


# The last event of a stream: ``[DONE]`` for Chat Completions, a final ``response.*`` event
# (it carries the whole response) for the Responses API.
_STREAM_ENDS = (b"data: [DONE]", b"response.completed", b"response.incomplete", b"response.failed")


def _stream_ended(raw: bytes) -> bool:
    return any(end in raw for end in _STREAM_ENDS)


class _Watch:
    """Collects a response body as the client reads it, and reports it once, at its end."""

    def __init__(
        self,
        recorder: _Recorder,
        exchange: _Exchange,
        response: httpx2.Response,
    ) -> None:
        self._recorder = recorder
        self._exchange = exchange
        self._status = response.status_code
        self._headers = response.headers
        self._chunks: list[bytes] = []
        self._inner = response.stream

    def _ended(self, complete: bool) -> None:
        if self._exchange.finished:
            return
        body = None
        # The SDK stops reading a stream at its last event and closes it: a stream that got
        # that far is whole even though it was never read to the connection's end.
        if complete or (self._exchange.call.stream and _stream_ended(b"".join(self._chunks))):
            # What the inner transport yields is the body as sent (gzip, perhaps); a response
            # built from it decodes it as the client would.
            raw = b"".join(self._chunks)
            body = httpx2.Response(self._status, headers=self._headers, content=raw).read()
        self._recorder.answered(self._exchange, self._status, self._headers, body)


class _SyncWatch(_Watch, httpx2.SyncByteStream):
    def __iter__(self) -> Iterator[bytes]:
        assert isinstance(self._inner, httpx2.SyncByteStream)
        for chunk in self._inner:
            self._chunks.append(chunk)
            yield chunk
        self._ended(complete=True)

    def close(self) -> None:
        try:
            if isinstance(self._inner, httpx2.SyncByteStream):
                self._inner.close()
        finally:
            self._ended(complete=False)


class _AsyncWatch(_Watch, httpx2.AsyncByteStream):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert isinstance(self._inner, httpx2.AsyncByteStream)
        async for chunk in self._inner:
            self._chunks.append(chunk)
            yield chunk
        self._ended(complete=True)

    async def aclose(self) -> None:
        try:
            if isinstance(self._inner, httpx2.AsyncByteStream):
                await self._inner.aclose()
        finally:
            self._ended(complete=False)


def _from_cache(request: httpx2.Request, body: bytes, content_type: str) -> httpx2.Response:
    return httpx2.Response(
        200, headers={"content-type": content_type}, content=body, request=request
    )


# -- the transports --------------------------------------------------------------------------


class OpenAITransport(httpx2.BaseTransport):
    """An HTTP transport for ``openai.OpenAI`` that records model calls inside trials.

    ``inner`` is the transport that really sends (a new ``httpx2.HTTPTransport`` with the
    SDK's connection limits by default). ``cache`` answers repeated requests from disk (see
    :class:`~vitrine.adapters.ModelCallCache`); ``provider`` names the service in records and
    spans; ``max_retries`` is the client's, so a failed attempt the SDK will not retry closes
    its call at once; ``record_tools=False`` leaves tool calls to another recorder (a
    framework's hooks). Use it as ``OpenAI(http_client=httpx2.Client(transport=...))``;
    :func:`instrument_openai` does this for a client you already have.
    """

    def __init__(
        self,
        inner: httpx2.BaseTransport | None = None,
        *,
        cache: ModelCallCache | None = None,
        provider: str = "openai",
        max_retries: int = DEFAULT_MAX_RETRIES,
        record_tools: bool = True,
    ) -> None:
        self.inner = inner or httpx2.HTTPTransport(limits=DEFAULT_CONNECTION_LIMITS)
        self.recorder = _Recorder(
            cache=cache, provider=provider, max_retries=max_retries, record_tools=record_tools
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through ``inner``, or answer it from the cache; record it."""
        exchange = self.recorder.opened(request)
        if isinstance(exchange, httpx2.Response):
            return exchange
        with self.recorder.sending(exchange):
            response = self.inner.handle_request(request)
        return self.recorder.watched(exchange, request, response, _SyncWatch)

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


class AsyncOpenAITransport(httpx2.AsyncBaseTransport):
    """:class:`OpenAITransport` for ``openai.AsyncOpenAI``: the same records, awaited.

    Use it as ``AsyncOpenAI(http_client=httpx2.AsyncClient(transport=...))``, or call
    :func:`instrument_openai` on the client you have. A cache lookup or store reads or writes
    one small file on the event loop's thread.
    """

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport | None = None,
        *,
        cache: ModelCallCache | None = None,
        provider: str = "openai",
        max_retries: int = DEFAULT_MAX_RETRIES,
        record_tools: bool = True,
    ) -> None:
        self.inner = inner or httpx2.AsyncHTTPTransport(limits=DEFAULT_CONNECTION_LIMITS)
        self.recorder = _Recorder(
            cache=cache, provider=provider, max_retries=max_retries, record_tools=record_tools
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` through ``inner``, or answer it from the cache; record it."""
        exchange = self.recorder.opened(request)
        if isinstance(exchange, httpx2.Response):
            return exchange
        with self.recorder.sending(exchange):
            response = await self.inner.handle_async_request(request)
        return self.recorder.watched(exchange, request, response, _AsyncWatch)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()


def _aiohttp_transport_type() -> type[httpx2.AsyncBaseTransport]:
    """The class of the SDK's own aiohttp transport (what ``openai.DefaultAioHttpClient``
    sends through); a :class:`~vitrine.errors.UsageError` when aiohttp is not installed."""
    # Imported on demand: a client on the default transport never needs it.
    try:
        vendored = importlib.import_module("openai._vendor.httpx_aiohttp")
    except ImportError as exc:
        raise UsageError(
            'transport="aiohttp" needs the OpenAI SDK\'s aiohttp backend: pip install '
            '"openai[aiohttp]" (or vitrine[live])'
        ) from exc
    return vendored.AiohttpTransport  # type: ignore[no-any-return]


async def _closed_with_loop(transport: httpx2.AsyncBaseTransport) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await transport.aclose()


class _AiohttpPerLoop(httpx2.AsyncBaseTransport):
    """The SDK's aiohttp transport, one per event loop, each closed as its loop shuts down.

    An aiohttp session belongs to the loop it was opened on: the SDK's transport alone fails
    on a second ``asyncio.run`` (a second ``vitrine.evaluate``), and one nobody closed logs
    "Unclosed client session" at exit, since a sync ``evaluate`` leaves the caller no loop to
    close it on. A transport per loop, finalised with its loop, avoids both.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_loop: dict[
            asyncio.AbstractEventLoop,
            tuple[httpx2.AsyncBaseTransport, AsyncGenerator[None, None]],
        ] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        loop = asyncio.get_running_loop()
        entry = self._by_loop.get(loop)
        if entry is None:
            with self._lock:  # loops on other threads may open theirs at the same time
                # A transport holds its loop, so ended loops are let go of here.
                for ended in [known for known in self._by_loop if known.is_closed()]:
                    del self._by_loop[ended]
                # The SDK's aiohttp client, used only for the transport it builds (its
                # limits, TLS and environment settings); the HTTP client the SDK made stays.
                transport = openai.DefaultAioHttpClient()._transport
                entry = self._by_loop[loop] = (transport, _closed_with_loop(transport))
            # Started while the loop runs, so the loop finalises it at shutdown.
            await anext(entry[1])
        return await entry[0].handle_async_request(request)

    async def aclose(self) -> None:
        entry = self._by_loop.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[1].aclose()


def _sends_by_aiohttp(transport: object, aiohttp_type: type[Any]) -> bool:
    return isinstance(transport, _AiohttpPerLoop | aiohttp_type)


def _hand_aiohttp(http: httpx2.AsyncClient, aiohttp_type: type[Any]) -> bool:
    """Put the SDK's aiohttp transport under the SDK's own HTTP client; whether aiohttp now
    sends for it. A client the user built (``http_client=``) is never touched."""
    current = http._transport
    wrapper = current if isinstance(current, AsyncOpenAITransport) else None
    base = current if wrapper is None else wrapper.inner
    if _sends_by_aiohttp(base, aiohttp_type):
        return True
    # Only the client the SDK made itself is swapped: its settings are the SDK's defaults,
    # which ``DefaultAioHttpClient`` reproduces; a user's own client keeps what they chose.
    if type(http) is not AsyncHttpxClientWrapper or type(base) is not httpx2.AsyncHTTPTransport:
        warnings.warn(
            f'transport="aiohttp" left this client\'s own http_client '
            f"({type(http).__name__}) as it was; pass http_client=openai.DefaultAioHttpClient() "
            f"to send through aiohttp",
            stacklevel=3,
        )
        return False
    fast = _AiohttpPerLoop()
    if wrapper is None:
        http._transport = fast
    else:
        wrapper.inner = fast
    return True


def instrument_openai(
    client: _C,
    *,
    cache: ModelCallCache | None = None,
    provider: str = "openai",
    record_tools: bool = True,
    transport: Transport = "sdk",
) -> _C:
    """Record every model call ``client`` makes inside a trial; returns ``client`` itself.

    ``client`` is an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` (``AzureOpenAI`` too, with
    ``provider="azure.ai.openai"``). The transport of its HTTP client is wrapped in place, so
    the client and every copy ``with_options`` makes from it are instrumented, and its HTTP
    settings are kept. Instrumenting a client twice changes nothing.

    Inside a trial each ``chat.completions.create`` or ``responses.create`` call is a
    :class:`~vitrine.adapters.ModelCallRecord` (the request's model, usage, latency, finish
    reason, ``sdk_retries``) and a ``chat {model}`` span; each tool call the model asked for
    is a :class:`~vitrine.subjects.ToolCallRecord` once its result goes back to the model (or
    an ``error`` record when it never does), unless ``record_tools=False``. ``cache`` is an
    opt-in :class:`~vitrine.adapters.ModelCallCache`. Outside a trial the client behaves
    exactly as before.

    ``transport="aiohttp"`` (``AsyncOpenAI`` only) sends the client's requests through the
    SDK's own aiohttp backend (the transport of ``openai.DefaultAioHttpClient``) instead of
    its default httpx2 pool, which costs several times the CPU per request at high
    concurrency; the trial's provenance gains ``+openai-aiohttp``. Call it before the
    client's first request. A client given its own ``http_client`` keeps it, with a warning.
    """
    if not isinstance(client, openai.OpenAI | openai.AsyncOpenAI):
        raise WrongTypeError(
            f"instrument_openai takes an openai.OpenAI or openai.AsyncOpenAI client, got "
            f"{type(client).__name__}"
        )
    if transport not in ("sdk", "aiohttp"):
        raise InvalidArgumentError(f'transport must be "sdk" or "aiohttp", got {transport!r}')
    if transport == "aiohttp" and not isinstance(client, openai.AsyncOpenAI):
        raise InvalidArgumentError(
            'transport="aiohttp" is for openai.AsyncOpenAI: aiohttp has no synchronous client'
        )
    http = client._client
    if not isinstance(http, httpx2.Client | httpx2.AsyncClient):
        raise WrongTypeError(
            f"instrument_openai records through httpx2, the SDK's own HTTP stack; this client "
            f"was given a {type(http).__module__}.{type(http).__name__} as its http_client"
        )
    if cache is not None:
        if not isinstance(cache, ModelCallCache):
            raise WrongTypeError(f"cache must be a ModelCallCache, got {type(cache).__name__}")
        cache.refuse_if_paid(str(client.base_url))
    kind: type[OpenAITransport | AsyncOpenAITransport]
    kind = AsyncOpenAITransport if isinstance(client, openai.AsyncOpenAI) else OpenAITransport
    transports = getattr(http, "_transport", None)
    if transports is None or not hasattr(http, "_mounts"):
        raise WrongTypeError(
            f"instrument_openai cannot reach the transport of {type(http).__name__}; build the "
            f"client with http_client=httpx2.Client(transport={kind.__name__}(...)) instead"
        )
    aiohttp_type: type[Any] | None = None
    if transport == "aiohttp" and isinstance(http, httpx2.AsyncClient):
        aiohttp_type = _aiohttp_transport_type()
        if not _hand_aiohttp(http, aiohttp_type):
            aiohttp_type = None
    if not isinstance(http._transport, kind):

        def wrap(inner: Any) -> Any:
            return kind(
                inner,
                cache=cache,
                provider=provider,
                max_retries=client.max_retries,
                record_tools=record_tools,
            )

        # Proxies are mounted transports: each is wrapped, so a proxied request is recorded.
        http._transport = wrap(http._transport)
        http._mounts = {
            pattern: None if mounted is None else wrap(mounted)
            for pattern, mounted in http._mounts.items()
        }
    if aiohttp_type is not None:
        # Only what aiohttp sends is marked: a proxy mounted from the environment keeps the
        # SDK's own transport, and its requests say so by carrying no mark.
        for wrapped in (http._transport, *http._mounts.values()):
            if isinstance(wrapped, kind) and _sends_by_aiohttp(wrapped.inner, aiohttp_type):
                wrapped.recorder.provenance = AIOHTTP_PROVENANCE
    return client
