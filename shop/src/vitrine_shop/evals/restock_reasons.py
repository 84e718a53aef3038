"""A restock the workflow offers must say why it is due.

The workflow's replenish lane holds consumables the customer uses that are running low; what
sets a restock apart from a new product is the customer's own purchase. So every item the
Ranker put in that lane, where the answer lists it, must state when the customer bought it and
how long it lasts ("you bought it on 2026-03-02 and it typically lasts about 30 days"). The
``reason`` rule then holds both statements to the purchase history and the catalogue; this
rule holds that they are made at all, since a reason that asserts nothing is never false.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["restock_reason_problems"]

_BOUGHT_ON = re.compile(r"(?i)\byou bought (?:it|this|them)?\s*on \d{4}-\d{2}-\d{2}")
_LASTS = re.compile(r"(?i)\blasts? about -?\d+ days")


def restock_reason_problems(
    lines: Sequence[tuple[str, str]], structured: Mapping[str, Any]
) -> list[str]:
    """Each listed restock (``lines``: the SKU and the rest of its list line) whose reason does
    not state the purchase and the cycle; only a workflow answer records its lanes."""
    if structured.get("architecture") != "workflow" or structured.get("withheld"):
        return []
    restocks = {
        str(p.get("sku"))
        for p in structured.get("ranked") or ()
        if isinstance(p, Mapping) and p.get("lane") == "replenish"
    }
    return [
        f"{sku} is offered as a restock without saying when it was bought and how long it lasts"
        for sku, text in lines
        if sku in restocks and not (_BOUGHT_ON.search(text) and _LASTS.search(text))
    ]
