"""The declared model-call ceiling, and the wrapper that enforces it.

A ceiling that is only displayed is a promise; this one is mechanical. Every model the red team
hands to a target, an attacker or a judge is wrapped in :class:`CountingChatModel`, which asks
its :class:`CallLedger` for permission *before* the call leaves the process. A call beyond the
ceiling is refused with :class:`CeilingReached`, so the probe is truncated, and the overrun
never happens rather than being reported afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from vitrine._bench.response import TokenUsage
from vitrine.errors import CeilingReached, InvalidArgumentError
from vitrine.providers._base import ChatCompletion, ChatModel, ChatRequest, WrappedModel

__all__ = ["CallLedger", "CeilingReached", "CountingChatModel", "WorkloadCeiling"]


@dataclass(frozen=True, slots=True)
class WorkloadCeiling:
    """Model calls allowed per probe, by role; the campaign ceiling is their sum x probes."""

    target_calls_per_probe: int = 25
    judge_calls_per_probe: int = 1
    attacker_calls_per_probe: int = 0

    def __post_init__(self) -> None:
        if self.target_calls_per_probe < 1:
            raise InvalidArgumentError("a probe needs at least one target call to observe anything")
        if self.judge_calls_per_probe < 0 or self.attacker_calls_per_probe < 0:
            raise InvalidArgumentError("call ceilings cannot be negative")

    @property
    def per_probe(self) -> int:
        return (
            self.target_calls_per_probe + self.judge_calls_per_probe + self.attacker_calls_per_probe
        )

    def campaign(self, probes: int) -> int:
        return self.per_probe * probes

    def to_dict(self, probes: int) -> dict[str, int]:
        return {
            "target_calls_per_probe": self.target_calls_per_probe,
            "judge_calls_per_probe": self.judge_calls_per_probe,
            "attacker_calls_per_probe": self.attacker_calls_per_probe,
            "probes": probes,
            "model_calls": self.campaign(probes),
        }


class CallLedger:
    """Counts one probe's model calls by role against the per-role limits.

    ``spent_elsewhere`` and ``campaign_limit`` let a campaign refuse a call that would fit the
    probe's own allowance but overrun the whole campaign's declared total.
    """

    def __init__(
        self,
        limits: dict[str, int],
        *,
        campaign_limit: int | None = None,
        spent_elsewhere: int = 0,
    ) -> None:
        self.limits = dict(limits)
        self.used: dict[str, int] = dict.fromkeys(limits, 0)
        # None until a provider reports usage: a call that reported none adds no zero.
        self.usage: TokenUsage | None = None
        self.refused: str | None = None
        self._campaign_limit = campaign_limit
        self._spent_elsewhere = spent_elsewhere

    @property
    def total(self) -> int:
        return sum(self.used.values())

    def charge(self, role: str) -> None:
        """Take one call for ``role`` or raise :class:`CeilingReached` without taking it."""
        limit = self.limits.get(role, 0)
        if self.used.get(role, 0) >= limit:
            self.refused = role
            raise CeilingReached(role, limit)
        if (
            self._campaign_limit is not None
            and self._spent_elsewhere + self.total >= self._campaign_limit
        ):
            self.refused = role
            raise CeilingReached("campaign", self._campaign_limit)
        self.used[role] = self.used.get(role, 0) + 1

    def record_usage(self, usage: TokenUsage | None) -> None:
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage


class CountingChatModel(WrappedModel):
    """A :class:`ChatModel` that charges its ledger before every call it passes on."""

    def __init__(self, inner: ChatModel, ledger: CallLedger, role: str) -> None:
        super().__init__(inner)
        self._ledger = ledger
        self._role = role

    @property
    def calls(self) -> int:
        return self._ledger.used.get(self._role, 0)

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        self._ledger.charge(self._role)
        completion = await self._inner.complete(request)
        self._ledger.record_usage(completion.usage)
        return completion
