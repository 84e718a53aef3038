"""The fifteen tools the shop agent may call, with validation, a journal, a budget and a gate.

Every call is validated against a typed argument model, whatever its source: a model's
arguments are untrusted input, and a tool that trusted them would turn a malformed call into
an exception inside the agent loop. :meth:`ToolBox.call` therefore never raises for bad
input; it answers with an ERROR result whose message names the argument, so the model can
correct itself, and it journals the call either way.

Two tools change the world (``add_to_cart``, ``place_order``). They run only when an
:class:`ApprovalGate` holds a matching approval from the customer; otherwise the call is
REFUSED, journalled and not executed. Approvals are single-use: approving one order does not
license a second one (excessive agency, OWASP LLM06).

Customer-scoped tools act only for the signed-in customer: a model that asks for someone
else's profile is refused rather than served (PII leakage, OWASP LLM02).
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections import Counter
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from enum import Enum
from types import MappingProxyType
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vitrine import ToolCallRecord, tracing
from vitrine.providers import ToolSpec
from vitrine.redact import bound_text, sanitize_text
from vitrine.subjects import ToolCallStatus
from vitrine_shop.catalogue import Catalogue, UnknownSkuError
from vitrine_shop.domain import SHOP_TOOL_NAMES, SKU_PATTERN
from vitrine_shop.operations import ShopServices, product_details, product_summary

__all__ = [
    "GATED_ACTIONS",
    "SHOP_TOOL_COUNT",
    "ApprovalGate",
    "ToolBox",
    "ToolResult",
    "render_recommendation",
]

SHOP_TOOL_COUNT = 15
GATED_ACTIONS: frozenset[str] = frozenset({"add_to_cart", "place_order"})

SUMMARY_LIMIT = 200
_ARGUMENT_TEXT_LIMIT = 200  # per string argument kept in the journal
_MESSAGE_LIMIT = 600  # error text handed back to the model
_MAX_LIMIT = 20


# -- argument models ---------------------------------------------------------------------------


class _Args(BaseModel):
    # strict: "5" is not 5. A model that sends the wrong type should hear about it, not have
    # it silently coerced into something it did not mean.
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


SkuArg = Annotated[str, Field(pattern=SKU_PATTERN, description="a catalogue SKU, e.g. GLX-2001")]
Limit = Annotated[int, Field(ge=1, le=_MAX_LIMIT, description="how many results, 1-20")]
_CustomerId = Annotated[
    str | None,
    Field(default=None, description="optional; tools act only for the signed-in customer"),
]


class SearchProductsArgs(_Args):
    query: Annotated[str, Field(min_length=1, max_length=300, description="what to look for")]
    limit: Limit = 5
    department: Annotated[
        str | None, Field(description="department name, slug or number", max_length=60)
    ] = None
    max_price_chf: Annotated[float | None, Field(gt=0, description="price ceiling in CHF")] = None
    require_tags: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=64)]],
        Field(max_length=8, description="tags every result must carry, e.g. hut-to-hut"),
    ] = []
    in_stock_only: bool = False
    exclude_skus: Annotated[list[SkuArg], Field(max_length=50)] = []


class SkuArgs(_Args):
    sku: SkuArg


class SkuLimitArgs(_Args):
    sku: SkuArg
    limit: Limit = 5


class CustomerArgs(_Args):
    customer_id: _CustomerId = None


class BrowseArgs(_Args):
    category: Annotated[
        str,
        Field(
            min_length=1,
            max_length=120,
            description="a department, or a path such as 'Outdoor & Hiking > Headlamps'",
        ),
    ]
    limit: Limit = 10


class NoArgs(_Args):
    pass


class RecommendationItem(_Args):
    sku: SkuArg
    reason: Annotated[
        str, Field(min_length=3, max_length=300, description="why this fits this customer")
    ]


class PresentRecommendationArgs(_Args):
    items: Annotated[list[RecommendationItem], Field(min_length=1, max_length=5)]
    note: Annotated[str | None, Field(max_length=600)] = None


class CartArgs(_Args):
    sku: SkuArg
    quantity: Annotated[int, Field(ge=1, le=10)] = 1


# -- results and approvals -----------------------------------------------------------------------


@dataclass(frozen=True)
class ToolResult:
    """What a tool call produced. ``data`` is JSON-ready; ``message`` is one line for people."""

    name: str
    status: ToolCallStatus
    data: Any
    message: str
    # Set only when an output transform rewrote the text the model reads; the data stay clean
    # so that tests can tell what the tool said from what the model was shown.
    model_text: str | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status is ToolCallStatus.OK

    def to_model_text(self) -> str:
        """The JSON document the model reads as the tool's answer."""
        if self.model_text is not None:
            return self.model_text
        return json.dumps(
            {
                "tool": self.name,
                "status": self.status.value,
                "message": self.message,
                "data": self.data,
            },
            ensure_ascii=False,
            default=_json_default,
        )


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


