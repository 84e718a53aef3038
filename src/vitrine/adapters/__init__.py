"""Adapters: evaluate the agent as you built it, with its model calls and tool calls recorded.

Every try of a trial runs with a journal open. An adapter writes into it what it sees the
subject do, through the framework's own hooks where it has them, and vitrine puts that into the
trial's :class:`~vitrine.SubjectResponse` (``tool_calls``, ``model_calls``, ``usage``) unless the
subject reported them itself, so the tool-call checks work on an agent nobody instrumented by
hand. Outside a trial the adapters record nothing and change nothing.

Names load on first use: importing this module imports no SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine._bench.response import ModelCallRecord as ModelCallRecord
    from vitrine._journal import (
        TrialJournal as TrialJournal,
        current_journal as current_journal,
        record_model_call as record_model_call,
        record_tool_call as record_tool_call,
    )
    from vitrine.adapters._agents import agents_subject as agents_subject
    from vitrine.adapters._cache import ModelCallCache as ModelCallCache
    from vitrine.adapters._openai import (
        AsyncOpenAITransport as AsyncOpenAITransport,
        OpenAITransport as OpenAITransport,
        instrument_openai as instrument_openai,
    )
    from vitrine.adapters._pydantic_ai import pydantic_ai_subject as pydantic_ai_subject
    from vitrine.adapters._tools import recorded_tool as recorded_tool

__getattr__, __dir__ = lazy_exports(__name__)
