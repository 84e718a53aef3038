"""What the workflow's census of stage attempts must say, from what its model actually did.

The explorative stage model (:mod:`vitrine_shop.scripted.stage_explorer`) logs which attempts
it broke. A broken reply is never usable, a sound one always is, and a visit stops at its first
usable reply; so the log alone says, per stage visit, how many attempts there were, how many
were unusable, and whether the visit was measured, recovered or answered by the code path.
The census the workflow hands over must agree, and a stage the model answered must have been
counted at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["census_problems", "handed_census_problems"]

# How bad each ending of a stage visit is: the census a workflow hands over keeps, per stage,
# its worst visit (vitrine's stage census semantics), the later one of equals.
_SEVERITY = ("measured", "recovered", "final_fallback", "unrecovered", "cancelled")


# The explorer's names for attempts that got no reply: a server error is tried again, a
# refused request ends the visit.
_RETRIED_FAULT, _FINAL_FAULT = "provider-error", "provider-refusal"


def _expected(attempts: Sequence[Mapping[str, Any]], max_attempts: int) -> dict[str, Any]:
    kinds = [a.get("broken") for a in attempts]
    faults = sum(1 for k in kinds if k in (_RETRIED_FAULT, _FINAL_FAULT))
    unusable = sum(1 for k in kinds if k and k not in (_RETRIED_FAULT, _FINAL_FAULT))
    ended = None in kinds or _FINAL_FAULT in kinds
    if kinds[:-1] and (None in kinds[:-1] or _FINAL_FAULT in kinds[:-1]):
        return {"order": "a visit went on after a usable reply or a refused request"}
    if not ended and len(kinds) != max_attempts:
        return {"attempts": max_attempts}  # broken every time: every attempt is owed
    if kinds[-1] is None:
        status = "measured" if len(kinds) == 1 else "recovered"
    elif kinds[-1] in (_RETRIED_FAULT, _FINAL_FAULT):
        status = "unrecovered"
    else:
        status = "final_fallback"
    return {
        "attempts": len(kinds),
        "unusable": unusable,
        "provider_failures": faults,
        "status": status,
    }


def census_problems(
    log: Sequence[Mapping[str, Any]],
    visits: Mapping[str, Sequence[Mapping[str, Any]]],
    max_attempts: int,
) -> list[str]:
    """Where the census (``stage_visits``) departs from the model's own log, for a workflow
    that tries each stage visit up to ``max_attempts`` times."""
    by_visit: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for entry in log:
        by_visit.setdefault((str(entry["stage"]), int(entry["visit"])), []).append(entry)
    recorded = {
        (stage, int(v.get("visit", 0))): v
        for stage, entries in visits.items()
        for v in entries
        if isinstance(v, Mapping)
    }
    problems = []
    for (stage, visit), attempts in sorted(by_visit.items()):
        want = _expected(sorted(attempts, key=lambda a: int(a["attempt"])), max_attempts)
        got = recorded.get((stage, visit))
        if got is None:
            problems.append(f"{stage} visit {visit} was asked but has no census")
            continue
        differ = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
        if differ:
            said = ", ".join(
                f"{k} {g!r} where the model's log gives {w!r}" for k, (g, w) in differ.items()
            )
            problems.append(f"{stage} visit {visit}: {said}")
    for stage, visit in sorted(set(recorded) - set(by_visit)):
        if recorded[(stage, visit)].get("responses"):
            problems.append(f"{stage} visit {visit} counts replies the model never gave")
    return problems


def handed_census_problems(
    handed: Sequence[Mapping[str, Any]], visits: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[str]:
    """Where the per-stage census handed to the harness is not each stage's worst visit."""
    problems = []
    given = {str(c.get("stage")): c for c in handed}
    for stage, entries in visits.items():
        ranked = [v for v in entries if v.get("status") in _SEVERITY]
        if not ranked:
            continue
        worst = max(enumerate(ranked), key=lambda iv: (_SEVERITY.index(iv[1]["status"]), iv[0]))[1]
        got = given.get(stage)
        if got is None:
            problems.append(f"{stage} ran but is missing from the census handed over")
        elif (got.get("status"), got.get("attempts")) != (worst["status"], worst["attempts"]):
            problems.append(
                f"{stage} is handed over as {got.get('status')} after {got.get('attempts')} "
                f"attempt(s), its worst visit was {worst['status']} after {worst['attempts']}"
            )
    for stage in sorted(set(given) - set(visits)):
        problems.append(f"{stage} is in the census handed over but never ran")
    return problems
