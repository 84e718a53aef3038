"""Tool and stage schemas are built once per class, and every caller gets a copy of its own.

A caller may edit the schema it was handed (a provider adapter strips keywords a server
refuses, a test deletes a property); that edit must never reach the next conversation or the
next stage request, which would then send a different schema than the class declares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from vitrine_shop.embeddings import HashingEmbedder
from vitrine_shop.operations import ShopServices
from vitrine_shop.tools import ToolBox
from vitrine_shop.workflow.stages.messages import stage_request
from vitrine_shop.workflow.stages.schemas import STAGE_SCHEMAS


@pytest.fixture(scope="module")
def services() -> ShopServices:
    return ShopServices(embedder=HashingEmbedder())


def _tool_parameters(services: ShopServices) -> dict[str, Any]:
    specs = ToolBox(services, customer_id="nadia").specs()
    return {spec.name: spec.parameters for spec in specs}


def test_a_tool_schema_edited_by_one_caller_is_whole_for_the_next(services: ShopServices) -> None:
    first = _tool_parameters(services)
    search = first["search_products"]
    assert "query" in search["properties"]
    search["properties"].clear()
    search["required"].append("edited")

    again = _tool_parameters(services)["search_products"]
    assert "query" in again["properties"]
    assert "edited" not in again.get("required", [])


def test_tool_schemas_have_their_references_inlined_and_no_titles(services: ShopServices) -> None:
    def walk(node: Any) -> None:
        if isinstance(node, dict):
            assert "$ref" not in node and "title" not in node
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for parameters in _tool_parameters(services).values():
        walk(dict(parameters))


@pytest.mark.parametrize("stage", sorted(STAGE_SCHEMAS))
def test_a_stage_schema_edited_by_one_caller_is_whole_for_the_next(stage: str) -> None:
    declared = STAGE_SCHEMAS[stage].model_json_schema()
    handed = _stage_schema(stage)
    assert handed == declared
    handed["properties"].clear()

    assert _stage_schema(stage) == declared


def _stage_schema(stage: str) -> Mapping[str, Any]:
    request = stage_request(stage, {"stage": stage, "visit": 1})
    assert request.response_format is not None
    return request.response_format.schema
