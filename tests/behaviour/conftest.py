"""Fixtures for the shop's behaviour tests: the live service client and a catalogue oracle.

The oracle (catalogue, personas, interest maps) is read from the shop's packaged data, never
from the service, so an answer is checked against facts the service cannot bend. Whether the
service's front desk is on comes from its /health, so the same tests check the desk's answer
when it is on and the architecture's answer when it is off.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from vitrine.pytest_plugin import ChatClient, Metrics
from vitrine_shop.catalogue import Catalogue, load_catalogue
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


@pytest.fixture
def chat(vitrine_chat: ChatClient) -> ChatClient:
    return vitrine_chat


@pytest.fixture
def metrics(vitrine_metrics: Metrics) -> Metrics:
    return vitrine_metrics
