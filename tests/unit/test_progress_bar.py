"""Step progress: plain lines with counts and the time left off a terminal, a transient bar on
one, silence without a destination; and each long command counts its own steps with it."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

import pytest

from vitrine._bench.events import RunCompleted, RunStarted, TrialCompleted
from vitrine._progress_bar import StepProgress, format_eta
from vitrine.controls import ControlRegistry, ControlSpec, ScopeClass
from vitrine.controls._runner import control_progress
from vitrine.reports._live import LiveProgress


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_mode_prints_one_line_per_step_with_counts_and_the_time_left() -> None:
    lines: list[str] = []
    clock = _Clock()
    steps = StepProgress("mutants", write=lines.append, clock=clock)
    steps.begin(3)
    clock.now += 2.0
    steps.step("NC-01", "killed", duration_s=2.0)
    clock.now += 2.0
    steps.step("NC-02", "survived", duration_s=1.5)
    clock.now += 70.0
    steps.step("NC-03", "killed", duration_s=70.0)
    assert lines == [
        "mutants: [1/3] NC-01 killed (2.0 s; about 4.0 s left)",
        "mutants: [2/3] NC-02 survived (1.5 s; about 2.0 s left)",
        "mutants: [3/3] NC-03 killed (1m10s; done)",
    ]


def test_a_skipped_step_is_counted_but_sets_no_pace() -> None:
    lines: list[str] = []
    clock = _Clock()
    steps = StepProgress("controls", write=lines.append, clock=clock)
    steps.begin(3)
    steps.skip("A", "not measured")
    clock.now += 10.0
    steps.step("B", "caught")
    assert lines == [
        "controls: [1/3] A not measured",
        "controls: [2/3] B caught (about 10.0 s left)",
    ]
    assert format_eta(7200.0, 1, 1) == "about 2h00m left"


def test_off_a_terminal_the_lines_go_to_the_stream_without_carriage_returns() -> None:
    stream = io.StringIO()
    with StepProgress.on(stream, "vitrine rag") as steps:
        steps.begin(2)
        steps.note("vitrine rag: rag-01 answered")
        steps.step("rag-01", "scored")
        steps.step("rag-02", "scored")
    text = stream.getvalue()
    assert "\r" not in text and "\x1b" not in text
    assert text.splitlines()[0] == "vitrine rag: rag-01 answered"
    assert text.splitlines()[-1].startswith("vitrine rag: [2/2] rag-02 scored (")


def test_on_a_terminal_a_bar_is_drawn_with_counts_and_then_removed() -> None:
    stream = _Terminal()
    steps = StepProgress.on(stream, "mutants")
    steps.begin(3)
    assert steps.drawing
    steps.step("NC-01", "killed", duration_s=1.0)
    steps.step("NC-02", "killed", duration_s=1.0)
    steps.close()
    text = stream.getvalue()
    assert "━" in text and "2/3" in text and "NC-02 killed" in text
    assert "[1/3]" not in text  # no plain line beside the bar
    assert text.endswith("\x1b[2K")  # transient: the bar's line is erased at the end
    assert not steps.drawing


@pytest.mark.parametrize("steps", [StepProgress.on(None, "x"), StepProgress.lines("x", None)])
def test_without_a_destination_nothing_is_said(steps: StepProgress, capsys) -> None:
    steps.begin(2)
    steps.note("a note")
    steps.step("a", "done")
    steps.close()
    assert not steps.enabled
    assert capsys.readouterr() == ("", "")


def test_importing_vitrine_does_not_load_rich() -> None:
    code = "import sys, vitrine, vitrine._progress_bar; print('rich' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


# --- the commands ------------------------------------------------------------------------------


def test_the_mutants_command_counts_each_mutant_on_stderr(tmp_path, capsys, monkeypatch) -> None:
    from vitrine import _cli as cli

    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "fixtures" / "mutants"))
    monkeypatch.delenv("VITRINE_HOME", raising=False)
    only = "add-off-by-one,greet-shouts"
    argv = ["mutants", "--suite", "toy_suite:SUITE", "--only", only, "--output", str(tmp_path)]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    counted = [line for line in err.splitlines() if line.startswith("mutants: [")]
    assert sorted(line.split()[2] for line in counted) == ["add-off-by-one", "greet-shouts"]
    assert counted[0].startswith("mutants: [1/2] ") and "left)" in counted[0]
    assert counted[1].startswith("mutants: [2/2] ") and counted[1].endswith("; done)")
    assert "mutants: [" not in out


def test_the_live_display_counts_the_trials_of_each_run() -> None:
    stream = io.StringIO()
    display = LiveProgress(stream)
    display.handle(RunStarted("run-1", "eval-01", "agent", 1, cases=2, checks=3))
    display.handle(TrialCompleted("run-1", "case-a", 1200.0))
    display.handle(TrialCompleted("run-1", "case-b", 800.0, error="provider-timeout"))
    display.handle(RunCompleted("run-1", "PASS", 2.0, None))
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("  trial: [1/2] case-a observed (1.2 s; about ")
    assert lines[1].startswith("  trial: [2/2] case-b not measured (0.8 s; done)")
    assert lines[2].strip().startswith("run run-1 PASS")
    assert len(lines) == 3  # one line per trial, none repeated by the run line


def test_the_rag_command_counts_each_scored_item() -> None:
    from vitrine.rag._command import _progress_steps

    lines: list[str] = []
    steps = StepProgress.lines("vitrine rag", lines.append)
    steps.begin(2)
    report = _progress_steps(steps, live=True)
    for event in ("rag-01 answered", "rag-01 scored", "rag-02 answered", "rag-02 scored"):
        report(0, 2, event)
    assert lines[0] == "vitrine rag: rag-01 answered"
    assert lines[1].startswith("vitrine rag: [1/2] rag-01 scored (")
    assert lines[3].startswith("vitrine rag: [2/2] rag-02 scored (done)")
    quiet: list[str] = []
    offline = StepProgress.lines("vitrine rag", quiet.append)
    offline.begin(1)
    _progress_steps(offline, live=False)(0, 1, "rag-01 answered")
    assert quiet == []  # offline answers take no time worth a line


def test_the_adaptive_campaign_counts_each_conversation() -> None:
    from vitrine.redteam._adaptive import ScriptedAttacker, load_goals, run_adaptive_campaign
    from vitrine_shop.redteam.target import REDTEAM_TARGET

    goals = list(load_goals(REDTEAM_TARGET.profile).values())[:2]
    lines: list[str] = []
    asyncio.run(
        run_adaptive_campaign(
            goals,
            "goat",
            REDTEAM_TARGET.factory("vulnerable"),
            ScriptedAttacker(),
            progress=StepProgress.lines("vitrine redteam adaptive-goat", lines.append),
        )
    )
    assert len(lines) == 2
    assert lines[0].startswith(f"vitrine redteam adaptive-goat: [1/2] {goals[0].id} compromised")
    assert " turn(s) (" in lines[0] and lines[1].endswith("; done)")


def _spec(control_id: str) -> ControlSpec:
    return ControlSpec(
        id=control_id,
        scope=ScopeClass.PRODUCTION_OBSERVATION,
        name="one off",
        category="arithmetic",
        target="the value",
        mutation="add one",
        producer="a constant",
        evaluator="equals one",
        tranche="v1",
    )


def _registry() -> ControlRegistry:
    registry = ControlRegistry()
    registry.register(
        _spec("NC-01"), observe=lambda: 1, perturb=lambda x: x + 1, evaluate=lambda x: x == 1
    )
    # A perturbation that changes nothing: the control is not caught.
    registry.register(
        _spec("NC-02"), observe=lambda: 1, perturb=lambda x: x, evaluate=lambda x: x == 1
    )
    return registry


def test_registered_controls_are_counted_inside_control_progress() -> None:
    lines: list[str] = []
    with control_progress(StepProgress.lines("controls", lines.append)):
        results = asyncio.run(_registry().run(concurrency=1))
    assert [r.caught for r in results] == [True, False]
    assert lines[0].startswith("controls: [1/2] NC-01 caught (")
    assert lines[1].startswith("controls: [2/2] NC-02 not caught (") and lines[1].endswith("done)")


def test_outside_control_progress_the_controls_say_nothing(capsys) -> None:
    asyncio.run(_registry().run())
    assert capsys.readouterr() == ("", "")


def test_the_offline_suite_counts_its_controls_on_stderr(tmp_path, capsys) -> None:
    from vitrine._cli import main

    assert main(["--all", "--output", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    counted = [line for line in err.splitlines() if line.startswith("controls: [")]
    assert counted and counted[-1].endswith("done)")
    total = counted[0].split("/")[1].split("]")[0]
    assert len(counted) == int(total)
    assert "controls: [" not in out


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_on_a_real_terminal_the_offline_suite_draws_a_bar_and_clears_it(tmp_path) -> None:
    """`vitrine --all` with its stderr on a pseudo-terminal, as a person's shell gives it: rich
    sees a terminal of its own accord (nothing here pretends to be one)."""
    import os
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    env.pop("CI", None)
    command = [sys.executable, "-m", "vitrine", "--all", "--output", str(tmp_path)]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed its side: Linux answers EIO
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert child.wait(timeout=120) == 0
    text = seen.decode(errors="replace")
    assert "━" in text and "controls" in text  # the bar, with its label
    assert "controls: [" not in text  # no plain lines on a terminal
    assert "\x1b[2K" in text  # the bar's line erased when the work ended
