"""Scorers: factories of admitted checks for tool trajectories, text and model-graded criteria.

Each factory returns a check already admitted with its chance floor and its authority, so it
goes straight into ``vitrine.Evaluation(checks=[...])`` or a ``BenchmarkDefinition``::

    from vitrine.scorers import includes, metadata, trajectory_match

    checks = [
        trajectory_match(metadata("expected_tools"), mode="superset"),
        includes(["refund", "7 days"], case_sensitive=False),
    ]

Every scorer keeps the three states apart: a measured pass, a measured failure, and *not
measured* when the evidence it reads is absent (no tool journal, no answer, a metadata field
the case lacks, a judge that was not admitted). Bad arguments fail when the scorer is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine.errors import (
        JudgeNotAdmittedError as JudgeNotAdmittedError,
        ScorerError as ScorerError,
        ScorerUnavailableError as ScorerUnavailableError,
    )
    from vitrine.judge._admission import AdmissionPolicy as AdmissionPolicy
    from vitrine.scorers._common import (
        MetadataField as MetadataField,
        metadata as metadata,
    )
    from vitrine.scorers._graded import graded as graded
    from vitrine.scorers._text import (
        IncludeMode as IncludeMode,
        JsonSource as JsonSource,
        NumberPick as NumberPick,
        RegexMode as RegexMode,
        includes as includes,
        json_schema as json_schema,
        numeric as numeric,
        regex as regex,
    )
    from vitrine.scorers._trajectory import (
        ArgumentMode as ArgumentMode,
        TrajectoryMode as TrajectoryMode,
        trajectory_match as trajectory_match,
    )

__getattr__, __dir__ = lazy_exports(__name__)
