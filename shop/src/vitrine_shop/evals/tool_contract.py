"""The tool contract, written apart from the code: a pinned snapshot, a diff, boundary probes.

The argument models that validate a tool call also generate the schema the model is shown, so
a bound moved in the code moves the published schema with it, and any probe generated from
that schema moves too. The contract is therefore pinned: ``tool_contract.json`` beside this
module holds, as reviewed and checked in, every tool's name, description and argument schema,
every workflow stage's output schema (the response format a stage model is asked for) and the
served assistant's own options. The offline suite compares it with what the code publishes
(a difference is a failed gate, with one sentence per difference), then generates boundary
probes from the *pinned* schema (each bound's value just inside and just outside, a wrong
type, each required field missing, an unexpected field) and runs them against the real tool
box and the real stage models: validation that drifts from the contract is caught even when
the schema the code publishes still agrees with it.

Re-pin deliberately, after reviewing the change, with::

    python -m vitrine_shop.evals.tool_contract --pin
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from vitrine_shop.evals.invariants import Violation
from vitrine_shop.evals.suite import SERVICE_OPTIONS
from vitrine_shop.operations import ShopServices
from vitrine_shop.tools import ToolBox
from vitrine_shop.workflow.stages import MODEL_STAGES
from vitrine_shop.workflow.stages.messages import schema_of, stage_request

__all__ = [
    "CONTRACT_PATH",
    "Probe",
    "boundary_probes",
    "contract_drift",
    "load_contract",
    "observe_contract",
    "pin_contract",
    "published_contract",
]

CONTRACT_PATH = Path(__file__).with_name("tool_contract.json")
_EXAMPLES = 8
_UNEXPECTED = "unexpected_field"
_WRONG_TYPE: Mapping[str, tuple[Any, ...]] = {
    # Values no mode of validation coerces to the type.
    "string": (12345,),
    "integer": ("not a number",),
    "number": ("not a number",),
    "boolean": ("not a flag",),
    "array": ("not a list",),
    "object": ("not an object",),
}
# Values of another JSON type that a lax validator would coerce: a strict contract (the tools',
# whose arguments are untrusted model output) refuses them too.
_STRICT_WRONG_TYPE: Mapping[str, tuple[Any, ...]] = {
    "integer": ("5", 1.5),
    "number": ("1.5",),
    "boolean": (1, "true"),
}
_NUMBER_STEP = 0.01


# -- what the code publishes ------------------------------------------------------------------


def published_contract(services: ShopServices) -> dict[str, Any]:
    """The contract as the code publishes it now, in the pinned file's shape."""
    box = ToolBox(services, customer_id=None, traced=False)
    stages = {}
    for stage in MODEL_STAGES:
        response_format = stage_request(stage, {"stage": stage}).response_format
        stages[stage] = dict(response_format.schema) if response_format is not None else None
    published: dict[str, Any] = json.loads(
        json.dumps(
            {
                "tools": {
                    spec.name: {"description": spec.description, "parameters": spec.parameters}
                    for spec in box.specs()
                },
                "stages": stages,
                "service_options": [
                    {
                        "flag": flag.flag,
                        "key": flag.key,
                        "kind": flag.kind,
                        "choices": list(flag.choices) if flag.choices else None,
                        "default": flag.initial,
                    }
                    for flag in SERVICE_OPTIONS
                ],
            },
            default=dict,
        )
    )
    return published


