"""Typed domain model of the reference shop: products, personas, purchases and scenarios.

Everything here is immutable once validated: the catalogue, the personas and the scenario
registry are loaded once and shared by the tools, the agent, the workflow and the evaluation
suite, so a caller that could mutate them would silently change every other caller's evidence.
"""

from __future__ import annotations

import datetime
import enum
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

__all__ = [
    "RECOMMENDATION_TOOL_CHAIN",
    "SHOP_TOOL_NAMES",
    "SKU_ANY_CASE",
    "SKU_IN_TEXT",
    "SKU_PATTERN",
    "CatalogueError",
    "Department",
    "JudgeCriterion",
    "Persona",
    "PersonaError",
    "Product",
    "Purchase",
    "Scenario",
    "ScenarioError",
    "ShopDataError",
    "Tier",
    "ToolExpectation",
    "format_validation_error",
    "gtin_check_digit",
    "is_valid_gtin",
    "read_json_document",
    "record_label",
]

_SKU_BODY = r"GLX-\d{4}"
# A whole field that is one SKU (schemas), and a SKU wherever it stands in prose.
SKU_PATTERN = rf"^{_SKU_BODY}$"
SKU_IN_TEXT = re.compile(rf"\b{_SKU_BODY}\b")
#: A product code as a person may type it, in any letter case ("glx-2001" names GLX-2001).
SKU_ANY_CASE = re.compile(rf"\b{_SKU_BODY}\b", re.IGNORECASE)
_SKU_RE = re.compile(SKU_PATTERN)
_SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"

# The fifteen tool names of the reference subject. They live here, next to the scenario model,
# because scenario tool expectations are data and must be checked against a closed vocabulary:
# a misspelt tool name in a required chain would make a trace check unsatisfiable.
SHOP_TOOL_NAMES: tuple[str, ...] = (
    "search_products",
    "find_similar",
    "find_complements",
    "get_user_profile",
    "get_purchase_history",
    "get_product_details",
    "get_stock_and_price",
    "browse_category",
    "get_review_digest",
    "get_interest_map",
    "list_departments",
    "get_catalogue_statistics",
    "present_recommendation",
    "add_to_cart",
    "place_order",
)

# The ordered chain every recommendation scenario requires of the agent.
RECOMMENDATION_TOOL_CHAIN: tuple[str, ...] = (
    "get_user_profile",
    "get_interest_map",
    "search_products",
    "get_product_details",
    "present_recommendation",
)

_CENT = Decimal("0.01")
_TAG_PREFIXES = frozenset({"context", "compat", "consumable"})

Money = Annotated[Decimal, Field(gt=0, max_digits=9, decimal_places=2)]
Sku = Annotated[str, Field(pattern=SKU_PATTERN)]
Slug = Annotated[str, Field(pattern=_SLUG_PATTERN, min_length=1, max_length=64)]
NonEmpty = Annotated[str, Field(min_length=1)]


class ShopDataError(ValueError):
    """A shop data file is malformed; the message names the file, the record and the field."""


class CatalogueError(ShopDataError):
    """The product catalogue is malformed or violates a catalogue-level invariant."""


class PersonaError(ShopDataError):
    """The persona file is malformed or refers to products the catalogue does not hold."""


class ScenarioError(ShopDataError):
    """The scenario registry is malformed or refers to unknown personas, products or tools."""


class Department(enum.StrEnum):
    """The nine departments; the number is the first digit of every SKU in the department."""

    PHOTOGRAPHY = "photography"
    OUTDOOR_HIKING = "outdoor-hiking"
    HOME_ESPRESSO = "home-espresso"
    GAMING = "gaming"
    KITCHEN_APPLIANCES = "kitchen-appliances"
    CYCLING = "cycling"
    HOME_AUDIO = "home-audio"
    POWER_TRAVEL_TECH = "power-travel-tech"
    HEALTH_PERSONAL_CARE = "health-personal-care"

    @property
    def number(self) -> int:
        return _DEPARTMENT_NUMBERS[self]

    @property
    def display_name(self) -> str:
        return _DEPARTMENT_NAMES[self]

    @property
    def sensitive(self) -> bool:
        # Purchases here can reveal health facts; recommenders must not infer from them.
        return self is Department.HEALTH_PERSONAL_CARE

    @classmethod
    def from_number(cls, number: int) -> Department:
        for department, value in _DEPARTMENT_NUMBERS.items():
            if value == number:
                return department
        raise ValueError(f"no department has number {number}: departments are numbered 1-9")

    @classmethod
    def parse(cls, text: str) -> Department:
        """Accept the slug, the display name or the number, ignoring case and spacing.

        Tool arguments come from a model, which may use any of the three spellings.
        """
        key = text.strip().casefold()
        for department in cls:
            if key in (
                department.value,
                department.display_name.casefold(),
                str(department.number),
            ):
                return department
        known = ", ".join(d.display_name for d in cls)
        raise ValueError(f"unknown department {text!r}: known departments are {known}")


