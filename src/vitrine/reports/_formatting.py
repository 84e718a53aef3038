"""Small formatting rules shared by the console and HTML renderings of a suite report.

Both views must say the same thing about the same number, so every rule that turns a fact into
text (how a p-value is rounded, which statuses count as gaps, what a diagnostic is called) lives
here once. Nothing in this module imports rich or Jinja2.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from vitrine._outcomes import ExitCode
from vitrine.reports._model import CheckFacts, ComparisonFacts, EffectFacts, GateRow, SuiteReport

__all__ = [
    "DASH",
    "EXIT_CODE_GLOSSARY",
    "Gap",
    "StatusClass",
    "authority_label",
    "census_compact",
    "census_gaps",
    "comparison_flags",
    "exit_class",
    "format_delta",
    "format_duration",
    "format_effect",
    "format_interval",
    "format_offset",
    "format_p",
    "format_rate",
    "gate_problems",
    "power_state",
    "short_hash",
    "status_class",
    "successes_text",
    "unmeasured_items",
    "visible",
    "wlt_text",
]

# An undefined statistic is shown as a dash, never as 0 or "n/a": "n/a" is a measurement state
# with its own meaning, and 0 would read as a measured value.
DASH = "—"

StatusClass = Literal["pass", "fail", "not-measured", "na", "other"]

_STATUS_CLASSES: dict[str, StatusClass] = {
    "PASS": "pass",
    "COMPLETED": "pass",
    "GREEN": "pass",
    "FAIL": "fail",
    "FAILED": "fail",
    "RED": "fail",
    "NOT MEASURED": "not-measured",
    "NOT_MEASURED": "not-measured",
    "PENDING": "not-measured",
    "WARN": "not-measured",
    "N/A": "na",
    "NOT APPLICABLE": "na",
    "SKIPPED": "na",
}

_GAP_STATUSES = frozenset({"not-measured", "na"})


def status_class(status: str) -> StatusClass:
    """Map a gate, run or timeline status to one of five visual classes."""
    return _STATUS_CLASSES.get(status.strip().upper(), "other")


def exit_class(code: int) -> StatusClass:
    """The banner class for a process exit code: only 0 is green, only 1 is a measured failure."""
    if code == ExitCode.PASS:
        return "pass"
    if code == ExitCode.MEASURED_FAILURE:
        return "fail"
    if code == ExitCode.NOT_MEASURED:
        return "not-measured"
    return "other"  # invalid arguments or infrastructure: no evaluation evidence at all


def authority_label(authority: str) -> tuple[str, str]:
    """(label, qualifier): a diagnostic always says, in words, that it cannot set the exit code."""
    if authority == "diagnostic":
        return "DIAGNOSTIC", "no exit authority"
    return "GATE", "sets the exit code"


# C0 controls other than tab and newline, DEL and C1 controls: a terminal would act on them
# (an ESC sequence in a model answer could recolour or clear the operator's screen), and they are
# not valid characters in an HTML document.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """Make control characters in untrusted text visible as ``\\xNN`` instead of acting on them."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def format_p(value: float | None) -> str:
    """A p-value to three decimals, or in scientific notation once three decimals would read 0."""
    if value is None:
        return DASH
    if value != 0 and value < 0.001:
        return f"{value:.1e}"
    return f"{value:.3f}"


def format_rate(value: float | None) -> str:
    return DASH if value is None else f"{value:.3f}"


def format_interval(lower: float | None, upper: float | None) -> str:
    if lower is None or upper is None:
        return DASH  # zero measured trials: there is no estimate, so there are no bounds
    return f"[{lower:.3f}, {upper:.3f}]"


def format_delta(value: float | None) -> str:
    return DASH if value is None else f"{value:+.3f}"


def format_effect(effect: EffectFacts | None) -> str:
    """A paired difference of pass rates with its interval: ``+0.25 [+0.05, +0.43]``."""
    if effect is None:
        return DASH
    return f"{effect.estimate:+.2f} [{effect.lower:+.2f}, {effect.upper:+.2f}]"


def format_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)} min {rest:04.1f} s"


def format_offset(seconds: float) -> str:
    """A timeline start, relative to the start of the suite."""
    return f"+{seconds:.2f} s"


def short_hash(content_hash: str, length: int = 12) -> str:
    """Keep the algorithm prefix and the first hex digits: enough to tell definitions apart."""
    algorithm, sep, digest = content_hash.partition(":")
    if not sep:
        return content_hash[:length]
    return f"{algorithm}:{digest[:length]}"


def successes_text(check: CheckFacts) -> str:
    return f"{check.successes}/{check.measured}"


def wlt_text(comparison: ComparisonFacts) -> str:
    return f"{comparison.wins}/{comparison.losses}/{comparison.ties}"


