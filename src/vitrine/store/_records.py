"""The JSON shapes of a run's artifacts and the content hash that seals them.

Rows and traces are converted here, and only here, so that both store layouts and the seal agree
on what a row is.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

from vitrine._bench.model import AdmittedCheck, BenchmarkDefinition, canonical_json
from vitrine._bench.results import CheckInfo, RunResult, ScenarioRow
from vitrine._bench.retry import FailedAttempt
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Census, MeasurementState, Observation
from vitrine.store._files import encode_compact
from vitrine.store._provenance import environment_info, git_commit, library_version

__all__ = [
    "ContentHasher",
    "build_summary",
    "check_info_from_record",
    "check_info_record",
    "new_manifest",
    "row_from_record",
    "row_record",
    "trace_record",
    "trial_rows_line",
]


def row_record(row: ScenarioRow) -> dict[str, Any]:
    return {
        "case_id": row.case_id,
        "check_key": row.check_key,
        "observation": row.observation.to_dict(),
        "duration_ms": row.duration_ms,
    }


def trial_rows_line(schema_version: int, case_id: str, rows: Sequence[ScenarioRow]) -> bytes:
    """A finished trial's line of ``rows.jsonl``: the same bytes as encoding the record whole.

    Spliced from pieces because building and encoding five nested dicts per trial was the
    largest cost the store added to a trial; the pieces that repeat (check keys, plain
    observations) are encoded once per process.
    """
    fragments = ",".join(
        f'{{"check_key":{_encoded_key(row.check_key)},'
        f'"observation":{_encoded_observation(row.observation)},'
        f'"duration_ms":{_encoded_number(row.duration_ms)}}}'
        for row in rows
    )
    return (
        f'{{"schema_version":{schema_version},"case_id":{encode_compact(case_id)},'
        f'"rows":[{fragments}]}}\n'
    ).encode()


_KEYS: dict[str, str] = {}
_OBSERVATIONS: dict[tuple[str, float | None, bool | None, str, str | None], str] = {}
_MEMO_LIMIT = 4096  # distinct reasons and labels are few per run; a pathological run cannot grow it


def _encoded_key(key: str) -> str:
    encoded = _KEYS.get(key)
    if encoded is None:
        if len(_KEYS) >= _MEMO_LIMIT:
            _KEYS.clear()
        encoded = _KEYS[key] = encode_compact(key)
    return encoded


def _encoded_observation(observation: Observation) -> str:
    value, passed = observation.value, observation.passed
    # Equal keys must mean equal JSON: -0.0 == 0.0 and 1 == True, so those are never memoised.
    if (
        observation.evidence
        or (value == 0.0 and math.copysign(1.0, value) < 0.0)
        or not (passed is None or passed is True or passed is False)
    ):
        return encode_compact(observation.to_dict())
    memo = (
        observation.state.value,
        value,
        passed,
        observation.label,
        observation.reason,
    )
    encoded = _OBSERVATIONS.get(memo)
    if encoded is None:
        if len(_OBSERVATIONS) >= _MEMO_LIMIT:
            _OBSERVATIONS.clear()
        encoded = _OBSERVATIONS[memo] = encode_compact(observation.to_dict())
    return encoded


def _encoded_number(value: float) -> str:
    # A finite float is written as its repr by the JSON encoder too; anything else goes to it.
    if type(value) is float and math.isfinite(value):
        return repr(value)
    return encode_compact(value)


def row_from_record(record: Mapping[str, Any]) -> ScenarioRow:
    return ScenarioRow(
        str(record["case_id"]),
        str(record["check_key"]),
        Observation.from_dict(record["observation"]),
        float(record.get("duration_ms") or 0.0),
    )


def trace_record(
    schema_version: int,
    case_id: str,
    duration_ms: float,
    error: str | None,
    response: Mapping[str, Any] | None,
    failed_attempts: Sequence[FailedAttempt] = (),
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "schema_version": schema_version,
        "case_id": case_id,
        "duration_ms": duration_ms,
        "error": error,
        "response": None if response is None else dict(response),
    }
    if failed_attempts:
        # Present only on a retried trial, so traces of runs without retries keep their shape.
        record["attempts"] = len(failed_attempts) + (error is None)
        record["failed_attempts"] = [a.to_dict() for a in failed_attempts]
    return record


def check_info_record(admitted: AdmittedCheck) -> dict[str, Any]:
    return admitted.identity()


def check_info_from_record(record: Mapping[str, Any]) -> CheckInfo:
    return CheckInfo(
        str(record["key"]),
        str(record["version"]),
        ChanceFloor.from_dict(record["floor"]),
        str(record["authority"]),
    )


def new_manifest(
    *,
    schema_version: int,
    run_id: str,
    timestamp: str,
    definition: BenchmarkDefinition,
    arm_id: str,
    repetition: int,
    seed: int | None,
) -> dict[str, Any]:
    """The manifest of a run that has started and is not sealed yet.

    ``subject`` repeats ``arm`` for readers of older stores; ``scenario_count`` is the number of
    rows (cases x checks), kept beside the clearer ``case_count`` and ``check_count``.
    """
    return {
        "schema_version": schema_version,
        "arm": arm_id,
        "subject": arm_id,
        "status": "running",
        "run": {
            "run_id": run_id,
            "timestamp": timestamp,
            "duration_s": None,
            "scenario_count": len(definition.cases) * len(definition.checks),
            "case_count": len(definition.cases),
            "check_count": len(definition.checks),
            "verdict": None,
            "kind": "benchmark",
            "definition_key": definition.key,
            "definition_version": definition.version,
            "definition_hash": definition.content_hash,
            "harness": f"runner/{definition.key}@{definition.version}",
            "repetition": repetition,
            "seed": seed,
            "resumed_at": [],
        },
        "checks": [check_info_record(c) for c in definition.checks],
        "case_ids": [c.id for c in definition.cases],
        "git_commit": git_commit(),
        "library_version": library_version(),
        "environment": environment_info(),
    }


def build_summary(result: RunResult, schema_version: int) -> dict[str, Any]:
    """Verdict, censuses and per-check success counts: what a report needs at a glance."""
    by_check: dict[str, list[Observation]] = {info.key: [] for info in result.checks}
    for row in result.rows:
        by_check[row.check_key].append(row.observation)
    checks: list[dict[str, Any]] = []
    for info in result.checks:
        observations = by_check[info.key]
        census = Census.of(observations)
        checks.append(
            {
                "key": info.key,
                "version": info.version,
                "census": census.to_dict(),
                "successes": sum(
                    1
                    for o in observations
                    if o.state is MeasurementState.MEASURED and o.passed is True
                ),
                "measured": census.measured,
                "floor": info.floor.to_dict(),
                "authority": info.authority,
            }
        )
    return {
        "schema_version": schema_version,
        "run_id": result.run_id,
        "verdict": result.verdict.value,
        "census": result.census.to_dict(),
        "checks": checks,
        "duration_s": result.duration_s,
        "subject_errors": len(result.subject_errors),
        "retried_trials": result.retried_trials,
    }


class ContentHasher:
    """SHA-256 over a run's exact bytes, in an order that does not depend on completion order.

    Each row record (a trial's line, or one row file) and each trace line is digested on its own
    and kept under a stable key; the seal sorts the keys, so trials finishing in a different
    order give the same hash. The writer feeds the bytes it appends, so sealing reads nothing
    back; the reader feeds the bytes it reads, so any edit after the seal, even of whitespace,
    changes the hash.
    """

    def __init__(self) -> None:
        self._rows: dict[str, bytes] = {}
        self._traces: dict[str, bytes] = {}

    def add_row(self, key: str, data: bytes) -> None:
        self._rows[key] = hashlib.sha256(data).digest()

    def add_trace(self, case_id: str, data: bytes) -> None:
        self._traces[case_id] = hashlib.sha256(data).digest()

    def digest(self, manifest: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
        unsealed = {k: v for k, v in manifest.items() if k != "content_hash"}
        hasher = hashlib.sha256()
        hasher.update(b"manifest\n" + canonical_json(unsealed).encode() + b"\n")
        hasher.update(b"summary\n" + canonical_json(dict(summary)).encode() + b"\n")
        for section, digests in ((b"rows", self._rows), (b"traces", self._traces)):
            hasher.update(section + b"\n")
            for key in sorted(digests):
                hasher.update(key.encode() + b"\x00" + digests[key])
        return "sha256:" + hasher.hexdigest()
