"""The kill matrix: one versioned document that the console, JSON and HTML views all render.

A board or an auditor reads ``matrix.json`` later without running anything, so everything a
reader needs (the healthy baseline, each mutant's outcome and killers, the score against the
promise) is in the document itself, and the store folders it names hold the evidence.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vitrine.errors import MatrixSchemaError
from vitrine.store._seal import SEAL_FIELD, require_seal, sealed

__all__ = [
    "MATRIX_SCHEMA_VERSION",
    "Baseline",
    "KillerChange",
    "MatrixSchemaError",
    "MutantMatrix",
    "MutantOutcome",
    "MutantRow",
    "SeamCoverage",
    "load_matrix",
    "matrix_json",
]

MATRIX_SCHEMA_VERSION = 2
# Version 1 had no seams and no generated mutants; its documents read as version 2 with none.
_READABLE_VERSIONS = (1, MATRIX_SCHEMA_VERSION)

MutantOutcome = Literal["killed", "survived", "not measured", "errored"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KillerChange(_Model):
    """One gate, check, control or test whose status under the mutant differs from healthy."""

    killer: str  # "gate:NAME", "check:BENCH/ARM/KEY", "control:ID" or "test:NODEID"
    healthy: str
    mutant: str
    aliases: list[str] = Field(default_factory=list)  # other names, e.g. a test's case ids


class Baseline(_Model):
    """The healthy subject's run: every killer is a departure from these statuses."""

    exit_code: int | None
    duration_s: float
    statuses: dict[str, str] = Field(default_factory=dict)
    store_dir: str  # relative to the session folder


class MutantRow(_Model):
    id: str
    component: str
    description: str
    must_kill: bool
    outcome: MutantOutcome
    exit_code: int | None  # None: the worker never reported one (crash, timeout)
    duration_s: float
    reason: str  # why this outcome, in one sentence
    killers: list[KillerChange] = Field(default_factory=list)
    expected_killers: list[str] = Field(default_factory=list)
    expected_and_seen: list[str] = Field(default_factory=list)
    expected_not_seen: list[str] = Field(default_factory=list)
    seen_unexpectedly: list[str] = Field(default_factory=list)
    store_dir: str  # relative to the session folder
    generated: bool = False
    seam_kind: str | None = None  # "model", "tool", "prompt-rule", "conversation", "threshold"
    seam_target: str | None = None  # which one: a tool's name, "rule 5", a threshold's name
    operator: str | None = None  # what was done to it: "errors", "deleted", ...

    @property
    def killer_names(self) -> list[str]:
        return [change.killer for change in self.killers]


class SeamCoverage(_Model):
    """What the checks see of one seam: how many of its mutants were killed, which were not."""

    kind: str
    target: str
    mutants: int
    killed: int
    unseen: list[str] = Field(default_factory=list)  # operators whose mutant survived
    unmeasured: list[str] = Field(default_factory=list)  # operators not measured or errored

    @property
    def seen(self) -> bool:
        """Whether some check noticed at least one defect planted at this seam."""
        return self.killed > 0


class MutantMatrix(_Model):
    """The kill matrix: every mutant, the killers that noticed it, and the mutation score."""

    schema_version: int = MATRIX_SCHEMA_VERSION
    suite: str
    plan: str
    session_id: str
    started_at: str
    duration_s: float
    description: str = ""
    baseline: Baseline
    killers: list[str]  # the matrix columns: every killer that changed for some mutant
    mutants: list[MutantRow]
    killed: int
    total: int
    score: float
    minimum_score: float
    must_kill_survivors: list[str]
    exit_code: int
    exit_reason: str
    notes: list[str] = Field(default_factory=list)
    artifacts: dict[str, str] = Field(default_factory=dict)
    # Generated mutants are counted apart: the score is the catalogue's promise, they are not.
    generated_killed: int = 0
    generated_total: int = 0
    coverage: list[SeamCoverage] = Field(default_factory=list)

    def unseen_seams(self, kind: str) -> list[str]:
        """The seams of ``kind`` at which no mutant was killed: what no check sees."""
        return [c.target for c in self.coverage if c.kind == kind and not c.seen]

    def kills(self, mutant_id: str, killer: str) -> bool:
        """True when ``killer`` changed status under mutant ``mutant_id`` (one matrix cell)."""
        return any(row.id == mutant_id and killer in row.killer_names for row in self.mutants)

    @property
    def score_text(self) -> str:
        """``27/30 killed (90.0%), minimum 90%``, and the generated mutants' count if any."""
        text = (
            f"{self.killed}/{self.total} killed ({100 * self.score:.1f}%), "
            f"minimum {100 * self.minimum_score:g}%"
        )
        if not self.generated_total:
            return text
        share = 100 * self.generated_killed / self.generated_total
        generated = (
            f"generated: {self.generated_killed}/{self.generated_total} killed ({share:.1f}%)"
        )
        return generated if not self.total else f"{text}; {generated}"


def matrix_json(matrix: MutantMatrix) -> str:
    """The canonical JSON text, sealed: sorted keys, two-space indent, trailing newline, and a
    ``content_hash`` over the rest, so a score or outcome edited afterwards is refused."""
    data = sealed(json.loads(matrix.model_dump_json()))
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def load_matrix(path: Path) -> MutantMatrix:
    """Read ``matrix.json``, refusing a schema version this vitrine does not know and a matrix
    whose seal does not match (edited after it was written)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MatrixSchemaError(f"{path.name} cannot be read as JSON: {exc}") from exc
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version not in _READABLE_VERSIONS:
        raise MatrixSchemaError(
            f"{path.name} has schema version {version!r}; this vitrine reads versions "
            f"{', '.join(map(str, _READABLE_VERSIONS))}"
        )
    require_seal(data, path.name, MatrixSchemaError)
    body = {k: v for k, v in data.items() if k != SEAL_FIELD}
    try:
        return MutantMatrix.model_validate({**body, "schema_version": MATRIX_SCHEMA_VERSION})
    except ValidationError as exc:
        raise MatrixSchemaError(f"{path.name} is not a kill matrix: {exc}") from exc
