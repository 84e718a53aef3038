"""Suites load by import path; the default suite declares every plan with its rules."""

from __future__ import annotations

import importlib.util
import sys
import uuid

import pytest

from vitrine._outcomes import ExitCode
from vitrine._plans.base import (
    FunctionPlan,
    Plan,
    PlanKind,
    PlanOutcome,
    PlanRequest,
    PlanUnavailableError,
    RepetitionRule,
    UsageError,
    plan,
)
from vitrine._plans.validation import PlanOptions, validate
from vitrine._suite import (
    LazyScenarios,
    Mode,
    ScenarioInfo,
    ServiceFlag,
    Suite,
    SuiteLoadError,
    load_suite,
)


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """Write a module to tmp_path and make it importable; yields a writer."""
    names: list[str] = []

    def write(source: str) -> str:
        name = f"user_suite_{uuid.uuid4().hex[:8]}"
        (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
        names.append(name)
        return name

    monkeypatch.syspath_prepend(str(tmp_path))
    yield write
    for name in names:
        sys.modules.pop(name, None)


@plan("noop")
async def _noop(request: PlanRequest) -> PlanOutcome:
    return PlanOutcome(ExitCode.PASS)


def test_the_default_suite_declares_every_plan_with_its_rules():
    suite = load_suite()
    assert suite is load_suite("vitrine_shop.evals.suite:SUITE")
    assert list(suite.plans) == [
        "offline-suite",
        "eval01-agent",
        "eval02-workflow",
        "eval03-compare",
        "eval04-stochastic-agent",
        "eval05-stochastic-workflow",
        "eval06-safety-probes",
    ]
    assert suite.default_plan == "offline-suite"
    kinds = {name: p.kind for name, p in suite.plans.items()}
    assert kinds["offline-suite"] is PlanKind.OFFLINE
    assert kinds["eval06-safety-probes"] is PlanKind.SAFETY
    for i, suffix in enumerate(
        ("agent", "workflow", "compare", "stochastic-agent", "stochastic-workflow"), start=1
    ):
        assert kinds[f"eval0{i}-{suffix}"] is PlanKind.LIVE
    for name, item in suite.plans.items():
        assert isinstance(item, Plan)
        assert item.paid is (item.kind is not PlanKind.OFFLINE), name
    rules = {name: p.repetitions for name, p in suite.plans.items()}
    assert (rules["eval01-agent"].minimum, rules["eval01-agent"].maximum) == (1, 1)
    assert (rules["eval03-compare"].minimum, rules["eval03-compare"].maximum) == (1, 100)
    assert rules["eval03-compare"].default == 1
    for stochastic in ("eval04-stochastic-agent", "eval05-stochastic-workflow"):
        assert (rules[stochastic].minimum, rules[stochastic].maximum) == (4, 100)
        assert rules[stochastic].default == 5
    assert not rules["eval06-safety-probes"].configurable
    assert not rules["offline-suite"].configurable
    assert not suite.plans["eval06-safety-probes"].accepts_scenario
    assert not suite.plans["offline-suite"].accepts_scenario


def test_every_plan_of_the_default_suite_is_built_in_this_version():
    unavailable = {
        name: item.unavailable_reason
        for name, item in load_suite().plans.items()
        if not item.available
    }
    assert unavailable == {}


def test_the_default_suite_knows_the_four_live_scenarios():
    suite = load_suite()
    assert suite.scenario_ids == (
        "nadia-cross-category",
        "sofia-capability-gap",
        "marco-gift-trap",
        "luca-safe-abstention",
    )


def test_default_scenario_details_come_from_the_shop_registry():
    if importlib.util.find_spec("vitrine_shop.scenarios") is None:
        pytest.skip("the shop's scenario registry is not part of this version")
    suite = load_suite()
    info = suite.scenarios["luca-safe-abstention"]
    assert info.id == "luca-safe-abstention"
    assert info.title
    assert info.query


def test_the_module_alone_defaults_the_attribute_to_SUITE(user_module):
    name = user_module(
        "from vitrine._suite import Suite\n"
        "from vitrine._plans.base import FunctionPlan, PlanKind\n"
        "SUITE = Suite('mine', {'x': FunctionPlan('x', PlanKind.OFFLINE, 'd', "
        "unavailable_reason='later')}, {})\n"
    )
    assert load_suite(name).name == "mine"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("definitely_missing_module_q:SUITE", "no module named 'definitely_missing_module_q'"),
        ("vitrine.definitely_missing:SUITE", "no module named 'vitrine.definitely_missing'"),
        ("vitrine._suite:MISSING", "module 'vitrine._suite' has no attribute 'MISSING'"),
        (
            "vitrine._suite:_DEFAULT_ATTRIBUTE",
            "vitrine._suite._DEFAULT_ATTRIBUTE is a str, not a vitrine Suite",
        ),
        ("", "--suite expects module:attr"),
        ("a b:SUITE", "--suite expects module:attr"),
    ],
)
def test_a_suite_argument_that_names_nothing_is_an_argument_error(spec, message):
    with pytest.raises(SuiteLoadError) as caught:
        load_suite(spec)
    assert message in str(caught.value)
    assert caught.value.exit_code is ExitCode.INVALID_ARGUMENTS