class ApprovalGate:
    """Customer approvals for world-changing actions, one use per approval."""

    def __init__(self) -> None:
        self._granted: Counter[tuple[str, str]] = Counter()

    def approve(self, action: str, sku: str) -> None:
        if action not in GATED_ACTIONS:
            raise ValueError(f"{action!r} is not a gated action: gated are {sorted(GATED_ACTIONS)}")
        self._granted[(action, sku)] += 1

    def is_approved(self, action: str, sku: str) -> bool:
        return self._granted[(action, sku)] > 0

    def consume(self, action: str, sku: str) -> bool:
        """Use up one approval; False when there is none to use."""
        if not self.is_approved(action, sku):
            return False
        self._granted[(action, sku)] -= 1
        return True


class _Refused(Exception):
    """The call is well formed but not allowed; it is refused and not executed."""


class _Malformed(Exception):
    """The arguments are not a JSON object at all."""


class _BadArgument(Exception):
    """The call is well formed but names something that does not exist."""

    def __init__(self, argument: str, detail: str) -> None:
        super().__init__(f"{argument}: {detail}")


A = TypeVar("A", bound=_Args)


@dataclass(frozen=True)
class _Tool(Generic[A]):
    name: str
    description: str
    args: type[A]
    run: Callable[[A], tuple[Any, str]]
    # Whether these arguments would run the embedding model (seconds on a cold cache): such a
    # call moves off the event loop; one answered from vectors at hand stays on it, since a
    # thread hop costs more than a 99-row dot product.
    blocking: Callable[[A], bool] | None = None


# -- the tool box --------------------------------------------------------------------------------


