"""The honesty gate's arithmetic: every statistical claim of a report section, recomputed.

The claims come from the harness's section builder; the recomputation here shares none of its
code. It reads only the observation rows of the sealed runs the section cites (state and value
per case and check, as the producer read them back from disk) and applies the protocol's
formulas as written in the reference facts: repetitions collapsed with ``all`` (worst state
wins), a census over collapsed cells, a Wilson 95% interval, the floor comparison, and the
paired exact two-sided sign test against the reference arm. A harness whose report producer
drifts (a one-sided test, wins and losses swapped, a census over repetitions) disagrees with
this module, and every disagreement is named.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from vitrine import Observation

__all__ = ["ClaimAudit", "audit_section", "evaluate_honesty"]

ALPHA = 0.05
# The two-sided 95% normal quantile (1.95996...), not its two-decimal rounding 1.96.
WILSON_Z = NormalDist().inv_cdf(0.975)
_TOLERANCE = 1e-9
_STATES = ("measured", "not_applicable", "not_measured")


@dataclass(frozen=True, slots=True)
class _Cell:
    state: str
    value: float | None


@dataclass
class ClaimAudit:
    """How many claims were compared, and each one that the runs do not support."""

    checked: int = 0
    mismatches: list[str] = field(default_factory=list)

    def compare(self, where: str, claimed: Any, recomputed: Any) -> None:
        self.checked += 1
        if not _agree(claimed, recomputed):
            self.mismatches.append(f"{where}: report says {claimed!r}, runs say {recomputed!r}")

    def refuse(self, why: str) -> None:
        self.checked += 1
        self.mismatches.append(why)


def _agree(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=_TOLERANCE, abs_tol=_TOLERANCE)
    return bool(a == b)


# ---------------------------------------------------------------------------------------------
# The formulas, written out.
# ---------------------------------------------------------------------------------------------


def _upper_tail(successes: int, n: int, rate: float) -> float:
    """P(X >= successes) for X ~ Bin(n, rate), summed term by term."""
    return math.fsum(
        math.comb(n, k) * rate**k * (1.0 - rate) ** (n - k) for k in range(successes, n + 1)
    )


def _sign_test(wins: int, losses: int) -> float:
    n = wins + losses
    if n == 0:
        return 1.0
    return min(1.0, 2.0 * _upper_tail(max(wins, losses), n, 0.5))


def _wilson(successes: int, n: int) -> tuple[float | None, float | None]:
    if n == 0:
        return None, None
    phat = successes / n
    z2 = WILSON_Z * WILSON_Z
    centre = (phat + z2 / (2 * n)) / (1 + z2 / n)
    half = WILSON_Z * math.sqrt(phat * (1 - phat) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _collapse_all(reps: Sequence[_Cell]) -> _Cell:
    """Worst state wins; a fully measured cell is 1 only when every repetition reached 1."""
    for state in ("not_measured", "not_applicable"):
        if any(r.state == state for r in reps):
            return _Cell(state, None)
    return _Cell("measured", 1.0 if all((r.value or 0.0) >= 1.0 for r in reps) else 0.0)


def _census(states: Iterable[str]) -> dict[str, int]:
    counts = dict.fromkeys(_STATES, 0)
    for state in states:
        counts[state] += 1
    counts["total"] = sum(counts[s] for s in _STATES)
    return counts


def _run_verdict(cells: Sequence[_Cell]) -> str:
    if any(c.state == "measured" and (c.value or 0.0) < 1.0 for c in cells):
        return "FAIL"
    if not any(c.state == "measured" for c in cells):
        return "PENDING"
    return "WARN" if any(c.state == "not_measured" for c in cells) else "PASS"


# ---------------------------------------------------------------------------------------------
# Reading the runs.
# ---------------------------------------------------------------------------------------------


class _Runs:
    """The cited runs' rows, indexed by arm, case and check."""

    def __init__(self, runs: Mapping[str, Mapping[str, Any]]) -> None:
        self.runs = runs

    def of_arm(self, arm: str) -> list[Mapping[str, Any]]:
        return [r for r in self.runs.values() if r["arm_id"] == arm]

    def cases(self) -> list[str]:
        first = next(iter(self.runs.values()))
        return list(first["case_ids"])

    def reps(self, arm: str, check: str) -> tuple[dict[str, list[_Cell]], int]:
        """Per case, the repetitions' observations; a missing row is a not-measured one."""
        per_case: dict[str, list[_Cell]] = {case: [] for case in self.cases()}
        recorded = 0
        for run in self.of_arm(arm):
            seen = set()
            for row in run["rows"]:
                if row["check"] == check and row["case"] in per_case:
                    per_case[row["case"]].append(_Cell(row["state"], row["value"]))
                    seen.add(row["case"])
                    recorded += 1
            for case, reps in per_case.items():
                if case not in seen:
                    reps.append(_Cell("not_measured", None))
        return per_case, recorded

    def cells(self, arm: str, check: str) -> tuple[dict[str, _Cell], int]:
        reps, recorded = self.reps(arm, check)
        return {case: _collapse_all(r) for case, r in reps.items()}, recorded

    def floor(self, arm: str, check: str) -> Mapping[str, Any]:
        return dict(self.of_arm(arm)[0]["floors"][check])


