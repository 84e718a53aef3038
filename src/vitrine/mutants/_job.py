"""What the runner asks of one worker process, and what the worker answers.

Both travel as small JSON files in the mutant's store folder, so a run can be read (and a
worker rerun by hand) from the folder alone.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from vitrine.store._files import atomic_write_bytes

__all__ = ["JOB_NAME", "LOG_NAME", "PLAN_REPORT_NAME", "RESULT_NAME", "WorkerJob", "WorkerResult"]

JOB_NAME = "job.json"
RESULT_NAME = "result.json"
LOG_NAME = "worker.log"
PLAN_REPORT_NAME = "plan-report.json"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkerJob(_Model):
    """Run ``plan`` of ``suite`` with ``mutant`` planted (``None``: the healthy subject)."""

    suite: str
    plan: str
    mutant: str | None
    store: str  # the folder this worker owns: its plan store, report and result
    test_selections: list[list[str]] = Field(default_factory=list)
    generate: bool = False  # the mutant is generated from the suite's seams

    @property
    def folder(self) -> Path:
        return Path(self.store)

    def write(self) -> Path:
        path = self.folder / JOB_NAME
        atomic_write_bytes(path, self.model_dump_json(indent=2).encode())
        return path


class WorkerResult(_Model):
    """The plan's exit code and the status of every gate, check, control and test it saw.

    ``statuses`` maps a killer name (``gate:NAME``, ``check:BENCH/ARM/KEY``, ``control:ID``,
    ``test:NODEID``) to its status; ``error`` says why the worker could not do its job (a plant
    that raised, a service that did not start, tests that could not run).
    """

    exit_code: int | None = None
    statuses: dict[str, str] = Field(default_factory=dict)
    aliases: dict[str, list[str]] = Field(default_factory=dict)  # a test's case ids
    report: bool = False  # whether the plan wrote a report the statuses were read from
    error: str | None = None

    def write(self, folder: Path) -> None:
        atomic_write_bytes(folder / RESULT_NAME, self.model_dump_json(indent=2).encode())
