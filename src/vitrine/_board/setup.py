"""The setup panel: choose a plan, see what it will run, start it through the command line.

A request is validated by :func:`vitrine._plans.validation.validate`, the rules the command line
applies, and then run as ``python -P -m vitrine ...`` in a subprocess writing to the board's store:
the same code path as the CLI, so a run started here is indistinguishable from one started in
a terminal. Its output is kept (bounded) for the progress view, and nothing is run implicitly.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vitrine._board.runs import BoardError
from vitrine._plans.base import UsageError
from vitrine._plans.validation import PlanOptions, validate

if TYPE_CHECKING:
    from vitrine._plans.base import Plan, PlanRequest
    from vitrine._suite import Suite

__all__ = [
    "BOARD_MAX_REPETITIONS",
    "Job",
    "JobRunner",
    "PlanChoice",
    "SetupRequest",
    "plan_choices",
    "run_command",
]

BOARD_MAX_REPETITIONS = 30
_LOG_LINES = 400


@dataclass(frozen=True, slots=True)
class PlanChoice:
    """One plan as the panel lists it: its rules, before anything runs."""

    name: str
    kind: str
    description: str
    paid: bool
    repetitions: str
    minimum: int
    maximum: int
    default: int
    configurable: bool
    accepts_scenario: bool
    default_plan: bool
    available: bool
    unavailable_reason: str


def plan_choices(suite: Suite) -> list[PlanChoice]:
    out = []
    for name, plan in suite.plans.items():
        rule = plan.repetitions
        out.append(
            PlanChoice(
                name=name,
                kind=plan.kind.value,
                description=plan.description,
                paid=plan.paid,
                repetitions=rule.describe() + (f" ({rule.reason})" if rule.reason else ""),
                minimum=rule.minimum,
                maximum=min(rule.maximum, BOARD_MAX_REPETITIONS),
                default=rule.default,
                configurable=rule.configurable,
                accepts_scenario=plan.accepts_scenario,
                default_plan=name == suite.default_plan,
                available=plan.available,
                unavailable_reason=plan.unavailable_reason if not plan.available else "",
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class SetupRequest:
    """The panel's form, as submitted."""

    plan: str
    scenario: str = ""
    repetitions: str = ""
    provider: str = ""
    confirm_paid: bool = False

    @classmethod
    def from_form(cls, form: dict[str, str]) -> SetupRequest:
        return cls(
            plan=form.get("plan", "").strip(),
            scenario=form.get("scenario", "").strip(),
            repetitions=form.get("repetitions", "").strip(),
            provider=form.get("provider", "").strip(),
            confirm_paid=form.get("confirm_paid") == "yes",
        )

    def preview(self, suite: Suite, root: Path) -> list[str]:
        """What the plan would run, as the command line previews it before its first call:
        the workload and, for a plan that states it, the design's power. Calls nothing."""
        # Confirmation is what starting asks for; a preview spends nothing, so it needs none.
        plan, request = self._validated(suite, root, confirmed=True)
        workload = getattr(plan, "workload", None)
        if workload is not None:
            return [str(line) for line in workload(request.scenarios, request.repetitions)]
        reps = f"{request.repetitions} repetition(s)"
        if request.scenarios:
            return [f"{plan.name}: {len(request.scenarios)} scenario(s) x {reps} per arm"]
        return [f"{plan.name}: its fixed workload, {reps}"]

    def argv(self, suite: Suite, suite_spec: str | None, root: Path) -> list[str]:
        """Validate with the CLI's own rules; return the command-line arguments that run it."""
        self._validated(suite, root, confirmed=self.confirm_paid)
        is_default = self.plan == suite.default_plan
        argv = ["--all"] if is_default else ["--eval-plan", self.plan]
        for flag, value in (
            ("--scenario", self.scenario),
            ("--repetitions", self.repetitions),
            ("--provider", self.provider),
            ("--suite", suite_spec or ""),
        ):
            if value:
                argv += [flag, value]
        if self.confirm_paid:
            argv.append("--confirm-paid")
        return [*argv, "--output", str(root)]

    def _validated(self, suite: Suite, root: Path, *, confirmed: bool) -> tuple[Plan, PlanRequest]:
        if not self.plan:
            raise BoardError("choose a plan: nothing runs implicitly", 400)
        if self.plan not in suite.plans:
            raise BoardError(
                f"unknown plan {self.plan!r}: the suite has {', '.join(suite.plans)}", 400
            )
        if self.repetitions:
            if not self.repetitions.isdigit():
                raise BoardError(
                    f"repetitions must be a whole number, got {self.repetitions!r}", 400
                )
            if not 1 <= int(self.repetitions) <= BOARD_MAX_REPETITIONS:
                raise BoardError(
                    f"the board starts 1 to {BOARD_MAX_REPETITIONS} repetitions, got "
                    f"{self.repetitions}: larger runs belong on the command line, where their "
                    "cost is previewed in full",
                    400,
                )
        is_default = self.plan == suite.default_plan
        options = PlanOptions(
            all=is_default,
            eval_plan=None if is_default else self.plan,
            scenario=self.scenario or None,
            repetitions=self.repetitions or None,
            confirm_paid=confirmed,
            provider=self.provider or None,
            output=root,
        )
        try:
            return validate(suite, options)
        except UsageError as exc:
            raise BoardError(str(exc), 400) from exc


@dataclass
class Job:
    """One run started from the panel: its command, its output so far, and how it ended."""

    id: int
    plan: str
    argv: list[str]
    started: float = field(default_factory=time.time)
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=_LOG_LINES))
    exit_code: int | None = None
    finished: float | None = None

    @property
    def running(self) -> bool:
        return self.exit_code is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "plan": self.plan,
            "running": self.running,
            "exit_code": self.exit_code,
            "elapsed_s": round((self.finished or time.time()) - self.started, 1),
            "lines": list(self.lines),
        }


def run_command(argv: list[str]) -> list[str]:
    """The installed vitrine under this interpreter, isolated from the working directory.

    ``python -m`` puts the working directory first on ``sys.path``, so a ``vitrine.py`` planted
    there (the board started from a shared folder) would run as the board's user; ``-P`` keeps
    it out, and the environment (PYTHONPATH, a suite's own path) is left as the user set it.
    """
    return [sys.executable, "-P", "-m", "vitrine", *argv]


class JobRunner:
    """Starts panel runs one at a time, each in its own process, and keeps their output."""

    def __init__(self) -> None:
        self._jobs: dict[int, Job] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def start(self, plan: str, argv: list[str]) -> Job:
        with self._lock:
            if any(job.running for job in self._jobs.values()):
                raise BoardError(
                    "a run started from the board is still going: wait for it to finish, so "
                    "two runs do not compete for the same machine",
                    409,
                )
            job = Job(next(self._ids), plan, argv)
            command = run_command(argv)
            try:
                process = subprocess.Popen(
                    command,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    text=True,
                    errors="replace",
                )
            except OSError as exc:
                raise BoardError(f"the run could not start ({type(exc).__name__})", 500) from exc
            self._jobs[job.id] = job
        threading.Thread(target=self._follow, args=(job, process), daemon=True).start()
        return job

    @property
    def started(self) -> int:
        """How many runs this board has started."""
        return len(self._jobs)

    def get(self, job_id: int) -> Job:
        try:
            return self._jobs[job_id]
        except KeyError:
            raise BoardError(f"no run {job_id} was started from this board") from None

    @staticmethod
    def _follow(job: Job, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            job.lines.append(line.rstrip("\n")[:2000])
        job.exit_code = process.wait()
        job.finished = time.time()
