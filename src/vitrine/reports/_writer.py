"""Write a suite report as JSON and HTML, atomically, and read a JSON report back.

A reader (a person, the board, CI) must never see a half-written artifact: each file is written
to a temporary sibling, flushed to disk and renamed over the target in one step, so the target
holds either the previous complete report or the new complete one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from vitrine.errors import ReportSchemaError
from vitrine.reports._html import render_html
from vitrine.reports._model import REPORT_SCHEMA_VERSION, SuiteReport
from vitrine.store._seal import SEAL_FIELD, seal_problem, sealed

__all__ = ["ReportSchemaError", "load_report", "report_json", "write_reports"]

JSON_NAME = "report.json"
HTML_NAME = "report.html"


def report_json(report: SuiteReport) -> str:
    """The canonical JSON text, sealed: sorted keys, two-space indent, trailing newline, and a
    ``content_hash`` over the rest, so a report edited after it was written (its exit code
    changed, say) is refused by :func:`load_report` and flagged by the board.

    pydantic's JSON mode writes a non-finite float as null, which keeps the file valid JSON.
    """
    data = sealed(json.loads(report.model_dump_json()))
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def write_reports(
    report: SuiteReport,
    directory: Path,
    *,
    json_path: Path | None = None,
    html_path: Path | None = None,
) -> dict[str, Path]:
    """Write ``report.json`` and ``report.html`` into ``directory``, plus optional copies.

    The report written records where it was written (``artifacts``), so the HTML page and the
    JSON both point at their siblings. Both texts are rendered before any file is touched: a
    rendering error leaves every previous artifact as it was.

    Returns the paths written, keyed ``json``, ``html`` and, when given, ``json_report`` and
    ``html_report``. Raises ``OSError`` naming the path when a target cannot be written.
    """

    targets: dict[str, Path] = {
        "json": directory / JSON_NAME,
        "html": directory / HTML_NAME,
    }
    if json_path is not None:
        targets["json_report"] = json_path
    if html_path is not None:
        targets["html_report"] = html_path
    for key, path in targets.items():
        _refuse_directory(path, "JSON" if key.startswith("json") else "HTML")

    stamped = report.model_copy(
        update={"artifacts": {key: path.as_posix() for key, path in targets.items()}}
    )
    texts = {"json": report_json(stamped), "html": render_html(stamped)}
    # Every file is staged before any is renamed into place: on a full disk the JSON must not
    # land claiming a result while its HTML sibling (or a copy) could not be written.
    staged: list[tuple[Path, Path]] = []
    try:
        for key, path in targets.items():
            kind = "json" if key.startswith("json") else "html"
            staged.append((_stage_text(path, texts[kind], what=f"{kind.upper()} report"), path))
        for tmp, path in staged:
            try:
                tmp.replace(path)  # os.replace: atomic on POSIX and Windows within one volume
            except OSError as exc:
                kind = "JSON" if path.suffix == ".json" else "HTML"
                raise OSError(
                    f"cannot write the {kind} report to {path}: {exc.strerror or exc}"
                ) from exc
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise
    for parent in {path.parent for path in targets.values()}:
        _fsync_directory(parent)
    return targets


def load_report(path: Path) -> SuiteReport:
    """Read a JSON suite report, refusing a schema version this vitrine does not know and a
    report whose seal does not match (edited after it was written)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ReportSchemaError(f"{path} is not JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise ReportSchemaError(f"{path} is not a suite report: expected a JSON object")
    version = data.get("schema_version")
    if version is None:
        raise ReportSchemaError(
            f"{path} has no schema_version, so it cannot be read safely: "
            "it is not a vitrine suite report"
        )
    if version != REPORT_SCHEMA_VERSION:
        raise ReportSchemaError(
            f"{path} has schema_version {version!r}; this vitrine reads suite reports of "
            f"schema_version {REPORT_SCHEMA_VERSION}. Guessing at unknown fields could show "
            "numbers the report never claimed, so it is refused."
        )
    problem = seal_problem(data)
    data.pop(SEAL_FIELD, None)

    try:
        report = SuiteReport.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "<root>"
        raise ReportSchemaError(
            f"{path} claims schema_version {version} but does not match it "
            f"({exc.error_count()} problem(s); first at {where}: {first['msg']})"
        ) from exc
    if problem is not None:
        raise ReportSchemaError(f"{path} cannot be trusted: {problem}")
    return report


def _refuse_directory(path: Path, kind: str) -> None:
    if path.is_dir():
        raise IsADirectoryError(
            f"cannot write the {kind} report to {path}: it is a directory; "
            f"name a file instead, e.g. {path / (JSON_NAME if kind == 'JSON' else HTML_NAME)}"
        )


def _stage_text(path: Path, text: str, *, what: str) -> Path:
    """Write ``text`` to a synced temporary sibling of ``path`` and return the sibling."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OSError(f"cannot write the {what} to {path}: {exc.strerror or exc}") from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        # Reports are read by people and CI on the same machine: not owner-only like mkstemp's.
        tmp.chmod(0o644)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise OSError(f"cannot write the {what} to {path}: {exc.strerror or exc}") from exc
        raise
    return tmp


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable; best effort, since not every platform can open a dir."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
