"""What the service needs from an assistant, and what a suite's factory receives.

The service owns everything about HTTP (sessions, limits, streaming, errors); the assistant
owns only the conversation. An assistant answers the whole conversation so far (every user
turn of the session, oldest first), which keeps it stateless and lets the service bound and
expire conversations without the assistant's help.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from vitrine.errors import AssistantUnavailable, UnknownPersonaError

__all__ = [
    "Assistant",
    "AssistantFactory",
    "AssistantReply",
    "AssistantUnavailable",
    "ServiceOptions",
    "ToolEvent",
    "UnknownPersonaError",
]


@dataclass(frozen=True, slots=True)
class ServiceOptions:
    """The start-up choices ``vitrine serve`` passes to a suite's assistant factory.

    ``suite_options`` holds the values of the suite's own serve flags (its
    :class:`~vitrine.pipeline.ServiceFlag` declarations), by key, each at its default when the
    flag was not given; vitrine reads none of them.
    """

    provider: str = "scripted"
    model: str | None = None
    local_model: str | None = None
    max_output_tokens: int | None = None  # None: the provider configuration's ceiling
    suite_options: Mapping[str, str | bool | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolEvent:
    """One tool call as the customer may see it: its name and how it ended, nothing else."""

    name: str
    status: str


@dataclass(frozen=True, slots=True)
class AssistantReply:
    """One answered turn. ``layer`` names what produced the answer (``"front-desk"``,
    ``"agent"``, ``"workflow"``...), so a client can tell a fixed reply from a model's."""

    answer: str
    items: tuple[str, ...] = ()  # the catalogue identifiers the answer recommends, in order
    abstained: bool = False
    tool_calls: tuple[ToolEvent, ...] = ()
    facts: dict[str, object] = field(default_factory=dict)  # extra JSON-safe scalars
    layer: str = "assistant"


@runtime_checkable
class Assistant(Protocol):
    """A conversational assistant ``vitrine serve`` can serve: it replies turn by turn."""

    @property
    def description(self) -> dict[str, str]:
        """What /health reports about the assistant (architecture, provider, model)."""
        ...

    @property
    def tool_names(self) -> frozenset[str]:
        """The tool names a client may see; any other name is reported as ``"other"``."""
        ...

    def check_persona(self, persona_id: str | None) -> None:
        """Raise :class:`UnknownPersonaError` for a persona the assistant cannot serve.

        The error's ``known`` ids are shown to the client: an assistant lists them only when
        its operator asked it to, since they say who the assistant knows.
        """
        ...

    async def warm_up(self) -> str | None:
        """Load what the first answer would otherwise pay for; return a reason if not ready."""
        ...

    async def reply(self, persona_id: str | None, user_turns: Sequence[str]) -> AssistantReply:
        """Answer the conversation whose last user turn is the current message."""
        ...


class AssistantFactory(Protocol):
    """Builds the assistant for the service options ``vitrine serve`` was started with."""

    def __call__(self, options: ServiceOptions) -> Assistant: ...
