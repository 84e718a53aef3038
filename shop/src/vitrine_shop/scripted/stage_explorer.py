"""A seeded model for the workflow's stages that sometimes answers out of contract.

The scripted model answers each stage with that stage's own code path, so the workflow's
defences against a bad reply (its parser, each stage's checks, retries, the code-path
fallback, the census of attempts) never see one. This model answers the same way, except that
a seeded share of attempts are broken on purpose, each in a way the stage's contract forbids:
text that is no JSON, a missing or extra field, a SKU that is not a candidate, evidence the
customer never produced, a pick or an item twice, a gap naming no interest, a verdict that
contradicts its gaps, a SKU in the prose that was never ranked, an item added that was never
ranked, one pick more than a lane's room, a request interest when the request names nothing.
A break may read the stage's payload to break the reply just past what it allows.

Each explorer can also be handed a break per stage to apply on that stage's first attempt, so
that a benchmark can give every break (:data:`BREAK_PAIRS`) cases of its own instead of leaving
a defence to the chance of a draw. A replenish-lane overflow is not among the breaks: no
packaged customer has more due consumables than the lane's room, so it could never apply.

It keeps a log of what it did to each attempt, so an oracle can hold the workflow's census to
the truth: an attempt the model broke must not be counted usable, and a visit whose every
attempt was broken must have been answered by the code path.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Mapping
from typing import Any

from vitrine.providers import ChatCompletion, ChatRequest, ProviderError, ProviderFailure
from vitrine_shop.catalogue import load_catalogue
from vitrine_shop.scripted.model import ScriptedShopModel
from vitrine_shop.workflow.stages import (
    COVERAGE_REVIEWER,
    INTEREST_MAPPER,
    PRESENTER,
    RANKER,
    stage_code_path,
    stage_payload,
)

__all__ = ["BREAKS", "BREAK_PAIRS", "PROVIDER_FAULTS", "ExplorativeStageModel", "StageExplorer"]

_STRANGER = "GLX-0000"  # a well-formed code no payload ever carries
Output = dict[str, Any]
Payload = Mapping[str, Any]
# The stage's sound reply and its payload -> the reply broken; None: it does not apply here.
Break = Callable[[Output, Payload], Output | str | None]


def _first(output: Output, key: str) -> list[Any] | None:
    items = output.get(key)
    return items if isinstance(items, list) and items else None


def _twice(key: str) -> Break:
    def broken(output: Output, payload: Payload) -> Output | None:
        items = _first(output, key)
        return None if items is None else {**output, key: [*items, items[0]]}

    return broken


def _stranger_in(key: str, field: str) -> Break:
    def broken(output: Output, payload: Payload) -> Output | None:
        items = _first(output, key)
        if items is None:
            return None
        return {**output, key: [{**items[0], field: _STRANGER}, *items[1:]]}

    return broken


def _stranger_added(key: str, field: str) -> Break:
    # Everything sound is kept: only the one item that was never offered is wrong.
    def broken(output: Output, payload: Payload) -> Output | None:
        items = _first(output, key)
        return None if items is None else {**output, key: [*items, {**items[0], field: _STRANGER}]}

    return broken


def _lane_overflow(lane: str) -> Break:
    """One pick more than the lane's room, each a real candidate found for its interest."""

    def broken(output: Output, payload: Payload) -> Output | None:
        picks = list(output.get("picks") or [])
        picked = {p["sku"] for p in picks}
        candidates = [c for c in payload.get("candidates", ()) if c.get("lane") == lane]
        in_lane = sum(1 for c in candidates if c["sku"] in picked)
        room = int(payload.get(f"max_{lane}", 0))
        spare = [c for c in candidates if c["sku"] not in picked and c.get("interests")]
        needed = room + 1 - in_lane
        if needed < 1 or len(spare) < needed or len(picks) + needed > 8:  # the schema's limit
            return None
        added = [
            {"sku": c["sku"], "interest": c["interests"][0], "reason": "it fits what you like"}
            for c in spare[:needed]
        ]
        return {**output, "picks": [*picks, *added]}

    return broken


def _request_interest_unasked(output: Output, payload: Payload) -> Output | None:
    """A request interest although the request names nothing the shop sells."""
    request = payload.get("request")
    items = _first(output, "interests")
    if not isinstance(request, Mapping) or request.get("concrete") or items is None:
        return None
    unasked = {**items[0], "label": "what you asked for", "source": "request"}
    return {**output, "interests": [*items, unasked][-8:]}


def _foreign_evidence(output: Output, payload: Payload) -> Output | None:
    items = _first(output, "interests")
    if items is None:
        return None
    cited = [*items[0].get("evidence_skus", []), _STRANGER][-12:]
    return {**output, "interests": [{**items[0], "evidence_skus": cited}, *items[1:]]}


def _contradicted_verdict(output: Output, payload: Payload) -> Output:
    # Covered exactly when no gap remains: the verdict below says the opposite of its gaps.
    return {**output, "covered": bool(output.get("gaps"))}


def _unknown_gap(output: Output, payload: Payload) -> Output:
    gap = {"interest": "an interest nobody mapped", "search_query": "anything at all"}
    return {**output, "covered": False, "gaps": [*output.get("gaps", []), gap][-6:]}


def _stray_code_in_prose(output: Output, payload: Payload) -> Output:
    return {**output, "closing": f"You might also like {_STRANGER}."}


