"""One evaluation, declared once: the cases, the checks, the arms, and the proof it can fail.

::

    EVALUATION = vitrine.Evaluation(
        "airline",
        cases=CASES,
        checks=[states_the_real_status, keeps_basic_fares],
        arms={"careful": careful_agent, "hasty": hasty_agent},
        reference="careful",  # compare every other arm against it; its gates decide
        repetitions=2,
        controls=CONTROLS,  # proof that each check can turn red
        mutants=MUTANTS,  # proof that the evaluation sees the subject break
    )
    result = EVALUATION.run(store="out")  # runs, gates, comparisons, controls, mutants
    sys.exit(result.exit_code)

``vitrine --suite module:EVALUATION --all`` runs the same evaluation from the command line (the
gated arms, the comparison, the controls and a report), ``--controls-only`` its controls alone,
and ``vitrine mutants --suite module:EVALUATION`` its mutants, each against a fresh process.

A check is a :class:`~vitrine.Check`, an admitted check, or a plain function ``fn(case,
response)`` returning an :class:`~vitrine.Observation` or a bool. A plain function is admitted
as a gate with the evaluation's ``floor``; when none is given, its floor is stated as not
derivable (a predicate over the subject's own answer has no chance rate to beat), never
assumed. A function that returns ``None`` has measured nothing: its trial is not measured,
which is never a pass.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from vitrine._api import EvalResult, evaluate_async
from vitrine._bench.model import (
    AdmittedCheck,
    Arm,
    BenchmarkDefinition,
    Case,
    Check,
    DefinitionError,
    FunctionCheck,
    Subject,
    admit,
)
from vitrine._bench.response import SubjectResponse
from vitrine._bench.retry import DEFAULT_RETRIES, RetryPolicy
from vitrine._floors import ChanceFloor
from vitrine._outcomes import ExitCode, Observation, aggregate_exit_codes, as_observation
from vitrine._plans.base import PlanOutcome, PlanRequest, RepetitionRule, plan
from vitrine._suite import Suite
from vitrine._suite_flags import CONTROLS_ONLY
from vitrine._sync_entry import refuse_inside_event_loop
from vitrine.reports._model import ControlsSection, SuiteReport
from vitrine.reports._writer import write_reports
from vitrine.store._run_store import RunStore

if TYPE_CHECKING:
    from vitrine.controls._runner import ControlRegistry, ControlResult
    from vitrine.mutants._model import Mutant, MutantCatalogue

__all__ = ["Evaluation", "EvaluationResult", "MutantOutcome"]

CheckFunction: TypeAlias = Callable[[Case, SubjectResponse], "Observation | bool | None"]
CheckLike: TypeAlias = "Check | AdmittedCheck | CheckFunction"

UNDERIVED_FLOOR = (
    "a plain function over the subject's own answer: there is no chance rate to derive a floor from"
)


@dataclass(frozen=True)
class MutantOutcome:
    """One mutant run in this process: whether the evaluation's decision turned red under it."""

    id: str
    description: str
    killed: bool
    exit_code: ExitCode
    must_kill: bool
    reason: str

    @property
    def survived_unexpectedly(self) -> bool:
        """A mutant that had to be killed and was not: the evaluation is blind to it."""
        return self.must_kill and not self.killed


