"""From a worker's result to a mutant's outcome, its killers and their reading.

Killers are departures from the healthy baseline: a gate that went PASS -> FAIL, a check that
lost successes, a control no longer caught, a test that passed and now fails. Only what the
mutant's run reported is compared, so a plan that wrote no report kills through its exit code
alone instead of through a list of "absent" rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from vitrine._outcomes import ExitCode
from vitrine.mutants._job import WorkerResult
from vitrine.mutants._model import Mutant
from vitrine.mutants._report import KillerChange, MutantOutcome
from vitrine.mutants._statuses import TEST_FAILURES

__all__ = ["Classification", "classify", "compare_expected", "killer_changes"]

ABSENT = "absent"


def killer_changes(
    healthy: dict[str, str],
    mutant: dict[str, str],
    aliases: dict[str, list[str]] | None = None,
) -> list[KillerChange]:
    """Every key whose status under the mutant differs from the healthy one, in name order."""
    aliases = aliases or {}
    changes = []
    for key in sorted(mutant):
        before, after = healthy.get(key, ABSENT), mutant[key]
        if key.startswith("test:"):
            if before != "passed" or after not in TEST_FAILURES:
                continue
        elif before == after:
            continue
        changes.append(
            KillerChange(killer=key, healthy=before, mutant=after, aliases=aliases.get(key, []))
        )
    return changes


@dataclass(frozen=True, slots=True)
class Classification:
    """A mutant's outcome, its killers and the one sentence that explains the outcome."""

    outcome: MutantOutcome
    reason: str
    killers: list[KillerChange]
    exit_code: int | None = None  # the plan's, when it ran


def classify(result: WorkerResult, healthy: dict[str, str]) -> Classification:
    """Killed (exit 1, or exit 0 with a test killer), not measured (3), errored, survived (0)."""
    killers = killer_changes(healthy, result.statuses, result.aliases)
    code = result.exit_code
    if result.error is not None:
        return Classification("errored", result.error, killers, code)
    if code is None:
        return Classification("errored", "the worker reported no exit code", killers)
    if code == ExitCode.MEASURED_FAILURE:
        named = ", ".join(k.killer for k in killers) or "no report row changed status"
        return Classification(
            "killed", f"the plan exited 1 (measured failure): {named}", killers, code
        )
    test_killers = [k for k in killers if k.killer.startswith("test:")]
    if code == ExitCode.PASS and test_killers:
        return Classification(
            "killed", f"the plan passed but {len(test_killers)} test(s) failed", killers, code
        )
    if code == ExitCode.PASS:
        if killers:
            changed = ", ".join(f"{k.killer} {k.healthy} -> {k.mutant}" for k in killers)
            why = f"no gate failed ({changed}, without exit authority)"
        else:
            why = "no gate, check, control or test changed status"
        return Classification("survived", why, killers, code)
    if code == ExitCode.NOT_MEASURED:
        return Classification(
            "not measured", "the plan exited 3: something could not be measured", killers, code
        )
    meaning = ExitCode(code).meaning if code in set(ExitCode) else "an unknown exit code"
    return Classification("errored", f"the plan exited {code} ({meaning})", killers, code)


def compare_expected(
    mutant: Mutant, killers: list[KillerChange]
) -> tuple[list[str], list[str], list[str]]:
    """(expected and seen, expected but not seen, seen unexpectedly).

    An expected name without a ``kind:`` prefix matches a killer of any kind with that name,
    so a catalogue may write ``"recall"`` for ``"gate:recall"``, or a test's case id
    (``"TC-P1-007"``) for the test that declares it.
    """

    def matches(expected: str, change: KillerChange) -> bool:
        if change.killer == expected:
            return True
        bare = ":" not in expected
        return bare and (change.killer.split(":", 1)[1] == expected or expected in change.aliases)

    hit = [e for e in mutant.expected_killers if any(matches(e, k) for k in killers)]
    missed = [e for e in mutant.expected_killers if e not in hit]
    unexpected = [
        k.killer for k in killers if not any(matches(e, k) for e in mutant.expected_killers)
    ]
    return hit, missed, unexpected