def _stray_product_in_prose(output: Output, payload: Payload) -> Output | None:
    """A real product the Ranker never picked, named in the prose: a consumable, so no screen
    rule (an unknown code, a durable already owned) stops it before the Presenter's own check."""
    picked = {p.get("sku") for p in payload.get("picks") or ()}
    stray = next(
        (
            p.sku
            for p in sorted(load_catalogue(), key=lambda p: p.sku)
            if p.consumable and p.sku not in picked
        ),
        None,
    )
    return None if stray is None else {**output, "closing": f"You might also like {stray}."}


def _missing_field(output: Output, payload: Payload) -> Output:
    return dict(list(output.items())[1:])


def _extra_field(output: Output, payload: Payload) -> Output:
    return {**output, "note": "an extra field the schema forbids"}


def _prose(output: Output, payload: Payload) -> str:
    return "Here is what I found for you: " + ", ".join(map(str, output))


_GENERIC: dict[str, Break] = {
    "no-json": _prose,
    "empty": lambda output, payload: "",
    "missing-field": _missing_field,
    "extra-field": _extra_field,
}

#: Every way each stage's reply is broken, by name.
BREAKS: dict[str, dict[str, Break]] = {
    INTEREST_MAPPER: {
        **_GENERIC,
        "foreign-evidence": _foreign_evidence,
        "label-twice": _twice("interests"),
        "request-interest-unasked": _request_interest_unasked,
    },
    COVERAGE_REVIEWER: {
        **_GENERIC,
        "contradicted-verdict": _contradicted_verdict,
        "unknown-gap": _unknown_gap,
    },
    RANKER: {
        **_GENERIC,
        "not-a-candidate": _stranger_in("picks", "sku"),
        "pick-twice": _twice("picks"),
        "explore-overflow": _lane_overflow("explore"),
    },
    PRESENTER: {
        **_GENERIC,
        "unranked-item": _stranger_in("items", "sku"),
        "unranked-item-added": _stranger_added("items", "sku"),
        "item-twice": _twice("items"),
        "stray-code": _stray_code_in_prose,
        "stray-product": _stray_product_in_prose,
    },
}

#: Every (stage, break), in a stable order.
BREAK_PAIRS: tuple[tuple[str, str], ...] = tuple(
    (stage, kind) for stage in sorted(BREAKS) for kind in sorted(BREAKS[stage])
)

# Not replies at all: the provider failing (a server error is tried again, a refused request
# is not). Drawn like the breaks, and logged under these names.
PROVIDER_FAULTS: dict[str, ProviderFailure] = {
    "provider-error": ProviderFailure.SERVER_ERROR,
    "provider-refusal": ProviderFailure.BAD_REQUEST,
}
_FAULT_SHARE = 0.2  # of the broken attempts


class StageExplorer:
    """Answers each stage attempt with its code path, or (at ``rate``) that answer broken by
    one of the stage's breaks, drawn from ``seed`` and the attempt's place; ``log`` says which
    attempts were broken, and how."""

    def __init__(
        self, seed: int, rate: float = 0.5, forced: Mapping[str, str] | None = None
    ) -> None:
        for stage, kind in (forced or {}).items():
            if kind not in BREAKS.get(stage, {}):
                raise ValueError(f"no break {kind!r} is declared for stage {stage!r}")
        self._seed = seed
        self._rate = rate
        self._forced = dict(forced or {})
        self._attempts: dict[tuple[str, int], int] = {}
        self.log: list[dict[str, Any]] = []

    def reply(self, stage: str, request: ChatRequest) -> str:
        payload = stage_payload(request)
        visit = int(payload.get("visit", 1))
        attempt = self._attempts.get((stage, visit), 0) + 1
        self._attempts[(stage, visit)] = attempt
        valid: Output = stage_code_path(stage, payload)
        rng = random.Random(f"{self._seed}:{stage}:{visit}:{attempt}")
        broken: Output | str | None = None
        kind = None
        if stage in self._forced and (visit, attempt) == (1, 1):
            kind = self._forced[stage]
            broken = BREAKS[stage][kind](copy.deepcopy(valid), payload)
            if broken is not None:
                self.log.append(
                    {"stage": stage, "visit": visit, "attempt": attempt, "broken": kind}
                )
                self.log[-1]["forced"] = True
                return broken if isinstance(broken, str) else json.dumps(broken, ensure_ascii=False)
            kind = None  # it does not apply to this payload: the attempt is drawn as any other
        if rng.random() < self._rate and rng.random() < _FAULT_SHARE:
            fault = rng.choice(sorted(PROVIDER_FAULTS))
            self.log.append({"stage": stage, "visit": visit, "attempt": attempt, "broken": fault})
            raise ProviderError(PROVIDER_FAULTS[fault], f"explorative {fault}")
        if rng.random() < self._rate:
            kinds = BREAKS[stage]
            for kind in rng.sample(sorted(kinds), len(kinds)):
                broken = kinds[kind](copy.deepcopy(valid), payload)
                if broken is not None:
                    break
        self.log.append({"stage": stage, "visit": visit, "attempt": attempt, "broken": kind})
        if broken is None:
            self.log[-1]["broken"] = None
            return json.dumps(valid, ensure_ascii=False)
        return broken if isinstance(broken, str) else json.dumps(broken, ensure_ascii=False)


class ExplorativeStageModel(ScriptedShopModel):
    """The scripted model, with every workflow stage answered through a :class:`StageExplorer`.
    One instance per trial: its log is that trial's."""

    def __init__(
        self, seed: int, rate: float = 0.5, forced: Mapping[str, str] | None = None
    ) -> None:
        super().__init__()
        self.explorer = StageExplorer(seed, rate, forced)

    def _stage(self, request: ChatRequest) -> ChatCompletion:
        return self._completion(self.explorer.reply(request.purpose, request))
