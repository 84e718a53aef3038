"""Tests as killers: pytest run in-process against the suite's service, mutant still planted.

Some defects only show over the running service (a header, a streamed event, a session rule).
The worker starts the suite's ``service`` component on a free loopback port *after* planting
the mutant, so the app it builds is the mutated one, points ``EVAL_API_URL`` at it and runs
each pytest selection in this same process, recording how every test ended.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vitrine._suite import Suite
from vitrine.errors import ServiceTestError
from vitrine.mutants._statuses import test_key

__all__ = ["ServiceTestError", "ServiceTests", "run_service_tests", "unreachable_tests"]

_START_TIMEOUT_S = 30.0
_STOP_TIMEOUT_S = 10.0
# pytest options whose value is the next argument, so that value is never read as a path.
_VALUE_OPTIONS = frozenset(
    {"-m", "-k", "-p", "-o", "-W", "-c", "--ignore", "--deselect", "--rootdir", "--confcutdir"}
)


@dataclass(frozen=True, slots=True)
class ServiceTests:
    """``test:NODEID`` -> outcome, and the case ids a test declares (its other names)."""

    outcomes: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, list[str]] = field(default_factory=dict)


class _Outcomes:
    """pytest plugin: the outcome of every test, the worst phase winning."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}
        self.cases: dict[str, list[str]] = {}

    def pytest_runtest_logreport(self, report: Any) -> None:
        # A case id (``@pytest.mark.case("TC-P1-003")``) is how a catalogue names the test.
        cases = [str(value) for key, value in report.user_properties if key == "case"]
        if cases:
            self.cases[report.nodeid] = cases
        previous = self.outcomes.get(report.nodeid)
        if report.failed:
            # A failing fixture is not the test failing; it is reported apart.
            self.outcomes[report.nodeid] = "failed" if report.when == "call" else "error"
        elif previous in {"failed", "error"}:
            return
        elif report.skipped:
            self.outcomes[report.nodeid] = "skipped"
        elif report.when == "call":
            self.outcomes[report.nodeid] = "passed"


def unreachable_tests(selection: Sequence[str], cwd: Path) -> str | None:
    """Why ``selection`` cannot run from ``cwd`` (a path in it names nothing there), or None.

    pytest resolves a relative path against the working directory, so a catalogue that names
    ``tests/behaviour`` works from its checkout and nowhere else; ``--pyargs`` names packages
    instead, which resolve from any directory.
    """
    if "--pyargs" in selection:
        return None
    missing = []
    previous = ""
    for argument in selection:
        target = argument.split("::", 1)[0]
        # Only what reads as a path is checked: an option's value ("-n 2") is not one.
        looks_like_path = "/" in target or os.sep in target or target.endswith(".py")
        an_option = argument.startswith("-") or previous in _VALUE_OPTIONS
        if looks_like_path and not an_option and not (cwd / target).exists():
            missing.append(argument)
        previous = argument
    if not missing:
        return None
    return (
        f"its tests {', '.join(missing)} are not found from the working directory {cwd}: run "
        "from the directory they are relative to, or ship them in a package and name it with "
        "--pyargs"
    )


def run_service_tests(suite: Suite, selections: Sequence[Sequence[str]]) -> ServiceTests:
    """Serve the suite's assistant and run each selection, recording every test's outcome."""
    import pytest

    found = ServiceTests()
    with _serving(suite) as url:
        os.environ["EVAL_API_URL"] = url
        os.environ["VITRINE_REQUIRE_SERVICE"] = "1"
        for selection in selections:
            collector = _Outcomes()
            code = pytest.main([*selection, "-p", "no:cacheprovider", "-q"], plugins=[collector])
            # Any pytest exit but "all passed" and "some failed" means it could not judge.
            if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
                raise ServiceTestError(
                    f"the tests {' '.join(selection)} could not run (pytest exit {int(code)})"
                )
            for node, state in collector.outcomes.items():
                found.outcomes[test_key(node)] = state
            for node, cases in collector.cases.items():
                found.aliases[test_key(node)] = cases
    return found


@contextmanager
def _serving(suite: Suite) -> Iterator[str]:
    import uvicorn

    from vitrine.service._app import create_app
    from vitrine.service._protocol import ServiceOptions

    assistant = suite.component("service")(ServiceOptions())
    server = uvicorn.Server(
        uvicorn.Config(create_app(assistant), log_level="warning", access_log=False, lifespan="on")
    )
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                raise ServiceTestError("the suite's service did not start on a loopback port")
            time.sleep(0.05)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(_STOP_TIMEOUT_S)
