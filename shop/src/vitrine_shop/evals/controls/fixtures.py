"""The twenty-three boundary and calibration fixtures (NC-21..NC-43).

Each exercises an independently authored public contract of the harness: a statistic, a
measurement-state rule, a renderer, a validator, the run store. The perturbation swaps in one
plausible wrong implementation (or input) and the authored expectations must turn red. They
claim nothing about a production path being causally broken.
"""

from __future__ import annotations

import html
import math
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist
from typing import Any

from vitrine import Authority, ChanceFloor, ExitCode, Observation, SubjectResponse
from vitrine.checks import (
    Census,
    FloorKind,
    FloorNotDerivableError,
    GateResult,
    Verdict,
    aggregate_exit_codes,
    decide,
    run_verdict,
)
from vitrine.redact import bound_text, sanitize_text
from vitrine.reports import SuiteReport, render_html
from vitrine.runs import FloorComparison, FloorComparisonError, RepCollapse, RunResult, collapse
from vitrine.stats import (
    binomial_tail_p,
    pass_hat_k,
    sign_test_p,
    underpowered_by_construction,
    wilson_interval,
)
from vitrine.store import TamperedRunError, load_run, sanitize_file_name
from vitrine.subjects import ImpossibleCensusError, StageAttemptCensus, validate_stage_set
from vitrine_shop.evals.benchmarks import canonical_definition
from vitrine_shop.evals.controls.blocks import Binding, Seams, contract, refuses, verdict
from vitrine_shop.evals.controls.capture import ShippedState

__all__ = ["FIXTURE_BINDINGS"]

_PASS = Observation.measured(1.0, True)
_FAIL = Observation.measured(0.0, False)
_NA = Observation.not_applicable("fixture: nothing to test")
_NM = Observation.not_measured("fixture: the instrument did not run")


def _fixed(seams: Seams) -> Binding:
    return lambda _state: seams


# --- statistics --------------------------------------------------------------------------


def _exact_fair_tail(k: int, n: int) -> float:
    # Authored independently of vitrine._stats: a rational count of outcomes over 2**n.
    return float(Fraction(sum(math.comb(n, i) for i in range(k, n + 1)), 2**n))


def _normal_tail(successes: int, n: int, p: float) -> float:
    spread = math.sqrt(n * p * (1 - p))
    return 1.0 - NormalDist(n * p, spread).cdf(successes - 0.5)


