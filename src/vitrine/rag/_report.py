"""The RAG report: one schema-versioned JSON document and a self-contained HTML page.

The JSON holds every per-item score with its state and method, so each aggregate can be
recomputed from the file alone. The HTML page is rendered by Jinja2 with autoescape (every
question, answer and chunk text is untrusted), has inline CSS only and a Content-Security-Policy
that forbids scripts and network loads.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vitrine._redact import bound_text
from vitrine.rag._pipeline import EvalOutcome
from vitrine.reports._templates import environment
from vitrine.store import atomic_write_bytes
from vitrine.store._private import private_dirs
from vitrine.store._seal import sealed

__all__ = ["RAG_REPORT_SCHEMA", "abstention_rates", "build_report", "render_html", "write_report"]

RAG_REPORT_SCHEMA = "vitrine.rag-report/2"  # 2: correctness, two abstention rates, split
_TEXT_LIMIT = 2000


def abstention_rates(outcome: EvalOutcome) -> dict[str, dict[str, int]]:
    """The two abstention errors, counted apart: answering what the pages cannot answer, and
    declining what they can. Failed generations are in neither count."""
    done = [r for r in outcome.results if r.answer.error is None]
    unanswerable = [r for r in done if not r.item.has_relevant_chunk]
    answerable = [r for r in done if r.item.has_relevant_chunk]
    return {
        "answered_unanswerable": {
            "count": sum(not r.answer.abstained for r in unanswerable),
            "of": len(unanswerable),
        },
        "abstained_answerable": {
            "count": sum(r.answer.abstained for r in answerable),
            "of": len(answerable),
        },
    }


def build_report(outcome: EvalOutcome, context: dict[str, Any]) -> dict[str, Any]:
    """The report document. ``context`` describes the run (knowledge base, forms, generator)."""
    items = []
    for result in outcome.results:
        item = result.item
        items.append(
            {
                "id": item.id,
                "question": item.question,
                "reference_answer": item.reference_answer,
                "has_relevant_chunk": item.has_relevant_chunk,
                "relevant_chunk_ids": list(item.relevant_chunk_ids),
                "retrieved": [
                    {"rank": c.rank, "id": c.id, "similarity": round(c.similarity, 6)}
                    for c in result.retrieval.chunks
                ],
                "retrieval_ms": round(result.retrieval.latency_s * 1000, 3),
                "answer": bound_text(result.answer.answer, _TEXT_LIMIT),
                "citations": list(result.answer.citations),
                "invalid_citations": list(result.answer.invalid_citations),
                "abstained": result.answer.abstained,
                "generation_error": result.answer.error,
                "scores": {m.value: obs.to_dict() for m, obs in result.scores.items()},
            }
        )
    return {
        "schema_version": RAG_REPORT_SCHEMA,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "exit_code": int(outcome.exit_code),
        "exit_meaning": outcome.exit_code.meaning,
        "top_k": outcome.top_k,
        "wall_s": round(outcome.wall_s, 3),
        **context,
        "metrics": {m.value: a.to_dict() for m, a in outcome.aggregates.items()},
        "abstention_rates": abstention_rates(outcome),
        "items": items,
    }


def render_html(report: dict[str, Any]) -> str:
    return environment().get_template("rag.html.j2").render(report=report)


def write_report(
    report: dict[str, Any],
    directory: Path,
    *,
    json_path: Path | None = None,
    html_path: Path | None = None,
) -> list[Path]:
    """Render both texts first, then write each file atomically; returns the paths written.

    The JSON is sealed (``content_hash``): the board shows a report whose exit code or scores
    were edited afterwards as unverified, never as what it claims.
    """
    document = sealed(report)
    text_json = (json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode()
    text_html = render_html(report).encode()
    targets = [(directory / "report.json", text_json), (directory / "report.html", text_html)]
    private_dirs(directory)  # in the store; the copies asked for keep the umask's modes
    if json_path is not None:
        targets.append((json_path, text_json))
    if html_path is not None:
        targets.append((html_path, text_html))
    for path, data in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data)
    return [path for path, _ in targets]
