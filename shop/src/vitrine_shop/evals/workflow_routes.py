"""The workflow-shape gate: routes, censuses and stage contracts of recorded workflow runs.

The producer runs the real workflow (zero-model and scripted-model variants) on the probes
below and records what each run did. This module holds the probes' independently authored
expectations and judges the records: the executors visited in order and the edges taken (so a
loop-back that must happen, happened, once), one attempt census per model stage and visit, and
the stage contract that the Presenter delivered every ranked pick of every lane, each with a
reason, within the customer's stated budget, in a non-empty answer the screen passed. Nothing
here is read from the workflow's own graph constants.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from itertools import pairwise
from typing import Any

from vitrine import Observation
from vitrine_shop.evals.predicates import recommended_lines

__all__ = ["ROUTE_PROBES", "RouteProbe", "evaluate_workflow_shape", "route_problems"]

_MAPPER, _DISCOVERY, _REVIEWER, _RANKER, _PRESENTER = (
    "InterestMapper",
    "Discovery",
    "CoverageReviewer",
    "Ranker",
    "Presenter",
)
MODEL_STAGES = (_MAPPER, _REVIEWER, _RANKER, _PRESENTER)
# The edges the design names, by the executors they join.
EDGES: Mapping[tuple[str, str], str] = {
    (_MAPPER, _DISCOVERY): "interests mapped",
    (_DISCOVERY, _REVIEWER): "candidates ready",
    (_REVIEWER, _DISCOVERY): "gaps remain",
    (_REVIEWER, _RANKER): "approved / bounded partial",
    (_RANKER, _PRESENTER): "ranked",
}
STRAIGHT = (_MAPPER, _DISCOVERY, _REVIEWER, _RANKER, _PRESENTER)
ONE_LOOP = (_MAPPER, _DISCOVERY, _REVIEWER, _DISCOVERY, _REVIEWER, _RANKER, _PRESENTER)
VARIANTS = ("zero-model", "scripted-model")
_MIN_REASON_WORDS = 3


@dataclass(frozen=True, slots=True)
class RouteProbe:
    """A request put to the workflow, with the route and lanes it must produce."""

    id: str
    persona_id: str
    request: str
    executors: tuple[str, ...]
    lanes: frozenset[str]
    budget_chf: Decimal | None = None


ROUTE_PROBES: tuple[RouteProbe, ...] = (
    # A need from the customer's own department: one pass, no loop-back, and the CHF 250
    # budget on Nadia's profile holds although she does not repeat it.
    RouteProbe(
        "nadia-hut-trip",
        "nadia",
        "What should I add for my next hut trip?",
        STRAIGHT,
        frozenset({"explore"}),
        Decimal("250"),
    ),
    # Two needs from two departments in one request: Discovery looks where Nadia shops
    # (outdoor), the milk frother is not there, so the reviewer must send Discovery back
    # once, and the wider search must close the gap, within her budget.
    RouteProbe(
        "nadia-cross-category-loop",
        "nadia",
        "For my hut trips I also want a milk frother for the mornings, under CHF 250.",
        ONE_LOOP,
        frozenset({"explore"}),
        Decimal("250"),
    ),
    # Sofia shops for espresso but asks about her kitchen (one loop-back beyond espresso),
    # and three of her consumables are due: the restock lane beside new ideas.
    RouteProbe(
        "sofia-restock",
        "sofia",
        "I feel like my kitchen setup is missing something... anything I'm about to run out of?",
        ONE_LOOP,
        frozenset({"explore", "replenish"}),
    ),
)


def _route_problems(probe: RouteProbe, run: Mapping[str, Any]) -> list[str]:
    executors = tuple(run.get("executors") or ())
    route = list(run.get("route") or ())
    problems = []
    if executors != probe.executors:
        problems.append(
            f"visited {' -> '.join(executors)}; expected {' -> '.join(probe.executors)}"
        )
    expected_route = [EDGES.get(step, "?") for step in pairwise(executors)]
    if route != expected_route:
        problems.append(f"took edges {route}; the visited executors need {expected_route}")
    loops = sum(1 for step in pairwise(probe.executors) if step == (_REVIEWER, _DISCOVERY))
    if run.get("loopbacks") != loops:
        problems.append(f"recorded {run.get('loopbacks')} loop-backs, expected {loops}")
    if run.get("partial"):
        problems.append(f"delivered a bounded partial answer; gaps left: {run.get('gaps')}")
    return problems


def _census_problems(probe: RouteProbe, run: Mapping[str, Any]) -> list[str]:
    stages = run.get("stages")
    if run.get("variant") == "zero-model":
        return [] if stages is None else ["the zero-model run reports model stage censuses"]
    if not isinstance(stages, list | tuple):
        return ["the scripted-model run reports no stage censuses"]
    problems = []
    named = [s.get("stage") for s in stages]
    if sorted(named) != sorted(MODEL_STAGES):
        problems.append(f"censuses for {named}; expected one for each of {list(MODEL_STAGES)}")
    for census in stages:
        if census.get("status") != "measured" or census.get("attempts") != 1:
            problems.append(
                f"{census.get('stage')}: {census.get('status')} after "
                f"{census.get('attempts')} attempt(s); a healthy scripted model answers first time"
            )
    visits = run.get("stage_visits") or {}
    reviews = probe.executors.count(_REVIEWER)
    if len(visits.get(_REVIEWER) or ()) != reviews:
        problems.append(
            f"{len(visits.get(_REVIEWER) or ())} reviewer visit censuses, expected {reviews}"
        )
    return problems


def _contract_problems(probe: RouteProbe, run: Mapping[str, Any]) -> list[str]:
    answer = str(run.get("answer") or "")
    ranked = list(run.get("ranked") or ())
    problems = []
    if not answer.strip():
        problems.append("the delivered answer is empty")
    screen = run.get("screen") or {}
    if screen.get("status") != "pass" or run.get("withheld"):
        problems.append(f"the screen did not pass the Presenter's answer: {screen.get('reasons')}")
    lanes = {str(p.get("lane")) for p in ranked}
    if lanes != probe.lanes:
        problems.append(
            f"the Ranker produced lanes {sorted(lanes)}; expected {sorted(probe.lanes)}"
        )
    delivered = {line.sku: line for line in reversed(recommended_lines(answer))}
    for pick in ranked:
        sku = str(pick.get("sku"))
        if sku not in delivered:
            problems.append(f"ranked {sku} ({pick.get('lane')}) was not delivered")
            continue
        reason, price = delivered[sku].reason, delivered[sku].price_chf
        if sum(1 for w in reason.split() if any(ch.isalpha() for ch in w)) < _MIN_REASON_WORDS:
            problems.append(f"{sku} is delivered without a reason")
        if probe.budget_chf is not None and (price is None or price > probe.budget_chf):
            problems.append(f"{sku} at CHF {price} breaks the stated CHF {probe.budget_chf} budget")
    unranked = sorted(set(delivered) - {str(p.get("sku")) for p in ranked})
    if unranked:
        problems.append(f"delivered SKUs the Ranker never produced: {unranked}")
    return problems


def route_problems(evidence: Mapping[str, Any]) -> list[str]:
    """Every departure of the recorded runs from the probes' authored expectations."""
    runs = {(r.get("probe"), r.get("variant")): r for r in evidence.get("runs") or ()}
    problems = []
    for probe in ROUTE_PROBES:
        for variant in VARIANTS:
            run = runs.get((probe.id, variant))
            where = f"{probe.id} ({variant})"
            if run is None:
                problems.append(f"{where}: not run")
                continue
            if run.get("error"):
                problems.append(f"{where}: the workflow failed: {run['error']}")
                continue
            for check in (_route_problems, _census_problems, _contract_problems):
                problems.extend(f"{where}: {p}" for p in check(probe, run))
    return problems


def evaluate_workflow_shape(evidence: Mapping[str, Any]) -> Observation:
    """Pass only when every probe, in every variant, took its route and kept the contract."""
    runs = evidence.get("runs")
    if not isinstance(runs, list | tuple) or not runs:
        return Observation.not_measured("no workflow run was recorded")
    problems = route_problems(evidence)
    return Observation.measured(
        0.0 if problems else 1.0,
        not problems,
        evidence={
            "runs": [
                {
                    "probe": r.get("probe"),
                    "variant": r.get("variant"),
                    "executors": list(r.get("executors") or ()),
                    "route": list(r.get("route") or ()),
                    "ranked": [p.get("sku") for p in r.get("ranked") or ()],
                }
                for r in runs
            ],
            "problems": problems[:12],
            "problem_count": len(problems),
        },
        label=f"{len(runs)} recorded runs, {len(problems)} route/census/contract problem(s)",
    )
