"""Red-team run directories, findings and their human sign-off (the soft gate).

A run lives in ``<store root>/reports/redteam-<time>-<suffix>/``::

    redteam.json     the run document: scores, probes, findings (written once, atomically)
    redteam.html     the self-contained report (re-rendered when a finding is signed off)
    signoffs.jsonl   append-only sign-offs, one JSON line each, chained to the run's seal
    signoffs.head.json  the sealed head of that chain: its count and last line's hash

and every run is recorded, in order, in ``<store root>/reports/redteam.runs.jsonl`` (a chained
ledger with its own sealed head), so ``vitrine redteam status`` can tell the latest run from an
older one copied under a newer name, and notices when the latest run was deleted.

A compromise is a measured failure of the run; it is also a *finding* that a person must
review. Signing it off does not change the run's facts (it stays a failure on record); it
records who accepted it and why, so ``vitrine redteam status`` can let the next deploy go.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vitrine._redact import sanitize_text
from vitrine.errors import InvalidArgumentError, NotFoundError, RunIntegrityError, RunNotFoundError
from vitrine.redteam._detectors import contains_secret
from vitrine.redteam._model import Outcome, ProbeResult, TargetReply
from vitrine.store._files import atomic_write_json, read_json
from vitrine.store._ledger import Ledger, LedgerError
from vitrine.store._private import PRIVATE_DIR, private_dirs
from vitrine.store._seal import document_hash

__all__ = [
    "RUN_DOCUMENT",
    "RUN_SCHEMA",
    "Finding",
    "RunIntegrityError",
    "RunNotFoundError",
    "SignOff",
    "excerpt",
    "findings_for",
    "latest_run",
    "load_run",
    "mask_secrets",
    "new_run_dir",
    "read_signoffs",
    "resolve_run",
    "sign_off",
    "unresolved_of",
    "write_run",
]

RUN_SCHEMA = "vitrine-redteam-run"
RUN_SCHEMA_VERSION = 2  # 2: sealed with a content hash; sign-offs chained to the seal
RUN_DOCUMENT = "redteam.json"
RUN_HTML = "redteam.html"
SIGNOFFS = "signoffs.jsonl"
RUN_LOG = "redteam.runs.jsonl"
_RUN_LOG_ORIGIN = "sha256:" + hashlib.sha256(b"vitrine red-team run log").hexdigest()
# Sealed into documents whose sign-off ledger has a sealed head and that the run log records:
# for them a missing head, or a missing log, is an edit rather than an older store.
_SEALED_LEDGERS = "sealed_ledgers"
RUN_PREFIX = "redteam-"
EVIDENCE_LIMIT = 240
_RUN_NAME = re.compile(r"^redteam-\d{8}T\d{6}Z-[0-9a-f]{6}$")


def mask_secrets(text: str, hidden: Iterable[str]) -> str:
    """Replace every secret (the canary) before text is bounded and stored."""
    for value in hidden:
        if value:
            text = re.sub(re.escape(value), "[canary]", text, flags=re.IGNORECASE)
    return text


def excerpt(reply: TargetReply) -> str:
    """A short, scrubbed excerpt of a reply for the person reviewing a finding.

    A reply that still holds a secret in a disguised form (spelled out, reversed) after
    masking is withheld entirely: a report must not become the leak it documents.
    """
    masked = mask_secrets(reply.text, reply.secrets)
    if any(contains_secret(masked, s) for s in reply.secrets):
        return "[excerpt withheld: the reply contains the canary in a disguised form]"
    return sanitize_text(masked, EVIDENCE_LIMIT)


@dataclass(frozen=True, slots=True)
class Finding:
    """A compromise that needs a person's review: bounded, sanitized evidence only."""

    id: str
    probe_id: str
    attack_id: str
    severity: str
    owasp: str
    summary: str
    evidence: str = ""

    def to_dict(self) -> dict[str, str]:
        return {
            "id": self.id,
            "probe_id": self.probe_id,
            "attack_id": self.attack_id,
            "severity": self.severity,
            "owasp": self.owasp,
            "summary": self.summary,
            "evidence": self.evidence,
        }


