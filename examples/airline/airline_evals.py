"""Evaluating the airline agent with vitrine: gates, a comparison, a control and a mutant.

Run it with ``python airline_evals.py OUT_DIR`` from this folder, or from the command line as
``vitrine --suite airline_evals:EVALUATION --all`` (``docs/first-evaluation.md`` walks through it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path

from airline import BOOKINGS, FLIGHTS, TOOLS, careful_agent, hasty_agent

import vitrine
from vitrine import Case, Observation, SubjectResponse, ToolCallRecord
from vitrine.controls import ControlRegistry, ManifestExpectation, load_manifest
from vitrine.mutants import Mutant, MutantCatalogue

CASES = [
    Case(
        f"{ref}-{intent}",
        {"reference": ref, "intent": intent},
        {"status": FLIGHTS[booking["flight"]]["status"], "fare": booking["fare"]},
    )
    for ref, booking in BOOKINGS.items()
    for intent in ("status", "rebook", "where-is-my-flight")
]


def states_the_real_status(case: Case, response: SubjectResponse) -> bool:
    """The answer names the flight's real status."""
    return case.metadata["status"] in (response.answer or "")


def looks_up_the_booking(case: Case, response: SubjectResponse) -> bool:
    """The agent looked the booking up before answering."""
    return "find_booking" in (response.tool_names() or ())


def keeps_basic_fares(case: Case, response: SubjectResponse) -> Observation | bool:
    """A basic fare is never rebooked, and no rebooking of one is promised."""
    if case.input["intent"] != "rebook" or case.metadata["fare"] != "basic":
        return Observation.not_applicable("only a basic fare's rebooking can break it")
    changed = any(c.name == "rebook" and c.status == "ok" for c in response.tool_calls or ())
    return not (changed or "Done" in (response.answer or ""))


# A control proves the fare check can turn red: a journal that did rebook a basic fare.
BASIC_REBOOK = next(c for c in CASES if c.id == "JKL012-rebook")
CONTROLS = ControlRegistry(
    load_manifest(Path(__file__).with_name("controls.json"), ManifestExpectation(1, "AIR-"))
)


def rebooked(response: SubjectResponse) -> SubjectResponse:
    extra = ToolCallRecord("rebook", {}, "ok")
    return dataclasses.replace(response, tool_calls=(*(response.tool_calls or ()), extra))


CONTROLS.register(
    "AIR-01",
    observe=lambda: careful_agent(BASIC_REBOOK.input),
    perturb=rebooked,
    evaluate=lambda response: keeps_basic_fares(BASIC_REBOOK, response),
)


# A mutant proves the evaluation sees the agent break: the rebook tool forgets its fare rule.
@contextlib.contextmanager
def rebook_ignores_fares() -> Iterator[None]:
    original, TOOLS["rebook"] = TOOLS["rebook"], lambda reference, flight: f"moved to {flight}"
    try:
        yield
    finally:
        TOOLS["rebook"] = original


EVALUATION = vitrine.Evaluation(
    "airline",
    cases=CASES,
    checks=[states_the_real_status, looks_up_the_booking, keeps_basic_fares],
    arms={
        "careful": lambda case: careful_agent(case.input),
        "hasty": lambda case: hasty_agent(case.input),
    },
    reference="careful",  # the careful agent is gated; the hasty one is compared against it
    repetitions=2,
    controls=CONTROLS,
    mutants=MutantCatalogue(
        [Mutant("rebook-ignores-fares", "airline.rebook", "any fare", rebook_ignores_fares)]
    ),
)


def main(out: Path) -> int:
    result = EVALUATION.run(store=out / "store")
    result.write_reports(out / "reports")
    print(result.summary())
    return int(result.exit_code)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "airline-out")))