def power_state(check: CheckFacts) -> str:
    """Whether the floor test could reach significance at all with this many measured trials."""
    if check.min_attainable_p is None:
        return "no test"
    return "underpowered" if check.underpowered else "adequate"


def comparison_flags(comparison: ComparisonFacts) -> list[str]:
    flags: list[str] = []
    if comparison.underpowered_by_construction:
        flags.append("underpowered")
    if comparison.undecidable:
        flags.append("undecidable")
    return flags


@dataclass(frozen=True, slots=True)
class Gap:
    """One thing that was not measured or did not apply, and why."""

    where: str  # "gate", a benchmark identity, or "timeline"
    item: str
    status: str
    reason: str


def census_compact(census: dict[str, int]) -> str:
    """The census in few words, naming only the kinds of absence that occurred."""
    measured = census.get("measured", 0)
    not_applicable = census.get("not_applicable", 0)
    not_measured = census.get("not_measured", 0)
    total = census.get("total", measured + not_applicable + not_measured)
    if total and measured == total:
        return f"all {total} measured"
    parts = [f"{measured} of {total} measured"]
    if not_applicable:
        parts.append(f"{not_applicable} n/a")
    if not_measured:
        parts.append(f"{not_measured} not measured")
    return ", ".join(parts)


def census_gaps(check: CheckFacts) -> tuple[int, int]:
    """(not applicable, not measured) counts for one arm x check."""
    return check.census.get("not_applicable", 0), check.census.get("not_measured", 0)


def unmeasured_items(report: SuiteReport) -> list[Gap]:
    """Every gate, check and node that produced no measured evidence, with its stated reason.

    A check row has no reason field of its own, so its census is the reason: it says how many
    trials were missing and of what kind.
    """
    gaps: list[Gap] = []
    for gate in report.gates:
        if status_class(gate.status) in _GAP_STATUSES:
            gaps.append(Gap("gate", gate.name, gate.status, _gate_reason(gate)))
    for bench in report.benchmarks:
        for check in bench.checks:
            not_applicable, not_measured = census_gaps(check)
            if not_measured:
                status = "NOT MEASURED"
            elif not_applicable:
                status = "N/A"
            else:
                continue
            gaps.append(
                Gap(
                    bench.identity, f"{check.arm_id} × {check.check_key}", status, check.census_text
                )
            )
    for entry in report.timeline:
        if status_class(entry.status) == "na":
            gaps.append(Gap("timeline", entry.node, entry.status, entry.detail or "skipped"))
    return gaps


# How many of a gate's problems are shown beside its verdict; report.json holds them all.
PROBLEMS_SHOWN = 3


def gate_problems(gate: GateRow | Mapping[str, Any], limit: int = PROBLEMS_SHOWN) -> list[str]:
    """Why a gate is not a pass, as short lines to show beside its verdict.

    The absence reason first (why nothing was measured), then the first ``limit`` problems the
    check recorded in its evidence (``evidence["problems"]``), then how many more there are. A
    passing gate lists no problems: its label says what passed.
    """
    row = gate if isinstance(gate, Mapping) else gate.model_dump()
    lines = [str(row["reason"])] if row.get("reason") else []
    if status_class(str(row.get("status", ""))) == "pass":
        return lines
    evidence = row.get("evidence") or {}
    problems = evidence.get("problems") if isinstance(evidence, Mapping) else None
    if isinstance(problems, list):
        lines += [str(problem) for problem in problems[:limit]]
        total = evidence.get("problem_count", len(problems))
        hidden = (total if isinstance(total, int) else len(problems)) - min(limit, len(problems))
        if hidden > 0:
            lines.append(f"and {hidden} more")
    return lines


def _gate_reason(gate: GateRow) -> str:
    return gate.reason or "no reason was recorded"


EXIT_CODE_GLOSSARY: tuple[tuple[int, str, str], ...] = (
    (ExitCode.PASS, ExitCode.PASS.meaning, "every mandatory gate was measured and passed"),
    (
        ExitCode.MEASURED_FAILURE,
        ExitCode.MEASURED_FAILURE.meaning,
        "a mandatory gate or registered control was measured and failed",
    ),
    (
        ExitCode.INVALID_ARGUMENTS,
        ExitCode.INVALID_ARGUMENTS.meaning,
        "the command line was refused before anything ran",
    ),
    (
        ExitCode.NOT_MEASURED,
        ExitCode.NOT_MEASURED.meaning,
        "a mandatory gate produced no measured evidence; it outranks a failure so the gap "
        "cannot hide behind it",
    ),
    (
        ExitCode.INFRASTRUCTURE,
        ExitCode.INFRASTRUCTURE.meaning,
        "the harness or a required service failed; no result was substituted",
    ),
)
