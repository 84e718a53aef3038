"""A suite's own flags: its modes and shorthands on the plan commands, its options on vitrine
serve. Offered only while that suite is loaded, refused by name for any other."""

from __future__ import annotations

import socket
import sys
import uuid
from pathlib import Path

import pytest

from vitrine._cli import main
from vitrine._outcomes import ExitCode

FLAGGED = """
from vitrine._outcomes import ExitCode
from vitrine._plans.base import FunctionPlan, PlanKind, PlanOutcome, plan
from vitrine._suite import Mode, ServiceFlag, Suite

REQUESTS = []


@plan("offline")
async def offline(request):
    REQUESTS.append(request)
    return PlanOutcome(ExitCode.PASS, [f"mode {request.mode}"])


@plan("live", kind=PlanKind.LIVE, paid=True)
async def live(request):
    REQUESTS.append(request)
    return PlanOutcome(ExitCode.NOT_MEASURED)


def build(options):
    # Says what it was given, so a test can read it in the refusal.
    raise ValueError(f"given {dict(options.suite_options)}")


SUITE = Suite(
    "flagged",
    {"offline": offline, "live": live},
    {},
    default_plan="offline",
    components={"service": build},
    modes=[Mode("shuffle-cases", "run the cases in a shuffled order")],
    aliases={"--live-now": "live"},
    service_options=[
        ServiceFlag("--shape", "the shape served", choices=("round", "square"), default="round"),
        ServiceFlag("--quiet", "say less", kind="on"),
    ],
)

CLASHING = Suite("clashing", {"offline": offline}, {}, default_plan="offline", modes={"all"})
SERVE_CLASHING = Suite(
    "serve-clashing",
    {"offline": offline},
    {},
    service_options=[ServiceFlag("--port", "a port of its own")],
)
"""


@pytest.fixture
def flagged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A suite module declaring a mode, a shorthand and two serve options; yields its name."""
    name = f"flagged_suite_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(FLAGGED, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, " ".join(captured.err.split())


def test_a_suites_own_mode_runs_its_plan_with_the_mode_named(flagged, capsys):
    code, out, err = _run(["--suite", flagged, "--shuffle-cases"], capsys)
    assert code == 0, err
    assert "mode shuffle-cases" in out
    assert sys.modules[flagged].REQUESTS[-1].mode == "shuffle-cases"


def test_a_suites_own_shorthand_selects_its_plan(flagged, capsys):
    code, _, err = _run(["--suite", flagged, "--live-now"], capsys)
    assert code == 2
    assert "live (selected by --live-now) needs --confirm-paid" in err
    code, _, err = _run(["--suite", flagged, "--live-now", "--confirm-paid"], capsys)
    assert code == ExitCode.NOT_MEASURED, err
    assert sys.modules[flagged].REQUESTS[-1].plan == "live"


def test_the_help_of_a_named_suite_lists_its_flags_in_its_words(flagged, capsys):
    code, out, _ = _run(["--suite", flagged, "--help"], capsys)
    text = " ".join(out.split())
    assert code == 0
    assert "--shuffle-cases run the cases in a shuffled order (suite flagged)" in text
    assert "--live-now shorthand for --eval-plan live (suite flagged; still requires" in text
    assert "--ablate-catalogue" not in text


def test_another_suites_flags_are_refused_naming_the_suite_and_its_flags(flagged, capsys):
    code, out, err = _run(["--suite", flagged, "--ablate-catalogue"], capsys)
    assert code == 2 and out == ""
    assert (
        "unrecognized arguments: --ablate-catalogue (neither vitrine nor suite flagged has "
        "that flag; the suite's own flags: --shuffle-cases, --live-now)"
    ) in err


def test_a_suite_flag_that_shadows_one_of_vitrines_is_a_broken_suite(flagged, capsys):
    code, _, err = _run(["--suite", f"{flagged}:CLASHING", "--all"], capsys)
    assert code == ExitCode.INFRASTRUCTURE
    assert "suite clashing declares --all, which is one of vitrine's own flags" in err
    code, _, err = _run(["serve", "--suite", f"{flagged}:SERVE_CLASHING"], capsys)
    assert code == ExitCode.INFRASTRUCTURE
    assert "suite serve-clashing declares --port" in err


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serve_hands_the_suites_options_to_its_factory_at_their_defaults(flagged, capsys):
    port = str(_free_port())
    code, _, err = _run(["serve", "--suite", flagged, "--port", port], capsys)
    assert code == 2
    assert "given {'shape': 'round', 'quiet': False}" in err
    argv = ["serve", "--suite", flagged, "--port", port, "--shape", "square", "--quiet"]
    code, _, err = _run(argv, capsys)
    assert code == 2
    assert "given {'shape': 'square', 'quiet': True}" in err


def test_serve_refuses_an_option_the_suite_does_not_declare(flagged, capsys):
    code, _, err = _run(["serve", "--suite", flagged, "--architecture", "agent"], capsys)
    assert code == 2
    assert "--architecture agent (neither vitrine nor suite flagged has that flag" in err
    assert "the suite's own flags: --shape, --quiet" in err
    code, _, err = _run(["serve", "--suite", flagged, "--shape", "oval"], capsys)
    assert code == 2
    assert "argument --shape: invalid choice: 'oval'" in err


def test_serve_help_lists_the_named_suites_options_only(flagged, capsys):
    code, out, _ = _run(["serve", "--help"], capsys)
    assert code == 0
    for shop_flag in ("--architecture", "--regress", "--no-front-desk", "--list-personas"):
        assert shop_flag not in out
    assert "vitrine serve --suite MODULE:ATTR --help" in " ".join(out.split())
    code, out, _ = _run(["serve", "--suite", "vitrine_shop.evals.suite:SUITE", "--help"], capsys)
    assert code == 0
    for shop_flag in ("--architecture", "--regress", "--no-front-desk", "--list-personas"):
        assert shop_flag in out
    code, out, _ = _run(["serve", "--suite", flagged, "--help"], capsys)
    assert "options of suite flagged" in out and "--shape {round,square}" in out
