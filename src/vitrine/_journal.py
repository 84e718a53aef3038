"""The trial's journal: what adapters saw the subject do, gathered without hand instrumentation.

Every try of a trial runs inside :func:`journal_scope`. An adapter (an instrumented OpenAI
client, an Agents SDK or pydantic-ai hook, a ``@recorded_tool``) writes each model call and
tool call it sees into :func:`current_journal`; when the subject returns, :func:`merged` puts
what was seen into its :class:`~vitrine.SubjectResponse`, unless the subject reported that
itself. The journal is a context variable, so a subject's own tasks and ``asyncio.to_thread``
workers write into the trial that started them, and concurrent trials never mix.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from vitrine._bench.response import ModelCallRecord, SubjectResponse, TokenUsage, ToolCallRecord

__all__ = [
    "CACHED_PROVENANCE",
    "TrialJournal",
    "current_journal",
    "journal_scope",
    "merged",
    "record_model_call",
    "record_tool_call",
]

_T = TypeVar("_T")

# Added to a trial's provenance when any of its model calls was answered from the cache.
CACHED_PROVENANCE = "+model-cache"


@dataclass(slots=True)
class TrialJournal:
    """The model calls and tool calls one try of a trial made, in the order they ended."""

    model_calls: list[ModelCallRecord] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    # What an adapter must remember between the calls of one try (a tool call the model asked
    # for and nobody answered yet), and what it must do when the try ends.
    _state: dict[object, Any] = field(default_factory=dict, repr=False, compare=False)
    _at_end: list[Callable[[], None]] = field(default_factory=list, repr=False, compare=False)
    # Suffixes an adapter adds to the trial's provenance (the HTTP transport it handed the
    # subject's client), in the order first added.
    provenance_tags: list[str] = field(default_factory=list, repr=False, compare=False)

    def adapter_state(self, key: object, factory: Callable[[], _T]) -> _T:
        """The state ``key`` keeps for this try, made by ``factory`` on first use."""
        if key not in self._state:
            self._state[key] = factory()
        return self._state[key]  # type: ignore[no-any-return]

    def at_end(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the try ends, before its response is merged (once each)."""
        self._at_end.append(callback)

    def tag_provenance(self, tag: str) -> None:
        """Append ``tag`` (``+something``) to the trial's provenance when the try is merged."""
        if tag not in self.provenance_tags:
            self.provenance_tags.append(tag)

    def close(self) -> None:
        """Run the end-of-try callbacks, in the order they were registered."""
        callbacks, self._at_end = self._at_end, []
        for callback in callbacks:
            callback()

    @property
    def sdk_retries(self) -> int:
        """Tries the subject's clients made on their own, summed over its model calls."""
        return sum(call.sdk_retries for call in self.model_calls)

    def usage(self) -> TokenUsage | None:
        """Tokens the model calls reported; None when no call reported any."""
        reported = [
            call
            for call in self.model_calls
            if call.input_tokens is not None or call.output_tokens is not None
        ]
        if not reported:
            return None
        return TokenUsage(
            sum(call.input_tokens or 0 for call in reported),
            sum(call.output_tokens or 0 for call in reported),
        )


_CURRENT: ContextVar[TrialJournal | None] = ContextVar("vitrine_trial_journal", default=None)


@contextmanager
def journal_scope() -> Iterator[TrialJournal]:
    """Open a fresh journal for one try of a trial; adapters inside it write into it."""
    journal = TrialJournal()
    token = _CURRENT.set(journal)
    try:
        yield journal
    finally:
        try:
            journal.close()
        finally:
            _CURRENT.reset(token)


def current_journal() -> TrialJournal | None:
    """The journal of the try running now, or None outside a trial (an adapter then keeps
    nothing, and the subject behaves exactly as it would without vitrine)."""
    return _CURRENT.get()


def record_model_call(call: ModelCallRecord) -> None:
    """Add one model call to the running trial's journal (nothing outside a trial)."""
    journal = _CURRENT.get()
    if journal is not None:
        journal.model_calls.append(call)


def record_tool_call(call: ToolCallRecord) -> None:
    """Add one tool call to the running trial's journal (nothing outside a trial)."""
    journal = _CURRENT.get()
    if journal is not None:
        journal.tool_calls.append(call)


def merged(response: SubjectResponse, journal: TrialJournal) -> SubjectResponse:
    """``response`` with what the journal saw, where the subject did not report it itself.

    A subject that returned its own tool calls, model calls or usage keeps them: it knows its
    own behaviour best, and a journal that saw nothing adds nothing (an empty journal is not
    evidence that no tool was called).
    """
    changes: dict[str, object] = {}
    if response.tool_calls is None and journal.tool_calls:
        changes["tool_calls"] = tuple(journal.tool_calls)
    if response.model_calls is None and journal.model_calls:
        changes["model_calls"] = tuple(journal.model_calls)
    if response.usage is None:
        usage = journal.usage()
        if usage is not None:
            changes["usage"] = usage
    provenance = response.provenance
    for tag in journal.provenance_tags:
        if tag not in provenance:
            provenance += tag
    # An answer from the model-call cache is not a fresh measurement, whoever reported the
    # calls: the trial's provenance says so wherever it is shown (rows, board, reports).
    if any(call.cached for call in journal.model_calls) and not provenance.endswith(
        CACHED_PROVENANCE
    ):
        provenance += CACHED_PROVENANCE
    if provenance != response.provenance:
        changes["provenance"] = provenance
    return replace(response, **changes) if changes else response  # type: ignore[arg-type]
