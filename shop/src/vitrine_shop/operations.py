"""The shop's domain operations, free of any tool, journal or model concern.

The tool-using agent reaches these through :mod:`vitrine_shop.tools` (validated, journalled,
budgeted); the workflow calls them directly. Both therefore see the same catalogue facts,
the same search ranking and the same interest map, and a difference between the two
architectures is a difference of architecture, not of data.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from vitrine_shop.catalogue import (
    Catalogue,
    CatalogueStatistics,
    catalogue_statistics,
    load_catalogue,
)
from vitrine_shop.domain import Department, Persona, Product
from vitrine_shop.embeddings import (
    CatalogueVectors,
    Embedder,
    MiniLMEmbedder,
    Vectors,
    catalogue_vectors,
)
from vitrine_shop.interests import ConsumableDue, InterestMap, derive_interest_map
from vitrine_shop.personas import DEMO_CLOCK, load_personas

__all__ = ["SearchHit", "ShopServices", "UnknownCustomerError"]

_WITHHELD = "withheld: sensitive department"


class UnknownCustomerError(KeyError):
    """A customer id that no persona has."""

    def __init__(self, customer_id: str, known: Collection[str]) -> None:
        super().__init__(customer_id)
        self.customer_id = customer_id
        self.known = tuple(sorted(known))

    def __str__(self) -> str:
        return f"unknown customer {self.customer_id!r}: known customers are {', '.join(self.known)}"


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A product with its relevance: cosine similarity, or 1.0 for a declared compatibility."""

    product: Product
    score: float
    match: str = "semantic"  # "semantic" or "compat"

    @property
    def sku(self) -> str:
        return self.product.sku

    def to_dict(self) -> dict[str, Any]:
        return {**product_summary(self.product), "score": round(self.score, 4), "match": self.match}