_DEPARTMENT_NUMBERS: dict[Department, int] = {
    Department.PHOTOGRAPHY: 1,
    Department.OUTDOOR_HIKING: 2,
    Department.HOME_ESPRESSO: 3,
    Department.GAMING: 4,
    Department.KITCHEN_APPLIANCES: 5,
    Department.CYCLING: 6,
    Department.HOME_AUDIO: 7,
    Department.POWER_TRAVEL_TECH: 8,
    Department.HEALTH_PERSONAL_CARE: 9,
}

_DEPARTMENT_NAMES: dict[Department, str] = {
    Department.PHOTOGRAPHY: "Photography",
    Department.OUTDOOR_HIKING: "Outdoor & Hiking",
    Department.HOME_ESPRESSO: "Home Espresso",
    Department.GAMING: "Gaming",
    Department.KITCHEN_APPLIANCES: "Kitchen & Small Appliances",
    Department.CYCLING: "Cycling",
    Department.HOME_AUDIO: "Home Audio",
    Department.POWER_TRAVEL_TECH: "Power & Travel Tech",
    Department.HEALTH_PERSONAL_CARE: "Health & Personal Care",
}


class Tier(enum.StrEnum):
    """Catalogue tier: the 72 core products, 23 extension products, 4 sensitive products."""

    CORE = "core"
    EXTENSION = "extension"
    SENSITIVE = "sensitive"


def gtin_check_digit(first_twelve: str) -> int:
    """The GS1 check digit for the first twelve digits of an EAN-13."""
    if len(first_twelve) != 12 or not first_twelve.isdigit():
        raise ValueError("an EAN-13 check digit is computed over exactly twelve digits")
    # GS1: weights alternate 1, 3 from the left for EAN-13.
    total = sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(first_twelve))
    return (10 - total % 10) % 10


def is_valid_gtin(gtin: str) -> bool:
    return len(gtin) == 13 and gtin.isdigit() and gtin_check_digit(gtin[:12]) == int(gtin[12])


def _invariant(field: str, message: str) -> PydanticCustomError:
    # Cross-field checks run in model validators whose error location is empty; putting the
    # field in the message keeps "which field is wrong" in every error a reader sees.
    return PydanticCustomError(
        "invariant", "field {field}: {detail}", {"field": field, "detail": message}
    )


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


