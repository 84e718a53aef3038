"""Mutants of the shop's service side: bugs between the HTTP service and the architecture.

Each is planted by swapping one function of the served assistant for its faulty twin, in the
process that serves it, and is found (or not) by the behaviour tests run over real HTTP. Only
defects a client of the service can observe are here: a screen skipped in the service path,
for instance, changes nothing a healthy model's answers show, so it would survive by design.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from unittest import mock

from vitrine.mutants import Mutant
from vitrine.service import AssistantReply
from vitrine_shop.served_assistant import ShopAssistant

__all__ = ["SERVICE_MUTANTS"]

BEHAVIOUR_TESTS = ("tests/behaviour", "-m", "not adversarial")


@contextmanager
def _desk_misses_orders() -> Iterator[object]:
    """The desk's order intent never matches, so order requests reach the model."""
    with mock.patch("vitrine_shop.front_desk.is_order_request", return_value=False) as patched:
        yield patched


@contextmanager
def _history_not_passed() -> Iterator[object]:
    """The service hands the architecture only the latest turn, not the conversation."""

    healthy = ShopAssistant.reply

    async def latest_turn_only(
        self: ShopAssistant, persona_id: str | None, user_turns: Sequence[str]
    ) -> AssistantReply:
        return await healthy(self, persona_id, user_turns[-1:])

    with mock.patch.object(ShopAssistant, "reply", latest_turn_only) as patched:
        yield patched


@contextmanager
def _final_skus_dropped() -> Iterator[object]:
    """The service builds the final message without the answer's SKUs."""

    healthy = ShopAssistant.reply

    async def without_items(
        self: ShopAssistant, persona_id: str | None, user_turns: Sequence[str]
    ) -> AssistantReply:
        reply = await healthy(self, persona_id, user_turns)
        return dataclasses.replace(reply, items=())

    with mock.patch.object(ShopAssistant, "reply", without_items) as patched:
        yield patched


def _cases(persona_numbers: Sequence[tuple[int, int]]) -> tuple[str, ...]:
    return tuple(f"TC-P{persona}-{number:03d}" for persona, number in persona_numbers)


SERVICE_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        id="service-desk-lets-orders-through",
        component="service.front_desk",
        description="the front desk no longer recognises order requests, so they reach the "
        "model instead of getting the desk's refusal",
        plant=_desk_misses_orders,
        expected_killers=_cases([(1, 7), (2, 7), (3, 7), (4, 8), (5, 8)]),
        tests=BEHAVIOUR_TESTS,
    ),
    Mutant(
        id="service-forgets-history",
        component="service.reply",
        description="the service passes only the latest user turn to the architecture, so a "
        "constraint stated in an earlier turn is lost",
        plant=_history_not_passed,
        # Marco's cycling picks happen to cost under CHF 200 even unbounded: TC-P2-005 cannot
        # see the lost budget, so it is not expected to.
        expected_killers=_cases([(1, 5), (3, 5), (5, 12), (1, 12)]),
        tests=BEHAVIOUR_TESTS,
    ),
    Mutant(
        id="service-drops-final-skus",
        component="service.message_final",
        description="the final message carries no SKUs although the answer recommends some",
        plant=_final_skus_dropped,
        expected_killers=_cases([(1, 1), (2, 1), (3, 1), (5, 5), (1, 3), (1, 11)]),
        tests=BEHAVIOUR_TESTS,
    ),
)
