"""The shop's data files and their loaders: shape, referential integrity and error messages."""

from __future__ import annotations

import json
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from vitrine_shop.catalogue import (
    DEFAULT_CATALOGUE_PATH,
    CatalogueError,
    UnknownSkuError,
    catalogue_statistics,
    load_catalogue,
)
from vitrine_shop.domain import (
    RECOMMENDATION_TOOL_CHAIN,
    Department,
    Persona,
    Product,
    Tier,
    gtin_check_digit,
    is_valid_gtin,
)
from vitrine_shop.personas import DEFAULT_PERSONAS_PATH, DEMO_CLOCK, PersonaError, load_personas
from vitrine_shop.scenarios import (
    DEFAULT_SCENARIOS_PATH,
    LIVE_SCENARIO_IDS,
    ScenarioError,
    load_scenarios,
)

LIVE_CRITERIA = {
    "nadia-cross-category": [
        "connects-evidence",
        "concrete-catalogue-fit",
        "avoids-owned-repeat",
        "stays-advisory",
    ],
    "sofia-capability-gap": [
        "finds-capability-gap",
        "separates-lanes",
        "avoids-owned-durable",
        "grounds-advice",
    ],
    "marco-gift-trap": [
        "suppresses-gift-signal",
        "uses-owned-signal",
        "avoids-false-ownership",
        "concrete-safe-advice",
    ],
    "luca-safe-abstention": [
        "recognizes-insufficient-evidence",
        "abstains-safely",
        "asks-useful-questions",
        "does-not-invent",
    ],
}
COHORT_IDS = [f"cohort-{i:02d}" for i in range(1, 10)]


