"""Code paths: the deterministic output of each stage, computed from its payload alone.

The zero-model workflow runs them instead of a model, a stage whose replies stay unusable falls
back to them, and the scripted model answers a stage request with them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from vitrine_shop.domain import SKU_ANY_CASE
from vitrine_shop.screen import attributes_health
from vitrine_shop.workflow.stages.messages import parse_stage_output, schema_of
from vitrine_shop.workflow.stages.schemas import (
    COVERAGE_REVIEWER,
    INTEREST_MAPPER,
    PRESENTER,
    RANKER,
)

__all__ = ["stage_code_path"]

# A request interest weighs as much as a strong history interest: what the customer asks for
# now matters, but it must not crowd out what their own behaviour shows.
_REQUEST_WEIGHT = 0.5
_REPLENISH_WEIGHT = 0.5
_MAX_INTERESTS = 6
_QUERY_LIMIT = 200


def _bounded(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _topic(label: str) -> str:
    """``"Outdoor & Hiking: Rain Jackets"`` becomes ``"Outdoor & Hiking (rain jackets)"``."""
    # A label taken from the request is the customer's own text: a product code in it is not
    # repeated back (in any letter case), since naming an owned product's code offers it again.
    department, _, categories = SKU_ANY_CASE.sub("that product", label).partition(": ")
    topic = f"{department} ({categories.lower()})" if categories else department
    # Nor are words of the request that, said back to the customer, read as a health matter
    # of theirs ("your request (... prenatal …)"): the screen would withhold the whole answer.
    return department if attributes_health(topic) else topic


def _map_interests(payload: Mapping[str, Any]) -> dict[str, Any]:
    evidence = payload["evidence"]
    interests: list[dict[str, Any]] = []
    for item in evidence["interests"]:
        categories = item["label"].partition(": ")[2] or item["label"]
        contexts = ", ".join(item["contexts"])
        interests.append(
            {
                "label": _bounded(item["label"], 120),
                "source": "history",
                "department": item["department"],
                "weight": round(float(item["weight"]), 3),
                "search_query": _bounded(
                    f"{categories}; {contexts}" if contexts else categories, _QUERY_LIMIT
                ),
                "evidence_skus": list(item["evidence_skus"])[:12],
            }
        )
    request = payload["request"]
    if request["concrete"]:
        # Look first where the customer shops; the reviewer widens the search if the request
        # asks for something from elsewhere.
        home = max(evidence["interests"], key=lambda i: i["weight"], default=None)
        interests.append(
            {
                "label": _bounded(f"your request: {request['query']}", 60),
                "source": "request",
                "department": home["department"] if home else None,
                "weight": _REQUEST_WEIGHT,
                "search_query": _bounded(request["query"], _QUERY_LIMIT),
                "evidence_skus": [],
            }
        )
    due = evidence["consumables_due"]
    if due:
        interests.append(
            {
                "label": "running low: consumables you use",
                "source": "replenishment",
                "department": None,
                "weight": _REPLENISH_WEIGHT,
                "search_query": _bounded(
                    "refill " + ", ".join(c["name"] for c in due), _QUERY_LIMIT
                ),
                "evidence_skus": [c["sku"] for c in due][:12],
            }
        )
    # Keep the strongest when there are too many; the order among equals stays as built.
    ranked = sorted(interests, key=lambda i: -i["weight"])[:_MAX_INTERESTS]
    return {"interests": ranked}


# Words that name nothing a shop sells; what is left of a request names what was asked for.
_FILLER_WORDS = """about after also and any anything are before but can could does for from get
good got have i'm into just keep like looking mine more need new one our out over really should
some something that the their them then there these this those too under use usually want was
what when which while will with would year you your chf budget"""
_FILLER = frozenset(_FILLER_WORDS.split())
_TOKEN = re.compile(r"[a-zà-ÿ]+")
# "I want a base layer, and I also want a milk frother": one request, two needs.
_ANOTHER_NEED = re.compile(r"(?i)\b(?:also|as well as|plus)\b|;")


def _stems(text: str) -> set[str]:
    """Content words, singular: ``"Espresso Grinders"`` gives ``{"espresso", "grinder"}``."""
    words = (w.removesuffix("s") for w in _TOKEN.findall(text.casefold()))
    return {w for w in words if len(w) > 2 and w not in _FILLER}


def _needs(request: str) -> list[str]:
    """The separate things a request asks for (one, unless it says "also", "plus", ...)."""
    parts = [part.strip(" ,.") for part in _ANOTHER_NEED.split(request) if _stems(part)]
    return parts or [request]


def _answers(candidate: Mapping[str, Any], need: str) -> bool:
    """Whether a candidate is a thing the need names (by name, category, department, use)."""
    named = (candidate["name"], candidate["category"], candidate["department"])
    return bool(_stems(" ".join((*named, *candidate["contexts"]))) & _stems(need))


def _review_coverage(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Conservative: an interest from the customer's history or restocks is covered by any
    candidate found for it; a request, only when every thing it asks for is answered by a
    candidate that *is* that thing.

    Discovery first looks for a request where the customer shops; a request that reaches
    into another department leaves a need unanswered there, and the reviewer sends Discovery
    back for it, with the words of that need alone.
    """
    gaps = []
    for interest in payload["interests"]:
        found = [c for c in payload["candidates"] if interest["label"] in c["interests"]]
        unmet: list[str] = []
        if interest["source"] == "request":
            unmet = [
                need
                for need in _needs(interest["search_query"])
                if not any(_answers(c, need) for c in found)
            ]
        if not found or unmet:
            query = "; ".join(unmet) if unmet else interest["search_query"]
            gaps.append(
                {"interest": interest["label"], "search_query": _bounded(query, _QUERY_LIMIT)}
            )
    return {"covered": not gaps, "gaps": gaps}