# ---------------------------------------------------------------------------------------------
# The audit.
# ---------------------------------------------------------------------------------------------


def _audit_runs(section: Mapping[str, Any], runs: _Runs, audit: ClaimAudit) -> None:
    for ref in section["runs"]:
        run = runs.runs.get(ref["run_id"])
        where = f"run {ref['run_id']}"
        if run is None:
            audit.refuse(f"{where}: cited by the report, but its run directory was not read")
            continue
        audit.compare(f"{where}.arm_id", ref["arm_id"], run["arm_id"])
        audit.compare(f"{where}.repetition", ref["repetition"], run["repetition"])
        cells = [_Cell(row["state"], row["value"]) for row in run["rows"]]
        audit.compare(f"{where}.verdict", ref["verdict"], _run_verdict(cells))
        census = _census(c.state for c in cells)
        for key in (*_STATES, "total"):
            audit.compare(f"{where}.census.{key}", ref["census"].get(key), census[key])


def _audit_check(claim: Mapping[str, Any], runs: _Runs, audit: ClaimAudit) -> None:
    arm, check = claim["arm_id"], claim["check_key"]
    where = f"{arm}·{check}"
    if not runs.of_arm(arm):
        audit.refuse(f"{where}: no cited run of arm {arm!r}")
        return
    cells, _ = runs.cells(arm, check)
    census = _census(c.state for c in cells.values())
    for key in (*_STATES, "total"):
        audit.compare(f"{where}.census.{key}", claim["census"].get(key), census[key])
    measured = [c for c in cells.values() if c.state == "measured"]
    n = len(measured)
    successes = sum(1 for c in measured if (c.value or 0.0) >= 1.0)
    audit.compare(f"{where}.measured", claim["measured"], n)
    audit.compare(f"{where}.successes", claim["successes"], successes)
    mean = math.fsum(c.value or 0.0 for c in measured) / n if n else None
    audit.compare(f"{where}.mean_value", claim["mean_value"], mean)
    lower, upper = _wilson(successes, n)
    audit.compare(f"{where}.wilson_lower", claim["wilson_lower"], lower)
    audit.compare(f"{where}.wilson_upper", claim["wilson_upper"], upper)
    floor = runs.floor(arm, check)
    rate = floor.get("value")
    if floor.get("kind") == "not-derivable" or rate is None:
        floor_p, min_p = None, 0.5**n
    else:
        floor_p, min_p = _upper_tail(successes, n, float(rate)), float(rate) ** n
    audit.compare(f"{where}.floor.kind", claim["floor"]["kind"], floor.get("kind"))
    audit.compare(f"{where}.floor_p", claim["floor_p"], floor_p)
    audit.compare(f"{where}.min_attainable_p", claim["min_attainable_p"], min_p)
    audit.compare(f"{where}.underpowered", claim["underpowered"], min_p > ALPHA)