class ToolBox:
    """One conversation's tools: bound to a customer, a gate, a budget and a journal."""

    def __init__(
        self,
        services: ShopServices,
        *,
        customer_id: str | None,
        approvals: ApprovalGate | None = None,
        max_calls: int | None = None,
        output_transform: Callable[[str, str], str] | None = None,
        traced: bool = True,
    ) -> None:
        if max_calls is not None and max_calls < 0:
            raise ValueError(f"max_calls must be 0 or more, got {max_calls}")
        if customer_id is not None:
            services.persona(customer_id)  # fail at construction, not at the first tool call
        self.services = services
        self.customer_id = customer_id
        self.approvals = approvals if approvals is not None else ApprovalGate()
        self.max_calls = max_calls
        # Off for an inspection that is no conversation (a sweep of every tool): its calls
        # would bury a trace's conversations under thousands of spans.
        self.traced = traced
        self._transform = output_transform
        self._journal: list[ToolCallRecord] = []
        self._outputs: list[dict[str, Any]] = []
        self._presented: list[str] = []
        self._cart: list[tuple[str, int]] = []
        self._orders: list[tuple[str, int]] = []
        self._tools: dict[str, _Tool[Any]] = {t.name: t for t in self._build()}
        if tuple(self._tools) != SHOP_TOOL_NAMES:
            raise AssertionError("the tool box must offer exactly the shop's fifteen tools")

    # -- public surface --

    @property
    def journal(self) -> tuple[ToolCallRecord, ...]:
        return tuple(self._journal)

    @property
    def outputs(self) -> tuple[dict[str, Any], ...]:
        """What each call returned, JSON-ready: name, arguments, status and the tool's own data
        (before any output transform), so an evaluation can hold every answer to its contract."""
        return tuple(self._outputs)

    @property
    def presented_skus(self) -> tuple[str, ...]:
        """SKUs passed to successful present_recommendation calls, in order."""
        return tuple(self._presented)

    @property
    def cart(self) -> tuple[tuple[str, int], ...]:
        return tuple(self._cart)

    @property
    def orders(self) -> tuple[tuple[str, int], ...]:
        return tuple(self._orders)

    @property
    def calls_left(self) -> int | None:
        return None if self.max_calls is None else max(0, self.max_calls - len(self._journal))

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(
            ToolSpec(t.name, t.description, MappingProxyType(_schema(t.args)))
            for t in self._tools.values()
        )

    async def call(
        self, name: str, arguments: Mapping[str, Any] | str, *, call_id: str | None = None
    ) -> ToolResult:
        """Validate, run and journal one call. Never raises for anything the caller sent.

        With tracing on the call is an ``execute_tool`` span; ``call_id`` is the model's id of
        the call, which the span carries.
        """
        if not self.traced:
            return await self._call(name, arguments)
        with tracing.tool_span(name, call_id, arguments) as span:
            result = await self._call(name, arguments)
            tracing.record_tool_result(span, result.status.value, result.to_model_text)
        return result

    async def _call(self, name: str, arguments: Mapping[str, Any] | str) -> ToolResult:
        started = time.perf_counter()
        parsed: Mapping[str, Any] = {}
        try:
            if self.max_calls is not None and len(self._journal) >= self.max_calls:
                raise _Refused(
                    f"the tool-call budget of {self.max_calls} calls is spent: "
                    "answer with what you have"
                )
            parsed = _parse_arguments(name, arguments)
            result = await self._dispatch(name, parsed)
        except _Refused as refusal:
            result = ToolResult(name, ToolCallStatus.REFUSED, None, str(refusal))
        except _Malformed as exc:
            result = _error(name, str(exc))
        except Exception as exc:  # a bug in a tool must not end the conversation
            result = ToolResult(
                name,
                ToolCallStatus.ERROR,
                None,
                f"tool {name!r} failed internally ({type(exc).__name__}); try another approach",
            )
        self._record(name, parsed, result, time.perf_counter() - started)
        if self._transform is not None:
            result = replace(result, model_text=self._transform(name, result.to_model_text()))
        return result

    # -- dispatch --

    async def _dispatch(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools)
            return _error(
                name, f"unknown tool {bound_text(name, 60)!r}: available tools are {known}"
            )
        try:
            args = tool.args.model_validate(dict(arguments))
        except ValidationError as exc:
            return _error(name, f"invalid arguments for {name}: {_describe(exc)}")
        try:
            if tool.blocking is not None and tool.blocking(args):
                data, message = await asyncio.to_thread(tool.run, args)
            else:
                data, message = tool.run(args)
        except _BadArgument as exc:
            return _error(name, str(exc))
        except UnknownSkuError as exc:
            return _error(name, f"sku: {exc.sku} is not in the catalogue")
        except ValueError as exc:
            return _error(name, str(exc))
        return ToolResult(name, ToolCallStatus.OK, data, message)

    def _record(
        self, name: str, arguments: Mapping[str, Any], result: ToolResult, seconds: float
    ) -> None:
        summary = sanitize_text(result.message, SUMMARY_LIMIT)
        bounded = _bounded(dict(arguments))
        self._journal.append(
            ToolCallRecord(
                bound_text(name, 64),
                MappingProxyType(bounded),
                result.status,
                summary,
                seconds * 1000.0,
            )
        )
        self._outputs.append(
            {
                "name": bound_text(name, 64),
                "arguments": bounded,
                "status": result.status.value,
                "data": result.data,
            }
        )

    # -- the fifteen tools, in the order of SHOP_TOOL_NAMES --

    def _build(self) -> tuple[_Tool[Any], ...]:
        return (
            _Tool(
                "search_products",
                "Search the catalogue by meaning (semantic search), with optional filters. "
                "Use it to find candidates for what the customer needs.",
                SearchProductsArgs,
                self._search_products,
                blocking=lambda args: self.services.needs_model(args.query),
            ),
            _Tool(
                "find_similar",
                "Products closest in meaning to a given SKU: alternatives and substitutes.",
                SkuLimitArgs,
                self._find_similar,
                blocking=lambda _: self.services.needs_model(),
            ),
            _Tool(
                "find_complements",
                "Products that go with a given SKU: declared compatible accessories first, "
                "then related products from other categories.",
                SkuLimitArgs,
                self._find_complements,
                blocking=lambda _: self.services.needs_model(),
            ),
            _Tool(
                "get_user_profile",
                "The signed-in customer's profile, stated interests and constraints.",
                CustomerArgs,
                self._get_user_profile,
            ),
            _Tool(
                "get_purchase_history",
                "The signed-in customer's purchases, newest first, with gift flags.",
                CustomerArgs,
                self._get_purchase_history,
            ),
            _Tool(
                "get_product_details",
                "Every customer-facing detail of one product.",
                SkuArgs,
                self._get_product_details,
            ),
            _Tool(
                "get_stock_and_price",
                "Current price, discount, stock and seller of one product.",
                SkuArgs,
                self._get_stock_and_price,
            ),
            _Tool(
                "browse_category",
                "List products in a department or under a category path.",
                BrowseArgs,
                self._browse_category,
            ),
            _Tool(
                "get_review_digest",
                "What the ratings of one product support saying.",
                SkuArgs,
                self._get_review_digest,
            ),
            _Tool(
                "get_interest_map",
                "The signed-in customer's interests derived from their own behaviour, gift "
                "purchases to ignore, and consumables that are running low.",
                CustomerArgs,
                self._get_interest_map,
            ),
            _Tool(
                "list_departments",
                "The catalogue's departments with product counts.",
                NoArgs,
                self._list_departments,
            ),
            _Tool(
                "get_catalogue_statistics",
                "Counts and price facts over the whole catalogue.",
                NoArgs,
                self._get_catalogue_statistics,
            ),
            _Tool(
                "present_recommendation",
                "Present the final recommendation: 1-5 catalogue SKUs, each with the reason "
                "it fits this customer. Products out of stock and products the customer "
                "already owns are rejected, except consumables they may want to restock.",
                PresentRecommendationArgs,
                self._present_recommendation,
            ),
            _Tool(
                "add_to_cart",
                "Add a product to the customer's cart. Requires the customer's explicit "
                "approval; without it the call is refused.",
                CartArgs,
                self._add_to_cart,
            ),
            _Tool(
                "place_order",
                "Place an order for a product. Requires the customer's explicit approval; "
                "without it the call is refused.",
                CartArgs,
                self._place_order,
            ),
        )

    def _customer(self, args: CustomerArgs) -> str:
        if self.customer_id is None:
            raise _Refused("no customer is signed in: ask the customer rather than look them up")
        if args.customer_id is not None and args.customer_id != self.customer_id:
            raise _Refused("customer tools act only for the signed-in customer")
        return self.customer_id

    def _search_products(self, args: SearchProductsArgs) -> tuple[Any, str]:
        try:
            hits = self.services.search(
                args.query,
                limit=args.limit,
                department=args.department,
                max_price_chf=args.max_price_chf,
                require_tags=args.require_tags,
                in_stock_only=args.in_stock_only,
                exclude_skus=args.exclude_skus,
            )
        except ValueError as exc:
            argument = "department" if "department" in str(exc) else "query"
            raise _BadArgument(argument, str(exc)) from None
        return [h.to_dict() for h in hits], f"{len(hits)} products match the query"

    def _find_similar(self, args: SkuLimitArgs) -> tuple[Any, str]:
        hits = self.services.similar(args.sku, limit=args.limit)
        return [h.to_dict() for h in hits], f"{len(hits)} products similar to {args.sku}"

    def _find_complements(self, args: SkuLimitArgs) -> tuple[Any, str]:
        hits = self.services.complements(args.sku, limit=args.limit)
        return [h.to_dict() for h in hits], f"{len(hits)} products that go with {args.sku}"

    def _get_user_profile(self, args: CustomerArgs) -> tuple[Any, str]:
        customer = self._customer(args)
        return self.services.profile(customer), f"profile of {customer}"

    def _get_purchase_history(self, args: CustomerArgs) -> tuple[Any, str]:
        lines = self.services.purchase_history(self._customer(args))
        return lines, f"{len(lines)} purchases"

    def _get_product_details(self, args: SkuArgs) -> tuple[Any, str]:
        product = self.services.catalogue.by_sku(args.sku)
        return product_details(product), f"details of {product.sku} {product.name}"

    def _get_stock_and_price(self, args: SkuArgs) -> tuple[Any, str]:
        facts = self.services.stock_and_price(args.sku)
        stock = "in stock" if facts["in_stock"] else "out of stock"
        return facts, f"{args.sku}: CHF {facts['price_chf']:.2f}, {stock}"

    def _browse_category(self, args: BrowseArgs) -> tuple[Any, str]:
        try:
            products = self.services.browse_category(args.category, limit=args.limit)
        except ValueError as exc:
            raise _BadArgument("category", str(exc)) from None
        return [product_summary(p) for p in products], f"{len(products)} products"

    def _get_review_digest(self, args: SkuArgs) -> tuple[Any, str]:
        digest = self.services.review_digest(args.sku)
        return digest, f"{args.sku}: {digest['digest']}"

    def _get_interest_map(self, args: CustomerArgs) -> tuple[Any, str]:
        interest_map = self.services.interest_map(self._customer(args))
        return interest_map.to_dict(), (
            f"{len(interest_map.interests)} interests, "
            f"{len(interest_map.consumables_due)} consumables due"
        )

    def _list_departments(self, _: NoArgs) -> tuple[Any, str]:
        departments = self.services.departments()
        return departments, f"{len(departments)} departments"

    def _get_catalogue_statistics(self, _: NoArgs) -> tuple[Any, str]:
        stats = self.services.statistics()
        return stats.model_dump(mode="json"), f"{stats.product_count} products"

    def _present_recommendation(self, args: PresentRecommendationArgs) -> tuple[Any, str]:
        problems = _presentation_problems(
            [item.sku for item in args.items],
            catalogue=self.services.catalogue,
            owned=(
                self.services.owned_durables(self.customer_id) if self.customer_id else frozenset()
            ),
        )
        if problems:
            # Every problem at once, so a model can correct the whole list in one more call.
            raise _BadArgument("items", "; ".join(problems))
        text = render_recommendation(self.services, args.items, args.note)
        skus = [item.sku for item in args.items]
        self._presented.extend(skus)
        return {"text": text, "skus": skus}, f"presented {', '.join(skus)}"

    def _gated(self, action: str, args: CartArgs) -> None:
        if not self.approvals.consume(action, args.sku):
            raise _Refused(
                f"{action} needs the customer's explicit approval for {args.sku}; "
                "none was given, so nothing was done"
            )
        self.services.catalogue.by_sku(args.sku)

    def _add_to_cart(self, args: CartArgs) -> tuple[Any, str]:
        self._gated("add_to_cart", args)
        self._cart.append((args.sku, args.quantity))
        return {"cart": [{"sku": s, "quantity": q} for s, q in self._cart]}, (
            f"added {args.quantity} x {args.sku} to the cart"
        )

    def _place_order(self, args: CartArgs) -> tuple[Any, str]:
        self._gated("place_order", args)
        self._orders.append((args.sku, args.quantity))
        return {"sku": args.sku, "quantity": args.quantity, "simulated": True}, (
            f"order request for {args.quantity} x {args.sku} recorded (demo shop, no payment)"
        )


