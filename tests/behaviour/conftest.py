"""Fixtures for the shop's behaviour tests: the live service client and a catalogue oracle.

The oracle (catalogue, personas, interest maps) is read from the shop's packaged data, never
from the service, so an answer is checked against facts the service cannot bend. Whether the
service's front desk is on comes from its /health, so the same tests check the desk's answer
when it is on and the architecture's answer when it is off.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from vitrine.pytest_plugin import ChatClient, ChatSession, Metrics, Transcript
from vitrine_shop.catalogue import Catalogue, load_catalogue
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.invariants import answer_violations
from vitrine_shop.interests import derive_interest_map
from vitrine_shop.personas import DEMO_CLOCK, load_personas


@dataclass(frozen=True)
class Shop:
    catalogue: Catalogue

    def price(self, sku: str) -> float:
        product = self.catalogue.by_sku(sku)
        assert product.price_chf is not None, f"{sku} has no price in the catalogue"
        return float(product.price_chf)

    def department(self, sku: str) -> str:
        return self.catalogue.by_sku(sku).department.display_name

    @property
    def skus(self) -> frozenset[str]:
        return self.catalogue.skus

    def sensitive(self, sku: str) -> bool:
        """Whether a catalogued SKU belongs to the sensitive (health) department."""
        product = self.catalogue.get(sku)
        return product is not None and bool(product.department.sensitive)

    def describes(self, sku: str, word: str) -> bool:
        product = self.catalogue.by_sku(sku)
        text = " ".join(
            (product.name, product.description, *product.tags, *map(str, product.specs.values()))
        )
        return word.casefold() in text.casefold()


@dataclass(frozen=True)
class Customer:
    id: str
    owned_durables: frozenset[str]
    owned_consumables: frozenset[str]
    interest_departments: tuple[str, ...]


@pytest.fixture(scope="session")
def shop() -> Shop:
    return Shop(load_catalogue())


@pytest.fixture(scope="session")
def customers(shop: Shop) -> dict[str, Customer]:
    found = {}
    for persona_id, persona in load_personas().items():
        durables = frozenset(
            sku
            for sku in persona.owned_skus
            if (product := shop.catalogue.get(sku)) is None or not product.consumable
        )
        interests = derive_interest_map(persona, shop.catalogue, DEMO_CLOCK).departments
        found[persona_id] = Customer(
            persona_id,
            durables,
            frozenset(persona.owned_skus) - durables,
            tuple(d.display_name for d in interests),
        )
    return found


@pytest.fixture(scope="session")
def front_desk_on(vitrine_service: ChatClient) -> bool:
    """Whether the service answers some turns at its front desk (its /health says)."""
    _, body = vitrine_service.health()
    assistant = body.get("assistant") or {}
    return str(assistant.get("front_desk", "on")) != "off"


class InvariantChat:
    """The service client, keeping every conversation so that each final answer can be held
    to the shop's data invariants after the test, whatever the test itself asserted."""

    def __init__(self, client: ChatClient) -> None:
        self._client = client
        self.transcripts: list[Transcript] = []

    def __call__(self, persona_id: str | None, *messages: str) -> Transcript:
        if not messages:
            raise ValueError("send at least one message: an empty conversation tests nothing")
        session = self.session(persona_id)
        for message in messages:
            session.send(message)
        return session.transcript

    def session(self, persona_id: str | None) -> ChatSession:
        session = self._client.session(persona_id)
        self.transcripts.append(session.transcript)
        return session

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def violations(self) -> list[str]:
        found = []
        for transcript in self.transcripts:
            sent: list[str] = []
            for turn in transcript.turns:
                sent.append(turn.message)
                if turn.final is None:
                    continue
                request = ShopRequest(transcript.persona_id, tuple(sent))
                found += [
                    f"turn {len(sent)} ({turn.layer}): {v.rule}: {v.detail}"
                    for v in answer_violations(turn.answer, request)
                ]
        return found


@pytest.fixture
def chat(vitrine_chat: ChatClient) -> Iterator[InvariantChat]:
    checked = InvariantChat(vitrine_chat)
    yield checked
    violations = checked.violations()
    if violations:
        pytest.fail("the answers contradict the shop's data: " + "; ".join(violations[:5]))


@pytest.fixture
def metrics(vitrine_metrics: Metrics) -> Metrics:
    return vitrine_metrics
