"""The request both architectures answer: who is asking, and what they said so far.

A request is carried inside a benchmark case's ``input`` as plain JSON, so the same scenario can
be replayed by the offline suite, the live lane and the HTTP service.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ShopRequest"]


@dataclass(frozen=True, slots=True)
class ShopRequest:
    """A customer's conversation with the assistant; the last user turn is the current query.

    ``persona_id`` is None for an anonymous visitor. Earlier turns matter: a constraint stated
    in the first turn ("my maximum budget is CHF 250") still binds the answer to the last.
    """

    persona_id: str | None
    user_turns: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.user_turns:
            raise ValueError("a shop request needs at least one user turn")
        if any(not isinstance(turn, str) for turn in self.user_turns):
            raise ValueError("every user turn must be text")

    @property
    def query(self) -> str:
        return self.user_turns[-1]

    @classmethod
    def single(cls, persona_id: str | None, query: str) -> ShopRequest:
        return cls(persona_id, (query,))

    @classmethod
    def from_case_input(cls, data: Any) -> ShopRequest:
        if not isinstance(data, Mapping):
            raise ValueError(f"a shop case input is a mapping, got {type(data).__name__}")
        turns = data.get("user_turns")
        if turns is None and "query" in data:
            turns = [data["query"]]
        if not isinstance(turns, Sequence) or isinstance(turns, str):
            raise ValueError("a shop case input needs 'user_turns' (a list) or 'query'")
        persona = data.get("persona_id")
        return cls(None if persona is None else str(persona), tuple(str(t) for t in turns))

    def to_case_input(self) -> dict[str, Any]:
        return {"persona_id": self.persona_id, "user_turns": list(self.user_turns)}
