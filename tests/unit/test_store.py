import asyncio
import hashlib
import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vitrine._bench.model import Arm, BenchmarkDefinition, Case, admit, check
from vitrine._bench.response import SubjectResponse
from vitrine._bench.runner import run_benchmark
from vitrine._floors import ChanceFloor
from vitrine._outcomes import MeasurementState, Observation
from vitrine.store import (
    PER_FILE_SCHEMA,
    RUN_ID_PATTERN,
    IncompleteRunError,
    RunStore,
    TamperedRunError,
    UnsupportedSchemaError,
    _provenance as provenance,
    atomic_write_bytes,
    iter_index,
    list_runs,
    load_run,
    new_run_id,
    resolve_root,
    sanitize_file_name,
)
from vitrine.store._files import read_json_lines
from vitrine.store._index import history_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
FLOOR = ChanceFloor.not_derivable("deterministic predicate")


@check("says-hello")
def says_hello(case: Case, response: SubjectResponse) -> Observation:
    if response.answer is None:
        return Observation.not_applicable("no answer")
    ok = "hello" in response.answer
    return Observation.measured(ok, ok, evidence={"chars": len(response.answer)})


@check("short")
def short(case: Case, response: SubjectResponse) -> Observation:
    return Observation.measured(len(response.answer or "") <= 40, True)


def definition(case_ids=("a", "b", "c/d")) -> BenchmarkDefinition:
    return BenchmarkDefinition(
        "greeting",
        "1.0.0",
        [Case(cid, {"prompt": f"greet {cid}"}) for cid in case_ids],
        [admit(says_hello, FLOOR), admit(short, FLOOR)],
    )


async def polite(case: Case) -> SubjectResponse:
    return SubjectResponse(answer=f"hello {case.id}")


def run(store: RunStore, arm_id: str = "polite", repetition: int = 1):
    return asyncio.run(
        run_benchmark(definition(), Arm(arm_id, polite), store=store, repetition=repetition)
    )


# Atomic writes ------------------------------------------------------------------------------