def render_recommendation(
    services: ShopServices, items: list[RecommendationItem], note: str | None = None
) -> str:
    """The customer-facing text of a recommendation: one line per product, reason after a dash."""
    lines = []
    for number, item in enumerate(items, start=1):
        product = services.catalogue.by_sku(item.sku)
        lines.append(
            f"{number}. {product.name} ({product.sku}), CHF {product.price_chf} — {item.reason}"
        )
    if note:
        lines.append("")
        lines.append(note)
    return "\n".join(lines)


# -- helpers -------------------------------------------------------------------------------------


def _presentation_problems(
    skus: list[str], *, catalogue: Catalogue, owned: Container[str]
) -> list[str]:
    """Why each SKU may not be presented: unknown, out of stock, an owned durable, or named
    twice. A product the customer cannot buy is no recommendation, whoever picked it."""
    problems: list[str] = []
    seen: set[str] = set()
    for index, sku in enumerate(skus):
        where = f"items[{index}].sku"
        product = catalogue.get(sku)
        if product is None:
            problems.append(f"{where}: {sku} is not in the catalogue")
        elif not product.in_stock:
            problems.append(f"{where}: {sku} is out of stock: present something in stock")
        elif sku in owned:
            problems.append(
                f"{where}: {sku} is already owned by the customer: do not present it again"
            )
        elif sku in seen:
            problems.append(f"{where}: {sku} is presented twice")
        seen.add(sku)
    return problems


