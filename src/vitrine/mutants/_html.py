"""The HTML view of a kill matrix: one self-contained, inert page.

It renders through the suite report's Jinja2 environment (autoescape on, control characters
made visible, the same status classes and filters), so a mutant description holding markup is
shown as text, and the page carries the same script-forbidding Content-Security-Policy.
"""

from __future__ import annotations

from vitrine._outcomes import ExitCode
from vitrine.mutants._coverage import coverage_by_kind
from vitrine.mutants._report import MutantMatrix
from vitrine.reports import _formatting as fmt
from vitrine.reports._templates import environment

__all__ = ["render_matrix_html"]

TEMPLATE = "mutants.html.j2"

# Outcomes mapped onto the report's status classes, so the colours mean the same thing.
_OUTCOME_STATUS = {
    "killed": "PASS",
    "survived": "FAIL",
    "not measured": "NOT MEASURED",
    "errored": "ERROR",
}


def render_matrix_html(matrix: MutantMatrix) -> str:
    """The complete HTML document for ``matrix`` (a string; the caller writes it)."""
    return (
        environment()
        .get_template(TEMPLATE)
        .render(
            matrix=matrix,
            exit_class=fmt.exit_class(matrix.exit_code),
            exit_meaning=_exit_meaning(matrix.exit_code),
            outcome_status=_OUTCOME_STATUS,
            coverage_by_kind=coverage_by_kind(matrix.coverage),
        )
    )


def _exit_meaning(code: int) -> str:

    return ExitCode(code).meaning
