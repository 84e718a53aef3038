"""Discovery, the workflow's one executor that is not a model stage: retrieval in code.

A request is first searched where the customer shops (each interest's department); the
CoverageReviewer sends Discovery back when something the request asks for is not among the
candidates, and the loop-back searches every department for that need alone. Products of the
sensitive department are never candidates, whatever the request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vitrine_shop.domain import Product
from vitrine_shop.operations import SearchHit, ShopServices
from vitrine_shop.workflow.context import RequestContext, product_text

__all__ = ["Discovery"]

_SEARCH_LIMIT = 4
_LOOPBACK_SEARCH_LIMIT = 6
_COMPLEMENTS_PER_INTEREST = 3


class Discovery:
    """Finds candidates for the mapped interests over :class:`ShopServices`."""

    def __init__(self, services: ShopServices) -> None:
        self._services = services

    def _admissible(self, context: RequestContext, product: Product) -> bool:
        if product.sku in context.excluded or not product.in_stock:
            return False
        if not product.consumable and product.leaf_category in context.owned_kinds:
            return False
        if context.budget_chf is not None and product.price_chf > context.budget_chf:
            return False
        return context.constraints.admits(price_chf=product.price_chf, text=product_text(product))

    def _search(
        self, context: RequestContext, query: str, department: str | None, limit: int
    ) -> list[SearchHit]:
        hits = self._services.search(
            query,
            limit=limit,
            department=department,
            max_price_chf=float(context.budget_chf) if context.budget_chf is not None else None,
            in_stock_only=True,
            exclude_skus=context.excluded,
        )
        return [hit for hit in hits if self._admissible(context, hit.product)]

    def discover(
        self,
        context: RequestContext,
        interests: Sequence[Mapping[str, Any]],
        pool: dict[str, dict[str, Any]],
        *,
        gaps: Sequence[Mapping[str, Any]] | None,
    ) -> None:
        """Add candidates to ``pool``: every interest on the first visit, only gaps after.

        A loop-back widens the search: the reviewer's query, every department, more results.
        """
        by_label = {i["label"]: i for i in interests}
        if gaps is None:
            for interest in interests:
                self.discover_interest(context, interest, pool)
            return
        for gap in gaps:
            interest = by_label[gap["interest"]]
            for hit in self._search(context, gap["search_query"], None, _LOOPBACK_SEARCH_LIMIT):
                self._add(pool, hit.product, interest, hit.score, lane="explore")

    def discover_interest(
        self, context: RequestContext, interest: Mapping[str, Any], pool: dict[str, dict[str, Any]]
    ) -> None:
        if interest["source"] == "replenishment":
            due = {
                d.sku: d
                for d in (context.interest_map.consumables_due if context.interest_map else ())
            }
            for sku in interest["evidence_skus"]:
                product = self._services.product(sku)
                item = due.get(sku)
                # A due consumable may be bought again, so it bypasses the purchased exclusion,
                # but never the sensitive department, the stock or the customer's constraints.
                if product is None or item is None or product.department.sensitive:
                    continue
                if not product.in_stock or not self._within(context, product):
                    continue
                self._add(
                    pool,
                    product,
                    interest,
                    1.0,
                    lane="replenish",
                    due={
                        "last_purchased": item.last_purchased.isoformat(),
                        "replenish_days": item.replenish_days,
                        "days_left": item.days_left,
                    },
                )
            return
        for hit in self._search(
            context, interest["search_query"], interest["department"], _SEARCH_LIMIT
        ):
            self._add(pool, hit.product, interest, hit.score, lane="explore")
        # Declared add-ons for what the customer owns connect their history to new products.
        added = 0
        for sku in interest["evidence_skus"]:
            owned = self._services.product(sku) if sku in context.own_durables else None
            if owned is None:
                continue
            for hit in self._services.complements(sku, limit=8):
                if added >= _COMPLEMENTS_PER_INTEREST:
                    return
                if hit.match == "compat" and self._admissible(context, hit.product):
                    self._add(
                        pool, hit.product, interest, hit.score, lane="explore", goes_with=owned.name
                    )
                    added += 1

    def _within(self, context: RequestContext, product: Product) -> bool:
        """A restock is held to the budget and to what the customer ruled out, not to the
        attributes asked of new products."""
        within_budget = context.budget_chf is None or product.price_chf <= context.budget_chf
        return within_budget and not context.constraints.excludes(product_text(product))

    @staticmethod
    def _add(
        pool: dict[str, dict[str, Any]],
        product: Product,
        interest: Mapping[str, Any],
        score: float,
        *,
        lane: str,
        goes_with: str | None = None,
        due: Mapping[str, Any] | None = None,
    ) -> None:
        held = pool.get(product.sku)
        if held is None:
            pool[product.sku] = {
                "sku": product.sku,
                "name": product.name,
                "department": product.department.display_name,
                "category": product.leaf_category,
                "contexts": list(product.contexts),
                "price_chf": float(product.price_chf),
                "lane": lane,
                "interests": [interest["label"]],
                "score": round(float(score), 4),
                "goes_with": goes_with,
                "due": dict(due) if due else None,
            }
            return
        if interest["label"] not in held["interests"]:
            held["interests"].append(interest["label"])
        held["score"] = max(held["score"], round(float(score), 4))
        held["goes_with"] = held["goes_with"] or goes_with
