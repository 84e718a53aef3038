"""The control runner and manifest: what counts as a catch, and which manifests are refused."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from vitrine import Observation
from vitrine.controls import (
    ControlRegistry,
    ControlSpec,
    ManifestError,
    ManifestExpectation,
    OutcomeState,
    ScopeClass,
    load_manifest,
    run_control,
    validate_manifest,
)
from vitrine.store import RunStoreError, TamperedRunError


def _row(i: int, **changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": f"NC-{i:02d}",
        "scope": "production-observation" if i <= 2 else "boundary-calibration-fixture",
        "name": f"control {i}",
        "category": "fixture",
        "target": "the threshold check",
        "mutation": "lower the value",
        "producer": "a fixed number",
        "evaluator": "value >= 3",
        "tranche": "A" if i <= 3 else "B",
        "expected_exception": None,
    }
    row.update(changes)
    return row


EXPECT = ManifestExpectation(
    count=4,
    prefix="NC-",
    tranches={"A": 3, "B": 1},
    scopes={ScopeClass.PRODUCTION_OBSERVATION: 2, ScopeClass.BOUNDARY_CALIBRATION_FIXTURE: 2},
)


def _spec(expected_exception: str | None = None) -> ControlSpec:
    return ControlSpec.from_row(_row(1, expected_exception=expected_exception))


def _at_least_three(value: int) -> Observation:
    return Observation.measured(value, value >= 3, label=f"value {value}")


async def test_a_perturbation_that_turns_the_evaluator_red_is_caught():
    registry = ControlRegistry()
    control = registry.register(
        _spec(), observe=lambda: 5, perturb=lambda v: v - 4, evaluate=_at_least_three
    )
    result = await run_control(control)
    assert result.caught
    assert (result.healthy.state, result.broken.state, result.restored.state) == (
        OutcomeState.PASS,
        OutcomeState.FAIL,
        OutcomeState.PASS,
    )


async def test_a_perturbation_that_does_nothing_is_not_caught():
    control = ControlRegistry().register(
        _spec(), observe=lambda: 5, perturb=lambda v: v, evaluate=_at_least_three
    )
    result = await run_control(control)
    assert not result.caught
    assert result.broken.state is OutcomeState.PASS
    assert "broken arm was PASS" in result.detail


async def test_an_unexpected_exception_is_not_a_catch():
    def explode(value: int) -> Observation:
        if value < 3:
            raise RuntimeError("inspector crashed")
        return _at_least_three(value)

    control = ControlRegistry().register(
        _spec(), observe=lambda: 5, perturb=lambda v: v - 4, evaluate=explode
    )
    result = await run_control(control)
    assert not result.caught
    assert result.broken.state is OutcomeState.ERROR
    assert "RuntimeError" in result.broken.detail


@pytest.mark.parametrize(
    "state", [Observation.not_measured("gone"), Observation.not_applicable("nothing")]
)
async def test_a_missing_observation_in_the_broken_arm_is_not_a_catch(state):
    control = ControlRegistry().register(
        _spec(),
        observe=lambda: 5,
        perturb=lambda v: v - 4,
        evaluate=lambda v: _at_least_three(v) if v >= 3 else state,
    )
    assert not (await run_control(control)).caught


async def test_a_perturbation_that_edits_shared_state_fails_the_restored_arm():
    shared = [5]

    def in_place(values: list[int]) -> list[int]:
        values[0] = 1
        return values

    control = ControlRegistry().register(
        _spec(), observe=lambda: shared, perturb=in_place, evaluate=lambda v: _at_least_three(v[0])
    )
    result = await run_control(control)
    assert not result.caught
    assert result.restored.state is OutcomeState.FAIL


class _SubTampered(TamperedRunError):
    pass


def _raising(exc: type[BaseException]):
    def evaluate(value: int) -> Observation:
        if value < 3:
            raise exc("seal broken")
        return _at_least_three(value)

    return evaluate


@pytest.mark.parametrize(
    ("raised", "caught"),
    [(TamperedRunError, True), (RunStoreError, False), (_SubTampered, False), (ValueError, False)],
)
async def test_a_contained_fault_counts_only_with_the_exact_declared_type(raised, caught):
    control = ControlRegistry().register(
        _spec("TamperedRunError"),
        observe=lambda: 5,
        perturb=lambda v: v - 4,
        evaluate=_raising(raised),
        expected_exception=TamperedRunError,
    )
    result = await run_control(control)
    assert result.caught is caught
    assert (result.broken.state is OutcomeState.CONTAINED) is caught


async def test_a_declared_exception_in_the_healthy_arm_is_an_error():
    control = ControlRegistry().register(
        _spec("TamperedRunError"),
        observe=lambda: 1,
        perturb=lambda v: v,
        evaluate=_raising(TamperedRunError),
        expected_exception=TamperedRunError,
    )
    result = await run_control(control)
    assert result.healthy.state is OutcomeState.ERROR
    assert not result.caught


def test_registration_must_name_the_exception_the_manifest_declares():
    with pytest.raises(ManifestError, match="expected exception"):
        ControlRegistry().register(
            _spec(),
            observe=lambda: 5,
            perturb=lambda v: v,
            evaluate=_at_least_three,
            expected_exception=TamperedRunError,
        )


async def test_the_decorator_registers_the_evaluator_against_the_manifest():
    manifest = validate_manifest([_row(i) for i in range(1, 5)], EXPECT)
    registry = ControlRegistry(manifest)
    for spec in manifest:
        registry.control(spec.id, observe=lambda: 5, perturb=lambda v: v - 4)(_at_least_three)
    results = await registry.run(concurrency=2)
    assert [r.spec.id for r in results] == ["NC-01", "NC-02", "NC-03", "NC-04"]
    assert all(r.caught for r in results)


def test_a_manifest_row_without_a_control_is_refused():
    registry = ControlRegistry(validate_manifest([_row(i) for i in range(1, 5)], EXPECT))
    registry.register("NC-01", observe=lambda: 5, perturb=lambda v: v, evaluate=_at_least_three)
    with pytest.raises(ManifestError, match="NC-02, NC-03, NC-04"):
        registry.controls()


def test_a_valid_manifest_loads_in_order(tmp_path):
    path = tmp_path / "controls.json"
    path.write_text(json.dumps({"controls": [_row(i) for i in range(1, 5)]}))
    assert [s.id for s in load_manifest(path, EXPECT)] == ["NC-01", "NC-02", "NC-03", "NC-04"]


def test_a_gap_in_the_ids_is_refused_with_the_expected_id():
    rows = [_row(i) for i in (1, 2, 4, 5)]
    with pytest.raises(ManifestError, match=r"row 3: field 'id' is 'NC-04', expected 'NC-03'"):
        validate_manifest(rows, EXPECT)


def test_a_wrong_tranche_split_is_refused_with_the_expected_split():
    rows = [_row(i) for i in range(1, 5)]
    rows[0]["tranche"] = "B"
    with pytest.raises(ManifestError, match=r"tranche split is A 2/B 2; expected A 3/B 1"):
        validate_manifest(rows, EXPECT)


def test_a_wrong_scope_split_is_refused():
    rows = [_row(i) for i in range(1, 5)]
    rows[3]["scope"] = "production-observation"
    with pytest.raises(ManifestError, match="scope class split"):
        validate_manifest(rows, EXPECT)


def test_a_missing_count_is_refused():
    with pytest.raises(ManifestError, match="registers 3 controls; expected 4"):
        validate_manifest([_row(i) for i in range(1, 4)], EXPECT)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("target", "  ", "row 2 \\(NC-02\\): field 'target' is missing or blank"),
        ("scope", "production", "row 2 \\(NC-02\\): field 'scope' is 'production'"),
        ("colour", "red", "row 2 \\(NC-02\\): unknown field\\(s\\) colour"),
    ],
)
def test_a_bad_row_is_refused_naming_the_row_and_field(field, value, message):
    rows = [_row(i) for i in range(1, 5)]
    rows[1][field] = value
    with pytest.raises(ManifestError, match=message):
        validate_manifest(rows, EXPECT)


def test_more_than_one_contained_fault_is_refused():
    rows = [_row(i, expected_exception="TamperedRunError") for i in range(1, 5)]
    with pytest.raises(ManifestError, match="at most 1"):
        validate_manifest(rows, EXPECT)


def test_a_spec_row_differing_from_the_manifest_is_refused():
    manifest = validate_manifest([_row(i) for i in range(1, 5)], EXPECT)
    with pytest.raises(ManifestError, match="differs from the manifest"):
        ControlRegistry(manifest).register(
            replace(manifest[0], target="something else"),
            observe=lambda: 5,
            perturb=lambda v: v,
            evaluate=_at_least_three,
        )