def test_atomic_write_replaces_the_whole_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "manifest.json"
    target.write_bytes(b"old")
    atomic_write_bytes(target, b"new content")
    assert target.read_bytes() == b"new content"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_atomic_write_that_fails_keeps_the_previous_file_intact(tmp_path, monkeypatch):
    target = tmp_path / "summary.json"
    target.write_bytes(b"previous")

    def broken_fsync(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(target, b"half-written")
    assert target.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


# File names and run ids ---------------------------------------------------------------------


@pytest.mark.parametrize("char", [*'<>:"|?*/\\', "\x00", "\x07", "\x1f", "\x7f"])
def test_sanitizer_replaces_each_forbidden_character_and_marks_the_change(char):
    original = f"case{char}1"
    digest = hashlib.sha256(original.encode()).hexdigest()[:16]
    assert sanitize_file_name(original) == f"case-1__{digest}"


def test_sanitizer_trims_dots_and_spaces_at_both_ends():
    name = sanitize_file_name(" . report. ")
    assert name.startswith("report__")
    assert len(name.split("__")[1]) == 16


def test_sanitizer_keeps_a_safe_name_unchanged_including_the_middle_dot():
    assert sanitize_file_name("nadia·catalogued-sku") == "nadia·catalogued-sku"


def test_sanitizer_never_maps_two_names_onto_one():
    names = ["a/b", "a\\b", "a:b", "a-b", "a-b ", " a-b", "a-b."]
    assert len({sanitize_file_name(n) for n in names}) == len(names)


def test_sanitizer_refuses_an_empty_name():
    with pytest.raises(ValueError, match="empty"):
        sanitize_file_name("")


def test_sanitizer_bounds_very_long_names():
    name = sanitize_file_name("x" * 1000)
    assert len(name.encode()) <= 220


def test_run_id_is_the_utc_second_and_eight_random_digits():
    moment = datetime(2026, 9, 10, 7, 8, 15, tzinfo=UTC)
    run_id = new_run_id(moment)
    assert RUN_ID_PATTERN.match(run_id)
    assert run_id.startswith("2026-09-10_07-08-15_")
    assert re.fullmatch(r"\d{8}", run_id.rsplit("_", 1)[1])
    assert len({new_run_id(moment) for _ in range(50)}) > 1


def test_root_is_explicit_output_then_environment_then_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VITRINE_HOME", raising=False)
    assert resolve_root(None) == tmp_path / ".vitrine"
    monkeypatch.setenv("VITRINE_HOME", str(tmp_path / "home"))
    assert resolve_root(None) == tmp_path / "home"
    assert resolve_root(tmp_path / "explicit") == tmp_path / "explicit"


def test_git_commit_is_none_outside_a_repository(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    provenance.git_commit.cache_clear()
    try:
        assert provenance.git_commit() is None
    finally:
        provenance.git_commit.cache_clear()


# Sealing and verification -------------------------------------------------------------------


def test_a_sealed_run_has_the_reference_layout_and_verifies(tmp_path):
    result = run(RunStore(tmp_path))
    run_dir = Path(result.run_dir)
    assert run_dir.parent == tmp_path / "runs"
    assert RUN_ID_PATTERN.match(run_dir.name)
    assert {p.name for p in run_dir.iterdir()} >= {
        "manifest.json",
        "summary.json",
        "rows.jsonl",
        "traces",
    }
    assert not (run_dir / "reports").exists()  # reports belong to a session, not to a run
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["schema_version"] == 2
    assert manifest["status"] == "complete"
    assert manifest["content_hash"].startswith("sha256:")
    assert manifest["subject"] == "polite"
    assert manifest["run"]["kind"] == "benchmark"
    assert manifest["run"]["harness"] == "runner/greeting@1.0.0"
    assert manifest["run"]["scenario_count"] == 6
    assert manifest["arm"] == "polite"
    assert (manifest["run"]["case_count"], manifest["run"]["check_count"]) == (3, 2)
    assert manifest["run"]["definition_hash"] == definition().content_hash
    assert manifest["library_version"]
    assert manifest["environment"]["python"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["schema_version"] == 2
    assert summary["verdict"] == "PASS"
    assert summary["census"] == {
        "measured": 6,
        "not_applicable": 0,
        "not_measured": 0,
        "total": 6,
    }
    assert [c["key"] for c in summary["checks"]] == ["says-hello", "short"]
    assert summary["checks"][0]["successes"] == 3
    assert summary["checks"][0]["floor"]["kind"] == "not-derivable"
    assert summary["checks"][0]["authority"] == "gate"
    assert load_run(run_dir).complete


def _edit_one_byte(path: Path, old: bytes, new: bytes) -> None:
    assert len(old) == len(new)
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))


def test_a_row_edited_by_one_byte_is_refused_as_tampered(tmp_path):
    result = run(RunStore(tmp_path))
    run_dir = Path(result.run_dir)
    _edit_one_byte(run_dir / "rows.jsonl", b'"value":1.0', b'"value":0.0')
    with pytest.raises(TamperedRunError) as refused:
        load_run(run_dir)
    message = str(refused.value)
    assert result.run_id in message
    assert "content hash does not match" in message


@pytest.mark.parametrize(
    ("file_name", "old", "new"),
    [
        ("summary.json", b'"verdict": "PASS"', b'"verdict": "FAIL"'),
        ("manifest.json", b'"subject": "polite"', b'"subject": "polita"'),
        ("traces/trials.jsonl", b"hello a", b"hallo a"),
        ("rows.jsonl", b'"rows":[{', b'"rows":[['),  # no longer valid JSON
    ],
)
def test_any_sealed_artifact_edited_after_the_seal_is_refused(tmp_path, file_name, old, new):
    result = run(RunStore(tmp_path))
    _edit_one_byte(Path(result.run_dir) / file_name, old, new)
    with pytest.raises(TamperedRunError, match="content hash does not match"):
        load_run(result.run_dir)


def test_a_run_that_was_never_sealed_is_refused_as_incomplete(tmp_path):
    store = RunStore(tmp_path)
    writer = store.create_run(definition(), "polite")
    rows = asyncio.run(run_benchmark(definition(), Arm("polite", polite))).rows
    writer.record_trial("a", rows[:2], duration_ms=1.0, error=None, response=None)
    writer.close()  # the process "died" here: no seal

    with pytest.raises(IncompleteRunError) as refused:
        load_run(writer.run_dir)
    message = str(refused.value)
    assert writer.run_id in message
    assert "never sealed" in message
    assert "resume" in message

    partial = load_run(writer.run_dir, allow_incomplete=True)
    assert not partial.complete
    assert {row.case_id for row in partial.rows} == {"a"}


def test_an_incomplete_run_with_a_torn_last_line_keeps_its_finished_trials(tmp_path):
    store = RunStore(tmp_path)
    writer = store.create_run(definition(), "polite")
    rows = asyncio.run(run_benchmark(definition(), Arm("polite", polite))).rows
    writer.record_trial("a", rows[:2], duration_ms=1.0, error=None, response=None)
    writer.close()
    with (writer.run_dir / "rows.jsonl").open("ab") as fh:
        fh.write(b'{"schema_version":2,"case_id":"b","rows":[{"check_')

    partial = load_run(writer.run_dir, allow_incomplete=True)
    assert [row.case_id for row in partial.rows] == ["a", "a"]


def test_an_unknown_schema_version_is_refused_by_name(tmp_path):
    result = run(RunStore(tmp_path))
    manifest_path = Path(result.run_dir) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["schema_version"] = 99
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(UnsupportedSchemaError, match="schema version 99"):
        load_run(result.run_dir)


# History and index --------------------------------------------------------------------------


def test_each_seal_appends_one_line_to_the_subject_history_and_the_index(tmp_path):
    store = RunStore(tmp_path)
    first = run(store, "arm/polite", repetition=1)
    second = run(store, "arm/polite", repetition=2)

    index = list(iter_index(tmp_path))
    assert [e.run_id for e in index] == [first.run_id, second.run_id]
    entry = index[0]
    assert entry.run_dir == f"runs/{first.run_id}"
    assert entry.arm == "arm/polite"
    assert entry.repetition == 1
    assert entry.verdict == "PASS"
    assert entry.definition["key"] == "greeting"
    assert entry.definition["content_hash"] == definition().content_hash
    assert entry.census["total"] == 6
    assert entry.timestamp

    history = history_path(tmp_path, "arm/polite")
    assert history.parent == tmp_path / "history"
    assert history.name == f"{sanitize_file_name('arm/polite')}.jsonl"
    assert len(read_json_lines(history).records) == 2
    assert [e.run_id for e in list_runs(tmp_path, subject="arm/polite")] == [
        second.run_id,
        first.run_id,
    ]


def test_the_index_tolerates_a_torn_last_line(tmp_path):
    store = RunStore(tmp_path)
    sealed = run(store)
    with (tmp_path / "runs-index" / "recent.jsonl").open("ab") as fh:
        fh.write(b'{"run_id":"2026-09-10_07-08-15_4558')
    assert [e.run_id for e in list_runs(tmp_path)] == [sealed.run_id]


# Schema versions ----------------------------------------------------------------------------


def test_the_per_file_layout_still_round_trips_as_schema_1(tmp_path):
    result = asyncio.run(
        run_benchmark(
            definition(),
            Arm("polite", polite),
            store=RunStore(tmp_path, schema_version=PER_FILE_SCHEMA),
        )
    )
    run_dir = Path(result.run_dir)
    names = sorted(p.name for p in (run_dir / "scenarios").iterdir())
    assert len(names) == 6
    assert "a·says-hello.json" in names
    assert any(n.startswith("c-d·short__") for n in names)
    assert load_run(run_dir) == result


def test_the_committed_schema_1_fixture_still_loads_and_verifies():
    (run_dir,) = [p for p in (FIXTURES / "schema-1").iterdir() if p.is_dir()]
    result = load_run(run_dir)
    assert json.loads((run_dir / "manifest.json").read_text())["schema_version"] == 1
    assert result.complete
    assert result.identity == "fixture-greeting@1.0.0"
    assert len(result.rows) == len(result.case_ids) * len(result.checks)
    states = {row.observation.state for row in result.rows}
    assert states == set(MeasurementState)
    assert result.verdict.value == "FAIL"
    assert result.subject_errors


def test_the_committed_schema_1_fixture_is_refused_once_a_row_is_edited(tmp_path):
    import shutil

    (source,) = [p for p in (FIXTURES / "schema-1").iterdir() if p.is_dir()]
    run_dir = tmp_path / source.name
    shutil.copytree(source, run_dir)
    row_file = next((run_dir / "scenarios").glob("*.json"))
    data = json.loads(row_file.read_text())
    data["duration_ms"] = float(data["duration_ms"]) + 1.0
    row_file.write_text(json.dumps(data))
    with pytest.raises(TamperedRunError, match="content hash does not match"):
        load_run(run_dir)


def test_whole_files_are_written_a_fixed_number_of_times_however_many_trials(tmp_path, monkeypatch):
    from vitrine.store import _files as files

    written: list[str] = []
    real = files.atomic_write_bytes

    def counting(path: Path, data: bytes, *, private: bool = False) -> None:
        written.append(path.name)
        real(path, data, private=private)

    monkeypatch.setattr(files, "atomic_write_bytes", counting)
    asyncio.run(
        run_benchmark(
            definition(tuple(f"case-{i}" for i in range(50))),
            Arm("polite", polite),
            store=RunStore(tmp_path),
        )
    )
    # The manifest at creation, then the summary and the sealed manifest: trials only append.
    assert written == ["manifest.json", "summary.json", "manifest.json"]
