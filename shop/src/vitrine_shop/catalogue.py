"""The product catalogue: loading, validation, lookup and summary statistics."""

from __future__ import annotations

import functools
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from vitrine_shop.domain import (
    CatalogueError,
    Department,
    Product,
    Tier,
    format_validation_error,
    read_json_document,
    record_label,
)

__all__ = [
    "DEFAULT_CATALOGUE_PATH",
    "EXPECTED_PRODUCT_COUNT",
    "EXPECTED_TIER_COUNTS",
    "Catalogue",
    "CatalogueError",
    "CatalogueStatistics",
    "UnknownSkuError",
    "catalogue_statistics",
    "load_catalogue",
]

DEFAULT_CATALOGUE_PATH = Path(__file__).parent / "data" / "catalogue.json"

# The reference shape the protocol fixes: 72 core (9 in each of departments 1-8),
# 23 extension, 4 sensitive.
EXPECTED_TIER_COUNTS: dict[Tier, int] = {Tier.CORE: 72, Tier.EXTENSION: 23, Tier.SENSITIVE: 4}
EXPECTED_PRODUCT_COUNT = sum(EXPECTED_TIER_COUNTS.values())
_CORE_PER_DEPARTMENT = 9

_CENT = Decimal("0.01")


class UnknownSkuError(KeyError):
    """A SKU that the catalogue does not hold (for example a hallucinated one)."""

    def __init__(self, sku: str, source: str) -> None:
        super().__init__(sku)
        self.sku = sku
        self.source = source

    def __str__(self) -> str:
        return f"{self.sku} is not in the catalogue ({self.source})"


class Catalogue:
    """An immutable, indexed set of products.

    Only identity is enforced here (unique SKUs and GTINs), so that an ablated copy made by
    :meth:`without` is still a valid catalogue; the reference shape is enforced by
    :func:`load_catalogue`.
    """

    __slots__ = ("_by_leaf", "_by_sku", "_complements", "_products", "_skus", "source")

    def __init__(self, products: Iterable[Product], *, source: str = "catalogue") -> None:
        self._products: tuple[Product, ...] = tuple(products)
        self.source = source
        by_sku: dict[str, Product] = {}
        gtins: dict[str, str] = {}
        for product in self._products:
            if product.sku in by_sku:
                raise CatalogueError(f"{source}: product {product.sku} field sku: duplicate SKU")
            if product.gtin in gtins:
                raise CatalogueError(
                    f"{source}: product {product.sku} field gtin: "
                    f"duplicate of {gtins[product.gtin]}"
                )
            by_sku[product.sku] = product
            gtins[product.gtin] = product.sku
        self._by_sku = by_sku
        self._skus = frozenset(by_sku)
        # Every complement lookup asks both; they are indexes of the immutable products.
        complements: dict[str, list[Product]] = {}
        by_leaf: dict[str, set[str]] = {}
        for product in self._products:
            for target in product.compat_skus:
                complements.setdefault(target, []).append(product)
            by_leaf.setdefault(product.leaf_category, set()).add(product.sku)
        self._complements = {sku: tuple(found) for sku, found in complements.items()}
        self._by_leaf = {leaf: frozenset(skus) for leaf, skus in by_leaf.items()}

    @property
    def products(self) -> tuple[Product, ...]:
        return self._products

    @property
    def skus(self) -> frozenset[str]:
        return self._skus

    def __len__(self) -> int:
        return len(self._products)

    def __iter__(self) -> Iterator[Product]:
        return iter(self._products)

    def __contains__(self, sku: object) -> bool:
        return sku in self._by_sku

    def __repr__(self) -> str:
        return f"Catalogue({len(self)} products from {self.source})"

    def by_sku(self, sku: str) -> Product:
        """The product with this SKU; raises :class:`UnknownSkuError` (a ``KeyError``)."""
        try:
            return self._by_sku[sku]
        except KeyError:
            raise UnknownSkuError(sku, self.source) from None

    def get(self, sku: str) -> Product | None:
        return self._by_sku.get(sku)

    def departments(self) -> tuple[Department, ...]:
        """Departments that hold at least one product, in department-number order."""
        present = {p.department for p in self._products}
        return tuple(sorted(present, key=lambda d: d.number))

    def in_department(self, department: Department) -> tuple[Product, ...]:
        return tuple(p for p in self._products if p.department is department)

    def compatible_with(self, sku: str) -> tuple[Product, ...]:
        """Products that declare themselves compatible with ``sku`` (its complements)."""
        return self._complements.get(sku, ())

    def in_leaf_category(self, leaf: str) -> frozenset[str]:
        """The SKUs whose most specific category is ``leaf``."""
        return self._by_leaf.get(leaf, frozenset())

    def without(self, sku: str) -> Catalogue:
        """An isolated copy with one product removed, for catalogue-ablation tests.

        Products are deep-copied so that nothing done to the copy can reach the original,
        which may be the cached catalogue every other caller shares.
        """
        self.by_sku(sku)  # an ablation of a product that is not there proves nothing
        return Catalogue(
            (p.model_copy(deep=True) for p in self._products if p.sku != sku),
            source=f"{self.source} without {sku}",
        )


