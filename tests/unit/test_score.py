"""Scoring facts: repetition collapse, check scores, floor and reference comparisons."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, strategies as st

from vitrine._bench.results import CheckInfo, RunResult, ScenarioRow
from vitrine._bench.score import (
    BenchmarkScore,
    CheckScore,
    ComparisonError,
    FloorComparison,
    FloorComparisonError,
    RepCollapse,
    ScoreError,
    against_reference,
    collapse,
)
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Census, MeasurementState, Observation

NOT_DERIVABLE = ChanceFloor.not_derivable("deterministic invariant: no random-draw population")
CASES = ("c1", "c2")
CHECKS = ("answers", "grounded")


def m(value: float) -> Observation:
    return Observation.measured(value, value >= 1.0)


def nm(reason: str = "collector failed") -> Observation:
    return Observation.not_measured(reason)


def na(reason: str = "no panel") -> Observation:
    return Observation.not_applicable(reason)


def run(
    arm: str,
    rep: int,
    cells: Mapping[tuple[str, str], Observation],
    *,
    key: str = "bench",
    version: str = "1.0.0",
    digest: str = "sha256:aaaa",
    case_ids: Sequence[str] = CASES,
    checks: Sequence[str] = CHECKS,
    floor: ChanceFloor = NOT_DERIVABLE,
) -> RunResult:
    return RunResult(
        run_id=f"{arm}-r{rep}",
        definition_key=key,
        definition_version=version,
        definition_hash=digest,
        arm_id=arm,
        repetition=rep,
        checks=tuple(CheckInfo(k, "1.0.0", floor, "gate") for k in checks),
        case_ids=tuple(case_ids),
        rows=tuple(ScenarioRow(case, chk, obs) for (case, chk), obs in cells.items()),
        started_at="2026-09-06T00:00:00Z",
        duration_s=0.1,
        complete=True,
    )


def uniform(arm: str, rep: int, value: float, **kwargs: Any) -> RunResult:
    """Every (case, check) measured at ``value``."""
    return run(arm, rep, {(c, k): m(value) for c in CASES for k in CHECKS}, **kwargs)


# --------------------------------------------------------------------------------------------
# Collapse
# --------------------------------------------------------------------------------------------


class TestCollapse:
    def test_mean_and_median_summarise_values(self) -> None:
        reps = [m(1.0), m(0.0), m(0.5)]
        mean = collapse(reps, RepCollapse.MEAN)
        median = collapse(reps, RepCollapse.MEDIAN, pass_at=0.5)
        assert mean.value == pytest.approx(0.5)
        assert mean.passed is False
        assert median.value == 0.5
        assert median.passed is True

    def test_all_needs_every_repetition_at_pass_at(self) -> None:
        assert collapse([m(1.0), m(1.0)], RepCollapse.ALL).value == 1.0
        cell = collapse([m(1.0), m(0.9)], RepCollapse.ALL)
        assert (cell.value, cell.passed) == (0.0, False)
        assert collapse([m(0.8), m(0.9)], RepCollapse.ALL, pass_at=0.8).passed is True

    def test_majority_split_loses(self) -> None:
        split = collapse([m(1.0), m(0.0)], RepCollapse.MAJORITY)
        assert (split.value, split.passed) == (0.0, False)
        assert collapse([m(1.0), m(1.0), m(0.0)], RepCollapse.MAJORITY).value == 1.0
        assert collapse([m(1.0), m(0.0), m(0.0)], RepCollapse.MAJORITY).value == 0.0

    def test_any_is_best_of_n_and_labelled_so(self) -> None:
        cell = collapse([m(0.0), m(0.0), m(1.0)], RepCollapse.ANY)
        assert (cell.value, cell.passed) == (1.0, True)
        assert "best-of-3" in cell.label
        assert "best-of-N" in RepCollapse.ANY.description
        assert collapse([m(0.0), m(0.0)], RepCollapse.ANY).value == 0.0

    @pytest.mark.parametrize("mode", list(RepCollapse))
    def test_any_not_measured_makes_the_cell_not_measured(self, mode: RepCollapse) -> None:
        cell = collapse([m(1.0), na(), nm("judge unusable")], mode)
        assert cell.state is MeasurementState.NOT_MEASURED
        assert cell.value is None
        assert cell.passed is None
        assert cell.reason is not None
        assert "judge unusable" in cell.reason
        assert "1 of 3" in cell.reason

    @pytest.mark.parametrize("mode", list(RepCollapse))
    def test_not_applicable_beats_measured(self, mode: RepCollapse) -> None:
        cell = collapse([m(1.0), m(1.0), na()], mode)
        assert cell.state is MeasurementState.NOT_APPLICABLE

    def test_single_measured_repetition_keeps_its_value(self) -> None:
        cell = collapse([m(0.25)], RepCollapse.MEAN, pass_at=0.2)
        assert (cell.value, cell.passed) == (0.25, True)

    def test_empty_sequence_is_refused(self) -> None:
        with pytest.raises(ScoreError, match="cannot collapse zero repetitions"):
            collapse([], RepCollapse.MEAN)

    @pytest.mark.parametrize("pass_at", [0.0, -1.0, 1.5])
    def test_binary_mode_refuses_a_pass_at_that_contradicts_the_indicator(
        self, pass_at: float
    ) -> None:
        with pytest.raises(ScoreError, match=r"outside \(0, 1\]"):
            collapse([m(1.0)], RepCollapse.ALL, pass_at=pass_at)

    def test_non_finite_pass_at_is_refused(self) -> None:
        with pytest.raises(ScoreError, match="must be finite"):
            collapse([m(1.0)], RepCollapse.MEAN, pass_at=math.nan)

    @given(
        values=st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=1, max_size=9),
        pass_at=st.sampled_from([0.25, 0.5, 1.0]),
    )
    def test_binary_modes_are_ordered_indicators(self, values: list[float], pass_at: float) -> None:
        reps = [m(v) for v in values]
        cells = {mode: collapse(reps, mode, pass_at) for mode in RepCollapse if mode.binary}
        for cell in cells.values():
            assert cell.value in (0.0, 1.0)
            assert cell.passed is (cell.value == 1.0)
        all_, maj, any_ = (
            cells[RepCollapse.ALL],
            cells[RepCollapse.MAJORITY],
            cells[RepCollapse.ANY],
        )
        assert all_.value is not None and maj.value is not None and any_.value is not None
        assert all_.value <= maj.value <= any_.value
        assert (
            collapse(list(reversed(reps)), RepCollapse.MEDIAN, pass_at).value
            == collapse(reps, RepCollapse.MEDIAN, pass_at).value
        )

    @given(
        states=st.lists(st.sampled_from(["m", "na", "nm"]), min_size=1, max_size=8),
        mode=st.sampled_from(list(RepCollapse)),
    )
    def test_worst_state_wins_for_any_mix(self, states: list[str], mode: RepCollapse) -> None:
        reps = [m(1.0) if s == "m" else na() if s == "na" else nm() for s in states]
        expected = (
            MeasurementState.NOT_MEASURED
            if "nm" in states
            else MeasurementState.NOT_APPLICABLE
            if "na" in states
            else MeasurementState.MEASURED
        )
        assert collapse(reps, mode).state is expected


# --------------------------------------------------------------------------------------------
# Floor comparison
# --------------------------------------------------------------------------------------------


class TestFloorComparison:
    def test_derivable_floor_known_value(self) -> None:
        fc = FloorComparison.of([m(1.0), m(1.0)], ChanceFloor.uniform_choice(2))
        assert (fc.successes, fc.n) == (2, 2)
        assert fc.p_value == pytest.approx(0.25)
        assert fc.min_attainable_p == pytest.approx(0.25)
        assert fc.underpowered is True
        assert fc.floor_display.startswith("uniform-choice")

    def test_not_derivable_floor_has_no_p_and_a_half_to_the_n_bound(self) -> None:
        fc = FloorComparison.of([m(1.0), m(0.0)], NOT_DERIVABLE)
        assert fc.p_value is None
        assert fc.min_attainable_p == pytest.approx(0.25)
        assert fc.floor_display == "NOT DERIVABLE"
        assert fc.to_dict()["floor_display"] == "NOT DERIVABLE"
        assert fc.to_dict()["floor"]["value"] is None
        assert fc.power_state == "underpowered"

    def test_enough_cells_are_not_underpowered(self) -> None:
        fc = FloorComparison.of([m(1.0)] * 5, NOT_DERIVABLE)
        assert fc.min_attainable_p == pytest.approx(1 / 32)
        assert fc.underpowered is False

    def test_absent_cells_stay_out_of_the_denominator(self) -> None:
        fc = FloorComparison.of([m(1.0), nm(), na()], ChanceFloor.uniform_choice(4))
        assert (fc.successes, fc.n) == (1, 1)
        assert fc.p_value == pytest.approx(0.25)

    def test_nothing_measured_is_undecidable(self) -> None:
        fc = FloorComparison.of([nm()], NOT_DERIVABLE)
        assert fc.n == 0
        assert fc.undecidable is True

    def test_non_binary_values_are_refused_with_the_cell_named(self) -> None:
        with pytest.raises(FloorComparisonError, match=r"exactly 0 or 1; cell c2 has 0\.5"):
            FloorComparison.of({"c1": m(1.0), "c2": m(0.5)}, ChanceFloor.uniform_choice(2))


# --------------------------------------------------------------------------------------------
# Check score
# --------------------------------------------------------------------------------------------


class TestCheckScore:
    def test_census_counts_collapsed_cells_not_repetitions(self) -> None:
        runs = [
            run("a", rep, {("c1", "answers"): m(1.0), ("c2", "answers"): nm()}) for rep in (1, 2, 3)
        ]
        score = CheckScore.of(runs, "answers", RepCollapse.ALL)
        assert score.census == Census(measured=1, not_applicable=0, not_measured=1)
        assert score.census.total == 2
        assert score.repetitions == 3
        assert (score.successes, score.n) == (1, 1)

    def test_facts_of_a_fully_passing_arm(self) -> None:
        from vitrine._stats import wilson_interval

        score = BenchmarkScore.of([uniform("a", 1, 1.0), uniform("a", 2, 1.0)]).check_score(
            "a", "answers", RepCollapse.ALL
        )
        assert (score.successes, score.n, score.mean_value) == (2, 2, 1.0)
        expected = wilson_interval(2, 2)
        assert score.interval is not None and expected is not None
        assert score.interval.lower == pytest.approx(expected.lower)
        assert score.interval.upper == 1.0
        assert score.floor == NOT_DERIVABLE
        assert score.floor_comparison.p_value is None
        assert score.floor_comparison.min_attainable_p == pytest.approx(0.25)

    def test_nothing_measured_has_no_interval_or_mean(self) -> None:
        score = CheckScore.of([run("a", 1, {})], "answers")
        assert score.census.not_measured == 2
        assert score.n == 0
        assert score.interval is None
        assert score.mean_value is None

    def test_mean_collapse_refuses_the_floor_test_but_stays_readable(self) -> None:
        runs = [uniform("a", 1, 1.0), uniform("a", 2, 0.0)]
        score = CheckScore.of(runs, "answers", RepCollapse.MEAN)
        assert score.mean_value == 0.5
        with pytest.raises(FloorComparisonError, match="not a success count"):
            _ = score.floor_comparison
        data = score.to_dict()
        assert "not a success count" in data["floor_comparison"]["refused"]
        assert data["floor_comparison"]["floor_display"] == "NOT DERIVABLE"
        json.dumps(data)

    def test_derivable_floor_is_tested(self) -> None:
        runs = [uniform("a", 1, 1.0, floor=ChanceFloor.uniform_choice(2))]
        fc = CheckScore.of(runs, "answers", RepCollapse.ALL).floor_comparison
        assert fc.p_value == pytest.approx(0.25)

    def test_unknown_check_is_refused(self) -> None:
        with pytest.raises(
            ComparisonError, match=r"check 'nope' is not in benchmark bench@1\.0\.0"
        ):
            CheckScore.of([uniform("a", 1, 1.0)], "nope")

    def test_duplicate_rows_in_one_run_are_refused(self) -> None:
        r = run("a", 1, {("c1", "answers"): m(1.0)})
        doubled = RunResult(**{**r.__dict__, "rows": r.rows + r.rows})
        with pytest.raises(ScoreError, match="twice"):
            CheckScore.of([doubled], "answers")


# --------------------------------------------------------------------------------------------
# Reference comparison
# --------------------------------------------------------------------------------------------


class TestAgainstReference:
    def test_degraded_arm_loses_both_cases(self) -> None:
        # The degraded arm answers "" and is scored 0 on both cases; the reference scores 1.
        cmp = against_reference([uniform("ref", 1, 1.0)], [uniform("degraded", 1, 0.0)], "answers")
        assert (cmp.wins, cmp.losses, cmp.ties) == (0, 2, 0)
        assert cmp.effective_n == 2
        assert cmp.p_value == pytest.approx(0.5)
        assert cmp.min_attainable_p == pytest.approx(0.5)
        assert cmp.mean_delta == -1.0
        assert cmp.underpowered_by_construction is True
        assert cmp.undecidable is False
        assert cmp.cases == 2
        assert cmp.collapse is RepCollapse.ALL

    def test_equal_challenger_ties(self) -> None:
        cmp = against_reference([uniform("ref", 1, 1.0)], [uniform("twin", 1, 1.0)], "answers")
        assert (cmp.wins, cmp.losses, cmp.ties) == (0, 0, 2)
        assert cmp.effective_n == 0
        assert cmp.p_value == 1.0
        assert cmp.min_attainable_p == 1.0
        assert cmp.undecidable is True
        assert cmp.mean_delta == 0.0

    def test_excluded_pairs_are_counted_and_never_ties(self) -> None:
        ref = run("ref", 1, {("c1", "answers"): nm(), ("c2", "answers"): na()})
        chal = run("chal", 1, {("c1", "answers"): m(1.0), ("c2", "answers"): na()})
        cmp = against_reference([ref], [chal], "answers")
        assert cmp.ties == 0
        assert cmp.excluded_pairs == 2
        assert cmp.effective_n == 0
        assert cmp.mean_delta is None
        assert cmp.exclusion_reasons == {
            "reference not_measured": 1,
            "reference not_applicable and challenger not_applicable": 1,
        }
        assert cmp.pair_census == Census(measured=0, not_applicable=1, not_measured=1)
        assert cmp.challenger_census == Census(measured=1, not_applicable=1, not_measured=0)
        assert cmp.census == cmp.challenger_census

    def test_repetitions_collapse_per_case_before_pairing(self) -> None:
        refs = [uniform("ref", rep, 1.0) for rep in (1, 2, 3)]
        chal = [
            run("chal", 1, {("c1", "answers"): m(1.0), ("c2", "answers"): m(1.0)}),
            run("chal", 2, {("c1", "answers"): m(0.0), ("c2", "answers"): m(1.0)}),
        ]
        cmp = against_reference(refs, chal, "answers", RepCollapse.ALL)
        assert (cmp.wins, cmp.losses, cmp.ties) == (0, 1, 1)
        # 3 reference + 2 challenger repetitions on each of 2 cases.
        assert cmp.total_repetitions == 10
        assert cmp.mean_repetitions_per_case == pytest.approx(2.5)
        assert cmp.mean_delta == pytest.approx(-0.5)
        any_ = against_reference(refs, chal, "answers", RepCollapse.ANY)
        assert any_.ties == 2

    def test_missing_row_is_not_measured_not_a_tie(self) -> None:
        ref = uniform("ref", 1, 1.0)
        chal = run("chal", 1, {("c1", "answers"): m(1.0)})
        cmp = against_reference([ref], [chal], "answers")
        assert (cmp.ties, cmp.excluded_pairs) == (1, 1)
        assert cmp.exclusions[0].case_id == "c2"
        assert cmp.exclusions[0].challenger_state is MeasurementState.NOT_MEASURED

    def test_to_dict_says_which_census_is_which_and_is_json(self) -> None:
        data = against_reference(
            [uniform("ref", 1, 1.0)], [uniform("degraded", 1, 0.0)], "answers"
        ).to_dict()
        assert set(data["census"]) == {"challenger_cells", "reference_cells", "pairs"}
        assert data["definition"] == "bench@1.0.0"
        assert (data["wins"], data["losses"], data["ties"]) == (0, 2, 0)
        assert data["mean_repetitions_per_case"] == 1.0
        json.dumps(data)

    @given(
        pairs=st.lists(
            st.tuples(st.sampled_from([0.0, 1.0, None]), st.sampled_from([0.0, 1.0, None])),
            min_size=1,
            max_size=8,
        )
    )
    def test_counts_add_up_and_swapping_sides_mirrors(
        self, pairs: list[tuple[float | None, float | None]]
    ) -> None:
        cases = tuple(f"c{i}" for i in range(len(pairs)))
        ref_values = [r for r, _ in pairs]
        chal_values = [c for _, c in pairs]

        def side(arm: str, values: Sequence[float | None]) -> RunResult:
            cells = {
                (c, "answers"): nm() if v is None else m(v)
                for c, v in zip(cases, values, strict=True)
            }
            return run(arm, 1, cells, case_ids=cases, checks=("answers",))

        a, b = side("a", ref_values), side("b", chal_values)
        ab = against_reference([a], [b], "answers")
        ba = against_reference([b], [a], "answers")
        assert ab.wins + ab.losses + ab.ties + ab.excluded_pairs == ab.cases == len(cases)
        assert (ab.wins, ab.losses, ab.ties) == (ba.losses, ba.wins, ba.ties)
        assert ab.p_value == pytest.approx(ba.p_value)
        assert ab.p_value >= ab.min_attainable_p - 1e-12
        assert ab.undecidable is (ab.effective_n == 0)


class TestRefusals:
    def test_different_benchmarks(self) -> None:
        with pytest.raises(
            ComparisonError,
            match=r"cannot compare runs of different benchmarks \(a@1 vs b@2\): their scores "
            "do not measure the same thing",
        ):
            against_reference(
                [uniform("ref", 1, 1.0, key="a", version="1")],
                [uniform("chal", 1, 1.0, key="b", version="2")],
                "answers",
            )

    def test_same_version_different_content_hash(self) -> None:
        with pytest.raises(ComparisonError, match="different definition content hashes"):
            against_reference(
                [uniform("ref", 1, 1.0)], [uniform("chal", 1, 1.0, digest="sha256:bbbb")], "answers"
            )

    def test_same_arm_on_both_sides(self) -> None:
        with pytest.raises(ComparisonError, match="arm 'x' is on both sides"):
            against_reference([uniform("x", 1, 1.0)], [uniform("x", 2, 1.0)], "answers")

    @pytest.mark.parametrize("empty_side", ["reference", "challenger"])
    def test_empty_run_list(self, empty_side: str) -> None:
        full = [uniform("x", 1, 1.0)]
        sides = ([], full) if empty_side == "reference" else (full, [])
        with pytest.raises(ComparisonError, match=f"no {empty_side} runs: an empty side"):
            against_reference(*sides, "answers")

    def test_side_mixing_arms(self) -> None:
        with pytest.raises(ComparisonError, match=r"the challenger side mixes arms \('b', 'c'\)"):
            against_reference(
                [uniform("a", 1, 1.0)], [uniform("b", 1, 1.0), uniform("c", 2, 1.0)], "answers"
            )

    def test_side_mixing_definitions(self) -> None:
        with pytest.raises(ComparisonError, match="the reference side mixes definitions"):
            against_reference(
                [uniform("a", 1, 1.0), uniform("a", 2, 1.0, version="2.0.0")],
                [uniform("b", 1, 1.0)],
                "answers",
            )

    def test_check_not_in_definition(self) -> None:
        with pytest.raises(
            ComparisonError, match=r"check 'nope' is not in benchmark bench@1\.0\.0"
        ):
            against_reference([uniform("a", 1, 1.0)], [uniform("b", 1, 1.0)], "nope")

    def test_duplicate_repetition_numbers(self) -> None:
        with pytest.raises(ComparisonError, match="two runs numbered repetition 1"):
            against_reference(
                [uniform("a", 1, 1.0), uniform("a", 1, 0.0)], [uniform("b", 1, 1.0)], "answers"
            )

    def test_inconsistent_case_lists_under_one_hash(self) -> None:
        with pytest.raises(ComparisonError, match="record different cases or checks"):
            against_reference(
                [uniform("a", 1, 1.0)], [uniform("b", 1, 1.0, case_ids=("c1",))], "answers"
            )


# --------------------------------------------------------------------------------------------
# Benchmark score
# --------------------------------------------------------------------------------------------


class TestBenchmarkScore:
    def runs(self) -> list[RunResult]:
        return [
            uniform("ref", 1, 1.0),
            uniform("degraded", 1, 0.0),
            uniform("ref", 2, 1.0),
            uniform("twin", 1, 1.0),
            uniform("degraded", 2, 0.0),
        ]

    def test_groups_by_arm_in_first_seen_order(self) -> None:
        score = BenchmarkScore.of(self.runs())
        assert score.arms == ("ref", "degraded", "twin")
        assert [r.repetition for r in score.runs("ref")] == [1, 2]
        assert score.definition_identity == "bench@1.0.0"
        assert score.check_keys == CHECKS

    def test_against_reference_covers_every_challenger_and_check(self) -> None:
        comparisons = BenchmarkScore.of(self.runs()).against_reference("ref")
        assert [(c.challenger_arm, c.check_key) for c in comparisons] == [
            ("degraded", "answers"),
            ("degraded", "grounded"),
            ("twin", "answers"),
            ("twin", "grounded"),
        ]
        for c in comparisons:
            assert c.reference_arm == "ref"
            if c.challenger_arm == "degraded":
                assert (c.wins, c.losses, c.ties) == (0, 2, 0)
                assert c.p_value == pytest.approx(0.5)
            else:
                assert (c.ties, c.undecidable) == (2, True)

    def test_check_score_defaults_to_mean(self) -> None:
        score = BenchmarkScore.of(self.runs()).check_score("degraded", "grounded")
        assert score.collapse is RepCollapse.MEAN
        assert (score.successes, score.n, score.mean_value) == (0, 2, 0.0)

    def test_to_dict_is_json_and_includes_comparisons_when_asked(self) -> None:
        score = BenchmarkScore.of(self.runs())
        plain = score.to_dict()
        assert plain["comparisons"] is None
        assert len(plain["check_scores"]) == 6
        with_ref = score.to_dict(reference_arm="ref")
        assert len(with_ref["comparisons"]) == 4
        json.dumps(with_ref)

    def test_refuses_empty_and_mixed_definitions(self) -> None:
        with pytest.raises(ScoreError, match="no runs to score"):
            BenchmarkScore.of([])
        with pytest.raises(ComparisonError, match=r"different benchmarks \(bench@1.0.0 vs"):
            BenchmarkScore.of([uniform("a", 1, 1.0), uniform("b", 1, 1.0, key="other")])

    def test_refuses_duplicate_repetitions(self) -> None:
        with pytest.raises(ComparisonError, match="arm 'a' has two runs numbered repetition 1"):
            BenchmarkScore.of([uniform("a", 1, 1.0), uniform("a", 1, 1.0)])

    def test_unknown_arm_and_lone_reference_are_refused(self) -> None:
        score = BenchmarkScore.of([uniform("ref", 1, 1.0)])
        with pytest.raises(ScoreError, match="no runs of arm 'ghost'"):
            score.check_score("ghost", "answers")
        with pytest.raises(ComparisonError, match="there is no challenger"):
            score.against_reference("ref")
