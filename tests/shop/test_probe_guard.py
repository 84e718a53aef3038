"""A probe whose shop raised is the shop's measured failure; a probe that raised itself is not."""

import asyncio

import pytest

from vitrine_shop.evals import probe_guard
from vitrine_shop.evals.data_variants import observe_variants
from vitrine_shop.evals.probe_guard import guarded, raised_by_suite
from vitrine_shop.workflow.stages.messages import parse_stage_output


async def _shop_raises() -> dict:
    parse_stage_output("Ranker", "not json at all", {})  # the shop's own validation raises
    return {}


async def _suite_raises() -> dict:
    return await observe_variants(None)  # the probe itself breaks, inside the suite's code


def test_the_shop_raising_inside_a_probe_is_one_measured_violation():
    facts = asyncio.run(guarded("variants", _shop_raises()))
    assert facts["violations"] == 1 and facts["rules"] == {"raised": 1}
    (example,) = facts["examples"]
    assert example["case"] == "variants" and "the shop raised" in example["detail"]
    assert "messages.py" in example["detail"]  # where, so a reader can find it


def test_the_suite_raising_is_not_the_shops_failure_and_propagates():
    with pytest.raises(AttributeError):
        asyncio.run(guarded("variants", _suite_raises()))
    try:
        asyncio.run(_suite_raises())
    except AttributeError as exc:
        assert raised_by_suite(exc)


def test_a_probe_that_answers_is_passed_through():
    async def fine() -> dict:
        return {"calls": 3, "violations": 0}

    assert asyncio.run(guarded("sweep", fine())) == {"calls": 3, "violations": 0}
    assert probe_guard.__all__ == ["guarded", "raised_by_suite"]
