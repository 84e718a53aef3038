"""A small real store for the board's tests: sealed benchmark runs and a red-team run.

The runs are written by vitrine itself (``vitrine.evaluate`` and ``vitrine redteam run``), so
the board is tested against exactly what the store holds in use.
"""

from __future__ import annotations

import socket
from pathlib import Path

import vitrine
from vitrine import (
    Arm,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    Observation,
    SubjectResponse,
    admit,
    check,
)

HOSTILE = "<script>alert('board')</script>"


@check("mentions-case")
def mentions_case(case, response):
    if response.answer is None:
        return Observation.not_applicable("the subject produced no answer object")
    passed = case.input.lower() in response.answer.lower()
    return Observation.measured(passed, passed=passed, evidence={"answer": response.answer[:80]})


def definition(version: str = "1.0.0") -> BenchmarkDefinition:
    return BenchmarkDefinition(
        "board-demo",
        version,
        cases=[Case("hello", "hello"), Case("bye", "bye"), Case("xss", "xss")],
        checks=[admit(mentions_case, ChanceFloor.not_derivable("a deterministic predicate"))],
    )


async def good(case):
    # The answer to the "xss" case carries markup: every page must show it as text.
    suffix = f" {HOSTILE}" if case.id == "xss" else ""
    return SubjectResponse(answer=f"you said {case.input}{suffix}")


async def forgetful(case):
    # Passes only "bye": against `good` that is one unchanged case and two regressions.
    return SubjectResponse(answer="bye" if case.id == "bye" else "hmm")


def build_store(root: Path) -> None:
    vitrine.evaluate(
        definition(),
        [Arm("good", good), Arm("forgetful", forgetful)],
        repetitions=1,
        store=root,
        reference="good",
    )
    vitrine.evaluate(definition("2.0.0"), [Arm("good", good)], repetitions=1, store=root)


def build_redteam(root: Path) -> None:
    from vitrine.redteam._command import main as redteam

    code = redteam(["run", "--target", "vulnerable", "--output", str(root)])
    assert code == 1, "the vulnerable calibration target must be compromised"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