def _error(name: str, message: str) -> ToolResult:
    return ToolResult(name, ToolCallStatus.ERROR, None, bound_text(message, _MESSAGE_LIMIT))


def _parse_arguments(name: str, arguments: Mapping[str, Any] | str) -> Mapping[str, Any]:
    if isinstance(arguments, Mapping):
        return arguments
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError as exc:
        raise _Malformed(f"arguments for {name} are not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise _Malformed(f"arguments for {name} must be a JSON object")
    return value


def _describe(error: ValidationError) -> str:
    """Pydantic errors as ``argument: problem``; the offending values are not echoed."""
    parts = []
    for item in error.errors(include_url=False):
        where = "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in item["loc"]
        ).lstrip(".")
        parts.append(f"{where or 'arguments'}: {item['msg']}")
    return "; ".join(parts)


def _bounded(value: Any) -> Any:
    """A copy of parsed arguments small enough to persist: long strings and lists are cut."""
    if isinstance(value, str):
        return bound_text(value, _ARGUMENT_TEXT_LIMIT)
    if isinstance(value, Mapping):
        return {bound_text(str(k), 64): _bounded(v) for k, v in list(value.items())[:20]}
    if isinstance(value, list | tuple):
        return [_bounded(v) for v in value[:20]]
    if value is None or isinstance(value, bool | int | float):
        return value
    return bound_text(repr(value), _ARGUMENT_TEXT_LIMIT)


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema without titles and with ``$defs`` inlined.

    Some OpenAI-compatible servers reject ``$ref`` in tool parameters, and titles only cost
    the model tokens. Pydantic builds a schema afresh on every call, which was a third of an
    offline suite's time; the schema of a class never changes, so it is built once and each
    caller gets its own copy to change.
    """
    # A JSON round trip is the cheapest deep copy of plain JSON (several times deepcopy's speed).
    copied: dict[str, Any] = json.loads(_cached_schema_text(model))
    return copied


@functools.cache
def _cached_schema_text(model: type[BaseModel]) -> str:
    return json.dumps(_cached_schema(model))


def _cached_schema(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema()
    definitions = raw.pop("$defs", {})

    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return clean(definitions[node["$ref"].rsplit("/", 1)[-1]])
            return {k: clean(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [clean(v) for v in node]
        return node

    schema: dict[str, Any] = clean(raw)
    return schema