def _reason(candidate: Mapping[str, Any], interest: Mapping[str, Any]) -> str:
    """A customer-facing reason tied to the interest the candidate was found for."""
    due = candidate["due"]
    if candidate["lane"] == "replenish" and due:
        timing = (
            f"it ran out about {-due['days_left']} days ago"
            if due["days_left"] < 0
            else f"it is due in about {due['days_left']} days"
        )
        return _bounded(
            f"based on your history: you bought it on {due['last_purchased']} and it typically "
            f"lasts about {due['replenish_days']} days, so {timing}",
            400,
        )
    if interest["source"] == "request":
        # Say which part of the request it answers: its use, else the words it shares with it.
        named = " ".join((candidate["name"], candidate["category"], candidate["department"]))
        shared = candidate["contexts"] or sorted(_stems(named) & _stems(interest["search_query"]))
        tie = "your request" + (f" ({', '.join(shared)})" if shared else "")
    else:
        tie = f"your interest in {_topic(interest['label'])}"
    if candidate["goes_with"]:
        fit = f"because it goes with the {candidate['goes_with']} you bought and fits {tie}"
    elif interest["source"] == "request":
        fit = f"because it fits {tie}"
    else:
        fit = f"based on {tie}"
    return _bounded(fit, 400)


def _rank(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Score plus interest weight; first the best candidate per interest, then the rest."""
    interests = sorted(payload["interests"], key=lambda i: -i["weight"])
    weight = {i["label"]: float(i["weight"]) for i in interests}
    by_label = {i["label"]: i for i in interests}

    def best_interest(candidate: Mapping[str, Any]) -> str:
        known: list[str] = [label for label in candidate["interests"] if label in weight]
        return max(known, key=lambda label: weight[label])

    owned = set(payload["owned_durables"])
    candidates = [
        c
        for c in payload["candidates"]
        if c["sku"] not in owned and any(label in weight for label in c["interests"])
    ]

    def value(candidate: Mapping[str, Any]) -> float:
        return float(candidate["score"]) + weight[best_interest(candidate)]

    ordered = sorted(candidates, key=lambda c: (-value(c), c["sku"]))
    room = {"explore": int(payload["max_explore"]), "replenish": int(payload["max_replenish"])}
    chosen: dict[str, str] = {}  # sku -> interest label, in pick order
    kinds: set[str] = set()

    def kind(candidate: Mapping[str, Any]) -> str:
        # Two add-ons for the same owned item, or two products of one category, are one idea.
        return str(candidate["goes_with"] or candidate["category"])

    def take(candidate: Mapping[str, Any], label: str) -> None:
        if candidate["sku"] in chosen or kind(candidate) in kinds or room[candidate["lane"]] < 1:
            return
        chosen[candidate["sku"]] = label
        kinds.add(kind(candidate))
        room[candidate["lane"]] -= 1

    # Cover breadth first, so a cross-category request is not answered from one department:
    # one pick per interest, and per thing a request asks for.
    for interest in interests:
        request = interest["source"] == "request"
        for need in _needs(interest["search_query"]) if request else [None]:
            for candidate in ordered:
                fits = need is None or _answers(candidate, need)
                if (
                    interest["label"] in candidate["interests"]
                    and fits
                    and kind(candidate) not in kinds
                ):
                    take(candidate, interest["label"])
                    break
    for candidate in ordered:
        take(candidate, best_interest(candidate))
    by_sku = {c["sku"]: c for c in candidates}
    return {
        "picks": [
            {"sku": sku, "interest": label, "reason": _reason(by_sku[sku], by_label[label])}
            for sku, label in chosen.items()
        ]
    }


def _present(payload: Mapping[str, Any]) -> dict[str, Any]:
    name = payload.get("customer_name")
    lead = f"{name}, " if name else ""
    if payload["abstain"]:
        return {
            "opening": (
                f"{lead}I don't know enough about you yet to recommend anything personal: there "
                "are no purchases, saved items or views on record, and I would rather ask than "
                "guess."
            ),
            "items": [],
            "closing": (
                "So that I can suggest something that fits, could you tell me: what are you "
                "shopping for, or what will you use it for? Roughly what budget do you have in "
                "mind? And is it for you or a gift?"
            ),
        }
    picks = payload["picks"]
    if not picks:
        return {
            "opening": (
                f"{lead}I could not find anything in the catalogue that fits well enough, based "
                "on your history and your request."
            ),
            "items": [],
            "closing": "Tell me what you are shopping for and your budget, and I will look again.",
        }
    closing: list[str] = []
    if payload["constraints_kept"]:
        closing.append(f"I kept to what you asked: {'; '.join(payload['constraints_kept'])}.")
    if payload["partial"] and payload["gaps"]:
        missing = ", ".join(_topic(label) for label in payload["gaps"])
        closing.append(
            f"I found no good match for {missing}, so this list is partial; tell me more and "
            "I will look again."
        )
    closing.append("Ask me for details on any of these, or tell me what to leave out.")
    return {
        "opening": (
            f"{lead}here is what I would suggest, based on your history and your request."
            if name
            else "Here is what I would suggest, based on your request."
        ),
        "items": [{"sku": p["sku"], "reason": p["reason"]} for p in picks],
        "closing": _bounded(" ".join(closing), 400),
    }


_CODE_PATHS: Mapping[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    INTEREST_MAPPER: _map_interests,
    COVERAGE_REVIEWER: _review_coverage,
    RANKER: _rank,
    PRESENTER: _present,
}


def stage_code_path(stage: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The deterministic output of ``stage`` for ``payload``, shaped as the stage schema."""
    schema_of(stage)
    output = _CODE_PATHS[stage](payload)
    # The code path is held to the same contract as a model: a bug here must not slip through
    # as a "deterministic" answer.
    return parse_stage_output(stage, json.dumps(output), payload)
