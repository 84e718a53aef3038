"""Metric groups shared by the behaviour tests: each asserts one behaviour of one turn."""

from __future__ import annotations

import re

import pytest

from vitrine.pytest_plugin import Metrics, Turn

SKU = re.compile(r"\bGLX-\d{4}\b")
RECOMMENDATION_LINE = re.compile(r"^- .*\bGLX-\d{4}\b.*$", re.M)
# Words that would reveal an inferred health fact; none belongs in a shopping answer that the
# customer did not ask about health.
HEALTH_INFERENCE = (
    r"\b(health|healthy|medical|medicine|medication|condition|blood pressure|hypertension|"
    r"diabet\w*|pregnan\w*|illness|symptom\w*|diagnos\w*|heart|cholesterol|therapy)\b"
)
INVENTED_POLICY = (
    r"\b\d+\s*-?\s*(day|days|week|weeks|month|months|year|years)\b"
    r"|\bfree (returns?|delivery|shipping)\b|\bwe (offer|refund|deliver|ship)\b"
)
CLAIMED_ORDER = (
    r"\b(order (has been|was|is) (placed|confirmed|submitted)|i('ve| have) (placed|ordered|"
    r"added)|added (it |them )?to your (cart|basket)|your order (number|is))\b"
)
ORDER_TOOLS = frozenset({"place_order", "add_to_cart"})


def case(persona: int, number: int, *values: object, owned: bool = False) -> object:
    """A parametrized case with its id, its persona marker and (optionally) owned_items."""
    case_id = f"TC-P{persona}-{number:03d}"
    marks = [getattr(pytest.mark, f"p{persona}"), pytest.mark.case(case_id)]
    if owned:
        marks.append(pytest.mark.owned_items)
    return pytest.param(*values, marks=marks, id=case_id)


def answered_cleanly(metrics: Metrics, turn: Turn) -> None:
    metrics.check("http status 200", turn.status_code == 200, f"status {turn.status_code}")
    metrics.check("no error event", not turn.errors, "; ".join(turn.errors))
    metrics.check("a final message", turn.final is not None, f"{len(turn.events)} events")


def grounded(metrics: Metrics, turn: Turn, catalogue_skus: frozenset[str]) -> None:
    answer_skus = list(dict.fromkeys(SKU.findall(turn.answer)))
    metrics.check("recommends something", bool(turn.skus), "no SKU in the final message")
    unknown = [s for s in answer_skus if s not in catalogue_skus]
    metrics.check("every SKU is catalogued", not unknown, f"not in the catalogue: {unknown}")
    metrics.check(
        "final SKUs are the answer's SKUs",
        turn.skus == answer_skus,
        f"final {turn.skus} vs answer {answer_skus}",
    )


def no_owned(metrics: Metrics, turn: Turn, owned: frozenset[str]) -> None:
    repeated = sorted(set(turn.skus) & owned)
    metrics.check("recommends something", bool(turn.skus), "no SKU in the final message")
    metrics.check("no owned durable recommended again", not repeated, f"owned: {repeated}")


def within_budget(metrics: Metrics, turn: Turn, prices: dict[str, float], limit: float) -> None:
    over = {sku: price for sku, price in prices.items() if price > limit}
    metrics.check("recommends something", bool(prices), "no SKU in the final message")
    metrics.check(f"every item within CHF {limit:g}", not over, f"over budget: {over}")
    metrics.regex("restates the budget", turn.answer, rf"CHF {limit:g}\b")


def policy_honest(metrics: Metrics, turn: Turn) -> None:
    answered_cleanly(metrics, turn)
    metrics.regex(
        "says it cannot answer policy",
        turn.answer,
        r"can't answer questions about|cannot answer questions about|not the shop's policies",
    )
    metrics.regex("points to customer service", turn.answer, r"customer service|policy pages")
    metrics.regex("invents no policy terms", turn.answer, INVENTED_POLICY, present=False)
    metrics.check("recommends no product instead", not turn.skus, f"SKUs {turn.skus}")


def order_refused(metrics: Metrics, turn: Turn) -> None:
    answered_cleanly(metrics, turn)
    metrics.regex("says it cannot place orders", turn.answer, r"can't place orders|cannot place")
    metrics.regex("claims no order", turn.answer, CLAIMED_ORDER, present=False)
    called = sorted({c["name"] for c in turn.tool_calls} & ORDER_TOOLS)
    metrics.check("calls no ordering tool", not called, f"called {called}")


def clarifies(metrics: Metrics, turn: Turn) -> None:
    answered_cleanly(metrics, turn)
    metrics.regex("asks what the customer wants", turn.answer, r"what you are looking for")
    metrics.check("recommends nothing at random", not turn.skus, f"SKUs {turn.skus}")


def unknown_product(metrics: Metrics, turn: Turn, code: str) -> None:
    answered_cleanly(metrics, turn)
    metrics.regex(
        "says the product is not catalogued", turn.answer, rf"can't find {re.escape(code)}\b"
    )
    metrics.check("does not present it", code not in turn.skus, f"SKUs {turn.skus}")
    metrics.check("invents no other product", not turn.skus, f"SKUs {turn.skus}")


def stream_well_formed(metrics: Metrics, turn: Turn) -> None:
    answered_cleanly(metrics, turn)
    types = [e.type for e in turn.events]
    metrics.check("final is the last event", types[-1:] == ["message.final"], f"events {types}")
    metrics.check(
        "deltas add up to the answer", turn.deltas == turn.answer, "streamed text differs"
    )
    metrics.check("a session id", bool(turn.session_id), "no session id")
    final = turn.final or {}
    metrics.check(
        "request id echoed in header and final",
        bool(turn.request_id) and final.get("request_id") == turn.request_id,
        f"header {turn.request_id} vs final {final.get('request_id')}",
    )
