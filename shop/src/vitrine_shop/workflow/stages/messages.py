"""What a stage says to a model and how its reply is judged: requests, parsing, reference checks.

A reply is usable only if it is JSON, matches the stage's schema and references nothing the
payload does not hold (a SKU that was not a candidate, an interest that was not mapped).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from vitrine.providers import ChatMessage, ChatRequest, ResponseFormat
from vitrine_shop.domain import SKU_IN_TEXT
from vitrine_shop.workflow.stages.schemas import (
    COVERAGE_REVIEWER,
    INTEREST_MAPPER,
    MODEL_STAGES,
    PRESENTER,
    RANKER,
    STAGE_SCHEMAS,
    StrictSchema,
)

__all__ = [
    "STAGE_INSTRUCTIONS_TEXT",
    "StageOutputError",
    "parse_stage_output",
    "schema_of",
    "stage_of",
    "stage_payload",
    "stage_request",
]

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


def schema_of(stage: str) -> type[StrictSchema]:
    try:
        return STAGE_SCHEMAS[stage]
    except KeyError:
        raise ValueError(
            f"unknown workflow stage {stage!r}: model stages are {', '.join(MODEL_STAGES)}"
        ) from None


def _json_schema(schema: type[StrictSchema]) -> dict[str, Any]:
    # Pydantic rebuilds a schema on every call; a stage's never changes (built once, copied).
    return copy.deepcopy(_built_schema(schema))


@functools.cache
def _built_schema(schema: type[StrictSchema]) -> dict[str, Any]:
    return schema.model_json_schema()


def stage_request(
    stage: str,
    payload: Mapping[str, Any],
    *,
    canary: str | None = None,
    max_output_tokens: int = 1500,
) -> ChatRequest:
    """The chat request that asks a model for one stage's structured output."""
    schema = schema_of(stage)
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
        response_format=ResponseFormat(stage, _json_schema(schema)),
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
    schema = schema_of(stage)
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
    return {sku for text in texts for sku in SKU_IN_TEXT.findall(text)}


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