@dataclass(frozen=True)
class EvaluationResult:
    """Everything one run of an :class:`Evaluation` produced, and the one decision over it.

    ``runs`` holds the runs, their score, the gates and the reference comparisons; ``controls``
    and ``mutants`` are empty when the evaluation declared none or the run left them out (say
    which with ``controls_ran`` and ``mutants_ran``, so an empty tuple is never read as a pass).
    """

    evaluation: Evaluation
    runs: EvalResult
    controls: tuple[ControlResult, ...] = ()
    mutants: tuple[MutantOutcome, ...] = ()
    controls_ran: bool = False
    mutants_ran: bool = False

    @property
    def gated(self) -> tuple[str, ...]:
        """The arms whose gates decide."""
        return self.evaluation.gated_arms

    def reasons(self) -> list[str]:
        """One sentence per part of the decision: gates, controls, mutants."""
        lines = [self.runs.decision(arms=self.gated).reason]
        if self.controls_ran:
            caught = sum(c.caught for c in self.controls)
            lines.append(f"{caught}/{len(self.controls)} registered controls caught")
        if self.mutants_ran:
            killed = sum(m.killed for m in self.mutants)
            blind = [m.id for m in self.mutants if m.survived_unexpectedly]
            tail = f"; survived although they must be killed: {', '.join(blind)}" if blind else ""
            lines.append(f"{killed}/{len(self.mutants)} mutants killed{tail}")
        return lines

    @property
    def exit_code(self) -> ExitCode:
        """The one decision: the worst of the gates', the controls' and the mutants' classes."""
        codes = [self.runs.decision(arms=self.gated).exit_code]
        if self.controls_ran:
            codes.append(_controls_exit(self.controls))
        if self.mutants_ran:
            blind = any(m.survived_unexpectedly for m in self.mutants)
            codes.append(ExitCode.MEASURED_FAILURE if blind else ExitCode.PASS)
        return aggregate_exit_codes(codes)

    def write_reports(
        self,
        directory: str | os.PathLike[str],
        *,
        json_path: str | os.PathLike[str] | None = None,
        html_path: str | os.PathLike[str] | None = None,
        invoked_as: tuple[str, str] | None = None,
    ) -> dict[str, Path]:
        """``report.json`` and ``report.html``: the gated arms, the comparisons, the controls,
        and the one decision (gates, controls and mutants together). ``invoked_as`` is the
        ``(plan, mode)`` of the command line that ran it (see :meth:`report`)."""
        return write_reports(
            self.report(invoked_as),
            Path(directory),
            json_path=None if json_path is None else Path(json_path),
            html_path=None if html_path is None else Path(html_path),
        )

    def report(self, invoked_as: tuple[str, str] | None = None) -> SuiteReport:
        """The evaluation as a :class:`~vitrine.reports.SuiteReport`, which every view renders.

        The report says it came from the Python API unless ``invoked_as`` names the command
        line's ``(plan, mode)`` that ran it, so the console header matches what was typed.
        """
        report = self.runs.report(arms=self.gated)
        code = self.exit_code
        origin: dict[str, str] = {}
        if invoked_as is not None:
            origin = {"plan": invoked_as[0], "mode": invoked_as[1], "provenance": "command-line"}
        return report.model_copy(
            update={
                **origin,
                "controls": ControlsSection.of(self.controls) if self.controls_ran else None,
                "exit_code": int(code),
                "exit_meaning": code.meaning,
                "exit_reason": "; ".join(self.reasons()),
            }
        )

    def summary(self) -> str:
        """The gates, the scores and the decision, as the console shows them."""
        return "\n".join([self.runs.summary(arms=self.gated), *self.reasons()])


def _controls_exit(controls: Sequence[ControlResult]) -> ExitCode:
    if not controls:
        # A registry that produced no result proved nothing; absence is never a pass.
        return ExitCode.NOT_MEASURED
    return ExitCode.PASS if all(c.caught for c in controls) else ExitCode.MEASURED_FAILURE