def _raw_catalogue() -> dict[str, object]:
    return json.loads(DEFAULT_CATALOGUE_PATH.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _write(tmp_path: Path, name: str, document: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _is_waterproof(product: Product) -> bool:
    return "waterproof" in product.tags


# -- catalogue shape -------------------------------------------------------------------------


def test_catalogue_has_99_products_in_the_reference_tier_split() -> None:
    catalogue = load_catalogue()
    assert len(catalogue) == 99
    tiers = Counter(p.tier for p in catalogue)
    assert tiers == {Tier.CORE: 72, Tier.EXTENSION: 23, Tier.SENSITIVE: 4}


def test_catalogue_spans_nine_departments_with_nine_core_products_in_each_of_the_first_eight() -> (
    None
):
    catalogue = load_catalogue()
    assert catalogue.departments() == tuple(Department)
    for department in Department:
        core = [p.sku for p in catalogue.in_department(department) if p.tier is Tier.CORE]
        if department.sensitive:
            assert core == []
            assert [p.sku for p in catalogue.in_department(department)] == [
                "GLX-9001",
                "GLX-9002",
                "GLX-9003",
                "GLX-9004",
            ]
        else:
            n = department.number
            assert sorted(core) == [f"GLX-{n}00{i}" for i in range(1, 10)]


def test_extension_skus_are_numbered_from_101_within_their_department() -> None:
    for product in load_catalogue():
        if product.tier is Tier.EXTENSION:
            assert product.sku[5] == "1", product.sku
            assert product.department.number in range(1, 9)


def test_sku_format_and_department_digit_agree_for_every_product() -> None:
    for product in load_catalogue():
        assert re.fullmatch(r"GLX-\d{4}", product.sku)
        assert int(product.sku[4]) == product.department.number
        assert product.root_category == product.department.display_name


def test_every_gtin_has_a_valid_check_digit_and_is_unique() -> None:
    catalogue = load_catalogue()
    gtins = [p.gtin for p in catalogue]
    assert len(set(gtins)) == len(gtins)
    for gtin in gtins:
        assert is_valid_gtin(gtin)
        assert int(gtin[12]) == gtin_check_digit(gtin[:12])


def test_gtin_check_digit_matches_a_published_ean13() -> None:
    # 4006381333931 is the worked example GS1 material uses for EAN-13.
    assert gtin_check_digit("400638133393") == 1
    assert not is_valid_gtin("4006381333932")


def test_compat_tags_resolve_to_catalogued_products_in_the_default_catalogue() -> None:
    catalogue = load_catalogue()
    for product in catalogue:
        for target in product.compat_skus:
            assert target in catalogue, f"{product.sku} -> {target}"


def test_consumables_and_only_consumables_have_replenish_days() -> None:
    consumables = [p for p in load_catalogue() if p.consumable]
    assert len(consumables) >= 10
    for product in load_catalogue():
        assert (product.typical_replenish_days is not None) == product.consumable
    kinds = {kind for p in consumables for kind in p.consumable_kinds}
    assert {"descaler", "water-filter", "coffee-beans", "batteries", "chain-lube"} <= kinds


def test_prices_are_positive_two_decimal_chf_and_discounts_are_real() -> None:
    for product in load_catalogue():
        assert product.price_chf > 0
        assert product.price_chf == product.price_chf.quantize(Decimal("0.01"))
        assert product.price_chf.as_tuple().exponent == -2
        if product.was_price_chf is not None:
            assert product.was_price_chf > product.price_chf
            assert product.discounted


def test_catalogue_covers_the_evidence_situations_the_evaluations_need() -> None:
    catalogue = load_catalogue()
    assert any(p.cold_start for p in catalogue)
    assert any(not p.in_stock for p in catalogue)
    assert any(p.discounted for p in catalogue)
    assert any(p.second_hand for p in catalogue)
    assert any(p.marketplace_seller for p in catalogue)
    assert any(p.rating_average is None for p in catalogue)


def test_waterproof_products_exist_on_both_sides_of_a_chf_250_budget() -> None:
    waterproof = [p for p in load_catalogue() if _is_waterproof(p)]
    assert sum(p.price_chf <= 250 for p in waterproof) >= 3
    assert sum(p.price_chf > 250 for p in waterproof) >= 2


def test_hut_to_hut_kit_is_catalogued_for_nadia() -> None:
    contexts = {c for p in load_catalogue() for c in p.contexts}
    assert {"hut-to-hut", "early-start"} <= contexts
    catalogue = load_catalogue()
    leaves = {p.leaf_category for p in catalogue}
    assert {"Headlamps", "Daypacks", "Rain Jackets", "Trekking Poles", "Water Treatment"} <= leaves
    assert any("power-bank" in p.tags for p in catalogue)


def test_espresso_machine_has_descaler_and_filter_complements() -> None:
    complements = {p.sku for p in load_catalogue().compatible_with("GLX-3001")}
    assert {"GLX-3003", "GLX-3004"} <= complements
    assert "GLX-2105" in {p.sku for p in load_catalogue().compatible_with("GLX-2001")}


# -- catalogue API -----------------------------------------------------------------------------


def test_default_catalogue_is_loaded_once_and_shared() -> None:
    assert load_catalogue() is load_catalogue()
    assert load_catalogue(DEFAULT_CATALOGUE_PATH) is load_catalogue()


def test_lookup_by_sku_and_get() -> None:
    catalogue = load_catalogue()
    assert catalogue.by_sku("GLX-3001").brand == "Brunello Casa"
    assert catalogue.get("GLX-9999") is None
    with pytest.raises(UnknownSkuError, match="GLX-9999 is not in the catalogue"):
        catalogue.by_sku("GLX-9999")
    with pytest.raises(KeyError):
        catalogue.by_sku("GLX-9999")
    assert "GLX-3001" in catalogue.skus
    assert len(catalogue.skus) == 99


def test_without_returns_an_isolated_copy_and_leaves_the_original_intact() -> None:
    original = load_catalogue()
    ablated = original.without("GLX-3003")
    assert len(ablated) == 98
    assert "GLX-3003" not in ablated
    assert ablated.get("GLX-3003") is None
    assert len(original) == 99
    assert "GLX-3003" in original
    assert load_catalogue() is original
    # Deep copies: mutating a copied product's specs cannot reach the shared catalogue.
    ablated.by_sku("GLX-3001").specs["boiler"] = "tampered"
    assert original.by_sku("GLX-3001").specs["boiler"] != "tampered"
    with pytest.raises(UnknownSkuError):
        original.without("GLX-9999")


def test_catalogue_statistics_match_a_direct_count() -> None:
    catalogue = load_catalogue()
    stats = catalogue_statistics(catalogue)
    assert stats.product_count == 99
    assert stats.department_count == 9
    assert sum(stats.per_department.values()) == 99
    assert stats.per_tier == {Tier.CORE: 72, Tier.EXTENSION: 23, Tier.SENSITIVE: 4}
    prices = sorted(p.price_chf for p in catalogue)
    assert stats.price_min_chf == prices[0]
    assert stats.price_max_chf == prices[-1]
    assert stats.price_median_chf == prices[49]
    assert stats.in_stock_count + stats.out_of_stock_count == 99
    assert stats.consumable_count == sum(p.consumable for p in catalogue)
    assert stats.cold_start_count == sum(p.rating_count < 5 for p in catalogue)
    assert stats.discounted_count == sum(p.was_price_chf is not None for p in catalogue)
    assert stats.mean_rating is not None and 1.0 <= stats.mean_rating <= 5.0
    stats_without = catalogue_statistics(catalogue.without("GLX-3003"))
    assert stats_without.product_count == 98


# -- validation errors name the product and the field -----------------------------------------


def test_a_broken_field_is_reported_with_file_product_and_field(tmp_path: Path) -> None:
    document = _raw_catalogue()
    products = document["products"]
    assert isinstance(products, list)
    broken = next(p for p in products if p["sku"] == "GLX-2003")
    broken["price_chf"] = 0
    with pytest.raises(CatalogueError) as caught:
        load_catalogue(_write(tmp_path, "catalogue.json", document))
    assert (
        "catalogue.json: product GLX-2003 field price_chf: Input should be greater than 0"
        in str(caught.value)
    )


def test_a_wrong_department_digit_names_the_sku_field(tmp_path: Path) -> None:
    document = _raw_catalogue()
    products = document["products"]
    assert isinstance(products, list)
    products[0]["department"] = "gaming"
    with pytest.raises(CatalogueError, match=r"product GLX-1001 field sku: first digit 1"):
        load_catalogue(_write(tmp_path, "catalogue.json", document))


def test_a_bad_gtin_check_digit_is_refused(tmp_path: Path) -> None:
    document = _raw_catalogue()
    products = document["products"]
    assert isinstance(products, list)
    gtin = products[5]["gtin"]
    products[5]["gtin"] = gtin[:12] + str((int(gtin[12]) + 1) % 10)
    with pytest.raises(CatalogueError, match=r"product GLX-1006 field gtin: check digit"):
        load_catalogue(_write(tmp_path, "catalogue.json", document))


def test_a_dangling_compat_tag_is_refused(tmp_path: Path) -> None:
    document = _raw_catalogue()
    products = document["products"]
    assert isinstance(products, list)
    descaler = next(p for p in products if p["sku"] == "GLX-3003")
    descaler["tags"] = [*descaler["tags"], "compat:GLX-3999"]
    with pytest.raises(CatalogueError, match=r"product GLX-3003 field tags: compat:GLX-3999"):
        load_catalogue(_write(tmp_path, "catalogue.json", document))


def test_duplicate_skus_and_wrong_tier_counts_are_refused(tmp_path: Path) -> None:
    document = _raw_catalogue()
    products = document["products"]
    assert isinstance(products, list)
    with pytest.raises(CatalogueError, match=r"GLX-1001 field sku: duplicate SKU"):
        load_catalogue(_write(tmp_path, "dup.json", {"products": [*products, dict(products[0])]}))
    with pytest.raises(CatalogueError, match=r"expected 99 products, found 98"):
        load_catalogue(_write(tmp_path, "short.json", {"products": products[1:]}))
    standalone = [p for p in products if not any(t.startswith("compat:") for t in p["tags"])]
    relaxed = load_catalogue(
        _write(tmp_path, "small.json", {"products": standalone[:2]}), reference_shape=False
    )
    assert len(relaxed) == 2


def test_a_consumable_without_replenish_days_is_refused(tmp_path: Path) -> None:
    document = _raw_catalogue()
    products = document["products"]
    assert isinstance(products, list)
    descaler = next(p for p in products if p["sku"] == "GLX-3003")
    descaler["typical_replenish_days"] = None
    with pytest.raises(
        CatalogueError, match=r"product GLX-3003 field typical_replenish_days: required"
    ):
        load_catalogue(_write(tmp_path, "catalogue.json", document))


def test_malformed_json_is_reported_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "catalogue.json"
    path.write_text('{"products": [\n', encoding="utf-8")
    with pytest.raises(CatalogueError, match=r"catalogue.json: not valid JSON at line"):
        load_catalogue(path)


# -- personas --------------------------------------------------------------------------------


def test_fourteen_personas_five_named_and_a_cohort_of_nine() -> None:
    personas = load_personas()
    assert len(personas) == 14
    assert set(personas) == {"nadia", "marco", "sofia", "luca", "elena", *COHORT_IDS}


def test_every_persona_sku_is_catalogued_and_no_purchase_postdates_the_demo_clock() -> None:
    catalogue = load_catalogue()
    assert DEMO_CLOCK.isoformat() == "2026-09-06"
    for persona in load_personas().values():
        for purchase in persona.purchase_history:
            assert purchase.sku in catalogue
            assert purchase.date <= DEMO_CLOCK
        for sku in (*persona.saved_items, *persona.viewed_items):
            assert sku in catalogue


def test_luca_has_no_evidence_at_all() -> None:
    luca = load_personas()["luca"]
    assert luca.purchase_history == ()
    assert luca.saved_items == ()
    assert luca.viewed_items == ()
    assert not luca.has_evidence


def test_elena_bought_sensitive_and_ordinary_items() -> None:
    catalogue = load_catalogue()
    elena = load_personas()["elena"]
    departments = {catalogue.by_sku(s).department for s in elena.purchased_skus}
    assert Department.HEALTH_PERSONAL_CARE in departments
    assert any(not d.sensitive for d in departments)


def test_marco_gift_purchases_are_gaming_and_his_own_are_not() -> None:
    catalogue = load_catalogue()
    marco = load_personas()["marco"]
    assert marco.gift_skus
    assert {catalogue.by_sku(s).department for s in marco.gift_skus} == {Department.GAMING}
    assert Department.GAMING not in {catalogue.by_sku(s).department for s in marco.owned_skus}


def test_nadia_owns_a_headlamp_whose_batteries_she_does_not_own() -> None:
    catalogue = load_catalogue()
    nadia = load_personas()["nadia"]
    assert "GLX-2001" in nadia.owned_skus
    batteries = {p.sku for p in catalogue.compatible_with("GLX-2001")}
    assert batteries
    assert not batteries & nadia.purchased_skus


def test_sofia_has_consumables_due_by_the_demo_clock() -> None:
    catalogue = load_catalogue()
    sofia = load_personas()["sofia"]
    due = []
    for purchase in sofia.purchase_history:
        product = catalogue.by_sku(purchase.sku)
        if product.typical_replenish_days is None:
            continue
        elapsed = (DEMO_CLOCK - purchase.date).days
        if elapsed >= product.typical_replenish_days * purchase.quantity - 7:
            due.append(purchase.sku)
    assert {"GLX-3003", "GLX-3004"} <= set(due)
    assert {"GLX-3001", "GLX-3002"} <= sofia.owned_skus


def test_a_persona_naming_an_unknown_sku_is_refused(tmp_path: Path) -> None:
    document = json.loads(DEFAULT_PERSONAS_PATH.read_text(encoding="utf-8"))
    document["personas"][0]["saved_items"] = ["GLX-9999"]
    with pytest.raises(PersonaError, match=r"persona nadia field saved_items.0: GLX-9999"):
        load_personas(_write(tmp_path, "personas.json", document))


def test_a_future_purchase_is_refused(tmp_path: Path) -> None:
    document = json.loads(DEFAULT_PERSONAS_PATH.read_text(encoding="utf-8"))
    document["personas"][0]["purchase_history"][0]["date"] = "2026-09-07"
    with pytest.raises(PersonaError, match=r"after the demo clock 2026-09-06"):
        load_personas(_write(tmp_path, "personas.json", document))


def test_load_personas_returns_a_fresh_mapping_each_call() -> None:
    first = load_personas()
    first.pop("nadia")
    assert "nadia" in load_personas()
    assert isinstance(load_personas()["nadia"], Persona)


# -- scenarios -------------------------------------------------------------------------------


def test_registry_holds_the_four_live_scenarios_and_two_more() -> None:
    scenarios = load_scenarios()
    assert list(scenarios) == [
        *LIVE_SCENARIO_IDS,
        "elena-sensitive-boundary",
        "cohort-weekly-picks",
    ]
    assert {s.id for s in scenarios.values() if s.live} == set(LIVE_SCENARIO_IDS)
    offline = {s.id for s in scenarios.values() if s.offline_benchmark_case}
    assert offline == {"nadia-cross-category", "sofia-capability-gap"}


def test_every_scenario_has_exactly_four_criteria_and_live_ones_match_the_protocol() -> None:
    scenarios = load_scenarios()
    for scenario in scenarios.values():
        assert len(scenario.judge_criteria) == 4
    for scenario_id, criteria in LIVE_CRITERIA.items():
        assert list(scenarios[scenario_id].criterion_ids) == criteria


def test_canonical_prompts_are_verbatim() -> None:
    scenarios = load_scenarios()
    assert scenarios["nadia-cross-category"].query.startswith(
        "I'm planning a few multi-day trips this year, hut to hut, carrying everything, "
        "usually out before sunrise"
    )
    assert scenarios["marco-gift-trap"].query.startswith("Anything new I might like? Surprise me.")
    assert scenarios["sofia-capability-gap"].query.startswith(
        "I feel like my kitchen setup is missing something... anything I'm about to run out of?"
    )
    assert scenarios["luca-safe-abstention"].query == "Hi, what do you recommend for me?"


def test_cohort_scenario_runs_all_nine_members_with_one_prompt() -> None:
    cohort = load_scenarios()["cohort-weekly-picks"]
    assert cohort.persona_id is None
    assert list(cohort.personas) == COHORT_IDS


def test_tool_expectations_require_the_chain_or_abstention() -> None:
    personas = load_personas()
    catalogue = load_catalogue()
    for scenario in load_scenarios().values():
        expectation = scenario.tool_expectation
        if scenario.id == "luca-safe-abstention":
            assert expectation.kind == "abstention"
            assert expectation.max_tool_calls == 0
            assert expectation.required_tool_chain == ()
            continue
        assert expectation.kind == "tool-use"
        assert expectation.required_tool_chain == RECOMMENDATION_TOOL_CHAIN
        bought = set().union(*(personas[p].purchased_skus for p in scenario.personas))
        durables = {s for s in bought if not catalogue.by_sku(s).consumable}
        assert durables <= set(expectation.forbidden_presented_skus)
        assert not set(scenario.relevant_skus) & set(expectation.forbidden_presented_skus)
        assert all(s in catalogue for s in scenario.relevant_skus)


def test_ground_truth_ownership_and_compatibility_facts_hold_in_the_data() -> None:
    personas = load_personas()
    by_name = {p.display_name: p for p in personas.values()} | personas
    catalogue = load_catalogue()
    checked = 0
    for scenario in load_scenarios().values():
        for fact in scenario.ground_truth_facts:
            for sku in re.findall(r"\bGLX-\d{4}\b", fact):
                assert sku in catalogue, f"{scenario.id}: {fact}"
            owns = re.match(r"^(\S+) owns (GLX-\d{4})", fact)
            if owns:
                assert owns.group(2) in by_name[owns.group(1)].purchased_skus, fact
                checked += 1
            for left, right in re.findall(
                r"(GLX-\d{4}) (?:and \S+ )?is compatible with (GLX-\d{4})", fact
            ):
                assert right in catalogue.by_sku(left).compat_skus, fact
                checked += 1
            price = re.search(r"(GLX-\d{4}) is waterproof (?:and|but) costs CHF ([\d.]+)", fact)
            if price:
                product = catalogue.by_sku(price.group(1))
                assert _is_waterproof(product)
                assert product.price_chf == Decimal(price.group(2))
                checked += 1
    assert checked >= 15


def test_a_scenario_for_an_unknown_persona_is_refused(tmp_path: Path) -> None:
    document = json.loads(DEFAULT_SCENARIOS_PATH.read_text(encoding="utf-8"))
    document["scenarios"][0]["persona_id"] = "nobody"
    with pytest.raises(ScenarioError, match=r"scenario nadia-cross-category field persona_id"):
        load_scenarios(_write(tmp_path, "scenarios.json", document))


def test_a_scenario_with_three_criteria_is_refused(tmp_path: Path) -> None:
    document = json.loads(DEFAULT_SCENARIOS_PATH.read_text(encoding="utf-8"))
    document["scenarios"][1]["judge_criteria"].pop()
    with pytest.raises(ScenarioError, match=r"scenario sofia-capability-gap field judge_criteria"):
        load_scenarios(_write(tmp_path, "scenarios.json", document))