def test_a_suite_whose_dependency_is_missing_is_an_infrastructure_failure(user_module):
    name = user_module("import not_installed_dependency_z\n")
    with pytest.raises(SuiteLoadError) as caught:
        load_suite(f"{name}:SUITE")
    assert caught.value.exit_code is ExitCode.INFRASTRUCTURE
    assert "imports 'not_installed_dependency_z', which is not installed" in str(caught.value)


def test_suite_refuses_inconsistent_declarations():
    offline = FunctionPlan("a", PlanKind.OFFLINE, "d", unavailable_reason="later")
    live = FunctionPlan("b", PlanKind.LIVE, "d", paid=True, unavailable_reason="later")
    with pytest.raises(ValueError, match="the key must be the plan's name"):
        Suite("s", {"other": offline}, {})
    with pytest.raises(ValueError, match="no plans"):
        Suite("s", {}, {})
    with pytest.raises(ValueError, match="--all must never start paid work"):
        Suite("s", {"b": live}, {}, default_plan="b")
    with pytest.raises(ValueError, match="is not one of its plans"):
        Suite("s", {"a": offline}, {}, default_plan="zzz")
    with pytest.raises(ValueError, match="not 'all'"):
        Suite("s", {"a": offline}, {"all": ScenarioInfo("all", "t", "d", "q")})
    with pytest.raises(TypeError, match="not a Plan"):
        Suite("s", {"a": object()}, {})  # type: ignore[dict-item]


def test_suite_plans_are_read_only():
    suite = Suite("s", {"noop": _noop}, {})
    with pytest.raises(TypeError):
        suite.plans["x"] = _noop  # type: ignore[index]


def test_lazy_scenarios_validate_ids_without_loading():
    calls: list[int] = []

    def loader():
        calls.append(1)
        return {"a": ScenarioInfo("a", "A", "d", "q"), "b": ScenarioInfo("b", "B", "d", "q")}

    scenarios = LazyScenarios(("a", "b"), loader)
    assert "a" in scenarios
    assert "z" not in scenarios
    assert list(scenarios) == ["a", "b"]
    assert len(scenarios) == 2
    assert calls == []
    assert scenarios["b"].title == "B"
    assert scenarios["a"].title == "A"
    assert calls == [1]
    with pytest.raises(KeyError):
        scenarios["z"]


def test_lazy_scenarios_refuse_a_registry_that_lost_a_declared_id():
    scenarios = LazyScenarios(("a", "b"), lambda: {"a": ScenarioInfo("a", "A", "d", "q")})
    with pytest.raises(LookupError, match=r"lacks declared scenarios \['b'\]"):
        scenarios["a"]


def test_function_plans_must_be_async_or_say_why_they_are_missing():
    with pytest.raises(ValueError, match="an unavailable plan must say why"):
        FunctionPlan("x", PlanKind.OFFLINE, "d")

    def sync(request: PlanRequest) -> PlanOutcome:
        return PlanOutcome(ExitCode.PASS)

    with pytest.raises(ValueError, match="fn must be an async function"):
        FunctionPlan("x", PlanKind.OFFLINE, "d", fn=sync)  # type: ignore[arg-type]


