"""Evaluating the airline agent with vitrine: a gated run, a comparison, a control, a mutant.

Run it with ``python airline_evals.py OUT_DIR`` from this folder (``docs/your-agent.md`` walks
through it). Everything comes from ``import vitrine``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path

from airline import BOOKINGS, FLIGHTS, TOOLS, careful_agent, hasty_agent

import vitrine
from vitrine import Case, Observation, SubjectResponse

CASES = [
    Case(
        f"{ref}-{intent}",
        {"reference": ref, "intent": intent},
        {"status": FLIGHTS[booking["flight"]]["status"], "fare": booking["fare"]},
    )
    for ref, booking in BOOKINGS.items()
    for intent in ("status", "rebook", "where-is-my-flight")
]


def states_the_real_status(case: Case, response: SubjectResponse) -> Observation:
    said = case.metadata["status"] in (response.answer or "")
    return Observation.measured(float(said), said)


def looks_up_the_booking(case: Case, response: SubjectResponse) -> Observation:
    looked = "find_booking" in (response.tool_names() or ())
    return Observation.measured(float(looked), looked)


def keeps_basic_fares(case: Case, response: SubjectResponse) -> Observation:
    if case.input["intent"] != "rebook" or case.metadata["fare"] != "basic":
        return Observation.not_applicable("only a basic fare's rebooking can break it")
    changed = any(c.name == "rebook" and c.status == "ok" for c in response.tool_calls or ())
    promised = "Done" in (response.answer or "")
    return Observation.measured(float(not (changed or promised)), not (changed or promised))


FLOOR = vitrine.ChanceFloor.not_derivable("a predicate over the agent's own answer and tools")
CHECKS = [states_the_real_status, looks_up_the_booking, keeps_basic_fares]
DEFINITION = vitrine.BenchmarkDefinition(
    "airline",
    "1.0.0",
    CASES,
    [vitrine.admit(vitrine.check(fn.__name__.replace("_", "-"))(fn), FLOOR) for fn in CHECKS],
)
CAREFUL = vitrine.Arm("careful", lambda case: careful_agent(case.input))
HASTY = vitrine.Arm("hasty", lambda case: hasty_agent(case.input))

# A control proves the fare check can turn red: a journal that did rebook a basic fare.
BASIC_REBOOK = next(c for c in CASES if c.id == "JKL012-rebook")
CONTROLS = vitrine.ControlRegistry(
    vitrine.load_manifest(
        Path(__file__).with_name("controls.json"),
        vitrine.ManifestExpectation(count=1, prefix="AIR-"),
    )
)


def rebooked(response: SubjectResponse) -> SubjectResponse:
    extra = vitrine.ToolCallRecord("rebook", {}, vitrine.ToolCallStatus.OK)
    return dataclasses.replace(response, tool_calls=(*(response.tool_calls or ()), extra))


CONTROLS.register(
    "AIR-01",
    observe=lambda: careful_agent(BASIC_REBOOK.input),
    perturb=rebooked,
    evaluate=lambda response: keeps_basic_fares(BASIC_REBOOK, response),
)


# A mutant proves the suite sees the agent break: the rebook tool forgets its fare rule.
@contextlib.contextmanager
def rebook_ignores_fares() -> Iterator[None]:
    original, TOOLS["rebook"] = TOOLS["rebook"], lambda reference, flight: f"moved to {flight}"
    try:
        yield
    finally:
        TOOLS["rebook"] = original


MUTANTS = vitrine.MutantCatalogue(
    [vitrine.Mutant("rebook-ignores-fares", "airline.rebook", "any fare", rebook_ignores_fares)]
)


@vitrine.plan("airline-offline", description="the careful agent on every case, gated")
async def airline_offline(request: vitrine.PlanRequest) -> vitrine.PlanOutcome:
    store = vitrine.RunStore(request.output)
    result = await vitrine.evaluate_async(DEFINITION, CAREFUL, store=store)
    result.write_reports(store.root / "reports" / "airline", json_path=request.json_report)
    return vitrine.PlanOutcome(result.exit_code, [result.decision().reason])


SUITE = vitrine.Suite(
    "airline",
    {"airline-offline": airline_offline},
    {},
    default_plan="airline-offline",
    components={"mutants": "airline_evals:MUTANTS"},
)


def main(out: Path) -> int:
    result = vitrine.evaluate(
        DEFINITION, [CAREFUL, HASTY], repetitions=2, reference="careful", store=out / "store"
    )
    result.print_summary(arms=["careful"])  # gate the careful agent; the hasty one is compared
    result.write_reports(out / "reports", arms=["careful"])
    controls = asyncio.run(CONTROLS.run())
    print(f"controls caught: {sum(c.caught for c in controls)} of {len(controls)}")
    matrix = asyncio.run(vitrine.run_mutants("airline_evals:SUITE", output=out / "mutants"))
    print(f"mutants killed: {matrix.killed} of {matrix.total}")
    caught = all(c.caught for c in controls)
    codes = [result.decision(arms=["careful"]).exit_code, vitrine.ExitCode(matrix.exit_code)]
    codes.append(vitrine.ExitCode.PASS if caught else vitrine.ExitCode.MEASURED_FAILURE)
    return int(vitrine.aggregate_exit_codes(codes))


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "airline-out")))
