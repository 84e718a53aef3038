"""The command line: every refusal names its rule, dispatch maps outcomes to exit codes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from vitrine._cli import main

HEAVY = ("scipy", "rich", "pydantic", "numpy", "torch")

TOY_SUITE = '''
from pathlib import Path

from vitrine._outcomes import ExitCode
from vitrine._plans.base import FunctionPlan, PlanKind, PlanOutcome, RepetitionRule, plan
from vitrine._suite import ScenarioInfo, Suite
from vitrine.adapters import ModelCallCache
from vitrine.errors import UsageError

REQUESTS = []
CACHE_REFUSALS = []


def _record_cache_refusal():
    # A loopback request: only the plan's own paid scope can make the cache refuse it.
    try:
        ModelCallCache("cache").refuse_if_paid("http://127.0.0.1:9/v1/chat/completions")
    except UsageError as exc:
        CACHE_REFUSALS.append(str(exc))
    else:
        CACHE_REFUSALS.append(None)


@plan("toy-offline", description="records the request and passes")
async def toy_offline(request):
    REQUESTS.append(request)
    _record_cache_refusal()
    return PlanOutcome(ExitCode.PASS, ["toy summary line"], [Path("runs") / "toy"])


@plan("toy-fails")
async def toy_fails(request):
    """Returns a measured failure."""
    return PlanOutcome(ExitCode.MEASURED_FAILURE, ["a gate failed"])


@plan("toy-boom")
async def toy_boom(request):
    """Raises with a credential in the message."""
    raise RuntimeError(
        "endpoint https://secret.example.com/v1 rejected api_key=sk-abcdefghijklmnop"
    )


@plan("toy-interrupt")
async def toy_interrupt(request):
    """Simulates Ctrl-C mid-run."""
    raise KeyboardInterrupt


@plan("toy-not-an-outcome")
async def toy_not_an_outcome(request):
    """Returns the wrong type."""
    return 0


@plan(
    "toy-live",
    kind=PlanKind.LIVE,
    accepts_scenario=True,
    paid=True,
    repetitions=RepetitionRule.between(1, 3, 2, "three keeps the toy cheap"),
)
async def toy_live(request):
    """A paid plan that records its request."""
    REQUESTS.append(request)
    _record_cache_refusal()
    return PlanOutcome(ExitCode.NOT_MEASURED, ["nothing measured"])


SUITE = Suite(
    name="toy",
    plans={p.name: p for p in (
        toy_offline, toy_fails, toy_boom, toy_interrupt, toy_not_an_outcome, toy_live
    )},
    scenarios={
        "alpha": ScenarioInfo("alpha", "Alpha", "first", "query a"),
        "beta": ScenarioInfo("beta", "Beta", "second", "query b"),
    },
    default_plan="toy-offline",
    modes={"self-test"},
)
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A user suite module on sys.path; yields its module name."""
    name = f"toy_suite_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(TOY_SUITE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def run(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_no_arguments_prints_a_hint_and_runs_nothing(capsys):
    code, out, err = run([], capsys)
    assert code == 2
    assert out == ""
    assert "usage: vitrine --all | --eval-plan NAME" in err
    assert "vitrine: error: nothing to run" in err


