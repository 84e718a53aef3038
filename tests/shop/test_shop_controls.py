"""The shop's 43 registered controls over real shipped state, and how the suite reports them."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from vitrine import ExitCode
from vitrine._cli import main
from vitrine.controls import ManifestError, OutcomeState, ScopeClass, load_manifest, run_control
from vitrine.store import RunStore
from vitrine_shop.evals.controls import (
    MANIFEST_PATH,
    SHOP_MANIFEST,
    shop_manifest,
    shop_registry,
)
from vitrine_shop.evals.offline import controls_exit, run_offline_suite


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    import asyncio

    store = RunStore(tmp_path_factory.mktemp("controls"))
    return asyncio.run(run_offline_suite(store))


def test_the_shipped_manifest_registers_43_controls_in_the_documented_splits():
    manifest = shop_manifest()
    assert [s.id for s in manifest] == [f"NC-{i:02d}" for i in range(1, 44)]
    tranches = [s.tranche for s in manifest]
    assert (tranches.count("E02A"), tranches.count("E02B"), tranches.count("E02C")) == (14, 7, 22)
    scopes = [s.scope for s in manifest]
    assert scopes.count(ScopeClass.PRODUCTION_OBSERVATION) == 20
    assert scopes.count(ScopeClass.BOUNDARY_CALIBRATION_FIXTURE) == 23
    assert [s.id for s in manifest if s.expected_exception] == ["NC-43"]


def test_a_shipped_manifest_with_one_row_removed_is_refused(tmp_path):
    document = json.loads(MANIFEST_PATH.read_text())
    del document["controls"][9]
    path = tmp_path / "controls.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ManifestError, match="expected 'NC-10'"):
        load_manifest(path, SHOP_MANIFEST)


def test_every_control_goes_green_red_green_in_the_suite(suite):
    assert len(suite.controls) == 43
    missed = [(r.spec.id, r.detail) for r in suite.controls if not r.caught]
    assert missed == []
    assert suite.exit_code is ExitCode.PASS
    broken = {r.spec.id: r.broken.state for r in suite.controls}
    assert broken.pop("NC-43") is OutcomeState.CONTAINED
    assert set(broken.values()) == {OutcomeState.FAIL}


def test_production_controls_fail_for_the_reason_they_perturb(suite):
    details = {r.spec.id: r.broken.detail for r in suite.controls}
    assert "unknown=['GLX-9999']" in details["NC-01"]
    assert "owned-repeat" in details["NC-02"]
    assert "health-inference" in details["NC-04"]
    assert details["NC-14"].startswith("products 98/99")
    assert details["NC-16"] == "recalled 1/2"


async def test_a_shop_control_whose_perturbation_does_nothing_is_not_caught(suite):
    from vitrine_shop.evals.controls.capture import capture_shipped_state

    state = await capture_shipped_state(
        evidence=suite.production_run.responses["shipped-shop"]["structured"],
        canonical_runs=tuple(suite.canonical_runs),
        claims=suite.sections[0],
        # A run directory is <store root>/runs/<run id>.
        store_root=Path(suite.canonical_runs[0].run_dir).parents[1],
    )
    control = shop_registry(state).controls()[0]
    result = await run_control(replace(control, perturb=lambda response: response))
    assert not result.caught
    assert result.broken.state is OutcomeState.PASS


def test_a_control_that_is_not_caught_is_a_measured_failure(suite):
    missed = replace(suite.controls[0], broken=suite.controls[0].healthy)
    [(code, reason)] = controls_exit([missed, *suite.controls[1:]])
    assert code is ExitCode.MEASURED_FAILURE
    assert "1 of 43 registered controls not caught: NC-01" in reason


def test_controls_only_exits_zero_and_reports_scope_and_target_apart(tmp_path, capsys):
    assert main(["--controls-only", "--output", str(tmp_path)]) == 0
    report_path = next((tmp_path / "reports").glob("offline-*/report.json"))
    report = json.loads(report_path.read_text())
    controls = report["controls"]
    assert controls["heading"] == "Registered control mutations"
    assert (controls["total"], controls["caught"]) == (43, 43)
    first = controls["rows"][0]
    assert first["scope"] == "production-observation"
    assert first["target"].startswith("catalogued-sku predicate")
    assert (first["healthy"], first["broken"], first["restored"]) == ("PASS", "FAIL", "PASS")
    html = report_path.with_name("report.html").read_text()
    assert "Registered control mutations" in html
    assert "production-causal" not in html.lower()
