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
    "Verdict": "vitrine.outcomes",
    "aggregate_exit_codes": "vitrine.outcomes",
    "run_verdict": "vitrine.outcomes",
    # registered controls
    "ControlRegistry": "vitrine.controls",
    "ControlResult": "vitrine.controls",
    "ControlSpec": "vitrine.controls",
    "ManifestError": "vitrine.controls",
    "ManifestExpectation": "vitrine.controls",
    "ScopeClass": "vitrine.controls",
    "load_manifest": "vitrine.controls",
    "run_controls": "vitrine.controls",
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
}

__all__ = [
    "AdmissionError",
    "AdmittedCheck",
    "Arm",
    "AttemptOutcome",
    "Authority",
    "BenchmarkDefinition",
    "Case",
    "Census",
    "ChanceFloor",
    "ChatCompletion",
    "ChatMessage",
    "ChatModel",
    "ChatRequest",
    "Check",
    "ControlRegistry",
    "ControlResult",
    "ControlSpec",
    "DefinitionError",
    "EvalResult",
    "ExitCode",
    "FloorKind",
    "FloorNotDerivableError",
    "FunctionCheck",
    "FunctionPlan",
    "ImpossibleCensusError",
    "ManifestError",
    "ManifestExpectation",
    "MeasurementState",
    "Observation",
    "Plan",
    "PlanKind",
    "PlanOutcome",
    "PlanRequest",
    "Provenance",
    "ProviderError",
    "ProviderFailure",
    "RepetitionRule",
    "ResponseFormat",
    "RunResult",
    "ScenarioInfo",
    "ScenarioRow",
    "ScopeClass",
    "StageAttemptCensus",
    "StageStatus",
    "SubjectResponse",
    "Suite",
    "TokenUsage",
    "ToolCallRecord",
    "ToolCallRequest",
    "ToolCallStatus",
    "ToolSpec",
    "UsageError",
    "Verdict",
    "WorkflowTrace",
    "admit",
    "aggregate_exit_codes",
    "check",
    "evaluate",
    "evaluate_async",
    "load_manifest",
    "load_suite",
    "plan",
    "run_controls",
    "run_verdict",
]


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
    from vitrine.api import EvalResult, evaluate, evaluate_async
    from vitrine.bench.model import (
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
    from vitrine.bench.response import (
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
    from vitrine.bench.results import RunResult, ScenarioRow
    from vitrine.controls import (
        ControlRegistry,
        ControlResult,
        ControlSpec,
        ManifestError,
        ManifestExpectation,
        ScopeClass,
        load_manifest,
        run_controls,
    )
    from vitrine.floors import ChanceFloor, FloorKind, FloorNotDerivableError
    from vitrine.outcomes import (
        Census,
        ExitCode,
        MeasurementState,
        Observation,
        Verdict,
        aggregate_exit_codes,
        run_verdict,
    )
    from vitrine.plans.base import (
        FunctionPlan,
        Plan,
        PlanKind,
        PlanOutcome,
        PlanRequest,
        RepetitionRule,
        UsageError,
        plan,
    )
    from vitrine.providers.base import (
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
    from vitrine.suite import ScenarioInfo, Suite, load_suite