def test_version_and_help_exit_zero(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0
    assert out.startswith("vitrine ")
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    for flag in (
        "--all",
        "--eval-plan",
        "--scenario",
        "--repetitions",
        "--confirm-paid",
        "--self-test",
        "--controls-only",
        "--provider",
        "--local-model",
        "--model",
        "--json-report",
        "--html-report",
        "--suite",
        "--output",
        "--list-plans",
        "--version",
    ):
        assert flag in out


SHOP = "vitrine_shop.evals.suite:SUITE"


def test_help_offers_a_suites_own_flags_only_for_the_suite_named(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    # Without --suite no suite is looked for, so none of a suite's own flags is offered...
    assert "--ablate-catalogue" not in out and "--live-subjects-and-judge" not in out
    assert "--suite MODULE:ATTR --help" in " ".join(out.split())
    # ...and with it, the named suite's are, each with the suite's own words.
    code, out, _ = run(["--suite", SHOP, "--help"], capsys)
    text = " ".join(out.split())
    assert code == 0
    assert "--ablate-catalogue run the offline suite on a catalogue with one SKU removed" in text
    assert "--live-subjects-and-judge shorthand for --eval-plan eval03-compare" in text


def test_the_list_of_plans_names_the_suites_modes_and_shorthands(capsys):
    code, out, _ = run(["--list-plans"], capsys)
    assert code == 0
    assert re.search(
        r"^modes:\n  --self-test .*\n  --ablate-catalogue .*\n  --controls-only ", out, re.M
    )
    assert re.search(r"^  --live-subjects-and-judge\s+--eval-plan eval03-compare$", out, re.M)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--bogus"],
            "unrecognized arguments: --bogus (neither vitrine nor suite vitrine-shop has that "
            "flag; the suite's own flags: --ablate-catalogue, --live-subjects-and-judge)",
        ),
        (["--provider", "cloud", "--all"], "invalid choice: 'cloud'"),
        (["--eval-plan", "nope"], "unknown plan 'nope': suite vitrine-shop has offline-suite"),
        (
            ["--eval-plan", "eval01-agent", "--scenario", "bob", "--confirm-paid"],
            "unknown scenario 'bob': suite vitrine-shop knows nadia-cross-category, "
            "sofia-capability-gap, marco-gift-trap, luca-safe-abstention (or all)",
        ),
        (
            ["--eval-plan", "eval01-agent", "--repetitions", "2", "--confirm-paid"],
            "eval01-agent runs exactly 1 repetition, got --repetitions 2",
        ),
        (
            ["--eval-plan", "eval02-workflow", "--repetitions", "3", "--confirm-paid"],
            "eval02-workflow runs exactly 1 repetition, got --repetitions 3",
        ),
        (
            ["--eval-plan", "eval03-compare", "--repetitions", "101", "--confirm-paid"],
            "eval03-compare accepts --repetitions 1 to 100, got 101",
        ),
        (
            ["--eval-plan", "eval03-compare", "--repetitions", "0", "--confirm-paid"],
            "eval03-compare accepts --repetitions 1 to 100, got 0",
        ),
        (
            ["--eval-plan", "eval04-stochastic-agent", "--repetitions", "3", "--confirm-paid"],
            "eval04-stochastic-agent accepts --repetitions 4 to 100, got 3: four is the "
            "minimum, because the Wilson 95% lower bound of an all-success sample is 0.4385 "
            "at three and 0.5101 at four, and each scenario must clear 0.50",
        ),
        (
            ["--eval-plan", "eval05-stochastic-workflow", "--repetitions", "101", "--confirm-paid"],
            "eval05-stochastic-workflow accepts --repetitions 4 to 100, got 101",
        ),
        (
            ["--eval-plan", "eval06-safety-probes", "--scenario", "all", "--confirm-paid"],
            "eval06-safety-probes does not accept --scenario: the safety campaign targets the "
            "assistant, not a scenario",
        ),
        (
            ["--eval-plan", "eval06-safety-probes", "--repetitions", "1", "--confirm-paid"],
            "eval06-safety-probes does not accept --repetitions: the campaign's workload is "
            "fixed by its probes",
        ),
        (
            ["--eval-plan", "eval03-compare", "--repetitions", "2.5", "--confirm-paid"],
            "--repetitions must be a whole number, got '2.5'",
        ),
        (
            ["--eval-plan", "eval03-compare", "--repetitions", "three", "--confirm-paid"],
            "--repetitions must be a whole number, got 'three'",
        ),
        (
            ["--eval-plan", "eval01-agent"],
            "eval01-agent needs --confirm-paid: the plan calls paid model services",
        ),
        (
            ["--eval-plan", "eval06-safety-probes"],
            "eval06-safety-probes needs --confirm-paid: the plan calls paid model services",
        ),
        (
            ["--live-subjects-and-judge"],
            "eval03-compare (selected by --live-subjects-and-judge) needs --confirm-paid",
        ),
        (
            ["--live-subjects-and-judge", "--eval-plan", "eval01-agent"],
            "--live-subjects-and-judge is shorthand for --eval-plan eval03-compare; it cannot "
            "be combined with --eval-plan eval01-agent",
        ),
        (
            ["--all", "--eval-plan", "eval01-agent"],
            "--all cannot be combined with --eval-plan eval01-agent",
        ),
        (
            ["--all", "--live-subjects-and-judge"],
            "--all cannot be combined with --live-subjects-and-judge",
        ),
        (
            ["--self-test", "--ablate-catalogue"],
            "--self-test cannot be combined with --ablate-catalogue: the self-test needs the "
            "healthy catalogue",
        ),
        (
            ["--controls-only", "--self-test"],
            "--self-test cannot be combined with --controls-only",
        ),
        (
            ["--all", "--scenario", "nadia-cross-category"],
            "offline-suite does not accept --scenario: the canonical benchmark is fixed: two "
            "cases, two repetitions",
        ),
        (
            ["--self-test", "--repetitions", "2"],
            "offline-suite does not accept --repetitions: the canonical benchmark is fixed: "
            "two cases, two repetitions",
        ),
        (
            ["--all", "--provider", "openai"],
            "offline-suite does not accept --provider: it is an offline plan",
        ),
        (["--all", "--model", "gpt"], "offline-suite does not accept --model"),
        (
            ["--eval-plan", "eval01-agent", "--local-model", "m.gguf", "--confirm-paid"],
            "--local-model names a local model file, so it needs --provider local",
        ),
        (
            [
                "--eval-plan",
                "eval01-agent",
                "--provider",
                "azure",
                "--local-model",
                "m.gguf",
                "--confirm-paid",
            ],
            "--local-model names a local model file, which --provider azure would ignore",
        ),
        (
            ["--all", "--json-report", "r.out", "--html-report", "r.out"],
            "--json-report and --html-report both name r.out",
        ),
        (["--list-plans", "--all"], "--list-plans runs nothing, so it takes only --suite"),
        (["--scenario", "all"], "nothing to run: choose --all"),
        (["--suite", "no_such_module_xyz:SUITE", "--all"], "no module named 'no_such_module_xyz'"),
        (
            ["--suite", "vitrine._cli:NOPE", "--all"],
            "module 'vitrine._cli' has no attribute 'NOPE'",
        ),
        (
            ["--suite", "vitrine._cli:main", "--all"],
            "vitrine._cli.main is a function, not a vitrine",
        ),
        (["--suite", "not a module", "--all"], "--suite expects module:attr"),
    ],
)
def test_refusals_exit_2_and_name_the_rule(argv, expected, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2, err
    assert out == ""
    assert "vitrine: error: " in err
    assert expected in err


@pytest.mark.parametrize("plan", ["eval01-agent", "eval03-compare", "eval06-safety-probes"])
@pytest.mark.parametrize(
    ("flag", "reason"),
    [
        (["--self-test"], "the self-test proves the deterministic offline checks"),
        (["--controls-only"], "the registered controls perturb the offline evaluators"),
        (["--ablate-catalogue"], "catalogue ablation is an offline integrity proof"),
        (["--json-report", "r.json"], "it writes the offline suite's report"),
        (["--html-report", "r.html"], "it writes the offline suite's report"),
    ],
)
def test_live_and_safety_plans_refuse_the_offline_switches(plan, flag, reason, capsys):
    code, _, err = run(["--eval-plan", plan, *flag, "--confirm-paid"], capsys)
    assert code == 2
    kind = "safety" if plan.startswith("eval06") else "live"
    assert f"{plan} is a {kind} plan and does not accept {flag[0]}: {reason}" in err


def test_well_formed_requests_for_unbuilt_plans_are_refused_with_the_reason(
    tmp_path, monkeypatch, capsys
):
    (tmp_path / "unbuilt_suite.py").write_text(
        "from vitrine._plans.base import FunctionPlan, PlanKind\n"
        "from vitrine._suite import Suite\n"
        "SUITE = Suite('unbuilt', {'later-plan': FunctionPlan('later-plan', PlanKind.LIVE, 'd', "
        "paid=True, unavailable_reason='the live lane arrives in the next release')}, {})\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["--suite", "unbuilt_suite:SUITE", "--eval-plan", "later-plan", "--confirm-paid"]
    code, _, err = run(argv, capsys)
    assert code == 2
    assert "later-plan is not available: the live lane arrives in the next release" in err


def test_list_plans_shows_every_plan_with_its_rules(capsys):
    code, out, err = run(["--list-plans"], capsys)
    assert code == 0, err
    for name in (
        "offline-suite",
        "eval01-agent",
        "eval02-workflow",
        "eval03-compare",
        "eval04-stochastic-agent",
        "eval05-stochastic-workflow",
        "eval06-safety-probes",
    ):
        assert name in out
    assert "repetitions 4-100, default 5" in out
    from vitrine._suite import load_suite

    for declared in load_suite().plans.values():
        if not declared.available:
            assert f"unavailable: {declared.unavailable_reason}" in out
    for scenario in ("nadia-cross-category", "luca-safe-abstention"):
        assert scenario in out


def test_a_plan_runs_and_its_summary_and_exit_code_come_back(toy, capsys):
    code, out, err = run(["--suite", f"{toy}:SUITE", "--all", "--output", "somewhere"], capsys)
    assert code == 0, err
    assert "toy summary line" in out
    assert f"artifact: {Path('runs') / 'toy'}" in out
    assert "vitrine: toy-offline exit 0 (pass)" in out
    request = sys.modules[toy].REQUESTS[-1]
    assert request.plan == "toy-offline"
    assert request.scenarios == ()
    assert request.output == Path("somewhere")
    assert request.console is True
    assert request.mode == "suite"


def test_a_model_call_cache_refuses_inside_a_paid_plan_only(toy, capsys):
    run(["--suite", f"{toy}:SUITE", "--eval-plan", "toy-offline"], capsys)
    run(["--suite", f"{toy}:SUITE", "--eval-plan", "toy-live", "--confirm-paid"], capsys)
    offline, live = sys.modules[toy].CACHE_REFUSALS
    assert offline is None
    assert live is not None and "paid plan 'toy-live'" in live


def test_fdr_reaches_a_live_plan_and_is_refused_elsewhere(toy, capsys):
    code, _, err = run(
        ["--suite", f"{toy}:SUITE", "--eval-plan", "toy-live", "--confirm-paid", "--fdr"],
        capsys,
    )
    assert code == 3, err
    assert sys.modules[toy].REQUESTS[-1].fdr is True
    code, _, err = run(["--suite", f"{toy}:SUITE", "--all", "--fdr"], capsys)
    assert code == 2
    assert "toy-offline does not accept --fdr" in err and "bh_p" in err


def test_the_attribute_defaults_to_SUITE(toy, capsys):
    code, _, err = run(["--suite", toy, "--self-test"], capsys)
    assert code == 0, err
    assert sys.modules[toy].REQUESTS[-1].mode == "self-test"


def test_a_measured_failure_exits_1(toy, capsys):
    code, out, _ = run(["--suite", f"{toy}:SUITE", "--eval-plan", "toy-fails"], capsys)
    assert code == 1
    assert "a gate failed" in out
    assert "exit 1 (measured failure)" in out


def test_live_request_resolves_scenarios_and_default_repetitions(toy, capsys):
    code, _, err = run(
        ["--suite", f"{toy}:SUITE", "--eval-plan", "toy-live", "--confirm-paid"], capsys
    )
    assert code == 3, err
    request = sys.modules[toy].REQUESTS[-1]
    assert request.scenarios == ("alpha", "beta")
    assert request.repetitions == 2
    assert request.provider is None


def test_a_local_provider_needs_no_paid_confirmation(toy, capsys):
    argv = ["--suite", f"{toy}:SUITE", "--eval-plan", "toy-live", "--provider", "local"]
    code, _, err = run([*argv, "--local-model", "m.gguf", "--scenario", "beta"], capsys)
    assert code == 3, err
    request = sys.modules[toy].REQUESTS[-1]
    assert request.provider == "local"
    assert request.local_model == Path("m.gguf")
    assert request.scenarios == ("beta",)
    assert request.paid_confirmed


def test_an_exception_inside_a_plan_exits_4_sanitized_without_traceback(toy, capsys, monkeypatch):
    monkeypatch.delenv("VITRINE_DEBUG", raising=False)
    code, _, err = run(["--suite", f"{toy}:SUITE", "--eval-plan", "toy-boom"], capsys)
    assert code == 4
    assert "vitrine: error: toy-boom failed unexpectedly: RuntimeError" in err
    assert "secret.example.com" not in err
    assert "sk-abcdefghijklmnop" not in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_vitrine_debug_shows_the_traceback(toy, capsys, monkeypatch):
    monkeypatch.setenv("VITRINE_DEBUG", "1")
    code, _, err = run(["--suite", f"{toy}:SUITE", "--eval-plan", "toy-boom"], capsys)
    assert code == 4
    assert "Traceback" in err


def test_an_interrupted_plan_exits_4(toy, capsys):
    code, _, err = run(["--suite", f"{toy}:SUITE", "--eval-plan", "toy-interrupt"], capsys)
    assert code == 4
    assert "toy-interrupt interrupted" in err


def test_a_plan_returning_the_wrong_type_is_an_infrastructure_failure(toy, capsys):
    code, _, err = run(["--suite", f"{toy}:SUITE", "--eval-plan", "toy-not-an-outcome"], capsys)
    assert code == 4
    assert "returned int, not a PlanOutcome" in err


def test_a_suite_module_that_breaks_on_import_is_an_infrastructure_failure(
    tmp_path, monkeypatch, capsys
):
    name = f"broken_suite_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text("raise RuntimeError('half-written')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run(["--suite", f"{name}:SUITE", "--all"], capsys)
    assert code == 4
    assert "importing the module failed (RuntimeError: half-written)" in err


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["--bogus"], [], ["--eval-plan", "eval01-agent"], ["--all", "--scenario", "x"]],
)
def test_help_and_refusals_import_no_heavy_module(argv):
    result = _python(
        f"""
        import sys
        from vitrine._cli import main
        main({argv!r})
        heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))
        print('HEAVY=' + ','.join(heavy))
        """
    )
    assert result.returncode == 0, result.stderr
    assert "HEAVY=\n" in result.stdout


