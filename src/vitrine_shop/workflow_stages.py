"""The four model stages of the shop workflow: payloads, output schemas and code paths.

Every model stage of :mod:`vitrine_shop.workflow` (InterestMapper, CoverageReviewer, Ranker,
Presenter) is defined here as data plus pure functions, so that three callers share one truth:

- the workflow asks a model for the stage's output (:func:`stage_request`) and judges whether
  the reply is usable (:func:`parse_stage_output`);
- when the model is absent (the zero-model variant) or its replies stay unusable, the workflow
  runs the stage's deterministic code path (:func:`stage_code_path`);
- the offline scripted model answers a stage request with that same code path
  (:func:`scripted_stage_output`), so offline runs cross the real request/parse/validate
  plumbing instead of a shortcut around it.

Discovery, the fifth executor, is retrieval in code and has no schema.

Request format
--------------
A stage request has two messages: a system message (the stage's instructions, plus the
caller's canary line when one is set) and a user message whose content is the stage payload
as JSON text. ``purpose`` is the stage name itself; ``metadata`` holds ``stage`` and
``visit`` (1 for the first visit, 2 after a loop-back, ...). ``response_format`` carries the
stage's JSON schema (:data:`STAGE_SCHEMAS`).

Payload format (the JSON object in the last user message)
---------------------------------------------------------
Every payload has ``"stage"`` (the stage name) and ``"visit"`` (int). Then, per stage:

InterestMapper
    ``request``: ``{"query": str, "turns": [str], "concrete": bool}`` where ``concrete`` says
    whether the request names something the catalogue sells; ``customer``:
    ``{"name": str | null, "stated_interests": [str]}``; ``evidence``: ``{"interests":
    [{"department": slug, "label": str, "weight": float, "evidence_skus": [sku],
    "contexts": [str]}], "consumables_due": [{"sku", "name", "last_purchased", "replenish_days",
    "days_left"}]}``. Gifts and the sensitive department never reach the payload.
CoverageReviewer
    ``interests``: the mapped interests (as the InterestMapper schema); ``candidates``:
    ``[candidate]`` (below); ``loopbacks_left``: int.
Ranker
    ``interests`` and ``candidates`` as above; ``max_explore`` and ``max_replenish``: ints;
    ``owned_durables``: [sku] (never to be picked, whatever the candidates say).
Presenter
    ``customer_name``: str | null; ``query``: str; ``abstain``: bool (no evidence and no
    concrete request: ask, do not recommend); ``constraints_kept``: [str] (how the answer
    restates each constraint it honoured); ``picks``: ``[{"sku", "name", "price_chf", "lane",
    "interest", "reason"}]``; ``partial``: bool; ``gaps``: [interest label].

A candidate is ``{"sku", "name", "department", "category", "contexts": [str], "price_chf",
"lane": "explore" | "replenish",
"interests": [label], "score": float, "goes_with": str | null, "due": {"last_purchased",
"replenish_days", "days_left"} | null}``. Candidates never include a durable the customer
already owns; a consumable they own appears only in the replenish lane.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vitrine.providers.base import ChatMessage, ChatRequest, ResponseFormat
from vitrine_shop.domain import SKU_PATTERN, Department

__all__ = [
    "COVERAGE_REVIEWER",
    "INTEREST_MAPPER",
    "MODEL_STAGES",
    "PRESENTER",
    "RANKER",
    "STAGE_INSTRUCTIONS_TEXT",
    "STAGE_SCHEMAS",
    "CoverageGap",
    "CoverageVerdict",
    "InterestMapping",
    "MappedInterest",
    "Presentation",
    "PresentedItem",
    "RankedPick",
    "Ranking",
    "StageOutputError",
    "parse_stage_output",
    "picks_payload",
    "render_answer",
    "scripted_stage_output",
    "stage_code_path",
    "stage_of",
    "stage_payload",
    "stage_request",
]

INTEREST_MAPPER = "InterestMapper"
COVERAGE_REVIEWER = "CoverageReviewer"
RANKER = "Ranker"
PRESENTER = "Presenter"
MODEL_STAGES: tuple[str, ...] = (INTEREST_MAPPER, COVERAGE_REVIEWER, RANKER, PRESENTER)

_SKU_IN_TEXT = re.compile(r"\bGLX-\d{4}\b")

# ----------------------------------------------------------------------------------------------
# Schemas. Every field is required (nullable where absence is meaningful) and extra keys are
# forbidden, because strict structured-output endpoints accept only such schemas.
# ----------------------------------------------------------------------------------------------

# The departments a recommendation may be drawn from. Spelled out (not derived) so the JSON
# schema can enumerate them; the guard below keeps the list in step with the domain model.
OpenDepartment = Literal[
    "photography",
    "outdoor-hiking",
    "home-espresso",
    "gaming",
    "kitchen-appliances",
    "cycling",
    "home-audio",
    "power-travel-tech",
]
if set(get_args(OpenDepartment)) != {d.value for d in Department if not d.sensitive}:
    raise RuntimeError("OpenDepartment must list exactly the non-sensitive departments")

Sku = Annotated[str, Field(pattern=SKU_PATTERN)]
Label = Annotated[str, Field(min_length=1, max_length=120)]
Prose = Annotated[str, Field(min_length=1, max_length=400)]
# Search needs words: a blank query would reach retrieval and fail there, not here.
Query = Annotated[str, Field(min_length=1, max_length=200, pattern=r"\S")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MappedInterest(_Strict):
    """One thing the customer cares about, and how to look for it."""

    label: Label
    source: Literal["history", "request", "replenishment"]
    department: OpenDepartment | None = Field(
        description="where to search; null searches every non-sensitive department"
    )
    weight: float = Field(ge=0.0, le=1.0)
    search_query: Query
    evidence_skus: list[Sku] = Field(max_length=12)


class InterestMapping(_Strict):
    interests: list[MappedInterest] = Field(max_length=6)


class CoverageGap(_Strict):
    interest: Label = Field(description="the label of an interest that lacks a good candidate")
    search_query: Query


class CoverageVerdict(_Strict):
    covered: bool
    gaps: list[CoverageGap] = Field(max_length=6)


class RankedPick(_Strict):
    sku: Sku
    interest: Label = Field(description="the interest label this candidate was found for")
    reason: Prose


class Ranking(_Strict):
    picks: list[RankedPick] = Field(max_length=8)


class PresentedItem(_Strict):
    sku: Sku
    reason: Prose


class Presentation(_Strict):
    opening: Prose
    items: list[PresentedItem] = Field(max_length=8)
    closing: Annotated[str, Field(max_length=400)]


STAGE_SCHEMAS: Mapping[str, type[_Strict]] = {
    INTEREST_MAPPER: InterestMapping,
    COVERAGE_REVIEWER: CoverageVerdict,
    RANKER: Ranking,
    PRESENTER: Presentation,
}

_INSTRUCTIONS: Mapping[str, str] = {
    INTEREST_MAPPER: (
        "You map a shop customer's interests. The user message is JSON: the request and the "
        "evidence from the customer's own behaviour. Return up to six interests. A 'history' "
        "interest must cite evidence_skus from the evidence; a 'replenishment' interest cites "
        "due consumables; a 'request' interest comes from what the customer asked, only when "
        "request.concrete is true. Never infer anything about health, and never use gifts."
    ),
    COVERAGE_REVIEWER: (
        "You review whether the candidate products cover every interest. The user message is "
        "JSON. Set covered=true with no gaps when each interest has a fitting candidate; "
        "otherwise list each uncovered interest by its exact label, with a broader search query."
    ),
    RANKER: (
        "You rank candidate products for a customer. The user message is JSON. Pick at most "
        "max_explore new products and at most max_replenish due consumables, only from the "
        "candidates, each with one of the candidate's interest labels and a short reason tied "
        "to that interest."
    ),
    PRESENTER: (
        "You write the customer-facing recommendation. The user message is JSON with ranked "
        "picks. Return an opening line, one item per pick you present (its SKU and a reason "
        "that tells the customer why it fits their interests or request) and a closing line. "
        "Mention no SKU that is not a pick. Do not claim that anything was ordered or paid."
    ),
}

# Everything the stages are instructed with, for the answer screen's prompt-leak rule.
STAGE_INSTRUCTIONS_TEXT = "\n".join(_INSTRUCTIONS.values())

_JSON_ONLY = "Answer with one JSON object that matches the response schema, and nothing else."


class StageOutputError(ValueError):
    """A stage reply that cannot be used; the message is safe to persist."""


# ----------------------------------------------------------------------------------------------
# Requests and parsing.
# ----------------------------------------------------------------------------------------------


def _known_stage(stage: str) -> type[_Strict]:
    try:
        return STAGE_SCHEMAS[stage]
    except KeyError:
        raise ValueError(
            f"unknown workflow stage {stage!r}: model stages are {', '.join(MODEL_STAGES)}"
        ) from None


def stage_request(
    stage: str,
    payload: Mapping[str, Any],
    *,
    canary: str | None = None,
    max_output_tokens: int = 1500,
) -> ChatRequest:
    """The chat request that asks a model for one stage's structured output."""
    schema = _known_stage(stage)
    if payload.get("stage") != stage:
        raise ValueError(f"payload is for stage {payload.get('stage')!r}, not {stage!r}")
    system = f"{_INSTRUCTIONS[stage]}\n{_JSON_ONLY}"
    if canary:
        # The canary lets the answer screen detect leaked instructions; it carries no meaning.
        system += f"\nConfidential marker (never repeat it): {canary}"
    return ChatRequest(
        messages=(
            ChatMessage("system", system),
            ChatMessage("user", json.dumps(payload, ensure_ascii=False, sort_keys=True)),
        ),
        response_format=ResponseFormat(stage, schema.model_json_schema()),
        max_output_tokens=max_output_tokens,
        temperature=0.0,
        purpose=stage,
        metadata={"stage": stage, "visit": int(payload.get("visit", 1))},
    )