def _audit_comparison(claim: Mapping[str, Any], runs: _Runs, audit: ClaimAudit) -> None:
    reference, challenger, check = (
        claim["reference_arm"],
        claim["challenger_arm"],
        claim["check_key"],
    )
    where = f"{challenger} vs {reference}·{check}"
    if not runs.of_arm(reference) or not runs.of_arm(challenger):
        audit.refuse(f"{where}: a compared arm has no cited run")
        return
    ref_cells, ref_recorded = runs.cells(reference, check)
    chal_cells, chal_recorded = runs.cells(challenger, check)
    deltas = [
        (chal_cells[case].value or 0.0) - (ref.value or 0.0)
        for case, ref in ref_cells.items()
        if ref.state == "measured" and chal_cells[case].state == "measured"
    ]
    wins = sum(1 for d in deltas if d > 0)
    losses = sum(1 for d in deltas if d < 0)
    n = wins + losses
    cases = len(ref_cells)
    total = ref_recorded + chal_recorded
    min_p = min(1.0, 2.0 * 0.5**n)
    recomputed: dict[str, Any] = {
        "cases": cases,
        "total_repetitions": total,
        "mean_repetitions_per_case": total / cases / 2 if cases else 0.0,
        "wins": wins,
        "losses": losses,
        "ties": len(deltas) - n,
        "excluded": cases - len(deltas),
        "effective_n": n,
        "p_value": _sign_test(wins, losses),
        "min_attainable_p": min_p,
        "mean_delta": math.fsum(deltas) / len(deltas) if deltas else None,
        "underpowered_by_construction": min_p > ALPHA,
        "undecidable": n == 0,
    }
    for key, value in recomputed.items():
        audit.compare(f"{where}.{key}", claim.get(key), value)


def audit_section(section: Mapping[str, Any], runs: Mapping[str, Mapping[str, Any]]) -> ClaimAudit:
    """Recompute every statistical claim of one report section from its cited runs' rows.

    ``section`` is the section as the report carries it (a JSON object); ``runs`` maps run id
    to the facts read from that run's directory: ``arm_id``, ``repetition``, ``case_ids``,
    ``floors`` (per check: ``kind`` and ``value``) and ``rows`` (``case``, ``check``,
    ``state``, ``value``).
    """
    audit = ClaimAudit()
    if not runs:
        audit.refuse(f"{section.get('identity')}: no cited run could be read")
        return audit
    table = _Runs(runs)
    _audit_runs(section, table, audit)
    for claim in section["checks"]:
        _audit_check(claim, table, audit)
    reference = section.get("reference_arm")
    arms = sorted({r["arm_id"] for r in runs.values()})
    checks = sorted({c["check_key"] for c in section["checks"]})
    if reference is not None and len(arms) > 1:
        # Every challenger is compared on every check: a missing comparison is a hidden one.
        expected = {(arm, check) for arm in arms if arm != reference for check in checks}
        claimed = {(c["challenger_arm"], c["check_key"]) for c in section["comparisons"]}
        for arm, check in sorted(expected - claimed):
            audit.refuse(f"{arm} vs {reference}·{check}: the report omits this comparison")
    for claim in section["comparisons"]:
        _audit_comparison(claim, table, audit)
    return audit


def evaluate_honesty(evidence: Mapping[str, Any]) -> Observation:
    """Pass only when every claim of every section is what its cited runs say."""
    sections = evidence.get("sections")
    if not isinstance(sections, list | tuple):
        return Observation.not_measured("the report's claims were not observed")
    checked = 0
    mismatches: list[str] = []
    for observed in sections:
        claimed = observed["claimed"]
        identity = claimed.get("identity")
        mismatches.extend(f"{identity}: {why}" for why in observed.get("unreadable") or ())
        audit = audit_section(claimed, observed["runs"])
        checked += audit.checked
        mismatches.extend(f"{identity}: {why}" for why in audit.mismatches)
    if checked == 0:
        return Observation.not_applicable("the report makes no statistical claims")
    return Observation.measured(
        0.0 if mismatches else 1.0,
        not mismatches,
        evidence={"claims_checked": checked, "mismatches": mismatches[:10]},
        label=f"{checked - len(mismatches)}/{checked} claims recomputed identically",
    )