async def test_an_unavailable_plan_refuses_to_run_even_when_called_directly():
    declared = FunctionPlan("x", PlanKind.OFFLINE, "d", unavailable_reason="not yet")
    assert not declared.available
    with pytest.raises(PlanUnavailableError, match="not yet"):
        await declared.run(PlanRequest(plan="x"))


def test_repetition_rules_are_consistent():
    with pytest.raises(ValueError, match="minimum <= default <= maximum"):
        RepetitionRule.between(4, 100, 3)
    assert RepetitionRule.between(4, 100, 5).describe() == "4-100, default 5"
    assert RepetitionRule.fixed(1).describe() == "exactly 1"
    assert RepetitionRule.not_accepted(2).describe() == "fixed at 2, not configurable"


def test_a_plan_states_its_repetitions_as_a_number_or_is_told_how_to():
    counted = plan("counted", repetitions=3)(_noop.fn)
    assert counted.repetitions.describe() == "1-100, default 3"
    suite = Suite("s", {"noop": _noop, "counted": counted}, {}, default_plan="noop")
    assert validate(suite, PlanOptions(eval_plan="counted"))[1].repetitions == 3
    assert validate(suite, PlanOptions(eval_plan="counted", repetitions=7))[1].repetitions == 7
    with pytest.raises(
        ValueError, match=r"declare one with @vitrine.plan\('noop', repetitions=N\)"
    ):
        validate(suite, PlanOptions(eval_plan="noop", repetitions=3))
    with pytest.raises(ValueError, match="repetitions must be a whole number of at least 1"):
        plan("zero", repetitions=0)


def test_validate_is_usable_without_the_command_line():
    suite = Suite(
        "s",
        {
            "noop": _noop,
            "live": FunctionPlan(
                "live",
                PlanKind.LIVE,
                "d",
                fn=_noop.fn,
                accepts_scenario=True,
                paid=True,
                repetitions=RepetitionRule.between(1, 10, 2),
            ),
        },
        {"a": ScenarioInfo("a", "A", "d", "q")},
        default_plan="noop",
    )
    chosen, request = validate(
        suite, PlanOptions(eval_plan="live", repetitions=7, confirm_paid=True)
    )
    assert chosen.name == "live"
    assert request.repetitions == 7
    assert request.scenarios == ("a",)
    assert request.console is False
    with pytest.raises(ValueError, match="whole number"):
        validate(suite, PlanOptions(eval_plan="live", repetitions=True, confirm_paid=True))


_BENCH_SUITE = '''
from vitrine import (
    Arm, BenchmarkDefinition, Case, ChanceFloor, ExitCode, Observation, PlanOutcome,
    SubjectResponse, Suite, admit, check, plan,
)
from vitrine.live import PlanKind
from vitrine.runs import run_benchmark


@check("non-empty")
def non_empty(case, response):
    return Observation.measured(1.0 if response.answer else 0.0, bool(response.answer))


async def echo(case):
    return SubjectResponse(answer=f"echo {case.input}")


DEFINITION = BenchmarkDefinition(
    "toy-bench", "1.0.0", [Case("c1", "one"), Case("c2", "two")],
    [admit(non_empty, ChanceFloor.not_derivable("a deterministic toy predicate"))],
)
RESULTS = []


@plan("toy-bench", kind=PlanKind.OFFLINE)
async def toy_bench(request):
    """Runs a two-case benchmark through the real runner."""
    result = await run_benchmark(DEFINITION, Arm("echo", echo), store=None)
    RESULTS.append(result)
    passed = all(row.observation.passed for row in result.rows)
    code = ExitCode.PASS if passed else ExitCode.MEASURED_FAILURE
    return PlanOutcome(code, [str(request.output_root())])


SUITE = Suite("toy-bench-suite", {"toy-bench": toy_bench}, {}, default_plan="toy-bench")
'''


