"""Tool calls into the trial's journal: ``@recorded_tool``, and the pairing of a model's
tool requests with the answers the next request carries.

Two sources can see the same tool call: a ``@recorded_tool`` function that ran it, and an
instrumented client that saw the model ask for it and the result go back. The
:class:`ToolLedger` of the try keeps one record per call: a call the decorator recorded is not
recorded again when its answer reaches the model, because the decorator saw more (the real
duration, an exception).
"""

from __future__ import annotations

import functools
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ParamSpec, TypeVar, cast, overload

from vitrine._bench.response import ToolCallRecord, ToolCallStatus
from vitrine._journal import TrialJournal, current_journal, record_tool_call
from vitrine._redact import bound_text, describe_exception, sanitize_text
from vitrine.errors import InvalidArgumentError
from vitrine.tracing._spans import record_tool_result, tool_span

__all__ = ["RequestedCall", "ToolLedger", "recorded_tool", "summary_of"]

P = ParamSpec("P")
R = TypeVar("R")

# The bounds the shop's own tool journal uses: a record says what happened, it is not a copy.
SUMMARY_LIMIT = 200
NAME_LIMIT = 64
ARGUMENT_TEXT_LIMIT = 500
UNANSWERED = "the model asked for this call and no result went back to it before the trial ended"


def summary_of(result: object) -> str:
    """A bounded, scrubbed one-line account of a tool's result (text as is, the rest as JSON)."""
    if isinstance(result, str):
        text = result
    else:
        try:
            text = json.dumps(result, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(result)
    return sanitize_text(text, SUMMARY_LIMIT)


def _size_of(result: object) -> str:
    if isinstance(result, str | bytes):
        return f"{len(result)} characters" if isinstance(result, str) else f"{len(result)} bytes"
    try:
        return f"{len(json.dumps(result, ensure_ascii=False, default=str))} characters as JSON"
    except (TypeError, ValueError):
        return "size unknown"


def bounded_arguments(arguments: Mapping[str, Any]) -> Mapping[str, Any]:
    """The arguments with long strings cut, so a journal entry stays small."""
    return MappingProxyType(
        {
            str(key): bound_text(value, ARGUMENT_TEXT_LIMIT) if isinstance(value, str) else value
            for key, value in arguments.items()
        }
    )


def parse_arguments(text: object) -> Mapping[str, Any]:
    """A model's argument text as a mapping; text that is not a JSON object is kept under
    ``_unparsed`` (bounded), so a malformed request stays visible instead of empty."""
    if isinstance(text, Mapping):
        return bounded_arguments(text)
    if not isinstance(text, str):
        return MappingProxyType({})
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict):
        return bounded_arguments(value)
    return MappingProxyType({"_unparsed": bound_text(text, ARGUMENT_TEXT_LIMIT)})


@dataclass(slots=True)
class RequestedCall:
    """A tool call a model asked for, waiting for its answer to go back to the model."""

    call_id: str
    name: str
    arguments: Mapping[str, Any]
    arguments_text: str
    requested_at: float  # time.monotonic() when the model's answer asking for it arrived


@dataclass(slots=True)
class ToolLedger:
    """One try's tool calls as the adapters saw them; one per journal."""

    journal: TrialJournal
    pending: dict[str, RequestedCall] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    decorated: list[ToolCallRecord] = field(default_factory=list)

    @classmethod
    def of(cls, journal: TrialJournal) -> ToolLedger:
        """The ledger of ``journal``, made (and set to close with it) on first use."""

        def make() -> ToolLedger:
            ledger = cls(journal)
            journal.at_end(ledger.close)
            return ledger

        return journal.adapter_state(ToolLedger, make)

    def requested(self, call: RequestedCall) -> None:
        """The model asked for ``call`` (again, when a retried request repeats it: kept once)."""
        if call.call_id not in self.answered and call.call_id not in self.pending:
            self.pending[call.call_id] = call

    def answered_with(self, call_id: str, result: object) -> None:
        """A request carries the result of ``call_id``: record the call, once."""
        call = self.pending.pop(call_id, None)
        if call is None:
            return  # answered before, or asked for outside this try (a seeded conversation)
        self.answered.add(call_id)
        if self._claim_decorated(call):
            return
        summary = summary_of(result)
        record = ToolCallRecord(
            bound_text(call.name, NAME_LIMIT),
            call.arguments,
            ToolCallStatus.OK,
            summary,
            # From the model's request to the request that carries the answer: the tool's run
            # plus the agent's own work around it, the closest a client can see.
            (time.monotonic() - call.requested_at) * 1000.0,
        )
        with tool_span(call.name, call_id, call.arguments_text) as span:
            record_tool_result(span, ToolCallStatus.OK.value, lambda: summary)
        record_tool_call(record)

    def ran(self, record: ToolCallRecord) -> None:
        """A ``@recorded_tool`` function ran; its record stands for the model's request."""
        self.decorated.append(record)

    def _claim_decorated(self, call: RequestedCall) -> bool:
        # The decorator binds defaults the model may have left out: the model's arguments
        # need only agree with the ones the function ran with.
        for index, record in enumerate(self.decorated):
            ran_with = record.arguments
            if record.name == bound_text(call.name, NAME_LIMIT) and all(
                key in ran_with and ran_with[key] == value for key, value in call.arguments.items()
            ):
                del self.decorated[index]
                return True
        return False

    def close(self) -> None:
        """The try ended: a call still waiting for its answer is recorded as an error.

        Not ``ok``: nothing shows that it ran, and a check must not count a result nobody saw.
        Not left out either: the model did ask for it, and a check on what was requested
        needs to see it.
        """
        for call_id, call in list(self.pending.items()):
            del self.pending[call_id]
            if self._claim_decorated(call):
                continue
            with tool_span(call.name, call_id, call.arguments_text) as span:
                record_tool_result(span, ToolCallStatus.ERROR.value, lambda: UNANSWERED)
            record_tool_call(
                ToolCallRecord(
                    bound_text(call.name, NAME_LIMIT),
                    call.arguments,
                    ToolCallStatus.ERROR,
                    UNANSWERED,
                    (time.monotonic() - call.requested_at) * 1000.0,
                )
            )


