"""Shop services over the packaged data: customers, the interest map, search and browsing."""

from __future__ import annotations

import dataclasses
import datetime

import pytest

from vitrine_shop.embeddings import HashingEmbedder, MiniLMEmbedder
from vitrine_shop.interests import derive_interest_map
from vitrine_shop.operations import ShopServices


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> ShopServices:
    """The real model, so relevance is real; its cache is private to this module."""
    return ShopServices(embedder=MiniLMEmbedder(tmp_path_factory.mktemp("embeddings")))


@pytest.fixture(scope="module")
def plain() -> ShopServices:
    return ShopServices(embedder=HashingEmbedder())


# -- semantic search -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected_leaf"),
    [
        ("headlamp for early starts", "Headlamps"),
        ("something to descale my espresso machine", "Descalers"),
        ("noise cancelling headphones for flights", "Over-Ear Headphones"),
        ("charge my phone for a week away from sockets", "High-Capacity Power Banks"),
    ],
)
def test_search_finds_what_the_words_mean(shop, query, expected_leaf):
    top = shop.search(query, limit=3)
    assert expected_leaf in [hit.product.leaf_category for hit in top], [
        h.product.name for h in top
    ]


def test_search_scores_are_cosines_in_descending_order(shop):
    hits = shop.search("rain jacket for alpine storms", limit=8)
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= s <= 1.0 for s in scores)


def test_search_applies_every_filter(shop):
    hits = shop.search(
        "coffee",
        limit=20,
        department="Home Espresso",
        max_price_chf=40,
        in_stock_only=True,
        require_tags=["consumable:coffee-beans"],
        exclude_skus=["GLX-3005"],
    )
    assert hits
    for hit in hits:
        product = hit.product
        assert product.department.display_name == "Home Espresso"
        assert product.price_chf <= 40 and product.in_stock
        assert "consumable:coffee-beans" in product.tags and hit.sku != "GLX-3005"


def test_search_refuses_an_empty_query_and_an_unknown_department(plain):
    with pytest.raises(ValueError, match="query is empty"):
        plain.search("  ")
    with pytest.raises(ValueError, match="unknown department"):
        plain.search("tent", department="Garden")


def test_similar_excludes_the_product_itself(shop):
    hits = shop.similar("GLX-2001", limit=3)
    assert "GLX-2001" not in [h.sku for h in hits] and len(hits) == 3


def test_complements_put_declared_compatibility_first(shop):
    hits = shop.complements("GLX-3001", limit=8)
    declared = {p.sku for p in shop.catalogue.compatible_with("GLX-3001")}
    compat = [h for h in hits if h.match == "compat"]
    assert {h.sku for h in compat} <= declared and compat
    assert hits[: len(compat)] == compat  # declared ones lead
    machine = shop.catalogue.by_sku("GLX-3001")
    for hit in hits[len(compat) :]:
        assert hit.product.leaf_category != machine.leaf_category  # no substitutes


def test_unknown_skus_raise_key_errors(plain):
    for call in (plain.similar, plain.complements, plain.stock_and_price, plain.review_digest):
        with pytest.raises(KeyError, match="GLX-9999"):
            call("GLX-9999")
    assert plain.product("GLX-9999") is None


# -- customers ------------------------------------------------------------------------------------


def test_an_unknown_customer_has_a_clear_key_error(plain):
    with pytest.raises(KeyError, match="unknown customer 'zed': known customers are"):
        plain.persona("zed")


def test_marcos_gift_purchases_are_suppressed_from_his_interests(plain):
    interest_map = plain.interest_map("marco")
    gifts = plain.persona("marco").gift_skus
    assert gifts and set(interest_map.gift_signals) == gifts
    evidence = {sku for i in interest_map.interests for sku in i.evidence_skus}
    assert not evidence & gifts
    assert "Gaming" not in [i.department.display_name for i in interest_map.interests]
    assert gifts.isdisjoint(plain.owned_skus("marco"))


