"""Gates: the one place where observations become verdicts and verdicts become an exit code.

Scoring functions return facts. Only a gate with authority may set the process exit; a
diagnostic is reported beside the gates and can never change it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from vitrine._bench.model import Authority
from vitrine._outcomes import ExitCode, Observation, Status, aggregate_exit_codes

__all__ = ["GateDecision", "GateResult", "decide", "gate_result"]


@dataclass(frozen=True, slots=True)
class GateResult:
    name: str
    authority: Authority
    observation: Observation

    @property
    def exit_code(self) -> ExitCode | None:
        """The class this gate contributes; None for a diagnostic, which contributes nothing."""
        if self.authority is Authority.DIAGNOSTIC:
            return None
        return self.status.gate_exit_code

    @property
    def status(self) -> Status:
        """PASS, FAIL, N/A or NOT MEASURED: the gate's observation in the one vocabulary."""
        return self.observation.status


def gate_result(name: str, authority: Authority, observation: Observation) -> GateResult:
    return GateResult(name, authority, observation)


@dataclass(frozen=True, slots=True)
class GateDecision:
    exit_code: ExitCode
    reason: str
    gates: tuple[GateResult, ...]


def decide(gates: Sequence[GateResult], extra: Iterable[tuple[ExitCode, str]] = ()) -> GateDecision:
    """Aggregate mandatory gates (and extra facts such as infrastructure errors) into one code.

    ``extra`` carries classes that are not gates, e.g. a failed registered control (1) or a
    run that could not be persisted (4), each with the sentence that explains it.
    """
    causes: list[tuple[ExitCode, str]] = []
    for gate in gates:
        code = gate.exit_code
        if code is not None and code is not ExitCode.PASS:
            causes.append((code, f"gate {gate.name}: {gate.status.lower()}"))
    causes.extend(extra)
    code = aggregate_exit_codes(c for c, _ in causes)
    if code is ExitCode.PASS:
        mandatory = sum(1 for g in gates if g.authority is Authority.GATE)
        reason = f"all {mandatory} mandatory gates measured and passed"
    else:
        reason = "; ".join(why for c, why in causes if c is code)
    return GateDecision(code, reason, tuple(gates))