def test_a_user_suite_runs_a_tiny_benchmark_through_the_runner(user_module, capsys):
    if importlib.util.find_spec("vitrine._bench.runner") is None:
        pytest.skip("vitrine._bench.runner is not part of this version yet")
    from vitrine._cli import main

    name = user_module(_BENCH_SUITE)
    code = main(["--suite", f"{name}:SUITE", "--all"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (result,) = sys.modules[name].RESULTS
    assert result.arm_id == "echo"
    assert len(result.rows) == 2
    assert "toy-bench exit 0 (pass)" in captured.out


def test_the_request_resolves_the_run_store_root(tmp_path, monkeypatch):
    monkeypatch.setenv("VITRINE_HOME", str(tmp_path / "home"))
    assert PlanRequest(plan="x", output=tmp_path / "out").output_root() == tmp_path / "out"
    assert PlanRequest(plan="x").output_root() == tmp_path / "home"
    monkeypatch.delenv("VITRINE_HOME")
    monkeypatch.chdir(tmp_path)
    assert PlanRequest(plan="x").output_root() == tmp_path / ".vitrine"


# Modes and aliases declared by the suite ----------------------------------------------------


def _moded_suite(**kwargs) -> Suite:
    offline = FunctionPlan("a", PlanKind.OFFLINE, "d", unavailable_reason="later")
    live = FunctionPlan("b", PlanKind.LIVE, "d", paid=True, unavailable_reason="later")
    return Suite("mine", {"a": offline, "b": live}, {}, default_plan="a", **kwargs)


@pytest.mark.parametrize("mode", ["self-test", "ablate-catalogue", "controls-only"])
def test_a_mode_the_suite_does_not_declare_is_refused(mode):
    with pytest.raises(UsageError, match=f"suite mine does not provide --{mode}: it does not"):
        validate(_moded_suite(), PlanOptions(modes=(mode,)))


def test_a_declared_mode_runs_in_the_default_plan():
    suite = _moded_suite(modes={"controls-only"})
    with pytest.raises(UsageError, match="a is not available: later"):
        validate(suite, PlanOptions(modes=("controls-only",)))
    with pytest.raises(UsageError, match="does not provide --self-test"):
        validate(suite, PlanOptions(modes=("self-test",)))


@plan("a")
async def _offline_a(request: PlanRequest) -> PlanOutcome:
    return PlanOutcome(ExitCode.PASS)


@plan("c")
async def _offline_c(request: PlanRequest) -> PlanOutcome:
    return PlanOutcome(ExitCode.PASS)


def _runnable_suite(*modes: Mode) -> Suite:
    return Suite("mine", {"a": _offline_a, "c": _offline_c}, {}, default_plan="a", modes=modes)


def test_a_mode_of_the_suites_own_reaches_its_plan_as_request_mode():
    suite = _runnable_suite(Mode("shuffle-cases", "run with the cases shuffled"))
    chosen, request = validate(suite, PlanOptions(all=True, modes=("shuffle-cases",)))
    assert (chosen.name, request.mode) == ("a", "shuffle-cases")
    _, plain = validate(suite, PlanOptions(all=True))
    assert plain.mode == "suite"
    elsewhere = _runnable_suite(Mode("other-plan", plan="c"))
    chosen, request = validate(elsewhere, PlanOptions(modes=("other-plan",)))
    assert (chosen.name, request.mode) == ("c", "other-plan")
    with pytest.raises(UsageError, match="--all cannot be combined with --other-plan"):
        validate(elsewhere, PlanOptions(all=True, modes=("other-plan",)))


def test_modes_are_refused_together_with_the_suites_reason_or_the_default_one():
    suite = _moded_suite(
        modes=[
            Mode("self-test"),
            Mode("ablate-x", conflicts={"self-test": "the self-test needs what ablation removes"}),
            Mode("controls-only"),
        ]
    )
    for given in (("self-test", "ablate-x"), ("ablate-x", "self-test")):
        with pytest.raises(UsageError) as caught:
            validate(suite, PlanOptions(modes=given))
        # Named in the order the command line lists the flags, whatever order they came in.
        assert str(caught.value) == (
            "--self-test cannot be combined with --ablate-x: the self-test needs what ablation "
            "removes"
        )
    with pytest.raises(
        UsageError,
        match="--ablate-x cannot be combined with --controls-only: they are separate proofs",
    ):
        validate(suite, PlanOptions(modes=("controls-only", "ablate-x")))


def test_a_live_plan_refuses_a_mode_with_the_modes_own_reason():
    suite = _moded_suite(modes=[Mode("ablate-x", live_refusal="ablation is an offline proof")])
    with pytest.raises(
        UsageError,
        match="b is a live plan and does not accept --ablate-x: ablation is an offline proof",
    ):
        validate(suite, PlanOptions(eval_plan="b", modes=("ablate-x",), confirm_paid=True))


def test_the_live_alias_selects_the_plan_the_suite_maps_it_to():
    suite = _moded_suite(aliases={"--live-compare": "b"})
    with pytest.raises(UsageError, match=r"b \(selected by --live-compare\) needs"):
        validate(suite, PlanOptions(aliases=("--live-compare",)))
    with pytest.raises(UsageError, match="does not provide --live-compare"):
        validate(_moded_suite(), PlanOptions(aliases=("--live-compare",)))
    two = _moded_suite(aliases={"--live-compare": "b", "--offline-a": "a"})
    with pytest.raises(UsageError, match="--live-compare cannot be combined with --offline-a"):
        validate(two, PlanOptions(aliases=("--live-compare", "--offline-a")))


def test_suite_refuses_malformed_modes_aliases_and_service_options():
    with pytest.raises(ValueError, match="lower-case words joined by dashes"):
        _moded_suite(modes={"Self Test"})
    with pytest.raises(ValueError, match="reserved"):
        _moded_suite(modes={"suite"})
    with pytest.raises(ValueError, match="declared twice"):
        _moded_suite(modes=["self-test", Mode("self-test")])
    with pytest.raises(TypeError, match="set of mode names"):
        _moded_suite(modes="self-test")
    with pytest.raises(ValueError, match="is not a flag"):
        _moded_suite(aliases={"live": "b"})
    with pytest.raises(ValueError, match="names plan 'zzz'"):
        _moded_suite(aliases={"--live-compare": "zzz"})
    with pytest.raises(ValueError, match="also the flag of a mode"):
        _moded_suite(modes={"x-mode"}, aliases={"--x-mode": "b"})
    with pytest.raises(ValueError, match="runs plan 'b', which is not one of its offline plans"):
        _moded_suite(modes=[Mode("m", plan="b")])
    with pytest.raises(ValueError, match="conflicts with modes it does not offer: nope"):
        _moded_suite(modes=[Mode("m", conflicts={"nope": "why"})])
    offline = FunctionPlan("a", PlanKind.OFFLINE, "d", unavailable_reason="later")
    with pytest.raises(ValueError, match="no default plan"):
        Suite("s", {"a": offline}, {}, modes={"self-test"})
    with pytest.raises(ValueError, match="share a flag"):
        _moded_suite(service_options=[ServiceFlag("--x", "h"), ServiceFlag("--x", "h", key="y")])
    with pytest.raises(ValueError, match="is a switch"):
        ServiceFlag("--x", "h", kind="on", default="a")
    with pytest.raises(ValueError, match="not one of its choices"):
        ServiceFlag("--x", "h", choices=("a",), default="b")
    with pytest.raises(TypeError, match="is not a ServiceFlag"):
        _moded_suite(service_options=["--x"])


def test_a_service_flag_takes_its_key_and_its_value_when_absent():
    assert ServiceFlag("--regress", "h").key == "regress"
    assert ServiceFlag("--regress", "h").initial is None
    assert ServiceFlag("--no-desk", "h", key="desk", kind="off").initial is True
    assert ServiceFlag("--list-ids", "h", kind="on").initial is False
    assert ServiceFlag("--shape", "h", choices=("a", "b"), default="a").initial == "a"


def test_the_shop_declares_every_mode_its_live_alias_and_its_serve_options():
    suite = load_suite()
    assert [m.name for m in suite.declared_modes] == [
        "self-test",
        "ablate-catalogue",
        "controls-only",
    ]
    assert suite.aliases == {"--live-subjects-and-judge": "eval03-compare"}
    assert [f.flag for f in suite.service_options] == [
        "--architecture",
        "--regress",
        "--no-front-desk",
        "--list-personas",
    ]


def test_a_blank_scenario_refusal_leaves_no_dangling_colon():
    offline = FunctionPlan(
        "a", PlanKind.OFFLINE, "d", scenario_refusal="  ", unavailable_reason="later"
    )
    suite = Suite("s", {"a": offline}, {"x": ScenarioInfo("x", "t", "d", "q")}, default_plan="a")
    with pytest.raises(UsageError) as caught:
        validate(suite, PlanOptions(all=True, scenario="x"))
    assert str(caught.value) == "a does not accept --scenario"