@dataclass(frozen=True)
class Evaluation:
    """An evaluation declared once; :meth:`run` it here or name it to ``vitrine --suite``.

    ``arms`` maps an arm id to its subject (``subject(case) -> SubjectResponse``, plain or
    async), or lists :class:`~vitrine.Arm` objects. ``reference`` is the arm every other arm is
    compared against. ``gated`` names the arms whose gates decide the exit code; by default the
    reference arm alone when there is one (the challengers are evidence), else every arm.
    """

    name: str
    cases: Sequence[Case]
    checks: Sequence[CheckLike]
    arms: Mapping[str, Subject] | Sequence[Arm]
    reference: str | None = None
    gated: Sequence[str] | None = None
    repetitions: int = 1
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(DEFAULT_RETRIES))
    controls: ControlRegistry | None = None
    mutants: MutantCatalogue | None = None
    floor: ChanceFloor | None = None
    version: str = "1.0.0"
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise DefinitionError("an evaluation needs a non-blank name")
        if isinstance(self.repetitions, bool) or not isinstance(self.repetitions, int):
            raise DefinitionError(
                f"evaluation {self.name!r}: repetitions must be a whole number, "
                f"got {self.repetitions!r}"
            )
        if self.repetitions < 1:
            raise DefinitionError(
                f"evaluation {self.name!r}: repetitions must be at least 1, got {self.repetitions}"
            )
        if not isinstance(self.retry, RetryPolicy):
            raise DefinitionError(
                f"evaluation {self.name!r}: retry must be a vitrine.RetryPolicy, "
                f"got {type(self.retry).__name__}"
            )
        arms = self.arm_list()  # refuses a non-callable subject by arm
        ids = [arm.arm_id for arm in arms]
        if not ids:
            raise DefinitionError(f"evaluation {self.name!r} has no arms: nothing would answer")
        if len(set(ids)) != len(ids):
            raise DefinitionError(f"evaluation {self.name!r}: arm ids repeat: {ids}")
        if self.reference is not None and self.reference not in ids:
            raise DefinitionError(
                f"evaluation {self.name!r}: reference {self.reference!r} is not one of its arms "
                f"({', '.join(ids)})"
            )
        unknown = [arm for arm in self.gated or () if arm not in ids]
        if self.gated is not None and (not self.gated or unknown):
            raise DefinitionError(
                f"evaluation {self.name!r}: gated must name some of its arms "
                f"({', '.join(ids)}); got {list(self.gated)}"
            )
        self.definition()  # refuses empty cases, repeated ids and unadmittable checks now

    @property
    def gated_arms(self) -> tuple[str, ...]:
        """The arms whose gates decide the exit code."""
        if self.gated is not None:
            return tuple(self.gated)
        if self.reference is not None:
            return (self.reference,)
        return tuple(arm.arm_id for arm in self.arm_list())

    def arm_list(self) -> list[Arm]:
        """The arms as :class:`~vitrine.Arm` objects, in the order they were declared."""
        if isinstance(self.arms, Mapping):
            return [Arm(str(arm_id), subject) for arm_id, subject in self.arms.items()]
        arms = list(self.arms)
        for arm in arms:
            if not isinstance(arm, Arm):
                raise DefinitionError(
                    f"evaluation {self.name!r}: arms lists a {type(arm).__name__}; give "
                    "vitrine.Arm objects or a mapping of arm id to subject"
                )
        return arms

    def definition(self) -> BenchmarkDefinition:
        """The benchmark the arms are run over: the cases and the admitted checks."""
        return BenchmarkDefinition(
            self.name, self.version, list(self.cases), [self._admitted(c) for c in self.checks]
        )

    def _admitted(self, given: CheckLike) -> AdmittedCheck:
        if isinstance(given, AdmittedCheck):
            return given
        floor = self.floor or ChanceFloor.not_derivable(UNDERIVED_FLOOR)
        if isinstance(given, Check):
            return admit(given, floor)
        if not callable(given):
            raise DefinitionError(
                f"evaluation {self.name!r}: a check is a vitrine.Check or a function "
                f"fn(case, response); got {type(given).__name__}"
            )
        name = getattr(given, "__name__", "")
        if not name or name == "<lambda>":
            raise DefinitionError(
                f"evaluation {self.name!r}: a check given as a function needs a name (its key "
                "in every report); use a def, or vitrine.check('key')(fn)"
            )
        key = name.replace("_", "-")
        doc = inspect.getdoc(given) or ""
        return admit(FunctionCheck(key, self.version, _observing(key, given), doc), floor)

    async def run_async(
        self,
        store: RunStore | str | os.PathLike[str] | None = None,
        *,
        controls: bool = True,
        mutants: bool = True,
        concurrency: int = 16,
        progress: bool = False,
    ) -> EvaluationResult:
        """Run every arm, then the controls and the mutants (each can be left out).

        The mutants run here, one after another, each planted around a fresh in-memory run
        of the gated arms; ``vitrine mutants`` runs them in separate processes instead.
        """
        runs = await evaluate_async(
            self.definition(),
            self.arm_list(),
            repetitions=self.repetitions,
            store=store,
            concurrency=concurrency,
            reference=self.reference,
            retry=self.retry,
            progress=progress,
        )
        control_results: tuple[ControlResult, ...] = ()
        if controls and self.controls is not None:
            control_results = await self.controls.run()
        outcomes: tuple[MutantOutcome, ...] = ()
        if mutants and self.mutants is not None:
            outcomes = tuple([await self._run_mutant(m, concurrency) for m in self.mutants.mutants])
        return EvaluationResult(
            self,
            runs,
            control_results,
            outcomes,
            controls_ran=controls and self.controls is not None,
            mutants_ran=mutants and self.mutants is not None,
        )

    def run(
        self,
        store: RunStore | str | os.PathLike[str] | None = None,
        *,
        controls: bool = True,
        mutants: bool = True,
        concurrency: int = 16,
        progress: bool = False,
    ) -> EvaluationResult:
        """:meth:`run_async` from synchronous code (inside an event loop, await that)."""
        refuse_inside_event_loop("Evaluation.run", "Evaluation.run_async")
        return asyncio.run(
            self.run_async(
                store,
                controls=controls,
                mutants=mutants,
                concurrency=concurrency,
                progress=progress,
            )
        )

    async def _run_mutant(self, mutant: Mutant, concurrency: int) -> MutantOutcome:
        gated = [arm for arm in self.arm_list() if arm.arm_id in self.gated_arms]
        with mutant.plant():
            runs = await evaluate_async(
                self.definition(),
                gated,
                repetitions=self.repetitions,
                concurrency=concurrency,
                retry=self.retry,
            )
        decision = runs.decision()
        return MutantOutcome(
            mutant.id,
            mutant.description,
            killed=decision.exit_code is not ExitCode.PASS,
            exit_code=decision.exit_code,
            must_kill=mutant.must_kill,
            reason=decision.reason,
        )

    def suite(self) -> Suite:
        """This evaluation as a suite: the plan ``--all`` runs, and its mutants for ``vitrine
        mutants``. ``vitrine --suite module:EVALUATION`` calls this itself."""

        @plan(
            self.name,
            description=self.description or f"the {self.name} evaluation, gated",
            repetitions=RepetitionRule.between(
                1, max(100, self.repetitions), self.repetitions, "any number of repetitions"
            ),
        )
        async def offline(request: PlanRequest) -> PlanOutcome:
            return await self._plan(request)

        components: dict[str, Any] = {}
        if self.mutants is not None:
            components["mutants"] = self.mutants
        modes = {CONTROLS_ONLY} if self.controls is not None else set()
        return Suite(
            self.name,
            {self.name: offline},
            {},
            default_plan=self.name,
            description=self.description,
            components=components,
            modes=frozenset(modes),
        )

    async def _plan(self, request: PlanRequest) -> PlanOutcome:
        if request.mode == CONTROLS_ONLY:
            assert self.controls is not None  # the mode is declared only with controls
            results = await self.controls.run()
            caught = sum(c.caught for c in results)
            line = f"{caught}/{len(results)} registered controls caught"
            return PlanOutcome(_controls_exit(results), [line])
        store = RunStore(request.output)
        evaluation = self if request.repetitions == self.repetitions else self._repeated(request)
        # Mutants re-run this very plan in their own processes; running them here would recurse.
        result = await evaluation.run_async(store, mutants=False)
        written = result.write_reports(
            store.root / "reports" / self.name,
            json_path=request.json_report,
            html_path=request.html_report,
            invoked_as=(self.name, request.mode),
        )
        return PlanOutcome(result.exit_code, result.reasons(), list(written.values()))

    def _repeated(self, request: PlanRequest) -> Evaluation:
        return replace(self, repetitions=request.repetitions)


def _observing(
    key: str, fn: Callable[[Case, SubjectResponse], Any]
) -> Callable[[Case, SubjectResponse], Observation]:
    def observe(case: Case, response: SubjectResponse) -> Observation:
        return as_observation(fn(case, response), f"check {key}")

    observe.__name__ = getattr(fn, "__name__", key)
    observe.__doc__ = fn.__doc__
    return observe
