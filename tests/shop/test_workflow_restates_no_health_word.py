"""The workflow never withholds its own answer for restating the customer's words back.

A request that names a health product ("a prenatal multivitamin") leaves a gap the workflow
reports; quoting the request there read as a health matter of the customer's and the screen
withheld the whole answer, for every customer."""

import asyncio

import pytest

from vitrine_shop.arms import shared_services
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.screen import attributes_health
from vitrine_shop.workflow.shop_workflow import ShopWorkflow
from vitrine_shop.workflow.stages.code_paths import _topic


@pytest.mark.parametrize("customer", ["nadia", "cohort-01", None])
def test_a_health_product_request_is_answered_not_withheld(customer):
    workflow = ShopWorkflow(None, shared_services())
    request = ShopRequest(customer, ("Could you suggest a Vitalis prenatal multivitamin?",))
    response = asyncio.run(workflow.answer(request))
    screen = response.structured["screen"]
    assert screen["status"] == "pass", screen["reasons"]
    assert not attributes_health(response.answer or "")


def test_the_gap_names_the_request_without_its_health_words():
    assert _topic("your request: could you suggest a vitalis prenatal multivit…") == "your request"
    kept = _topic("your request: a rain jacket for hut-to-hut hiking")
    assert kept == "your request (a rain jacket for hut-to-hut hiking)"