def _price(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def product_summary(product: Product) -> dict[str, Any]:
    """The short account of a product that lists and search results carry."""
    return {
        "sku": product.sku,
        "name": product.name,
        "brand": product.brand,
        "department": product.department.display_name,
        "category": " > ".join(product.category_path),
        "price_chf": _price(product.price_chf),
        "in_stock": product.in_stock,
        "rating_average": product.rating_average,
        "consumable": product.consumable,
    }


def product_details(product: Product) -> dict[str, Any]:
    """Every customer-facing field of a product, JSON-ready."""
    return {
        **product_summary(product),
        "gtin": product.gtin,
        "was_price_chf": _price(product.was_price_chf),
        "specs": dict(product.specs),
        "description": product.description,
        "tags": list(product.tags),
        "rating_count": product.rating_count,
        "stock_units": product.stock_units,
        "markets": list(product.markets),
        "energy_label": product.energy_label,
        "release_year": product.release_year,
        "marketplace_seller": product.marketplace_seller,
        "second_hand": product.second_hand,
        "typical_replenish_days": product.typical_replenish_days,
        "cold_start": product.cold_start,
    }


class ShopServices:
    """Catalogue, customers and semantic search over one catalogue at one demo clock."""

    def __init__(
        self,
        catalogue: Catalogue | None = None,
        personas: Mapping[str, Persona] | None = None,
        embedder: Embedder | None = None,
        clock: datetime.date = DEMO_CLOCK,
    ) -> None:
        self.catalogue = catalogue if catalogue is not None else load_catalogue()
        # The packaged personas even over an ablated catalogue: a persona whose purchase is
        # no longer catalogued is still that customer, and lookups of it degrade to "unknown".
        self.personas: Mapping[str, Persona] = (
            dict(personas) if personas is not None else load_personas()
        )
        self.embedder: Embedder = embedder if embedder is not None else MiniLMEmbedder()
        self.clock = clock
        self._vectors: CatalogueVectors | None = None
        self._interest_maps: dict[str, InterestMap] = {}

    # -- customers -------------------------------------------------------------------------

    def persona(self, customer_id: str) -> Persona:
        try:
            return self.personas[customer_id]
        except KeyError:
            raise UnknownCustomerError(customer_id, self.personas) from None

    def profile(self, customer_id: str) -> dict[str, Any]:
        persona = self.persona(customer_id)
        return {
            "customer_id": persona.id,
            "display_name": persona.display_name,
            "profile": persona.profile,
            "stated_interests": list(persona.interests),
            "constraints": dict(persona.constraints),
            "purchase_count": len(persona.purchase_history),
            "saved_count": len(persona.saved_items),
            "viewed_count": len(persona.viewed_items),
            "has_evidence": persona.has_evidence,
        }

    def purchase_history(self, customer_id: str) -> list[dict[str, Any]]:
        """Purchase lines, newest first; sensitive lines keep their SKU but not their name.

        The SKU stays so the caller can still avoid re-presenting the item; the name goes so
        that no downstream text can build an inference on it.
        """
        persona = self.persona(customer_id)
        lines: list[dict[str, Any]] = []
        for purchase in sorted(
            persona.purchase_history, key=lambda p: (p.date, p.sku), reverse=True
        ):
            product = self.catalogue.get(purchase.sku)
            sensitive = product is not None and product.department.sensitive
            lines.append(
                {
                    "sku": purchase.sku,
                    "name": _WITHHELD if sensitive or product is None else product.name,
                    "department": None
                    if sensitive or product is None
                    else product.department.display_name,
                    "date": purchase.date.isoformat(),
                    "quantity": purchase.quantity,
                    "price_paid_chf": float(purchase.price_paid_chf),
                    "gift": purchase.gift,
                    "consumable": bool(product and product.consumable),
                }
            )
        return lines

    def owned_skus(self, customer_id: str) -> frozenset[str]:
        """SKUs the customer bought for themselves (gifts are not owned by the buyer)."""
        return self.persona(customer_id).owned_skus

    def owned_durables(self, customer_id: str) -> frozenset[str]:
        """Owned SKUs that must not be presented again; consumables may be restocked."""
        return frozenset(
            sku
            for sku in self.owned_skus(customer_id)
            if (product := self.catalogue.get(sku)) is None or not product.consumable
        )

    def interest_map(self, customer_id: str) -> InterestMap:
        cached = self._interest_maps.get(customer_id)
        if cached is None:
            cached = derive_interest_map(self.persona(customer_id), self.catalogue, self.clock)
            self._interest_maps[customer_id] = cached
        return cached

    def running_low(self, customer_id: str) -> list[ConsumableDue]:
        return list(self.interest_map(customer_id).consumables_due)

    # -- semantic --------------------------------------------------------------------------

    @property
    def vectors(self) -> CatalogueVectors:
        if self._vectors is None:
            self._vectors = catalogue_vectors(self.catalogue, self.embedder)
        return self._vectors

    def needs_model(self, query: str | None = None) -> bool:
        """Whether a search (for ``query``, or by a product's vector) would run the embedding
        model: the catalogue's vectors not yet loaded, or a query no cache holds."""
        if self._vectors is None:
            return True
        if query is None:
            return False
        has_vector = getattr(self.embedder, "has_vector", None)
        return not (callable(has_vector) and has_vector(query))

    def use_vectors(self, vectors: CatalogueVectors) -> None:
        """Search over ``vectors`` (embedded just now, say) instead of the shipped ones."""
        if vectors.skus != tuple(p.sku for p in self.catalogue):
            raise ValueError("the vectors were embedded from another catalogue")
        self._vectors = vectors

    def _rank(
        self,
        query_vector: Vectors,
        *,
        limit: int,
        keep: Mapping[str, bool] | None = None,
        exclude: Collection[str] = (),
    ) -> list[SearchHit]:
        vectors = self.vectors
        # As Python floats at once (each the float32 score exactly), not one scalar at a time.
        scores: list[float] = (vectors.matrix @ np.asarray(query_vector, dtype=np.float32)).tolist()
        # Stable order: score descending, then SKU, so ties never depend on array layout.
        order = sorted(range(len(vectors.skus)), key=lambda i: (-scores[i], vectors.skus[i]))
        hits: list[SearchHit] = []
        for index in order:
            sku = vectors.skus[index]
            if sku in exclude or (keep is not None and not keep.get(sku, False)):
                continue
            hits.append(SearchHit(self.catalogue.by_sku(sku), scores[index]))
            if len(hits) >= limit:
                break
        return hits

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        department: str | None = None,
        max_price_chf: float | None = None,
        require_tags: Sequence[str] = (),
        in_stock_only: bool = False,
        exclude_skus: Collection[str] = (),
    ) -> list[SearchHit]:
        """Products closest in meaning to ``query`` that pass every filter, best first."""
        if not query.strip():
            raise ValueError("query is empty: search needs words to match meaning against")
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        wanted = Department.parse(department) if department else None
        tags = {_normalize_tag(t) for t in require_tags}
        ceiling = Decimal(str(max_price_chf)) if max_price_chf is not None else None

        def admissible(product: Product) -> bool:
            if wanted is not None and product.department is not wanted:
                return False
            if ceiling is not None and product.price_chf > ceiling:
                return False
            if in_stock_only and not product.in_stock:
                return False
            return tags <= _tag_forms(product)

        keep = {p.sku: admissible(p) for p in self.catalogue}
        vector = self.embedder.embed([query])[0]
        return self._rank(vector, limit=limit, keep=keep, exclude=frozenset(exclude_skus))

    def similar(self, sku: str, limit: int = 5) -> list[SearchHit]:
        """Products nearest to ``sku`` in meaning (substitutes), the product itself excluded."""
        self.catalogue.by_sku(sku)
        vectors = self.vectors
        return self._rank(vectors.matrix[vectors.row(sku)], limit=limit, exclude={sku})

    def complements(self, sku: str, limit: int = 5) -> list[SearchHit]:
        """What goes with ``sku``: declared compatibilities first, then near-meaning products.

        The semantic fill skips the product's own leaf category, because a near neighbour in
        the same category is a substitute, not a complement.
        """
        product = self.catalogue.by_sku(sku)
        declared = [*self.catalogue.compatible_with(sku)]
        declared += [p for s in product.compat_skus if (p := self.catalogue.get(s)) is not None]
        hits: list[SearchHit] = []
        seen = {sku}
        for other in declared:
            if other.sku not in seen:
                seen.add(other.sku)
                hits.append(SearchHit(other, 1.0, "compat"))
        if len(hits) < limit:
            vectors = self.vectors
            hits += self._rank(
                vectors.matrix[vectors.row(sku)],
                limit=limit - len(hits),
                exclude=seen | self.catalogue.in_leaf_category(product.leaf_category),
            )
        return hits[:limit]

    # -- structured ------------------------------------------------------------------------

    def product(self, sku: str) -> Product | None:
        return self.catalogue.get(sku)

    def stock_and_price(self, sku: str) -> dict[str, Any]:
        product = self.catalogue.by_sku(sku)
        return {
            "sku": product.sku,
            "price_chf": _price(product.price_chf),
            "was_price_chf": _price(product.was_price_chf),
            "discounted": product.discounted,
            "discount_chf": float(product.discount_chf),
            "in_stock": product.in_stock,
            "stock_units": product.stock_units,
            "markets": list(product.markets),
            "marketplace_seller": product.marketplace_seller,
            "second_hand": product.second_hand,
        }

    def browse_category(self, department_or_path: str, limit: int = 10) -> list[Product]:
        """Products in a department (slug, name or number) or under a category path.

        A path may be given with ``>`` or ``/`` between levels and may start below the
        department, so ``Headlamps`` and ``Outdoor & Hiking > Headlamps`` both work.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        try:
            department = Department.parse(department_or_path)
        except ValueError:
            department = None
        if department is not None:
            matches = list(self.catalogue.in_department(department))
        else:
            wanted = _path_parts(department_or_path)
            if not wanted:
                raise ValueError("category is empty: give a department or a category path")
            matches = [p for p in self.catalogue if _path_contains(p.category_path, wanted)]
            if not matches:
                raise ValueError(
                    f"no category matches {department_or_path!r}: "
                    "use list_departments or a path such as 'Outdoor & Hiking > Headlamps'"
                )
        matches.sort(key=lambda p: (p.category_path, p.sku))
        return matches[:limit]

    def review_digest(self, sku: str) -> dict[str, Any]:
        """What the ratings support saying, and whether there are too few to say anything."""
        product = self.catalogue.by_sku(sku)
        if product.rating_average is None:
            verdict = "no ratings yet: do not argue from reviews"
        elif product.cold_start:
            verdict = f"only {product.rating_count} ratings: too few to argue from"
        elif product.rating_average >= 4.5:
            verdict = "consistently well rated"
        elif product.rating_average >= 4.0:
            verdict = "well rated"
        elif product.rating_average >= 3.0:
            verdict = "mixed ratings"
        else:
            verdict = "poorly rated"
        return {
            "sku": product.sku,
            "name": product.name,
            "rating_average": product.rating_average,
            "rating_count": product.rating_count,
            "cold_start": product.cold_start,
            "digest": verdict,
        }

    def departments(self) -> list[dict[str, Any]]:
        return [
            {
                "department": d.display_name,
                "slug": d.value,
                "number": d.number,
                "product_count": len(self.catalogue.in_department(d)),
                "sensitive": d.sensitive,
            }
            for d in self.catalogue.departments()
        ]

    def statistics(self) -> CatalogueStatistics:
        return catalogue_statistics(self.catalogue)


def _normalize_tag(tag: str) -> str:
    return tag.strip().casefold()


# Every search filters the whole catalogue by tags; a product's forms never change, so they
# are derived once per product object (the object is kept, so its id is never reused).
_TAG_FORMS: dict[int, tuple[Product, frozenset[str]]] = {}


def _tag_forms(product: Product) -> frozenset[str]:
    """A tag matches with or without its prefix: ``hut-to-hut`` finds ``context:hut-to-hut``."""
    cached = _TAG_FORMS.get(id(product))
    if cached is not None and cached[0] is product:
        return cached[1]
    forms = _derive_tag_forms(product)
    if len(_TAG_FORMS) >= 4096:
        _TAG_FORMS.clear()
    _TAG_FORMS[id(product)] = (product, forms)
    return forms


def _derive_tag_forms(product: Product) -> frozenset[str]:
    forms = set()
    for tag in product.tags:
        forms.add(_normalize_tag(tag))
        forms.add(_normalize_tag(tag.split(":", 1)[-1]))
    return frozenset(forms)


def _path_parts(text: str) -> tuple[str, ...]:
    return tuple(
        part.strip().casefold() for part in text.replace("/", ">").split(">") if part.strip()
    )


def _path_contains(path: Sequence[str], wanted: tuple[str, ...]) -> bool:
    folded = [part.casefold() for part in path]
    width = len(wanted)
    return any(tuple(folded[i : i + width]) == wanted for i in range(len(folded) - width + 1))