def _reference_shape_problems(catalogue: Catalogue) -> list[str]:
    problems: list[str] = []
    label = catalogue.source
    if len(catalogue) != EXPECTED_PRODUCT_COUNT:
        problems.append(
            f"{label}: expected {EXPECTED_PRODUCT_COUNT} products, found {len(catalogue)}"
        )
    tiers = Counter(p.tier for p in catalogue)
    for tier, expected in EXPECTED_TIER_COUNTS.items():
        if tiers[tier] != expected:
            problems.append(f"{label}: expected {expected} {tier} products, found {tiers[tier]}")
    for department in Department:
        if department.sensitive:
            continue
        core = [p for p in catalogue.in_department(department) if p.tier is Tier.CORE]
        if len(core) != _CORE_PER_DEPARTMENT:
            problems.append(
                f"{label}: expected {_CORE_PER_DEPARTMENT} core products in "
                f"{department.display_name}, found {len(core)}"
            )
    return problems


def _reference_problems(catalogue: Catalogue) -> list[str]:
    problems: list[str] = []
    for product in catalogue:
        for target in product.compat_skus:
            if target not in catalogue:
                problems.append(
                    f"{catalogue.source}: product {product.sku} field tags: "
                    f"compat:{target} names a SKU that is not in the catalogue"
                )
    return problems


def _parse_products(raw: Any, label: str) -> list[Product]:
    if not isinstance(raw, dict) or not isinstance(raw.get("products"), list):
        raise CatalogueError(f"{label}: expected an object with a 'products' list")
    products: list[Product] = []
    errors: list[str] = []
    for index, item in enumerate(raw["products"]):
        try:
            products.append(Product.model_validate(item))
        except ValidationError as exc:
            errors.append(
                format_validation_error(label, "product", record_label(item, "sku", index), exc)
            )
    if errors:
        raise CatalogueError("\n".join(errors))
    return products


def _load(path: Path, reference_shape: bool) -> Catalogue:
    label = path.name
    catalogue = Catalogue(
        _parse_products(read_json_document(path, CatalogueError), label), source=label
    )
    problems = _reference_problems(catalogue)
    if reference_shape:
        problems += _reference_shape_problems(catalogue)
    if problems:
        raise CatalogueError("\n".join(problems))
    return catalogue


@functools.cache
def _load_default() -> Catalogue:
    return _load(DEFAULT_CATALOGUE_PATH, reference_shape=True)


def load_catalogue(path: Path | None = None, *, reference_shape: bool = True) -> Catalogue:
    """Load and validate a catalogue; the packaged default is loaded once and shared.

    Every error names the file, the product and the field. ``reference_shape=False`` relaxes
    only the product and tier counts, for small test catalogues; identity, field and
    compatibility-reference checks always apply.
    """
    if path is None or (reference_shape and path.resolve() == DEFAULT_CATALOGUE_PATH.resolve()):
        return _load_default()
    return _load(path, reference_shape)


class CatalogueStatistics(BaseModel):
    """Counts and price facts over a catalogue, as the statistics tool reports them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    product_count: int
    department_count: int
    per_department: dict[Department, int]
    per_tier: dict[Tier, int]
    price_min_chf: Decimal
    price_median_chf: Decimal
    price_max_chf: Decimal
    in_stock_count: int
    out_of_stock_count: int
    discounted_count: int
    consumable_count: int
    cold_start_count: int
    second_hand_count: int
    marketplace_count: int
    rated_count: int
    mean_rating: float | None


def catalogue_statistics(catalogue: Catalogue) -> CatalogueStatistics:
    products = catalogue.products
    if not products:
        # An empty catalogue has no price range; zeros would read as real prices.
        raise CatalogueError(f"{catalogue.source}: no products, so no statistics")
    prices = sorted(p.price_chf for p in products)
    rated = [p.rating_average for p in products if p.rating_average is not None]
    per_department = Counter(p.department for p in products)
    per_tier = Counter(p.tier for p in products)
    return CatalogueStatistics(
        product_count=len(products),
        department_count=len(per_department),
        per_department={d: per_department[d] for d in catalogue.departments()},
        per_tier={t: per_tier[t] for t in Tier if per_tier[t]},
        price_min_chf=prices[0],
        price_median_chf=Decimal(statistics.median(prices)).quantize(_CENT),
        price_max_chf=prices[-1],
        in_stock_count=sum(p.in_stock for p in products),
        out_of_stock_count=sum(not p.in_stock for p in products),
        discounted_count=sum(p.discounted for p in products),
        consumable_count=sum(p.consumable for p in products),
        cold_start_count=sum(p.cold_start for p in products),
        second_hand_count=sum(p.second_hand for p in products),
        marketplace_count=sum(p.marketplace_seller is not None for p in products),
        rated_count=len(rated),
        mean_rating=round(statistics.fmean(rated), 2) if rated else None,
    )
