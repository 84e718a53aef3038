"""The workflow's graph as data, and the record of one run's way through it.

A transition that is not an edge of the graph is refused, so a trace cannot describe a route
the graph does not have.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vitrine.subjects import StageAttemptCensus, StageStatus, TokenUsage, WorkflowTrace
from vitrine_shop.workflow.stages import (
    COVERAGE_REVIEWER,
    INTEREST_MAPPER,
    MODEL_STAGES,
    PRESENTER,
    RANKER,
)

__all__ = [
    "DISCOVERY",
    "EDGE_APPROVED",
    "EDGE_CANDIDATES_READY",
    "EDGE_GAPS_REMAIN",
    "EDGE_INTERESTS_MAPPED",
    "EDGE_RANKED",
    "LOOP_BACK_EDGES",
    "WORKFLOW_EDGES",
    "WORKFLOW_EXECUTORS",
    "StageVisit",
    "WorkflowEdge",
    "WorkflowRecord",
]

DISCOVERY = "Discovery"
WORKFLOW_EXECUTORS: tuple[str, ...] = (
    INTEREST_MAPPER,
    DISCOVERY,
    COVERAGE_REVIEWER,
    RANKER,
    PRESENTER,
)

EDGE_INTERESTS_MAPPED = "interests mapped"
EDGE_CANDIDATES_READY = "candidates ready"
EDGE_GAPS_REMAIN = "gaps remain"
EDGE_APPROVED = "approved / bounded partial"
EDGE_RANKED = "ranked"


@dataclass(frozen=True, slots=True)
class WorkflowEdge:
    """A directed edge; a conditional edge is taken only when its guard holds."""

    source: str
    target: str
    label: str
    conditional: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "label": self.label,
            "conditional": self.conditional,
        }


WORKFLOW_EDGES: tuple[WorkflowEdge, ...] = (
    WorkflowEdge(INTEREST_MAPPER, DISCOVERY, EDGE_INTERESTS_MAPPED),
    WorkflowEdge(DISCOVERY, COVERAGE_REVIEWER, EDGE_CANDIDATES_READY),
    # Guarded by the reviewer's verdict and by the loop bound.
    WorkflowEdge(COVERAGE_REVIEWER, DISCOVERY, EDGE_GAPS_REMAIN, conditional=True),
    # The default exit: "approved" when coverage is complete, "bounded partial" when the loop
    # bound was reached with gaps left.
    WorkflowEdge(COVERAGE_REVIEWER, RANKER, EDGE_APPROVED),
    WorkflowEdge(RANKER, PRESENTER, EDGE_RANKED),
)

# An edge loops back when it leads to an executor that comes earlier in the pipeline.
LOOP_BACK_EDGES: tuple[WorkflowEdge, ...] = tuple(
    edge
    for edge in WORKFLOW_EDGES
    if WORKFLOW_EXECUTORS.index(edge.target) <= WORKFLOW_EXECUTORS.index(edge.source)
)

_SEVERITY: Mapping[StageStatus, int] = {
    StageStatus.MEASURED: 0,
    StageStatus.RECOVERED: 1,
    StageStatus.FINAL_FALLBACK: 2,
    StageStatus.UNRECOVERED: 3,
    StageStatus.CANCELLED: 4,
}

# ----------------------------------------------------------------------------------------------
# The run record.
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StageVisit:
    """One visit of a model stage: its attempt census and whether the code path answered."""

    stage: str
    visit: int
    census: StageAttemptCensus
    code_path_answered: bool
    problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "visit": self.visit,
            **self.census.to_dict(),
            "code_path_answered": self.code_path_answered,
            "problems": list(self.problems),
        }


@dataclass(slots=True)
class WorkflowRecord:
    """Evidence accumulated while a run is in flight.

    Pass one to :meth:`ShopWorkflow.answer` to keep the evidence of a run that does not return
    (a cancellation, a failure): what happened up to that point is here.
    """

    executors: list[str] = field(default_factory=list)
    route: list[str] = field(default_factory=list)
    visits: list[StageVisit] = field(default_factory=list)
    usage: TokenUsage | None = None

    def enter(self, executor: str) -> None:
        if self.executors:
            raise RuntimeError("a run enters the graph once; later executors follow edges")
        if executor != WORKFLOW_EXECUTORS[0]:
            raise RuntimeError(f"a run starts at {WORKFLOW_EXECUTORS[0]}, not {executor}")
        self.executors.append(executor)

    def follow(self, label: str) -> None:
        """Take the edge ``label`` out of the current executor; refused if there is none."""
        current = self.executors[-1] if self.executors else None
        for edge in WORKFLOW_EDGES:
            if edge.source == current and edge.label == label:
                self.route.append(label)
                self.executors.append(edge.target)
                return
        raise RuntimeError(f"the workflow graph has no edge {label!r} out of {current}")

    def add_usage(self, usage: TokenUsage | None) -> None:
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage

    def visits_of(self, stage: str) -> int:
        return sum(v.stage == stage for v in self.visits)

    @property
    def trace(self) -> WorkflowTrace:
        return WorkflowTrace(tuple(self.executors), tuple(self.route))

    def stage_censuses(self) -> tuple[StageAttemptCensus, ...]:
        """One census per stage that ran: its worst visit (see :mod:`vitrine_shop.workflow`)."""
        worst: dict[str, StageVisit] = {}
        for visit in self.visits:
            held = worst.get(visit.stage)
            if held is None or _SEVERITY[visit.census.status] >= _SEVERITY[held.census.status]:
                worst[visit.stage] = visit
        return tuple(worst[stage].census for stage in MODEL_STAGES if stage in worst)