def test_elenas_sensitive_purchases_are_withheld_and_never_named(plain):
    interest_map = plain.interest_map("elena")
    sensitive = {p.sku for p in plain.catalogue if p.department.sensitive} & plain.persona(
        "elena"
    ).purchased_skus
    assert sensitive
    assert interest_map.withheld_sensitive == len(sensitive)
    rendered = repr(interest_map.to_dict()).casefold()
    for sku in sensitive:
        assert sku.casefold() not in rendered
    for word in ("health", "blood", "prenatal", "vitalis"):
        assert word not in rendered
    assert interest_map.interests  # her other interests remain


def test_luca_has_an_empty_map(plain):
    interest_map = plain.interest_map("luca")
    assert interest_map.is_empty
    assert interest_map.interests == () and interest_map.gift_signals == ()
    assert interest_map.withheld_sensitive == 0
    assert "ask" in interest_map.to_dict()["evidence"]


def test_interest_weights_sum_to_one_and_are_ordered(plain):
    interests = plain.interest_map("nadia").interests
    assert interests[0].department.display_name == "Outdoor & Hiking"
    assert abs(sum(i.weight for i in interests) - 1.0) < 0.01
    assert [i.weight for i in interests] == sorted((i.weight for i in interests), reverse=True)
    assert "hut-to-hut" in interests[0].contexts


def test_the_interest_map_is_deterministic(plain):
    persona = plain.persona("sofia")
    first = derive_interest_map(persona, plain.catalogue, plain.clock)
    assert first == derive_interest_map(persona, plain.catalogue, plain.clock)


def test_running_low_reads_the_demo_clock(plain):
    due = {d.sku for d in plain.running_low("sofia")}
    assert "GLX-3003" in due  # descaler: 90-day cycle bought three months before the clock
    for item in plain.running_low("sofia"):
        assert plain.catalogue.by_sku(item.sku).consumable
        assert item.days_left <= 14
    before_the_cycle_ends = ShopServices(
        plain.catalogue, plain.personas, plain.embedder, datetime.date(2026, 6, 10)
    )
    assert "GLX-3003" not in {d.sku for d in before_the_cycle_ends.running_low("sofia")}


def test_running_low_ignores_durables_gifts_and_sensitive_consumables(plain):
    for customer in plain.personas:
        for item in plain.running_low(customer):
            product = plain.catalogue.by_sku(item.sku)
            assert product.consumable and not product.department.sensitive
            assert item.sku not in plain.persona(customer).gift_skus


def test_owned_durables_exclude_consumables(plain):
    owned = plain.owned_skus("nadia")
    durables = plain.owned_durables("nadia")
    assert "GLX-2009" in owned and "GLX-2009" not in durables
    assert "GLX-2001" in durables


def test_purchase_history_is_newest_first(plain):
    dates = [line["date"] for line in plain.purchase_history("sofia")]
    assert dates == sorted(dates, reverse=True)


def test_profile_reports_evidence(plain):
    assert plain.profile("luca")["has_evidence"] is False
    assert plain.profile("nadia")["purchase_count"] == len(plain.persona("nadia").purchase_history)


# -- structured ---------------------------------------------------------------------------------


def test_browse_accepts_department_spellings_and_paths(plain):
    by_name = plain.browse_category("Home Espresso", limit=50)
    assert by_name == plain.browse_category("home-espresso", limit=50)
    assert by_name == plain.browse_category("3", limit=50)
    assert [p.sku for p in plain.browse_category("headlamps")] == ["GLX-2001"]
    with pytest.raises(ValueError, match="no category matches"):
        plain.browse_category("Garden")


def test_departments_and_statistics_describe_the_catalogue(plain):
    departments = plain.departments()
    assert len(departments) == 9
    assert sum(d["product_count"] for d in departments) == 99
    assert [d["sensitive"] for d in departments].count(True) == 1
    assert plain.statistics().product_count == 99


def test_review_digest_refuses_to_argue_from_few_ratings(plain):
    cold = next(p for p in plain.catalogue if p.cold_start)
    digest = plain.review_digest(cold.sku)
    assert digest["cold_start"] and (
        "too few" in digest["digest"] or "no ratings" in digest["digest"]
    )


def test_search_hits_are_immutable(plain):
    hit = plain.search("tripod", limit=1)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.score = 2.0  # type: ignore[misc]