def _ties_split(wins: int, losses: int, ties: int) -> float:
    return sign_test_p(wins + ties // 2, losses + ties - ties // 2)


def _one_sided_power(n: int) -> bool:
    return 0.5**n > 0.05


def _pass_at_k(successes: Sequence[int], trials: Sequence[int], k: int) -> float:
    rates = [
        1 - math.comb(n - c, k) / math.comb(n, k) for c, n in zip(successes, trials, strict=True)
    ]
    return sum(rates) / len(rates)


def _wilson_floor(sample: tuple[int, int]) -> Observation:
    successes, n = sample
    interval = wilson_interval(successes, n)
    lower = 0.0 if interval is None else interval.lower
    return verdict(lower >= 0.5, f"{successes}/{n}: Wilson lower bound {lower:.4f} vs 0.50")


# --- measurement states and verdicts ------------------------------------------------------


def _pooled_census(observations: Sequence[Observation]) -> Census:
    counted = Census.of(observations)
    return Census(counted.measured, counted.not_applicable + counted.not_measured, 0)


def _predicate_on(answer: str | None) -> Any:
    definition = canonical_definition()
    admitted = next(c for c in definition.checks if c.key == "no-purchase-claim")
    return admitted.check.evaluate(definition.cases[0], SubjectResponse(answer))


def _empty_as_absent(answer: str | None) -> Any:
    return _predicate_on(answer or None)


def _floor_facts(floor: ChanceFloor) -> tuple[str, str]:
    try:
        value = f"{floor.value:.2f}"
    except FloorNotDerivableError:
        value = "refused"
    return floor.describe(), value


def _half_floor(reason: str) -> ChanceFloor:
    return ChanceFloor(FloorKind.UNIFORM_CHOICE, 0.5, reason)


def _measured_subset(observations: Sequence[Observation]) -> Observation:
    return collapse([o for o in observations if o.is_measured] or observations, RepCollapse.ALL)


def _half_wins(observations: Sequence[Observation]) -> float:
    passed = sum(1 for o in observations if o.passed)
    return 1.0 if passed * 2 >= len(observations) else 0.0


def _gate_exit(observation: Observation) -> ExitCode | None:
    return GateResult("fixture-gate", Authority.GATE, observation).exit_code


def _absence_passes(observation: Observation) -> ExitCode:
    return ExitCode.MEASURED_FAILURE if observation.failed else ExitCode.PASS


def _fail_or_pass(observations: Sequence[Observation]) -> Verdict:
    return Verdict.FAIL if any(o.failed for o in observations) else Verdict.PASS


def _first_failure_wins(codes: Sequence[ExitCode]) -> ExitCode:
    return min((c for c in codes if c is not ExitCode.PASS), default=ExitCode.PASS)


def _authority_ignored(gates: Sequence[GateResult]) -> Any:
    return decide([replace(g, authority=Authority.GATE) for g in gates])


_GATES = (
    GateResult("catalogue-shape", Authority.GATE, _PASS),
    GateResult("matched-quality", Authority.DIAGNOSTIC, _FAIL),
)


# --- censuses -----------------------------------------------------------------------------

_CLAIMS_THREE_ATTEMPTS = {
    "stage": "Ranker",
    "attempts": 3,
    "responses": 1,
    "unusable": 0,
    "provider_failures": 0,
    "cancellations": 0,
    "status": "measured",
    "last_usable": 1,
    "last_unusable": None,
}


def _normalised(record: dict[str, Any]) -> StageAttemptCensus:
    repaired = {**record, "attempts": record["responses"] + record["provider_failures"]}
    return StageAttemptCensus.from_dict(repaired)


def _clean(stage: str) -> StageAttemptCensus:
    return StageAttemptCensus.from_dict({**_CLAIMS_THREE_ATTEMPTS, "stage": stage, "attempts": 1})


def _last_owner_wins(censuses: Sequence[StageAttemptCensus], required: Sequence[str]) -> object:
    return validate_stage_set({c.stage: c for c in censuses}.values(), required)


def _nothing_required(censuses: Sequence[StageAttemptCensus], required: Sequence[str]) -> object:
    return validate_stage_set(censuses, ())


# --- floors and collapse ------------------------------------------------------------------

_NO_POPULATION = ChanceFloor.not_derivable("fixture: no random-draw population")


def _rounded_cells(cells: Sequence[Observation], floor: ChanceFloor) -> FloorComparison:
    rounded = [
        Observation.measured(round(o.value or 0.0), bool(round(o.value or 0.0))) for o in cells
    ]
    return FloorComparison.of(rounded, floor)


# --- renderers and artifacts --------------------------------------------------------------

_SCRIPT = "<script>alert(1)</script>"
_LEAKY_REASON = (
    "provider said api_key=sk-live-abcdefghijklmnop1234 while calling "
    "https://example.openai.azure.com/v1/chat"
)


def _report_with_script() -> SuiteReport:
    return SuiteReport(
        suite="fixture",
        plan="fixture",
        mode="fixture",
        provenance="offline-deterministic",
        started_at="2026-09-06T00:00:00+00:00",
        duration_s=0.0,
        exit_code=0,
        exit_meaning="pass",
        exit_reason=_SCRIPT,
        gates=[],
        benchmarks=[],
    )


def _unescaped(report: SuiteReport) -> str:
    return html.unescape(render_html(report))


def _naive_file_name(name: str) -> str:
    return re.sub(r'[<>:"|?*/\\]', "-", name)


def _distinct_names(namer: Callable[[str], str]) -> Callable[[str, str], bool]:
    return lambda a, b: namer(a) != namer(b)


def _counts_first(runs: Sequence[RunResult]) -> Observation:
    # self_test imports this package for the expected controls: importing it here breaks the cycle.
    from vitrine_shop.evals.self_test import canonical_count_failures  # noqa: PLC0415

    failures = canonical_count_failures(runs)
    return verdict(not failures, failures[0] if failures else f"{len(runs)} runs, counts exact")


def _drop_last(runs: Sequence[RunResult]) -> tuple[RunResult, ...]:
    return tuple(runs[:-1])


Tamper = Callable[[Path], None]


def _untouched(run_dir: Path) -> None:
    return None


def _flip_one_byte(run_dir: Path) -> None:
    rows = run_dir / "rows.jsonl"
    data = bytearray(rows.read_bytes())
    at = data.index(b'"passed":true') + len(b'"passed":')
    data[at : at + 4] = b"fals"  # stays JSON-shaped; only the seal can tell
    rows.write_bytes(bytes(data))


def _tamper_fixture(state: ShippedState) -> Seams:
    source = next(
        Path(r.run_dir) for r in state.canonical_runs if r.run_dir and r.arm_id == "scripted-agent"
    )

    def load_copy(tamper: Tamper) -> Observation:
        with tempfile.TemporaryDirectory(prefix="vitrine-control-") as tmp:
            copy = Path(tmp) / source.name
            shutil.copytree(source, copy)
            tamper(copy)
            loaded = load_run(copy)
        return verdict(loaded.complete, f"run {loaded.run_id} loaded, seal verified")

    return Seams(lambda: _untouched, lambda _: _flip_one_byte, load_copy, TamperedRunError)


FIXTURE_BINDINGS: dict[str, Binding] = {
    "NC-21": lambda state: Seams(lambda: state.canonical_runs, _drop_last, _counts_first),
    "NC-22": _fixed(
        contract(
            binomial_tail_p,
            _normal_tail,
            [((k, n, 0.5), _exact_fair_tail(k, n)) for k, n in ((9, 10), (15, 20), (3, 4))],
        )
    ),
    "NC-23": _fixed(
        contract(Census.of, _pooled_census, [(((_PASS, _FAIL, _NA, _NM),), Census(2, 1, 1))])
    ),
    "NC-24": _fixed(
        contract(
            _predicate_on,
            _empty_as_absent,
            [(("",), ("measured", False)), ((None,), ("not_applicable", None))],
            lambda o: (o.state.value, o.passed),
        )
    ),
    "NC-25": _fixed(
        contract(
            ChanceFloor.not_derivable,
            _half_floor,
            [(("no random-draw population",), ("NOT DERIVABLE", "refused"))],
            _floor_facts,
        )
    ),
    "NC-26": _fixed(
        contract(
            lambda wins, losses, ties: sign_test_p(wins, losses),
            _ties_split,
            [((3, 0, 4), 0.25), ((0, 0, 2), 1.0), ((5, 1, 9), 0.21875)],
        )
    ),
    "NC-27": _fixed(Seams(lambda: (4, 4), lambda s: (s[0] - 1, s[1] - 1), _wilson_floor)),
    "NC-28": _fixed(
        contract(
            render_html, _unescaped, [((_report_with_script(),), False)], lambda out: _SCRIPT in out
        )
    ),
    "NC-29": _fixed(
        contract(
            sanitize_text,
            lambda text: bound_text(text, 240),
            [((_LEAKY_REASON,), False)],
            lambda out: "sk-live" in out or "azure.com" in out,
        )
    ),
    "NC-30": _fixed(
        contract(decide, _authority_ignored, [((_GATES,), ExitCode.PASS)], lambda d: d.exit_code)
    ),
    "NC-31": _fixed(
        contract(
            aggregate_exit_codes,
            _first_failure_wins,
            [
                (([ExitCode.MEASURED_FAILURE, ExitCode.NOT_MEASURED],), ExitCode.NOT_MEASURED),
                (([ExitCode.INFRASTRUCTURE, ExitCode.MEASURED_FAILURE],), ExitCode.INFRASTRUCTURE),
                (([ExitCode.PASS],), ExitCode.PASS),
            ],
        )
    ),
    "NC-32": _fixed(
        contract(
            refuses(StageAttemptCensus.from_dict, ImpossibleCensusError),
            refuses(_normalised, ImpossibleCensusError),
            [
                ((_CLAIMS_THREE_ATTEMPTS,), True),
                (({**_CLAIMS_THREE_ATTEMPTS, "attempts": 1},), False),
            ],
        )
    ),
    "NC-33": _fixed(
        contract(
            refuses(validate_stage_set, ImpossibleCensusError),
            refuses(_last_owner_wins, ImpossibleCensusError),
            [(((_clean("Ranker"), _clean("Ranker")), ()), True)],
        )
    ),
    "NC-34": _fixed(
        contract(
            refuses(validate_stage_set, ImpossibleCensusError),
            refuses(_nothing_required, ImpossibleCensusError),
            [
                (((_clean("Ranker"),), ("Ranker", "Presenter")), True),
                (((_clean("Ranker"), _clean("Presenter")), ("Ranker", "Presenter")), False),
            ],
        )
    ),
    "NC-35": _fixed(
        contract(
            underpowered_by_construction,
            _one_sided_power,
            [((4,), True), ((5,), True), ((6,), False)],
        )
    ),
    "NC-36": _fixed(
        contract(
            lambda obs: collapse(obs, RepCollapse.ALL),
            _measured_subset,
            [(((_PASS, _NM),), "not_measured"), (((_PASS, _NA),), "not_applicable")],
            lambda o: o.state.value,
        )
    ),
    "NC-37": _fixed(
        contract(
            lambda obs: collapse(obs, RepCollapse.MAJORITY).value,
            _half_wins,
            [(((_PASS, _FAIL),), 0.0), (((_PASS, _PASS, _FAIL),), 1.0)],
        )
    ),
    "NC-38": _fixed(
        contract(
            refuses(FloorComparison.of, FloorComparisonError),
            refuses(_rounded_cells, FloorComparisonError),
            [(((Observation.measured(0.5, False),), _NO_POPULATION), True)],
        )
    ),
    "NC-39": _fixed(
        contract(
            _gate_exit,
            _absence_passes,
            [((_NA,), ExitCode.NOT_MEASURED), ((_PASS,), ExitCode.PASS)],
        )
    ),
    "NC-40": _fixed(
        contract(
            run_verdict,
            _fail_or_pass,
            [
                (((_PASS, _FAIL),), Verdict.FAIL),
                (((_NA,),), Verdict.PENDING),
                (((_PASS, _NM),), Verdict.WARN),
                (((_PASS,),), Verdict.PASS),
            ],
        )
    ),
    "NC-41": _fixed(contract(pass_hat_k, _pass_at_k, [(([3], [5], 2), 0.3), (([5], [5], 3), 1.0)])),
    "NC-42": _fixed(
        contract(
            _distinct_names(sanitize_file_name),
            _distinct_names(_naive_file_name),
            [(("a/b", "a-b"), True), (("x:y", "x?y"), True)],
        )
    ),
    "NC-43": _tamper_fixture,
}
