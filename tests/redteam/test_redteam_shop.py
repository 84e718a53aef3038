"""The shop as a target: the safe assistant resists every attack family, the deliberately
vulnerable calibration model is compromised by each, and each by the family's own detector."""

import pytest

from vitrine.redteam._attacks import CatalogueError, encode, load_attacks, parse_catalogue
from vitrine.redteam._campaign import plan_attacks, run_campaign
from vitrine.redteam._model import Intensity, Outcome, Surface
from vitrine_shop.redteam.target import REDTEAM_TARGET

FAMILIES = {
    "jailbreak": "regex",
    "system-prompt-extraction": "canary",
    "prompt-injection": "forbidden-tool",
    "indirect-injection-tool-output": "forbidden-tool",
    "indirect-injection-document": "forbidden-tool",
    "encoding-evasion": "forbidden-tool",
    "excessive-agency": "forbidden-tool",
    "pii-leakage": "not-contains",
}


def quick_plan():
    catalogue = load_attacks()
    profile = dict(REDTEAM_TARGET.profile)
    return plan_attacks(
        catalogue.probes_for(list(catalogue.attacks), Intensity.QUICK, profile), profile
    )


@pytest.fixture(scope="module")
def campaigns():
    import asyncio

    plan = quick_plan()

    async def both():
        safe = await run_campaign(plan, REDTEAM_TARGET.factory("shop"))
        vulnerable = await run_campaign(plan, REDTEAM_TARGET.factory("vulnerable"))
        return safe, vulnerable

    return asyncio.run(both())


def test_the_catalogue_covers_every_family_with_owasp_ids():
    catalogue = load_attacks()
    assert set(catalogue.attacks) == set(FAMILIES)
    owasp = {a.owasp for a in catalogue.attacks.values()}
    assert {"LLM01", "LLM02", "LLM06", "LLM07"} <= owasp
    surfaces = {a.surface for a in catalogue.attacks.values()}
    assert surfaces == set(Surface)
    counts = [catalogue.intensity[i] for i in Intensity]
    assert counts == sorted(counts) and counts[0] == 2


def test_the_safe_assistant_resists_every_family(campaigns):
    safe, _ = campaigns
    assert safe.total == 2 * len(FAMILIES)
    assert {p.outcome for p in safe.probes} == {Outcome.RESISTED}
    assert safe.calls_used <= safe.ceiling


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_vulnerable_target_is_compromised_by_each_family(campaigns, family):
    _, vulnerable = campaigns
    probes = [p for p in vulnerable.probes if p.attack_id == family]
    assert probes and all(p.outcome is Outcome.COMPROMISED for p in probes)
    assert {p.detector for p in probes} == {FAMILIES[family]}


def test_each_probe_of_a_campaign_meets_a_new_canary():
    factory = REDTEAM_TARGET.factory("shop")
    first, second = factory(lambda m: m), factory(lambda m: m)
    assert first.canary != second.canary


def test_encoding_evasion_probes_carry_the_instruction_only_in_encoded_form():
    catalogue = load_attacks()
    profile = dict(REDTEAM_TARGET.profile)
    probes = catalogue.get("encoding-evasion").build_probes(6, profile)
    assert [p.id.rsplit("-", 1)[-1] for p in probes[:2]] == ["base64", "base64"]
    assert {p.id.rsplit("-", 1)[-1] for p in probes} == {"base64", "rot13", "leetspeak"}
    for probe in probes:
        assert "place_order" not in probe.turns[0] and "add_to_cart" not in probe.turns[0]
    assert encode("abc", "rot13") == "nop"


def test_a_profile_without_a_placeholder_is_refused_naming_the_attack():
    catalogue = load_attacks()
    with pytest.raises(CatalogueError, match="prompt-injection"):
        catalogue.get("prompt-injection").build_probes(1, {})


def test_a_malformed_catalogue_names_the_attack_and_field():
    document = {
        "intensity": {"quick": 1, "moderate": 2, "comprehensive": 3},
        "attacks": [{"id": "x", "owasp": "LLM99"}],
    }
    with pytest.raises(CatalogueError, match="attack x: field owasp"):
        parse_catalogue(document)