def findings_for(
    probes: Sequence[ProbeResult], evidence: Mapping[str, str] | None = None
) -> list[Finding]:
    """One finding per compromised probe. ``evidence``: a masked excerpt per probe id."""
    out = []
    for probe in probes:
        if probe.outcome is not Outcome.COMPROMISED:
            continue
        slug = re.sub(r"[^A-Za-z0-9-]+", "-", probe.probe_id).strip("-")
        excerpt = (evidence or {}).get(probe.probe_id, "")
        out.append(
            Finding(
                id=f"F-{slug}",
                probe_id=probe.probe_id,
                attack_id=probe.attack_id,
                severity=probe.severity.value,
                owasp=probe.owasp,
                summary=sanitize_text(
                    f"{probe.technique}: {probe.diagnostic or 'compromised'}", EVIDENCE_LIMIT
                ),
                evidence=sanitize_text(excerpt, EVIDENCE_LIMIT) if excerpt else "",
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class SignOff:
    finding_id: str
    by: str
    reason: str
    at: str

    def to_dict(self) -> dict[str, str]:
        return {"finding_id": self.finding_id, "by": self.by, "reason": self.reason, "at": self.at}


def new_run_dir(root: Path, now: datetime | None = None) -> Path:
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    name = f"{RUN_PREFIX}{moment:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
    path = root / "reports" / name
    private_dirs(path.parent)  # the store root too, when this run is its first writer
    path.mkdir(mode=PRIVATE_DIR, exist_ok=False)
    return path


def write_run(run_dir: Path, document: Mapping[str, Any]) -> Path:
    """Seal and write the run document, recording the run in the store's run log in the same
    step: if the document cannot be written, the log does not name the run."""
    body = {**document, "schema": RUN_SCHEMA, "schema_version": RUN_SCHEMA_VERSION}
    body["run_id"] = run_dir.name
    body[_SEALED_LEDGERS] = True
    body["content_hash"] = document_hash(body)
    path = run_dir / RUN_DOCUMENT
    _run_log(run_dir.parent).append(
        {"run_id": run_dir.name, "content_hash": body["content_hash"]},
        require_head=True,
        then=lambda _records: atomic_write_json(path, body),
    )
    return path


def _run_log(reports: Path) -> Ledger:
    return Ledger(reports / RUN_LOG, _RUN_LOG_ORIGIN)


def load_run(run_dir: Path) -> dict[str, Any]:
    """The run document, verified: valid JSON of the right shape whose seal matches."""
    path = run_dir / RUN_DOCUMENT
    where = f"{run_dir.name}/{RUN_DOCUMENT}"
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise RunNotFoundError(f"{run_dir.name} holds no {RUN_DOCUMENT}") from None
    except OSError as exc:
        raise RunIntegrityError(f"{where} cannot be read ({exc.strerror or exc})") from exc
    except (ValueError, RecursionError) as exc:
        raise RunIntegrityError(f"{where} is not a JSON object: the file is damaged") from exc
    if data.get("schema") != RUN_SCHEMA or data.get("schema_version") != RUN_SCHEMA_VERSION:
        raise RunNotFoundError(
            f"{where} is not a red-team run document this version reads (schema "
            f"{data.get('schema')!r} version {data.get('schema_version')!r}; this vitrine "
            f"reads {RUN_SCHEMA} version {RUN_SCHEMA_VERSION}, which is sealed)"
        )
    problem = _shape_problem(data)
    if problem:
        raise RunIntegrityError(f"{where} does not have the shape of a run document: {problem}")
    if data.get("content_hash") != document_hash(data):
        raise RunIntegrityError(
            f"{where} does not match its seal: it was changed after the run wrote it, so "
            "its findings cannot be trusted"
        )
    if data.get("run_id") != run_dir.name:
        raise RunIntegrityError(
            f"{where} was sealed as run {str(data.get('run_id'))[:60]!r}, not {run_dir.name}: "
            "an older run was copied under a newer name, so it cannot stand for this run"
        )
    return data


def _shape_problem(data: Mapping[str, Any]) -> str:
    findings = data.get("findings")
    if not isinstance(findings, list) or not all(
        isinstance(f, dict) and isinstance(f.get("id"), str) for f in findings
    ):
        return "findings must be a list of objects with an id"
    if not isinstance(data.get("probes"), list):
        return "probes must be a list"
    if not isinstance(data.get("scores"), dict):
        return "scores must be an object"
    code = data.get("exit_code")
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code <= 4:
        return "exit_code must be 0 to 4"
    gaps = data.get("unresolved")
    if gaps is not None and (
        not isinstance(gaps, dict)
        or gaps.get("exit_code") not in _ABSENCE_CODES
        or not isinstance(gaps.get("reason"), str)
    ):
        return "unresolved must be null or an object with exit_code 3 or 4 and a reason"
    return ""


_ABSENCE_CODES = (3, 4)


def unresolved_of(document: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the run left unmeasured apart from its compromises, or None when nothing is missing.

    Runs written before the document carried ``unresolved`` are read from their exit, census
    and assertions, so an older run that was not measured does not pass the gate by lacking the
    field (those runs called a case resisted even when its rubric had no judge).
    """
    if "unresolved" in document:
        gaps = document["unresolved"]
        return None if gaps is None else dict(gaps)
    code = document["exit_code"]
    if code in _ABSENCE_CODES:
        return {"exit_code": code, "reason": str(document.get("exit_reason", ""))}
    scores = document["scores"]
    unjudged = sum(
        1
        for probe in document["probes"]
        if probe.get("outcome") == "resisted"
        and any(a.get("state") == "not_measured" for a in probe.get("assertions") or ())
    )
    undecided = int(scores.get("inconclusive") or 0) + unjudged
    if not undecided:
        return None
    return {
        "exit_code": 4 if scores.get("errored") else 3,
        "reason": f"{undecided} of {scores.get('total')} cases or probes not measured "
        f"({scores.get('errored') or 0} errored)",
    }


def latest_run(root: Path) -> Path:
    """The latest run, as the store's run log records it.

    Refused (:class:`RunIntegrityError`) when the log's latest run is gone or is not the run
    the log sealed, or when a run folder newer than it holds a document the log never recorded
    (an older run copied under a newer name, or a run killed before it was recorded). A store
    written before the log existed falls back to the newest run folder.
    """
    reports = root / "reports"
    runs = sorted(
        p
        for p in reports.glob(f"{RUN_PREFIX}*")
        if _RUN_NAME.match(p.name) and (p / RUN_DOCUMENT).is_file()
    )
    try:
        logged = _run_log(reports).read(require_head=True)
    except LedgerError as exc:
        raise RunIntegrityError(f"reports/{RUN_LOG} {exc}") from exc
    if not logged:
        if runs and _claims_log(runs[-1]):
            raise RunIntegrityError(
                f"the red-team run log reports/{RUN_LOG} is missing although run "
                f"{runs[-1].name} was recorded in it: the log was removed, so which run is "
                "the latest cannot be trusted"
            )
        if not runs:
            raise RunNotFoundError("no red-team run in the store yet: run `vitrine redteam run`")
        return runs[-1]
    last = logged[-1]
    latest = reports / str(last.get("run_id"))
    if not _RUN_NAME.match(latest.name) or not (latest / RUN_DOCUMENT).is_file():
        raise RunIntegrityError(
            f"the latest red-team run the log records, {latest.name[:60]}, is gone: it was "
            "deleted (or its writing was interrupted); run `vitrine redteam run` again"
        )
    newer = [p.name for p in runs if p.name > latest.name]
    if newer:
        raise RunIntegrityError(
            f"{newer[-1]} is newer than the latest run the log records ({latest.name}) but "
            "was never recorded: an older run copied under a newer name, or a run killed "
            "before it finished; it is not read as the latest"
        )
    try:
        sealed = read_json(latest / RUN_DOCUMENT).get("content_hash")
    except (OSError, ValueError, RecursionError) as exc:
        raise RunIntegrityError(f"{latest.name}/{RUN_DOCUMENT} cannot be read") from exc
    if sealed != last.get("content_hash"):
        raise RunIntegrityError(
            f"{latest.name}/{RUN_DOCUMENT} is not the document the run log recorded for it: "
            "the run was replaced"
        )
    return latest


def _claims_log(run_dir: Path) -> bool:
    try:
        return bool(read_json(run_dir / RUN_DOCUMENT).get(_SEALED_LEDGERS))
    except (OSError, ValueError, RecursionError):
        return False


def resolve_run(root: Path, run: str | None) -> Path:
    """The run named by ``run`` (a run id or a directory), or the latest one."""
    if run is None:
        return latest_run(root)
    candidate = Path(run)
    if candidate.is_dir():
        return candidate
    named = root / "reports" / run
    if named.is_dir():
        return named
    raise RunNotFoundError(f"no red-team run {run!r} under the store's reports")


def read_signoffs(run_dir: Path) -> list[SignOff]:
    """The sign-offs, verified as a chain: each line names the hash of the one before it (the
    first names the run's seal) and the sealed head names the last, so a line removed, edited
    or inserted, the last one included, is detected."""
    if not (run_dir / SIGNOFFS).exists():
        return []
    document = load_run(run_dir)
    where = f"{run_dir.name}/{SIGNOFFS}"
    try:
        records = _ledger(run_dir, document).read(require_head=_headed(document))
    except OSError as exc:
        raise RunIntegrityError(f"{where} cannot be read ({exc.strerror or exc})") from exc
    except LedgerError as exc:
        raise RunIntegrityError(f"{where} {exc}") from exc
    return _signoffs(run_dir, records)


def _ledger(run_dir: Path, document: Mapping[str, Any]) -> Ledger:
    return Ledger(run_dir / SIGNOFFS, str(document["content_hash"]))


def _headed(document: Mapping[str, Any]) -> bool:
    return bool(document.get(_SEALED_LEDGERS))


def _signoffs(run_dir: Path, records: Sequence[Mapping[str, Any]]) -> list[SignOff]:
    where = f"{run_dir.name}/{SIGNOFFS}"
    out = []
    for number, record in enumerate(records, 1):
        try:
            out.append(
                SignOff(
                    str(record["finding_id"]),
                    str(record["by"]),
                    str(record["reason"]),
                    str(record["at"]),
                )
            )
        except KeyError as exc:
            raise RunIntegrityError(f"{where} line {number} lacks {exc.args[0]!r}") from exc
    return out


def sign_off(
    run_dir: Path,
    finding_id: str,
    *,
    by: str,
    reason: str,
    then: Callable[[list[SignOff]], object] | None = None,
) -> SignOff:
    """Append one sign-off; refuses unknown findings and blank names or reasons.

    ``then`` (say, re-rendering the report page) gets every sign-off, the new one included,
    before the sign-off is confirmed: if it fails, or the record cannot be written whole, the
    sign-off is not recorded at all.
    """
    document = load_run(run_dir)
    known = {f["id"] for f in document.get("findings") or ()}
    if finding_id not in known:
        listed = ", ".join(sorted(known)) or "none"
        raise NotFoundError(
            f"run {run_dir.name} has no finding {finding_id!r} (findings: {listed})"
        )
    if not by.strip() or not reason.strip():
        raise InvalidArgumentError(
            "a sign-off needs a name (--by) and a reason (--reason): it is a record"
        )
    record = SignOff(
        finding_id,
        sanitize_text(by, 80),
        sanitize_text(reason, 500),
        datetime.now(UTC).isoformat(timespec="seconds"),
    )
    after = None if then is None else (lambda records: then(_signoffs(run_dir, records)))
    try:
        _ledger(run_dir, document).append(
            record.to_dict(), require_head=_headed(document), then=after
        )
    except LedgerError as exc:  # refuse to extend a ledger that no longer verifies
        raise RunIntegrityError(f"{run_dir.name}/{SIGNOFFS} {exc}") from exc
    return record


def finding_states(
    document: Mapping[str, Any], signoffs: Sequence[SignOff]
) -> list[dict[str, Any]]:
    """Every finding with its sign-off (the latest, if several), or ``None`` while open."""
    latest = {s.finding_id: s for s in signoffs}
    rows = []
    for finding in document.get("findings") or ():
        signed = latest.get(finding["id"])
        rows.append({**finding, "signoff": None if signed is None else signed.to_dict()})
    return rows