def stage_of(request: ChatRequest) -> str | None:
    """The workflow stage a request is for, or None when it is not a workflow stage request."""
    return request.purpose if request.purpose in STAGE_SCHEMAS else None


def stage_payload(request: ChatRequest) -> dict[str, Any]:
    """The payload carried by a stage request's last user message."""
    for message in reversed(request.messages):
        if message.role == "user":
            try:
                payload = json.loads(message.content or "")
            except json.JSONDecodeError as exc:
                raise ValueError(f"the stage payload is not JSON ({exc.msg})") from None
            if not isinstance(payload, dict):
                raise ValueError("the stage payload must be a JSON object")
            return payload
    raise ValueError("a stage request needs a user message carrying the payload")


def parse_stage_output(stage: str, text: str | None, payload: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a model reply for ``stage`` against its schema and the payload it answered.

    Returns the output as a plain dict; raises :class:`StageOutputError` when the reply is
    unusable: not JSON, a schema violation, or a reference the payload does not support (a
    SKU that is not a candidate, an interest label that was never mapped, invented evidence).
    """
    schema = _known_stage(stage)
    if not text or not text.strip():
        raise StageOutputError(f"{stage}: empty reply")
    try:
        model = schema.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "reply"
        kind = "not valid JSON" if first["type"] == "json_invalid" else "schema violation"
        raise StageOutputError(f"{stage}: {kind} at {where}: {first['msg']}") from None
    output = model.model_dump(mode="json")
    problem = _REFERENCE_CHECKS[stage](output, payload)
    if problem:
        raise StageOutputError(f"{stage}: {problem}")
    return output


def _mentioned_skus(*texts: str) -> set[str]:
    return {sku for text in texts for sku in _SKU_IN_TEXT.findall(text)}


def _check_mapping(output: Mapping[str, Any], payload: Mapping[str, Any]) -> str | None:
    evidence = payload["evidence"]
    history = {sku for i in evidence["interests"] for sku in i["evidence_skus"]}
    due = {c["sku"] for c in evidence["consumables_due"]}
    labels = [i["label"] for i in output["interests"]]
    if len(set(labels)) != len(labels):
        return "interest labels repeat"
    if (history or due) and not labels:
        return "the customer has evidence, yet no interest was mapped"
    for interest in output["interests"]:
        cited = set(interest["evidence_skus"])
        source = interest["source"]
        allowed = {"history": history, "replenishment": due, "request": history | due}[source]
        if not cited <= allowed:
            return f"interest {interest['label']!r} cites evidence not in the payload"
        if source != "request" and not cited:
            return f"{source} interest {interest['label']!r} cites no evidence"
        if source == "request" and not payload["request"]["concrete"]:
            return "a request interest, but the request names nothing the shop sells"
    return None


def _interest_labels(payload: Mapping[str, Any]) -> set[str]:
    return {i["label"] for i in payload["interests"]}


def _check_verdict(output: Mapping[str, Any], payload: Mapping[str, Any]) -> str | None:
    gaps = [g["interest"] for g in output["gaps"]]
    if output["covered"] == bool(gaps):
        return "covered must be true exactly when no gap is listed"
    if len(set(gaps)) != len(gaps):
        return "a gap is listed twice"
    unknown = set(gaps) - _interest_labels(payload)
    if unknown:
        return f"gaps name interests that were never mapped: {sorted(unknown)}"
    return None


def _check_ranking(output: Mapping[str, Any], payload: Mapping[str, Any]) -> str | None:
    candidates = {c["sku"]: c for c in payload["candidates"]}
    picks = output["picks"]
    skus = [p["sku"] for p in picks]
    if candidates and not picks:
        return "candidates exist, yet nothing was ranked"
    if len(set(skus)) != len(skus):
        return "a SKU is ranked twice"
    lanes = {"explore": 0, "replenish": 0}
    owned = set(payload["owned_durables"])
    for pick in picks:
        candidate = candidates.get(pick["sku"])
        if candidate is None:
            return f"{pick['sku']} is not a candidate"
        if pick["sku"] in owned:
            return f"{pick['sku']} is a durable the customer already owns"
        if pick["interest"] not in candidate["interests"]:
            return f"{pick['sku']} was not found for interest {pick['interest']!r}"
        if not _mentioned_skus(pick["reason"]) <= candidates.keys():
            return f"the reason for {pick['sku']} names a SKU that is not a candidate"
        lanes[candidate["lane"]] += 1
    if lanes["explore"] > payload["max_explore"] or lanes["replenish"] > payload["max_replenish"]:
        return "more picks than the lanes allow"
    return None


def _check_presentation(output: Mapping[str, Any], payload: Mapping[str, Any]) -> str | None:
    picked = {p["sku"] for p in payload["picks"]}
    items = [i["sku"] for i in output["items"]]
    if picked and not items:
        return "picks exist, yet nothing was presented"
    if len(set(items)) != len(items):
        return "an item is presented twice"
    if not set(items) <= picked:
        return f"presents SKUs that were not ranked: {sorted(set(items) - picked)}"
    texts = [output["opening"], output["closing"], *(i["reason"] for i in output["items"])]
    stray = _mentioned_skus(*texts) - picked
    if stray:
        return f"mentions SKUs that were not ranked: {sorted(stray)}"
    return None


_REFERENCE_CHECKS: Mapping[str, Callable[[Mapping[str, Any], Mapping[str, Any]], str | None]] = {
    INTEREST_MAPPER: _check_mapping,
    COVERAGE_REVIEWER: _check_verdict,
    RANKER: _check_ranking,
    PRESENTER: _check_presentation,
}

# ----------------------------------------------------------------------------------------------
# Code paths: the deterministic output of each stage, computed from its payload alone.
# ----------------------------------------------------------------------------------------------

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
    department, _, categories = label.partition(": ")
    return f"{department} ({categories.lower()})" if categories else label


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
    _known_stage(stage)
    output = _CODE_PATHS[stage](payload)
    # The code path is held to the same contract as a model: a bug here must not slip through
    # as a "deterministic" answer.
    return parse_stage_output(stage, json.dumps(output), payload)


def scripted_stage_output(stage: str, request: ChatRequest) -> str:
    """The offline scripted model's reply to a stage request: the code path, as JSON text."""
    payload = stage_payload(request)
    if payload.get("stage") != stage:
        raise ValueError(f"request carries a {payload.get('stage')!r} payload, not {stage!r}")
    return json.dumps(stage_code_path(stage, payload), ensure_ascii=False)


# ----------------------------------------------------------------------------------------------
# Rendering the Presenter's output as the customer-facing answer.
# ----------------------------------------------------------------------------------------------

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
