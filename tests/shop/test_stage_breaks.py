"""The explorative stage model breaks every rule the workflow's reply validation states, each on
cases of its own, and a validation rule turned off shows as a census the model's log contradicts.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from vitrine_shop.arms import shared_services
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.exploration import _explorative_workflow_arm, stage_definition
from vitrine_shop.evals.invariants import response_violations
from vitrine_shop.scripted.stage_explorer import BREAK_PAIRS
from vitrine_shop.workflow.stages import INTEREST_MAPPER, PRESENTER, RANKER, messages

Check = Callable[[Mapping[str, Any], Mapping[str, Any]], "str | None"]


def _explore() -> tuple[Counter[str], set[tuple[str, str]]]:
    """The census violations (and crashes) over the broken-stage benchmark, and the breaks
    it forced."""
    arm = _explorative_workflow_arm(shared_services)

    async def run() -> tuple[Counter[str], set[tuple[str, str]]]:
        found: Counter[str] = Counter()
        forced: set[tuple[str, str]] = set()
        for case in stage_definition().cases:
            try:
                response = await arm.respond(case)
            except Exception:  # the gate counts a crash of the offline shop as its failure
                found["raised"] += 1
                continue
            request = ShopRequest.from_case_input(case.input)
            found.update(v.rule for v in response_violations(response, request))
            for entry in response.structured["stage_explorer"]["log"]:
                if entry.get("forced"):
                    forced.add((entry["stage"], entry["broken"]))
        return found, forced

    return asyncio.run(run())


def test_every_declared_break_is_forced_on_some_case_and_the_shop_refuses_each():
    found, forced = _explore()
    assert forced == set(BREAK_PAIRS)
    assert found == Counter()


def _relaxed(stage: str, relax: Callable[[Mapping[str, Any], Mapping[str, Any]], Any]) -> Any:
    def plant(monkeypatch: pytest.MonkeyPatch) -> None:
        check: Check = messages._REFERENCE_CHECKS[stage]
        monkeypatch.setitem(
            messages._REFERENCE_CHECKS, stage, lambda output, payload: relax(check, output, payload)
        )

    return plant


def _unranked_items_dropped(check: Check, output: Mapping[str, Any], payload: Mapping[str, Any]):
    picked = {p["sku"] for p in payload["picks"]}
    kept = [i for i in output["items"] if i["sku"] in picked]
    return check({**output, "items": kept}, payload)


def _request_taken_as_concrete(check: Check, output: Mapping[str, Any], payload: Mapping[str, Any]):
    return check(output, {**payload, "request": {**payload["request"], "concrete": True}})


def _one_more_explore_pick(check: Check, output: Mapping[str, Any], payload: Mapping[str, Any]):
    return check(output, {**payload, "max_explore": int(payload["max_explore"]) + 1})


def _stray_codes_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(messages, "_mentioned_skus", lambda *texts: set())


PLANTED = {
    "the Presenter accepts an item that was never ranked": _relaxed(
        PRESENTER, _unranked_items_dropped
    ),
    "the Presenter reads no product code in its prose": _stray_codes_unread,
    "a request interest is accepted for a request that names nothing sold": _relaxed(
        INTEREST_MAPPER, _request_taken_as_concrete
    ),
    "the Ranker may pick one more new product than the lane's room": _relaxed(
        RANKER, _one_more_explore_pick
    ),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_a_reply_check_turned_off_shows_in_the_census(monkeypatch, bug):
    PLANTED[bug](monkeypatch)
    found, _ = _explore()
    seen = found["census"] + found["raised"]
    assert seen > 0, f"{bug}: the census still agrees with the model's log: {found}"
