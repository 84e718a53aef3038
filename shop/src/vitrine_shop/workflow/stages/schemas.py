"""The four model stages by name, and the output schema each must answer with.

Every field is required (nullable where absence is meaningful) and extra keys are forbidden,
because strict structured-output endpoints accept only such schemas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from vitrine_shop.domain import SKU_PATTERN, Department

__all__ = [
    "COVERAGE_REVIEWER",
    "INTEREST_MAPPER",
    "MODEL_STAGES",
    "PRESENTER",
    "RANKER",
    "STAGE_SCHEMAS",
    "CoverageGap",
    "CoverageVerdict",
    "InterestMapping",
    "MappedInterest",
    "Presentation",
    "PresentedItem",
    "RankedPick",
    "Ranking",
    "StrictSchema",
]

INTEREST_MAPPER = "InterestMapper"
COVERAGE_REVIEWER = "CoverageReviewer"
RANKER = "Ranker"
PRESENTER = "Presenter"
MODEL_STAGES: tuple[str, ...] = (INTEREST_MAPPER, COVERAGE_REVIEWER, RANKER, PRESENTER)


# The departments a recommendation may be drawn from. Spelled out (not derived) so the JSON
# schema can enumerate them; the guard below keeps the list in step with the domain model.
OpenDepartment = Literal[
    "photography",
    "outdoor-hiking",
    "home-espresso",
    "gaming",
    "kitchen-appliances",
    "cycling",
    "home-audio",
    "power-travel-tech",
]
if set(get_args(OpenDepartment)) != {d.value for d in Department if not d.sensitive}:
    raise RuntimeError("OpenDepartment must list exactly the non-sensitive departments")

Sku = Annotated[str, Field(pattern=SKU_PATTERN)]
Label = Annotated[str, Field(min_length=1, max_length=120)]
Prose = Annotated[str, Field(min_length=1, max_length=400)]
# Search needs words: a blank query would reach retrieval and fail there, not here.
Query = Annotated[str, Field(min_length=1, max_length=200, pattern=r"\S")]


class StrictSchema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MappedInterest(StrictSchema):
    """One thing the customer cares about, and how to look for it."""

    label: Label
    source: Literal["history", "request", "replenishment"]
    department: OpenDepartment | None = Field(
        description="where to search; null searches every non-sensitive department"
    )
    weight: float = Field(ge=0.0, le=1.0)
    search_query: Query
    evidence_skus: list[Sku] = Field(max_length=12)


class InterestMapping(StrictSchema):
    interests: list[MappedInterest] = Field(max_length=6)


class CoverageGap(StrictSchema):
    interest: Label = Field(description="the label of an interest that lacks a good candidate")
    search_query: Query


class CoverageVerdict(StrictSchema):
    covered: bool
    gaps: list[CoverageGap] = Field(max_length=6)


class RankedPick(StrictSchema):
    sku: Sku
    interest: Label = Field(description="the interest label this candidate was found for")
    reason: Prose


class Ranking(StrictSchema):
    picks: list[RankedPick] = Field(max_length=8)


class PresentedItem(StrictSchema):
    sku: Sku
    reason: Prose


class Presentation(StrictSchema):
    opening: Prose
    items: list[PresentedItem] = Field(max_length=8)
    closing: Annotated[str, Field(max_length=400)]


STAGE_SCHEMAS: Mapping[str, type[StrictSchema]] = {
    INTEREST_MAPPER: InterestMapping,
    COVERAGE_REVIEWER: CoverageVerdict,
    RANKER: Ranking,
    PRESENTER: Presentation,
}