def _call_arguments(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Mapping[str, Any]:
    if signature is not None:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            pass  # the call itself will raise the same TypeError, and be recorded as an error
        else:
            bound.apply_defaults()
            return bounded_arguments(bound.arguments)
    return bounded_arguments({**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs})


class _Recording:
    """The record of one decorated call, filled in as it ends."""

    __slots__ = ("arguments", "journal", "name", "started")

    def __init__(self, name: str, arguments: Mapping[str, Any]) -> None:
        self.name = name
        self.arguments = arguments
        self.journal = current_journal()
        self.started = time.monotonic()

    def finish(self, status: ToolCallStatus, summary: str) -> None:
        if self.journal is None:
            return
        record = ToolCallRecord(
            bound_text(self.name, NAME_LIMIT),
            self.arguments,
            status,
            summary,
            (time.monotonic() - self.started) * 1000.0,
        )
        self.journal.tool_calls.append(record)
        ToolLedger.of(self.journal).ran(record)


@overload
def recorded_tool(fn: Callable[P, R], /) -> Callable[P, R]: ...


@overload
def recorded_tool(*, name: str | None = None) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def recorded_tool(
    fn: Callable[P, R] | None = None, /, *, name: str | None = None
) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
    """Record every call of a plain Python tool in the running trial's journal.

    Use it bare (``@recorded_tool``) or named (``@recorded_tool(name="search")``; the default
    name is the function's). Each call inside a trial becomes a
    :class:`~vitrine.subjects.ToolCallRecord` with its arguments (bound to the parameter names),
    its status (``error`` when it raises: the exception is recorded, then re-raised
    unchanged), the size of its result as the summary, and its duration, and an
    ``execute_tool`` span when tracing is on. ``async def`` tools are awaited inside the
    record. Outside a trial the function runs exactly as undecorated.

    When an instrumented client also sees the model ask for this call, the call is recorded
    once, by the decorator.
    """
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise InvalidArgumentError(f"recorded_tool name must be a non-blank string, got {name!r}")

    def decorate(tool: Callable[P, R]) -> Callable[P, R]:
        if not callable(tool):
            raise InvalidArgumentError(
                f"recorded_tool decorates a function, got {type(tool).__name__}"
            )
        tool_name = name or getattr(tool, "__name__", None) or type(tool).__name__
        try:
            signature: inspect.Signature | None = inspect.signature(tool)
        except (TypeError, ValueError):
            signature = None

        if inspect.iscoroutinefunction(tool):
            coroutine = cast(Callable[P, Awaitable[Any]], tool)

            @functools.wraps(tool)
            async def run_async(*args: P.args, **kwargs: P.kwargs) -> Any:
                recording = _Recording(tool_name, _call_arguments(signature, args, kwargs))
                with tool_span(tool_name, None, recording.arguments) as span:
                    try:
                        result = await coroutine(*args, **kwargs)
                    except BaseException as exc:
                        _failed(recording, span, exc)
                        raise
                    _succeeded(recording, span, result)
                    return result

            return cast(Callable[P, R], run_async)

        @functools.wraps(tool)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            recording = _Recording(tool_name, _call_arguments(signature, args, kwargs))
            with tool_span(tool_name, None, recording.arguments) as span:
                try:
                    result = tool(*args, **kwargs)
                except BaseException as exc:
                    _failed(recording, span, exc)
                    raise
                _succeeded(recording, span, result)
                return result

        return run

    return decorate if fn is None else decorate(fn)


def _succeeded(recording: _Recording, span: Any, result: object) -> None:
    summary = f"returned {_size_of(result)}"
    record_tool_result(span, ToolCallStatus.OK.value, lambda: summary_of(result))
    recording.finish(ToolCallStatus.OK, summary)


def _failed(recording: _Recording, span: Any, exc: BaseException) -> None:
    summary = describe_exception(exc, SUMMARY_LIMIT)
    record_tool_result(span, ToolCallStatus.ERROR.value, lambda: summary)
    recording.finish(ToolCallStatus.ERROR, summary)