class Product(_Frozen):
    """One catalogued product. Prices are CHF with two decimals."""

    sku: Sku
    gtin: Annotated[str, Field(pattern=r"^\d{13}$")]
    name: NonEmpty
    brand: NonEmpty
    category_path: Annotated[tuple[NonEmpty, ...], Field(min_length=2)]
    department: Department
    tier: Tier
    price_chf: Money
    was_price_chf: Money | None = None
    specs: dict[str, str] = Field(default_factory=dict)
    description: Annotated[str, Field(min_length=20)]
    tags: tuple[NonEmpty, ...] = ()
    rating_average: Annotated[float, Field(ge=1.0, le=5.0)] | None = None
    rating_count: Annotated[int, Field(ge=0)] = 0
    stock_units: Annotated[int, Field(ge=0)] = 0
    markets: Annotated[
        tuple[Annotated[str, Field(pattern=r"^[A-Z]{2}$")], ...], Field(min_length=1)
    ]
    energy_label: Literal["A", "B", "C", "D", "E", "F", "G"] | None = None
    release_year: Annotated[int, Field(ge=1990, le=2026)]
    marketplace_seller: NonEmpty | None = None
    second_hand: bool = False
    consumable: bool = False
    typical_replenish_days: Annotated[int, Field(gt=0, le=730)] | None = None

    @field_validator("gtin")
    @classmethod
    def _gtin_check_digit(cls, value: str) -> str:
        if not is_valid_gtin(value):
            raise ValueError(
                f"check digit should be {gtin_check_digit(value[:12])}, not {value[12]}"
            )
        return value

    @field_validator("price_chf", "was_price_chf")
    @classmethod
    def _two_decimals(cls, value: Decimal | None) -> Decimal | None:
        # 12.9 and 12.90 are the same price; one spelling keeps rendered prices uniform.
        return None if value is None else value.quantize(_CENT)

    @field_validator("tags")
    @classmethod
    def _tag_vocabulary(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for tag in value:
            if ":" not in tag:
                continue
            prefix, _, rest = tag.partition(":")
            if prefix not in _TAG_PREFIXES:
                # An unknown prefix is almost always a typo of a known one; accepting it
                # would make the tag invisible to the tools that read prefixed tags.
                raise ValueError(
                    f"tag {tag!r} has unknown prefix {prefix!r}: use context:, compat:, consumable:"
                )
            if not rest:
                raise ValueError(f"tag {tag!r} has an empty value")
            if prefix == "compat" and not _SKU_RE.match(rest):
                raise ValueError(f"tag {tag!r} must name a SKU like compat:GLX-3001")
        if len(set(value)) != len(value):
            raise ValueError("tags must not repeat")
        return value

    @model_validator(mode="after")
    def _cross_field(self) -> Self:
        if int(self.sku[4]) != self.department.number:
            raise _invariant(
                "sku",
                f"first digit {self.sku[4]} does not match department "
                f"{self.department.display_name} ({self.department.number})",
            )
        if self.category_path[0] != self.department.display_name:
            raise _invariant(
                "category_path",
                f"root {self.category_path[0]!r} should be the department name "
                f"{self.department.display_name!r}",
            )
        if (self.tier is Tier.SENSITIVE) != self.department.sensitive:
            raise _invariant("tier", "the sensitive tier and the sensitive department go together")
        if self.was_price_chf is not None and self.was_price_chf <= self.price_chf:
            raise _invariant(
                "was_price_chf",
                f"{self.was_price_chf} must exceed the price {self.price_chf} to be a discount",
            )
        if self.consumable != (self.typical_replenish_days is not None):
            raise _invariant(
                "typical_replenish_days",
                "required for consumables and only for consumables",
            )
        if (self.rating_count == 0) != (self.rating_average is None):
            raise _invariant(
                "rating_average",
                "must be null exactly when rating_count is 0 (no ratings, no average)",
            )
        if self.compat_skus and self.sku in self.compat_skus:
            raise _invariant("tags", "a product cannot be compatible with itself")
        return self

    @property
    def leaf_category(self) -> str:
        return self.category_path[-1]

    @property
    def root_category(self) -> str:
        return self.category_path[0]

    @property
    def in_stock(self) -> bool:
        return self.stock_units > 0

    @property
    def discounted(self) -> bool:
        return self.was_price_chf is not None

    @property
    def cold_start(self) -> bool:
        # Fewer than five ratings carry too little evidence for a rating-based argument.
        return self.rating_count < 5

    @property
    def discount_chf(self) -> Decimal:
        return (self.was_price_chf - self.price_chf) if self.was_price_chf else Decimal("0.00")

    @property
    def compat_skus(self) -> tuple[str, ...]:
        """SKUs this product is declared compatible with (it complements them)."""
        return tuple(t.split(":", 1)[1] for t in self.tags if t.startswith("compat:"))

    @property
    def contexts(self) -> tuple[str, ...]:
        """Usage contexts, e.g. ``hut-to-hut`` for the tag ``context:hut-to-hut``."""
        return tuple(t.split(":", 1)[1] for t in self.tags if t.startswith("context:"))

    @property
    def consumable_kinds(self) -> tuple[str, ...]:
        """Consumable kinds, e.g. ``descaler`` for ``consumable:descaler``."""
        return tuple(t.split(":", 1)[1] for t in self.tags if t.startswith("consumable:"))


class Purchase(_Frozen):
    """One line of a persona's purchase history. A gift was bought for someone else."""

    sku: Sku
    date: datetime.date
    quantity: Annotated[int, Field(ge=1)] = 1
    price_paid_chf: Annotated[Decimal, Field(ge=0, max_digits=9, decimal_places=2)]
    gift: bool = False

    @field_validator("price_paid_chf")
    @classmethod
    def _two_decimals(cls, value: Decimal) -> Decimal:
        return value.quantize(_CENT)


class Persona(_Frozen):
    """A demo customer: profile, evidence (purchases, saved, viewed) and stated constraints."""

    id: Slug
    display_name: NonEmpty
    profile: NonEmpty
    interests: tuple[NonEmpty, ...] = ()
    purchase_history: tuple[Purchase, ...] = ()
    saved_items: tuple[Sku, ...] = ()
    viewed_items: tuple[Sku, ...] = ()
    constraints: dict[str, str] = Field(default_factory=dict)
    language: Literal["en"] = "en"
    notes: str = ""

    @property
    def purchased_skus(self) -> frozenset[str]:
        """Every SKU this persona bought, gifts included."""
        return frozenset(p.sku for p in self.purchase_history)

    @property
    def owned_skus(self) -> frozenset[str]:
        """SKUs bought for themselves: a gift is not evidence of the buyer's own taste."""
        return frozenset(p.sku for p in self.purchase_history if not p.gift)

    @property
    def gift_skus(self) -> frozenset[str]:
        return frozenset(p.sku for p in self.purchase_history if p.gift)

    @property
    def has_evidence(self) -> bool:
        """Whether anything at all is known about the persona's behaviour."""
        return bool(self.purchase_history or self.saved_items or self.viewed_items)


class JudgeCriterion(_Frozen):
    """One criterion the judge must rule on; ids are stable across rubric versions."""

    id: Slug
    description: Annotated[str, Field(min_length=10)]


class ToolExpectation(_Frozen):
    """What the agent's tool journal must show for a scenario."""

    kind: Literal["tool-use", "abstention"]
    required_tool_chain: tuple[str, ...] = ()
    forbidden_presented_skus: tuple[Sku, ...] = ()
    max_tool_calls: Annotated[int, Field(ge=0)] | None = None

    @field_validator("required_tool_chain")
    @classmethod
    def _known_tools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [name for name in value if name not in SHOP_TOOL_NAMES]
        if unknown:
            raise ValueError(f"unknown tool names {unknown}: a chain must use the shop's tools")
        return value

    @model_validator(mode="after")
    def _kind_consistent(self) -> Self:
        if self.kind == "abstention":
            if self.required_tool_chain:
                raise _invariant("required_tool_chain", "an abstention expects no tool chain")
            if self.max_tool_calls != 0:
                raise _invariant("max_tool_calls", "an abstention allows zero tool calls")
        elif not self.required_tool_chain:
            raise _invariant("required_tool_chain", "a tool-use expectation needs a chain")
        return self


class Scenario(_Frozen):
    """One entry of the scenario registry shared by the offline and the live plans."""

    id: Slug
    persona_id: Slug | None = None
    persona_ids: tuple[Slug, ...] = ()
    title: NonEmpty
    description: NonEmpty
    query: NonEmpty
    expected_behaviour: NonEmpty
    ground_truth_facts: Annotated[tuple[NonEmpty, ...], Field(min_length=1)]
    judge_criteria: Annotated[tuple[JudgeCriterion, ...], Field(min_length=4, max_length=4)]
    tool_expectation: ToolExpectation
    relevant_skus: tuple[Sku, ...] = ()
    offline_benchmark_case: bool = False
    live: bool = False

    @model_validator(mode="after")
    def _persona_reference(self) -> Self:
        # A scenario is about one persona, or a cohort that shares one prompt; never both,
        # because a check would not know which profile the answer should be grounded in.
        if (self.persona_id is None) == (not self.persona_ids):
            raise _invariant("persona_id", "give exactly one of persona_id or persona_ids")
        ids = [c.id for c in self.judge_criteria]
        if len(set(ids)) != len(ids):
            raise _invariant("judge_criteria", f"criterion ids repeat: {ids}")
        clash = set(self.relevant_skus) & set(self.tool_expectation.forbidden_presented_skus)
        if clash:
            raise _invariant("relevant_skus", f"{sorted(clash)} are both relevant and forbidden")
        return self

    @property
    def personas(self) -> tuple[str, ...]:
        """The persona ids this scenario runs for, in order."""
        return (self.persona_id,) if self.persona_id is not None else self.persona_ids

    @property
    def criterion_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.judge_criteria)


def _location(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc)


def format_validation_error(
    file_label: str, record_kind: str, record_id: str, error: ValidationError
) -> str:
    """Render a pydantic error so it names the file, the record and each failing field.

    Example: ``catalogue.json: product GLX-2003 field price_chf: Input should be greater than 0``.
    """
    lines = []
    for item in error.errors(include_url=False):
        where = _location(item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        prefix = f"{file_label}: {record_kind} {record_id}"
        # Model-level invariants already carry "field <name>: " in their message.
        lines.append(f"{prefix} field {where}: {message}" if where else f"{prefix} {message}")
    return "\n".join(lines)


def read_json_document(path: Path, error: type[ShopDataError]) -> Any:
    """Read a shop data file, turning I/O and syntax failures into the loader's error type."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{path.name}: cannot be read ({exc.strerror})") from None
    try:
        # Decimals, not floats: a price of 12.90 must stay exactly 12.90.
        return json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as exc:
        raise error(f"{path.name}: not valid JSON at line {exc.lineno}: {exc.msg}") from None


def record_label(raw: Any, key: str, index: int) -> str:
    """The record's own id when it has a usable one, else its position in the file."""
    if isinstance(raw, dict):
        value = raw.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return f"#{index}"
