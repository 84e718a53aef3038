"""The interactive plan selector, driven through a real pseudo-terminal."""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import time
import uuid

import pytest

from vitrine._selector import SelectorCancelled, choose
from vitrine._suite import load_suite

TOY = '''
import dataclasses

from vitrine._outcomes import ExitCode
from vitrine._plans.base import PlanKind, PlanOutcome, RepetitionRule, plan
from vitrine._suite import ScenarioInfo, Suite


@plan("offline", description="the free lane")
async def offline(request):
    return PlanOutcome(ExitCode.PASS, [f"offline ran {request.repetitions}"])


@plan(
    "stochastic",
    kind=PlanKind.LIVE,
    paid=True,
    accepts_scenario=True,
    repetitions=RepetitionRule.between(4, 100, 5, "four is the Wilson minimum"),
)
async def stochastic(request):
    """Repeated paid trials."""
    return PlanOutcome(
        ExitCode.PASS, [f"stochastic ran {request.scenarios} x {request.repetitions}"]
    )


def _workload(scenarios, repetitions):
    trials = len(scenarios) * 2 * repetitions
    return [
        f"{len(scenarios)} scenario(s) x 2 arm(s) x {repetitions} repetition(s) = {trials} trials",
        f"judge calls: at most {trials}",
    ]


stochastic = dataclasses.replace(stochastic, workload=_workload)

SUITE = Suite(
    name="toy",
    plans={"offline": offline, "stochastic": stochastic},
    scenarios={"alpha": ScenarioInfo("alpha", "Alpha", "the first case", "what is alpha?")},
    default_plan="offline",
)
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    name = f"selector_toy_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(TOY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, tmp_path
    sys.modules.pop(name, None)


def scripted(answers):
    queue = list(answers)

    def ask(prompt):
        if not queue:
            raise EOFError
        return queue.pop(0)

    return ask


def test_answers_become_the_flags_a_paid_stochastic_plan_needs(toy):
    suite = load_suite(f"{toy[0]}:SUITE")
    out = io.StringIO()
    options = choose(suite, scripted(["2", "1", "31", "3", "4", "yes"]), out)
    text = out.getvalue()
    assert 'query: "what is alpha?"' in text and "the first case" in text
    assert "Repetitions: 4 to 30" in text  # the plan's minimum and the selector's 30
    assert text.count("please answer a number from 4 to 30") == 2  # 31 and 3 refused
    assert (options.eval_plan, options.scenario, options.repetitions) == (
        "stochastic",
        "alpha",
        "4",
    )
    assert options.confirm_paid is True


def _asking(answers, out):
    """Answers in order; records what the screen held when the confirmation was asked."""
    seen = {}
    ask = scripted(answers)

    def record(prompt):
        if "'yes'" in prompt:
            seen["before_yes"] = out.getvalue()
        return ask(prompt)

    return record, seen


def test_the_whole_workload_shows_before_the_paid_confirmation_is_asked(toy):
    suite = load_suite(f"{toy[0]}:SUITE")
    out = io.StringIO()
    ask, seen = _asking(["2", "0", "6", "yes"], out)
    choose(suite, ask, out)
    before = seen["before_yes"]
    assert "1 scenario(s) x 2 arm(s) x 6 repetition(s) = 12 trials" in before
    assert "judge calls: at most 12" in before


def test_the_shop_live_plans_show_trials_and_judge_calls_before_yes(monkeypatch):
    for name in ("AZURE_OPENAI_ENDPOINT", "VITRINE_SUBJECT_MAX_OUTPUT_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    suite = load_suite("vitrine_shop.evals.suite:SUITE")
    number = [p for p in suite.plans.values() if p.available].index(suite.plans["eval03-compare"])
    out = io.StringIO()
    ask, seen = _asking([str(number + 1), "0", "3", "no"], out)
    with pytest.raises(SelectorCancelled, match="not confirmed"):
        choose(suite, ask, out)
    before = " ".join(seen["before_yes"].split())
    scenarios = len(suite.scenarios)
    trials = scenarios * 2 * 3
    assert f"{scenarios} scenario(s) x 2 arm(s) x 3 repetition(s) = {trials} subject trial(s)" in (
        before
    )
    assert f"judge calls: at most {trials}" in before
    assert "output-token ceilings: subject 4,000 per request" in before


def test_a_paid_plan_not_confirmed_runs_nothing(toy):
    suite = load_suite(f"{toy[0]}:SUITE")
    with pytest.raises(SelectorCancelled, match="not confirmed"):
        choose(suite, scripted(["2", "0", "", "no"]), io.StringIO())


def _drive(argv, answers, env):
    """Run argv on a pseudo-terminal, answering each prompt; return (exit code, screen)."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        argv, stdin=terminal, stdout=terminal, stderr=terminal, env=env, close_fds=True
    )
    os.close(terminal)
    screen = b""
    pending = list(answers)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
            if pending and screen.rstrip().endswith(b":"):
                os.write(controller, pending.pop(0).encode() + b"\n")
        elif process.poll() is not None:
            break
    process.wait(timeout=30)
    os.close(controller)
    return process.returncode, screen.decode(errors="replace")


def test_the_selector_runs_in_a_terminal_through_the_normal_dispatch(toy, tmp_path):
    name, folder = toy
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env["VITRINE_HOME"] = str(tmp_path / "store")
    code, screen = _drive([sys.executable, "-m", "vitrine", "--suite", f"{name}:SUITE"], ["1"], env)
    assert "1. offline" in screen and "2. stochastic" in screen
    assert "offline ran" in screen
    assert "vitrine: offline exit 0 (pass)" in screen
    assert code == 0


def test_without_a_terminal_no_arguments_is_still_a_usage_error():
    result = subprocess.run(
        [sys.executable, "-m", "vitrine"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "nothing to run" in result.stderr
