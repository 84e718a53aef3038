"""vitrine: evaluate LLM agents and workflows with evidence that holds up.

The public API is re-exported here. Names resolve lazily so that ``vitrine --help`` and small
scripts do not pay for scipy, pydantic or rich until they use them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # outcomes
    "Census": "vitrine.outcomes",
    "ExitCode": "vitrine.outcomes",
    "MeasurementState": "vitrine.outcomes",
    "Observation": "vitrine.outcomes",
    "Status": "vitrine.outcomes",
    "Verdict": "vitrine.outcomes",
    "aggregate_exit_codes": "vitrine.outcomes",
    "run_verdict": "vitrine.outcomes",
    "status_of_label": "vitrine.outcomes",
    # registered controls
    "ControlRegistry": "vitrine.controls",
    "ControlResult": "vitrine.controls",
    "ControlSpec": "vitrine.controls",
    "ManifestError": "vitrine.controls",
    "ManifestExpectation": "vitrine.controls",
    "ScopeClass": "vitrine.controls",
    "load_manifest": "vitrine.controls",
    "run_controls": "vitrine.controls",
    # subject mutants and the kill matrix
    "Mutant": "vitrine.mutants",
    "MutantCatalogue": "vitrine.mutants",
    "MutantMatrix": "vitrine.mutants",
    "run_mutants": "vitrine.mutants",
    # floors
    "ChanceFloor": "vitrine.floors",
    "FloorKind": "vitrine.floors",
    "FloorNotDerivableError": "vitrine.floors",
    # benchmark model
    "AdmissionError": "vitrine.bench.model",
    "AdmittedCheck": "vitrine.bench.model",
    "Arm": "vitrine.bench.model",
    "Authority": "vitrine.bench.model",
    "BenchmarkDefinition": "vitrine.bench.model",
    "Case": "vitrine.bench.model",
    "Check": "vitrine.bench.model",
    "DefinitionError": "vitrine.bench.model",
    "FunctionCheck": "vitrine.bench.model",
    "admit": "vitrine.bench.model",
    "check": "vitrine.bench.model",
    # responses
    "AttemptOutcome": "vitrine.bench.response",
    "ImpossibleCensusError": "vitrine.bench.response",
    "StageAttemptCensus": "vitrine.bench.response",
    "StageStatus": "vitrine.bench.response",
    "SubjectResponse": "vitrine.bench.response",
    "TokenUsage": "vitrine.bench.response",
    "ToolCallRecord": "vitrine.bench.response",
    "ToolCallStatus": "vitrine.bench.response",
    "WorkflowTrace": "vitrine.bench.response",
    # results
    "RunResult": "vitrine.bench.results",
    "ScenarioRow": "vitrine.bench.results",
    # providers
    "ChatCompletion": "vitrine.providers.base",
    "ChatMessage": "vitrine.providers.base",
    "ChatModel": "vitrine.providers.base",
    "ChatRequest": "vitrine.providers.base",
    "Provenance": "vitrine.providers.base",
    "ProviderError": "vitrine.providers.base",
    "ProviderFailure": "vitrine.providers.base",
    "ResponseFormat": "vitrine.providers.base",
    "ToolCallRequest": "vitrine.providers.base",
    "ToolSpec": "vitrine.providers.base",
    # suites, plans and the notebook API
    "EvalResult": "vitrine.api",
    "evaluate": "vitrine.api",
    "evaluate_async": "vitrine.api",
    "FunctionPlan": "vitrine.plans.base",
    "Plan": "vitrine.plans.base",
    "PlanKind": "vitrine.plans.base",
    "PlanOutcome": "vitrine.plans.base",
    "PlanRequest": "vitrine.plans.base",
    "RepetitionRule": "vitrine.plans.base",
    "UsageError": "vitrine.plans.base",
    "plan": "vitrine.plans.base",
    "ScenarioInfo": "vitrine.suite",
    "Suite": "vitrine.suite",
    "load_suite": "vitrine.suite",
    # a suite's declared offline pipeline
    "Ablation": "vitrine.suite_pipeline",
    "ControlsStep": "vitrine.suite_pipeline",
    "Evidence": "vitrine.suite_pipeline",
    "EvidenceRequest": "vitrine.suite_pipeline",
    "GateBenchmark": "vitrine.suite_pipeline",
    "OfflinePipeline": "vitrine.suite_pipeline",
    "ScoredBenchmark": "vitrine.suite_pipeline",
    "SelfTest": "vitrine.suite_pipeline",
    "SuiteRun": "vitrine.suite_pipeline",
    "run_offline_mode": "vitrine.suite_pipeline",
    # retries, gates and reports of your own evaluations
    "RetryPolicy": "vitrine.bench.retry",
    # where trials run
    "RayExecutor": "vitrine.bench.ray_executor",
    "TrialExecutor": "vitrine.bench.executors",
    "use_executor": "vitrine.bench.executors",
    "GateDecision": "vitrine.gates",
    "GateResult": "vitrine.gates",
    "decide": "vitrine.gates",
    "GateRow": "vitrine.reports.model",
    "SuiteReport": "vitrine.reports.model",
    "benchmark_section": "vitrine.reports.sections",
    "recompute_claims": "vitrine.reports.sections",
    "load_report": "vitrine.reports.writer",
    "write_reports": "vitrine.reports.writer",
    # the run store
    "RunStore": "vitrine.store",
    "list_runs": "vitrine.store",
    "load_run": "vitrine.store",
    "resume_run": "vitrine.bench.runner",
    "UnsealedRun": "vitrine.bench.recovery",
    "find_unsealed": "vitrine.bench.recovery",
    "resume_unsealed": "vitrine.bench.recovery",
    "resume_unsealed_async": "vitrine.bench.recovery",
    # subjects behind HTTP
    "HttpJsonSubject": "vitrine.subjects",
    "OpenAIChatSubject": "vitrine.subjects",
    # the one exception root
    "VitrineError": "vitrine.errors",
}

# Derived from the one table above, so a name cannot be exported in one place and missing in
# the other; the TYPE_CHECKING block below mirrors it for type checkers (a test keeps it so).
__all__ = sorted(_EXPORTS)  # noqa: PLE0605


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vitrine' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:
    # For type checkers only (the package re-exports these implicitly, see pyproject.toml);
    # a test keeps these imports equal to _EXPORTS.
    from vitrine.api import EvalResult, evaluate, evaluate_async  # noqa: F401
    from vitrine.bench.executors import TrialExecutor, use_executor  # noqa: F401
    from vitrine.bench.model import (  # noqa: F401
        AdmissionError,
        AdmittedCheck,
        Arm,
        Authority,
        BenchmarkDefinition,
        Case,
        Check,
        DefinitionError,
        FunctionCheck,
        admit,
        check,
    )
    from vitrine.bench.ray_executor import RayExecutor  # noqa: F401
    from vitrine.bench.recovery import (  # noqa: F401
        UnsealedRun,
        find_unsealed,
        resume_unsealed,
        resume_unsealed_async,
    )
    from vitrine.bench.response import (  # noqa: F401
        AttemptOutcome,
        ImpossibleCensusError,
        StageAttemptCensus,
        StageStatus,
        SubjectResponse,
        TokenUsage,
        ToolCallRecord,
        ToolCallStatus,
        WorkflowTrace,
    )
    from vitrine.bench.results import RunResult, ScenarioRow  # noqa: F401
    from vitrine.bench.retry import RetryPolicy  # noqa: F401
    from vitrine.bench.runner import resume_run  # noqa: F401
    from vitrine.controls import (  # noqa: F401
        ControlRegistry,
        ControlResult,
        ControlSpec,
        ManifestError,
        ManifestExpectation,
        ScopeClass,
        load_manifest,
        run_controls,
    )
    from vitrine.errors import VitrineError  # noqa: F401
    from vitrine.floors import ChanceFloor, FloorKind, FloorNotDerivableError  # noqa: F401
    from vitrine.gates import GateDecision, GateResult, decide  # noqa: F401
    from vitrine.mutants import Mutant, MutantCatalogue, MutantMatrix, run_mutants  # noqa: F401
    from vitrine.outcomes import (  # noqa: F401
        Census,
        ExitCode,
        MeasurementState,
        Observation,
        Status,
        Verdict,
        aggregate_exit_codes,
        run_verdict,
        status_of_label,
    )
    from vitrine.plans.base import (  # noqa: F401
        FunctionPlan,
        Plan,
        PlanKind,
        PlanOutcome,
        PlanRequest,
        RepetitionRule,
        UsageError,
        plan,
    )
    from vitrine.providers.base import (  # noqa: F401
        ChatCompletion,
        ChatMessage,
        ChatModel,
        ChatRequest,
        Provenance,
        ProviderError,
        ProviderFailure,
        ResponseFormat,
        ToolCallRequest,
        ToolSpec,
    )
    from vitrine.reports.model import GateRow, SuiteReport  # noqa: F401
    from vitrine.reports.sections import benchmark_section, recompute_claims  # noqa: F401
    from vitrine.reports.writer import load_report, write_reports  # noqa: F401
    from vitrine.store import RunStore, list_runs, load_run  # noqa: F401
    from vitrine.subjects import HttpJsonSubject, OpenAIChatSubject  # noqa: F401
    from vitrine.suite import ScenarioInfo, Suite, load_suite  # noqa: F401
    from vitrine.suite_pipeline import (  # noqa: F401
        Ablation,
        ControlsStep,
        Evidence,
        EvidenceRequest,
        GateBenchmark,
        OfflinePipeline,
        ScoredBenchmark,
        SelfTest,
        SuiteRun,
        run_offline_mode,
    )