def test_python_dash_m_vitrine_help():
    result = subprocess.run(
        [sys.executable, "-m", "vitrine", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "--eval-plan NAME" in result.stdout


def test_console_script_exits_2_without_arguments():
    script = Path(sys.executable).with_name("vitrine")
    if not script.exists():
        pytest.skip("the vitrine console script is not installed in this environment")
    result = subprocess.run([str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert "vitrine: error: nothing to run" in result.stderr


def test_an_undeclared_offline_mode_is_refused_for_a_user_suite(toy, capsys):
    code, out, err = run(["--suite", toy, "--controls-only"], capsys)
    assert code == 2
    assert out == ""
    assert "suite toy does not provide --controls-only" in err
    assert sys.modules[toy].REQUESTS == []


@pytest.mark.parametrize("flag", ["--live-subjects-and-judge", "--ablate-catalogue"])
def test_the_shops_own_flags_are_refused_for_another_suite_naming_both(toy, flag, capsys):
    code, out, err = run(["--suite", toy, flag, "--confirm-paid"], capsys)
    assert code == 2
    assert out == ""
    assert f"unrecognized arguments: {flag} (neither vitrine nor suite toy has that flag" in err
    assert "the suite's own flags: none" in err
    assert sys.modules[toy].REQUESTS == []


def test_help_describes_the_modes_without_naming_the_shop(capsys):
    code, out, _ = run(["--help"], capsys)
    text = " ".join(out.split())  # argparse wraps to the terminal width
    assert code == 0
    assert "run the suite's self-test mode (suites that declare it)" in text
    assert "SKU" not in text and "eval03-compare" not in text and "ablate" not in text
