"""A plan's terminal rule: what its session concludes from the trials it planned.

Every session ends the same way: nothing measured is exit 3 (no estimate exists), a measured
failure is exit 1, every planned trial measured and passed is exit 0. Plans differ in one
place, which is why the rule is declared on the plan and not buried in its code: what a
session with *some* trials missing means.

- :attr:`TerminalRule.ABSENCE_NOT_MEASURED`: the missing trials are evidence that did not
  arrive; the session is NOT MEASURED (exit 3), and its measured trials still say nothing
  about the missing ones.
- :attr:`TerminalRule.PARTIAL_ABSENCE_INCOMPLETE`: the protocol's live and stochastic plans.
  Their statistic (a Wilson bound over repetitions, a paired test over scenarios) is defined
  over the whole planned design, so a session that measured part of it is an incomplete run
  (exit 4, infrastructure), never a smaller design scored as if it had been planned.

Absence is never a pass under either rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from vitrine._outcomes import ExitCode
from vitrine.errors import InvalidArgumentError

__all__ = ["TerminalRule"]


class TerminalRule(Enum):
    """What a session whose planned trials were not all measured concludes."""

    ABSENCE_NOT_MEASURED = "absence-not-measured"
    PARTIAL_ABSENCE_INCOMPLETE = "partial-absence-incomplete"

    @property
    def description(self) -> str:
        """The rule in the words ``vitrine --list-plans`` shows."""
        if self is TerminalRule.PARTIAL_ABSENCE_INCOMPLETE:
            return "a trial missing: exit 4 (incomplete session); none measured: exit 3"
        return "a trial missing: exit 3 (not measured)"

    def decide(
        self,
        *,
        planned: int,
        measured: int,
        missing: Sequence[str] = (),
        failure: str | None = None,
    ) -> tuple[ExitCode, str]:
        """The session's exit class and its reason.

        ``planned`` and ``measured`` count trials; ``missing`` names what was not measured
        (for the reason); ``failure`` is the measured failure, read only when every planned
        trial was measured (a failure among a partial design cannot be weighed against it).
        """
        if isinstance(planned, bool) or planned < 1:
            raise InvalidArgumentError(f"a session plans at least one trial, not {planned!r}")
        if not 0 <= measured <= planned:
            raise InvalidArgumentError(
                f"measured trials must be between 0 and the {planned} planned, not {measured}"
            )
        if measured == 0:
            return ExitCode.NOT_MEASURED, f"none of {planned} trials was measured: no estimate"
        if measured < planned:
            where = f" (missing: {', '.join(missing)})" if missing else ""
            if self is TerminalRule.PARTIAL_ABSENCE_INCOMPLETE:
                return (
                    ExitCode.INFRASTRUCTURE,
                    f"incomplete session: {measured} of {planned} trials measured{where}",
                )
            return ExitCode.NOT_MEASURED, f"{measured} of {planned} trials measured{where}"
        if failure:
            return ExitCode.MEASURED_FAILURE, failure
        return ExitCode.PASS, f"all {planned} trials measured and passed"
