"""Reports: the suite report model and its console, JSON and HTML renderings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vitrine._lazy import lazy_exports

if TYPE_CHECKING:
    from vitrine._pipes import (
        pipe_safe_stdout as pipe_safe_stdout,
    )
    from vitrine.reports._html import (
        render_html as render_html,
    )
    from vitrine.reports._model import (
        REPORT_SCHEMA_VERSION as REPORT_SCHEMA_VERSION,
        AnswerSample as AnswerSample,
        BenchmarkSection as BenchmarkSection,
        ControlRow as ControlRow,
        ControlsSection as ControlsSection,
        GateRow as GateRow,
        SuiteReport as SuiteReport,
    )
    from vitrine.reports._sections import (
        benchmark_section as benchmark_section,
        recompute_claims as recompute_claims,
    )
    from vitrine.reports._writer import (
        ReportSchemaError as ReportSchemaError,
        load_report as load_report,
        report_json as report_json,
        write_reports as write_reports,
    )

__getattr__, __dir__ = lazy_exports(__name__)