def load_contract(path: Path = CONTRACT_PATH) -> dict[str, Any]:
    """The pinned contract."""
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def pin_contract(services: ShopServices, path: Path = CONTRACT_PATH) -> Path:
    """Write what the code publishes now as the pinned contract (a deliberate, reviewed act)."""
    text = json.dumps(published_contract(services), indent=2, sort_keys=True, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def contract_drift(pinned: Any, published: Any, where: str = "") -> list[str]:
    """One sentence per difference between the pinned contract and the published one."""
    if isinstance(pinned, Mapping) and isinstance(published, Mapping):
        found: list[str] = []
        for key in sorted(set(pinned) | set(published), key=str):
            at = f"{where}.{key}" if where else str(key)
            if key not in published:
                found.append(f"{at} is pinned ({_short(pinned[key])}) but the code drops it")
            elif key not in pinned:
                found.append(f"{at} is published ({_short(published[key])}) but not pinned")
            else:
                found += contract_drift(pinned[key], published[key], at)
        return found
    if isinstance(pinned, list) and isinstance(published, list) and len(pinned) == len(published):
        return [
            problem
            for index, (a, b) in enumerate(zip(pinned, published, strict=True))
            for problem in contract_drift(a, b, f"{where}[{index}]")
        ]
    if pinned != published or type(pinned) is not type(published):
        return [
            f"{where} is {_short(pinned)} in the pinned contract, the code publishes "
            f"{_short(published)}"
        ]
    return []


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


# -- boundary probes from the pinned schema ------------------------------------------------

Exemplar = Callable[[str, int], str | None]


@dataclass(frozen=True, slots=True)
class Probe:
    """One argument document, and whether the contract admits it."""

    label: str
    arguments: Any
    valid: bool
    field: str  # the top-level field the probe is about ("" for the whole document)


class _NoValue(Exception):
    """The schema admits no value this generator can build (an unknown pattern)."""


def _branch(node: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
    """The non-null branch of an optional field, and whether null is admitted."""
    options = node.get("anyOf")
    if not options:
        return node, node.get("type") == "null"
    real = [o for o in options if o.get("type") != "null"]
    return (real[0] if len(real) == 1 else node), len(real) < len(options)


def _text(node: Mapping[str, Any], length: int, exemplar: Exemplar, index: int) -> str:
    pattern = node.get("pattern")
    if pattern is None:
        return "a" * length
    example = exemplar(pattern, index)
    for text in (example, "a" * length):
        if text is not None and re.search(pattern, text) and len(text) == max(length, 1):
            return text
    if example is not None and re.search(pattern, example) and "minLength" not in node:
        return example
    raise _NoValue(pattern)


def _valid(node: Mapping[str, Any], exemplar: Exemplar, index: int = 0) -> Any:
    node, _ = _branch(node)
    if "enum" in node:
        return node["enum"][0]
    if "const" in node:
        return node["const"]
    kind = node.get("type")
    if kind == "string":
        return _text(node, int(node.get("minLength", 1)), exemplar, index)
    if kind == "integer":
        low = node.get("minimum", node.get("exclusiveMinimum", 0) + 1)
        return int(min(max(low, 1), node.get("maximum", max(low, 1))))
    if kind == "number":
        if "minimum" in node:
            return float(node["minimum"])
        if "exclusiveMinimum" in node:
            return float(node["exclusiveMinimum"]) + 1.0
        return 1.0
    if kind == "boolean":
        return True
    if kind == "array":
        count = int(node.get("minItems", 0))
        return [_valid(node.get("items", {}), exemplar, index + i) for i in range(count)]
    if kind == "object":
        properties = node.get("properties", {})
        return {
            name: _valid(properties[name], exemplar, index) for name in node.get("required", ())
        }
    raise _NoValue(str(kind))


def _variants(
    node: Mapping[str, Any], exemplar: Exemplar, index: int, strict: bool
) -> Iterator[tuple[str, Any, bool]]:
    """(what, value, admitted) for one node: its bounds either side, a wrong type, null."""
    node, nullable = _branch(node)
    if nullable:
        yield "null", None, True
    if "enum" in node:
        for choice in node["enum"]:
            yield f"{choice!r}", choice, True
        yield "a value outside the enum", "not-a-choice", False
        return
    kind = node.get("type")
    wrong = (
        *_WRONG_TYPE.get(str(kind), ()),
        *(_STRICT_WRONG_TYPE.get(str(kind), ()) if strict else ()),
    )
    for value in wrong:
        yield f"a wrong type ({value!r})", value, False
    if kind == "string":
        for bound, step, admitted in (("minLength", -1, False), ("maxLength", 1, False)):
            if bound in node:
                size = int(node[bound])
                for length, ok in ((size, True), (size + step, admitted)):
                    if length < 0:
                        continue
                    with contextlib.suppress(_NoValue):
                        yield (
                            f"{bound} {size}: length {length}",
                            _text(node, length, exemplar, index),
                            ok,
                        )
        if "pattern" in node:
            for text in ("", " ", "GLX-0", "!"):
                if not re.search(node["pattern"], text) and len(text) >= int(
                    node.get("minLength", 0)
                ):
                    yield f"a text outside the pattern ({text!r})", text, False
                    break
    elif kind in ("integer", "number"):
        unit: float = 1 if kind == "integer" else _NUMBER_STEP
        for bound, inside, outside in (
            ("minimum", 0, -unit),
            ("maximum", 0, unit),
            ("exclusiveMinimum", unit, 0),
            ("exclusiveMaximum", -unit, 0),
        ):
            if bound in node:
                edge = node[bound]
                yield f"{bound} {edge}: {edge + inside}", _round(edge + inside, kind), True
                yield f"{bound} {edge}: {edge + outside}", _round(edge + outside, kind), False
    elif kind == "array":
        item = node.get("items", {})
        base = max(int(node.get("minItems", 0)), 1)
        try:
            for bound, step in (("minItems", -1), ("maxItems", 1)):
                if bound in node:
                    size = int(node[bound])
                    for count, ok in ((size, True), (size + step, False)):
                        if count >= 0:
                            items = [_valid(item, exemplar, index + i) for i in range(count)]
                            yield f"{bound} {size}: {count} items", items, ok
            rest = [_valid(item, exemplar, index + i) for i in range(1, base)]
        except _NoValue:
            return
        for what, value, ok in _variants(item, exemplar, index, strict):
            yield f"item {what}", [value, *rest], ok
    elif kind == "object":
        yield from _object_variants(node, exemplar, index, strict)


def _round(value: float, kind: str) -> float | int:
    return int(value) if kind == "integer" else round(float(value), 6)


def _object_variants(
    node: Mapping[str, Any], exemplar: Exemplar, index: int, strict: bool
) -> Iterator[tuple[str, Any, bool]]:
    properties: Mapping[str, Any] = node.get("properties", {})
    try:
        base = _valid(node, exemplar, index)
    except _NoValue:
        return
    yield "the smallest valid document", base, True
    for name in node.get("required", ()):
        yield f"{name} missing", {k: v for k, v in base.items() if k != name}, False
    if node.get("additionalProperties") is False:
        yield f"an unexpected field {_UNEXPECTED}", {**base, _UNEXPECTED: 1}, False
    for name, child in properties.items():
        try:
            for what, value, ok in _variants(child, exemplar, index, strict):
                yield f"{name}: {what}", {**base, name: value}, ok
        except _NoValue:
            continue


def _inlined(schema: Mapping[str, Any]) -> Any:
    """``schema`` with every ``$ref`` to its own ``$defs`` replaced by the definition."""
    definitions = schema.get("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, Mapping):
            if "$ref" in node:
                return inline(definitions[str(node["$ref"]).rsplit("/", 1)[-1]])
            return {k: inline(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(schema)


def boundary_probes(
    schema: Mapping[str, Any], exemplar: Exemplar, *, strict: bool = True
) -> list[Probe]:
    """Every probe of an argument document generated from ``schema`` (a pinned one);
    ``strict``: values of another JSON type are refused even where a lax validator coerces."""
    probes = []
    for what, value, ok in _object_variants(_inlined(schema), exemplar, 0, strict):
        field = what.split(":", 1)[0].split(" ", 1)[0] if ":" in what or " missing" in what else ""
        if what.startswith("an unexpected field"):
            field = _UNEXPECTED
        probes.append(Probe(what, value, ok, field))
    return probes


# -- running them ---------------------------------------------------------------------------------


class _NoLookups:
    """The shipped services with every retrieval answered empty: a probe is about validation,
    and a just-inside query of 300 characters must not cost an embedding."""

    def __init__(self, services: ShopServices) -> None:
        self._services = services

    def __getattr__(self, name: str) -> Any:
        return getattr(self._services, name)

    def needs_model(self, query: str | None = None) -> bool:
        return False

    def search(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []

    def similar(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []

    def complements(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []


def _exemplar(services: ShopServices) -> Exemplar:
    stocked = sorted(p.sku for p in services.catalogue if p.in_stock)

    def example(pattern: str, index: int) -> str | None:
        for text in (stocked[index % len(stocked)], "customer-1", "a"):
            if re.search(pattern, text):
                return text
        return None

    return example


async def _tool_problems(
    name: str, schema: Mapping[str, Any], services: ShopServices
) -> tuple[int, list[str]]:
    problems = []
    probes = boundary_probes(schema, _exemplar(services))
    for probe in probes:
        box = ToolBox(cast(ShopServices, _NoLookups(services)), customer_id=None, traced=False)
        arguments = probe.arguments
        if isinstance(arguments, Mapping) and isinstance(arguments.get("sku"), str):
            for action in ("add_to_cart", "place_order"):
                box.approvals.approve(action, arguments["sku"])  # a refusal would hide a bound
        result = await box.call(name, arguments)
        rejected = result.status.value == "error" and result.message.startswith(
            f"invalid arguments for {name}"
        )
        if probe.valid and rejected:
            problems.append(
                f"{name}: the contract admits {probe.label}, the tool refused it "
                f"({result.message[:80]})"
            )
        elif not probe.valid and not rejected:
            problems.append(
                f"{name}: the contract refuses {probe.label}, the tool answered "
                f"{result.status.value}"
            )
        elif rejected and probe.field and probe.field not in result.message:
            problems.append(
                f"{name}: refusing {probe.label}, the error does not name {probe.field}"
            )
    return len(probes), problems


def _stage_problems(
    stage: str, schema: Mapping[str, Any], services: ShopServices
) -> tuple[int, list[str]]:
    problems = []
    model = schema_of(stage)
    # The stage models validate in pydantic's lax mode (a model's "5" is read as 5): the pinned
    # schema is held to the values no mode coerces.
    probes = boundary_probes(schema, _exemplar(services), strict=False)
    for probe in probes:
        try:
            model.model_validate(probe.arguments)
            rejected = False
        except ValidationError:
            rejected = True
        if probe.valid and rejected:
            problems.append(
                f"stage {stage}: the contract admits {probe.label}, validation refused it"
            )
        elif not probe.valid and not rejected:
            problems.append(
                f"stage {stage}: the contract refuses {probe.label}, validation admitted it"
            )
    return len(probes), problems


async def observe_contract(
    services: ShopServices, pinned: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The pinned contract against the code: its drift, then its boundary probes."""
    pinned = pinned if pinned is not None else load_contract()
    violations = [
        Violation("contract", d) for d in contract_drift(pinned, published_contract(services))
    ]
    calls = 0
    for name, spec in sorted((pinned.get("tools") or {}).items()):
        count, problems = await _tool_problems(name, spec["parameters"], services)
        calls += count
        violations += [Violation("contract", p) for p in problems]
    for stage, schema in sorted((pinned.get("stages") or {}).items()):
        count, problems = _stage_problems(stage, schema, services)
        calls += count
        violations += [Violation("contract", p) for p in problems]
    return {
        "calls": calls,
        "violations": len(violations),
        "rules": dict(Counter(v.rule for v in violations)),
        "examples": [v.to_dict() for v in violations[:_EXAMPLES]],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``--pin`` writes the contract the code publishes; without it, print the drift."""
    parser = argparse.ArgumentParser(prog="python -m vitrine_shop.evals.tool_contract")
    parser.add_argument("--pin", action="store_true", help="re-pin the contract from the code")
    args = parser.parse_args(argv)
    from vitrine_shop.arms import shared_services  # noqa: PLC0415 - loads the catalogue

    services = shared_services()
    if args.pin:
        print(f"pinned {pin_contract(services)}")
        return 0
    observed = asyncio.run(observe_contract(services))
    for example in observed["examples"]:
        print(f"{example['rule']}: {example['detail']}")
    print(f"{observed['calls']} probes, {observed['violations']} violation(s)")
    return 1 if observed["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
