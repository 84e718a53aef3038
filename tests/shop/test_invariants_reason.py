"""A bug nobody named, planted in the shop's search: the invariants gate fails and says where."""

from __future__ import annotations

import json
from typing import Any

from vitrine._cli import main
from vitrine_shop.operations import ShopServices


def test_a_search_that_lets_prices_over_the_ceiling_through_fails_and_names_one(
    tmp_path, monkeypatch
):
    shipped = ShopServices.search

    def lenient(self: ShopServices, query: str, **filters: Any) -> Any:
        # The planted defect: the price ceiling lets through up to 10% more.
        if filters.get("max_price_chf") is not None:
            filters["max_price_chf"] *= 1.1
        return shipped(self, query, **filters)

    monkeypatch.setattr(ShopServices, "search", lenient)
    report = tmp_path / "report.json"
    code = main(["--all", "--output", str(tmp_path / "store"), "--json-report", str(report)])
    assert code == 1
    (gate,) = [g for g in json.loads(report.read_text())["gates"] if g["name"] == "invariants"]
    assert gate["status"] == "FAIL"
    assert gate["evidence"]["problem_count"] >= len(gate["evidence"]["problems"]) > 0
    assert any("over max_price_chf" in line for line in gate["evidence"]["problems"])
