"""Rendering the Presenter's output as the customer-facing answer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["picks_payload", "render_answer"]

_LANE_HEADINGS = {"explore": "New for you:", "replenish": "Running low, time to restock:"}


def render_answer(presentation: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
    """The answer text: the opening, the items grouped by lane, then the closing.

    Names, SKUs and prices come from the payload, never from the model, so a model can word
    the reasons but cannot misstate a price.
    """
    picks = {p["sku"]: p for p in payload["picks"]}
    lines = [presentation["opening"].strip()]
    lanes: dict[str, list[str]] = {"explore": [], "replenish": []}
    for item in presentation["items"]:
        pick = picks[item["sku"]]
        lanes[pick["lane"]].append(
            f"- {pick['name']} ({pick['sku']}, CHF {pick['price_chf']:.2f}) — "
            f"{item['reason'].strip()}"
        )
    shown = [lane for lane in ("explore", "replenish") if lanes[lane]]
    for lane in shown:
        lines.append("")
        if len(shown) > 1:
            lines.append(_LANE_HEADINGS[lane])
        lines.extend(lanes[lane])
    if presentation["closing"].strip():
        lines += ["", presentation["closing"].strip()]
    return "\n".join(lines)


def picks_payload(
    ranking: Mapping[str, Any], candidates: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The Presenter's view of the ranked picks: product facts joined to the ranker's output."""
    by_sku = {c["sku"]: c for c in candidates}
    return [
        {
            "sku": pick["sku"],
            "name": by_sku[pick["sku"]]["name"],
            "price_chf": by_sku[pick["sku"]]["price_chf"],
            "lane": by_sku[pick["sku"]]["lane"],
            "interest": pick["interest"],
            "reason": pick["reason"],
        }
        for pick in ranking["picks"]
    ]
