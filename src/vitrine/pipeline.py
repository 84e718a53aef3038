"""A suite's declared offline pipeline, and the suite object that offers it, with the flags it
adds to the command line (:class:`Mode`, :class:`ServiceFlag`).

See :mod:`vitrine._suite_pipeline` for the shape; ``await run_offline_mode(PIPELINE, request)``
is a whole offline plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine._suite import (
        LazyScenarios as LazyScenarios,
        ScenarioInfo as ScenarioInfo,
        Suite as Suite,
        load_suite as load_suite,
    )
    from vitrine._suite_flags import (
        Mode as Mode,
        ServiceFlag as ServiceFlag,
    )
    from vitrine._suite_pipeline import (
        Ablation as Ablation,
        ControlsStep as ControlsStep,
        Evidence as Evidence,
        EvidenceRequest as EvidenceRequest,
        GateBenchmark as GateBenchmark,
        OfflinePipeline as OfflinePipeline,
        ScoredBenchmark as ScoredBenchmark,
        SelfTest as SelfTest,
        SuiteRun as SuiteRun,
        build_report as build_report,
        controls_exit as controls_exit,
        run_controls_only as run_controls_only,
        run_offline_mode as run_offline_mode,
        run_scored as run_scored,
        run_suite as run_suite,
    )

__getattr__, __dir__ = lazy_exports(__name__)
