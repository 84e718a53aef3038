"""Observation producers for the structural gates: workflow-shape, catalogue-shape, honesty.

Each drives or reads a real part of the shop or of the suite's own output and returns plain
facts; the judging lives in ``workflow_routes``, ``catalogue_schema`` and ``claims_audit``.

- workflow runs: the real workflow, zero-model and scripted-model, on each route probe;
- the loaded data: every product, persona and tool spec as the shop loaded them;
- claims: each report section as claimed, beside the rows of the sealed runs it cites, read
  back from disk (seal verified).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vitrine.providers import ChatModel
from vitrine.redact import describe_exception
from vitrine.reports import BenchmarkSection
from vitrine.runs import RunResult
from vitrine.store import RunStoreError, load_run
from vitrine_shop.catalogue import Catalogue
from vitrine_shop.conversation import ShopRequest
from vitrine_shop.evals.workflow_routes import ROUTE_PROBES
from vitrine_shop.operations import ShopServices
from vitrine_shop.personas import load_personas
from vitrine_shop.scripted import ScriptedShopModel
from vitrine_shop.tools import ToolBox
from vitrine_shop.workflow import ShopWorkflow

__all__ = [
    "WorkflowFactory",
    "observe_claims",
    "observe_loaded_data",
    "observe_workflow_runs",
]

WorkflowFactory = Callable[[ChatModel | None, ShopServices], ShopWorkflow]


async def observe_workflow_runs(
    factory: WorkflowFactory, services: ShopServices
) -> list[dict[str, Any]]:
    """Run every route probe through the workflow, with no model and with the scripted one."""
    runs: list[dict[str, Any]] = []
    for probe in ROUTE_PROBES:
        request = ShopRequest.single(probe.persona_id, probe.request)
        for variant, model in (("zero-model", None), ("scripted-model", ScriptedShopModel())):
            facts: dict[str, Any] = {"probe": probe.id, "variant": variant}
            try:
                response = await factory(model, services).answer(request)
            except Exception as exc:
                # A workflow that raises on a valid request has failed its customer: that is
                # the fact to record, not an instrument failure.
                runs.append({**facts, "error": describe_exception(exc)})
                continue
            structured = response.structured
            runs.append(
                {
                    **facts,
                    "error": None,
                    "executors": list(response.trace.executors) if response.trace else [],
                    "route": list(response.trace.route) if response.trace else [],
                    "loopbacks": structured.get("loopbacks"),
                    "partial": structured.get("partial"),
                    "gaps": list(structured.get("gaps") or ()),
                    "stages": (
                        None
                        if response.stages is None
                        else [census.to_dict() for census in response.stages]
                    ),
                    "stage_visits": structured.get("stage_visits") or {},
                    "ranked": list(structured.get("ranked") or ()),
                    "answer": response.answer,
                    "screen": dict(structured.get("screen") or {}),
                    "withheld": structured.get("withheld"),
                }
            )
    return runs


def observe_loaded_data(catalogue: Catalogue, services: ShopServices) -> dict[str, Any]:
    """The catalogue, personas and tool specs exactly as the shop loaded them."""
    products = [
        {
            "sku": p.sku,
            "gtin": p.gtin,
            "name": p.name,
            "brand": p.brand,
            "description": p.description,
            "department": p.department.value,
            "tier": p.tier.value,
            "category_path": list(p.category_path),
            "price_chf": str(p.price_chf),
            "was_price_chf": None if p.was_price_chf is None else str(p.was_price_chf),
            "tags": list(p.tags),
            "consumable": p.consumable,
            "replenish_days": p.typical_replenish_days,
            "markets": list(p.markets),
        }
        for p in catalogue.products
    ]
    personas = [
        {
            "id": persona.id,
            "purchased": sorted(persona.purchased_skus),
            "saved": list(persona.saved_items),
            "viewed": list(persona.viewed_items),
        }
        for persona in load_personas().values()
    ]
    tools = [
        {"name": spec.name, "parameters": _plain(spec.parameters)}
        for spec in ToolBox(services, customer_id=None).specs()
    ]
    return {"products": products, "personas": personas, "tools": tools}


def _plain(value: Any) -> Any:
    if isinstance(value, dict | Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _rows(run: RunResult) -> dict[str, Any]:
    return {
        "arm_id": run.arm_id,
        "repetition": run.repetition,
        "case_ids": list(run.case_ids),
        "floors": {
            info.key: {"kind": info.floor.kind.value, "value": info.floor.rate}
            for info in run.checks
        },
        "rows": [
            {
                "case": row.case_id,
                "check": row.check_key,
                "state": row.observation.state.value,
                "value": row.observation.value,
            }
            for row in run.rows
        ],
    }


def observe_claims(sections: Sequence[BenchmarkSection], store_root: Path) -> dict[str, Any]:
    """Each section as claimed, with the rows of every run it cites as stored on disk."""
    observed = []
    for section in sections:
        runs: dict[str, Any] = {}
        unreadable: list[str] = []
        for ref in section.runs:
            try:
                runs[ref.run_id] = _rows(load_run(store_root / ref.run_dir))
            except (OSError, ValueError, RunStoreError) as exc:
                unreadable.append(f"run {ref.run_id}: {describe_exception(exc)}")
        observed.append(
            {
                "claimed": section.model_dump(mode="json"),
                "runs": runs,
                "unreadable": unreadable,
            }
        )
    return {"sections": observed}
