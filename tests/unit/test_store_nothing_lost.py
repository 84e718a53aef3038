"""Nothing a killed or starved process leaves is lost from the store.

Sealing and indexing are one recoverable step; every shared append lands whole or not at all
(short writes are retried, a failure cuts the log back); a torn tail is set aside without
costing the records after it; and every unsealed run is either resumable or swept with a
reason. Kills are simulated by a subprocess that exits hard at one step, full disks by a fake
``os.write``.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from store_toys import toy_definition

from vitrine import (
    Arm,
    Observation,
    SubjectResponse,
    evaluate,
)
from vitrine._bench.results import ScenarioRow
from vitrine.store import RunStore, _files as store_files
from vitrine.store._command import main as runs_main
from vitrine.store._files import append_line, read_json_lines, torn_path
from vitrine.store._index import index_path, pending_dir, recover_index, sealed_ids_path

DEFINITION = toy_definition("lost-toy")


async def _subject(case):
    return SubjectResponse(answer="yes")


def _seal(store: Path) -> str:
    (run,) = evaluate(DEFINITION, Arm("agent", _subject), store=store).runs
    return run.run_id


def _listed(store: Path, capsys) -> str:
    assert runs_main(["list", "--output", str(store)]) == 0
    return capsys.readouterr().out


# --- sealing and indexing are one step -------------------------------------------------------

KILLED_AFTER_SEAL = """
import os, sys
import vitrine.store._writer as writer
from vitrine import (Arm, BenchmarkDefinition, Case, ChanceFloor, Observation,
                     SubjectResponse, admit, check, evaluate)

def killed(*args, **kwargs):
    os._exit(9)  # the manifest is sealed; the index line is never written

writer.record_sealed_run = killed

@check("answered")
def answered(case, response):
    return Observation.measured(1.0, True)

async def subject(case):
    return SubjectResponse(answer="yes")

floor = ChanceFloor.not_derivable("toy")
definition = BenchmarkDefinition("lost-toy", "1.0.0", [Case("a", "x")], [admit(answered, floor)])
evaluate(definition, Arm("agent", subject), store=sys.argv[1])
"""


def _killed_between_seal_and_index(store: Path) -> str:
    code = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILLED_AFTER_SEAL), str(store)],
        capture_output=True,
        timeout=120,
        check=False,
    ).returncode
    assert code == 9
    (run_dir,) = (store / "runs").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete"  # sealed
    assert not index_path(store).exists()  # and in no index
    return run_dir.name


def test_a_run_killed_between_seal_and_index_is_listed_by_the_next_command(tmp_path, capsys):
    run_id = _killed_between_seal_and_index(tmp_path)
    assert run_id in _listed(tmp_path, capsys)
    assert not any(pending_dir(tmp_path).iterdir())
    # Indexed once: opening the store again adds nothing.
    RunStore(tmp_path)
    assert index_path(tmp_path).read_text().count(f'"run_id":"{run_id}"') == 1


def test_the_next_run_in_the_store_indexes_it_too(tmp_path):
    lost = _killed_between_seal_and_index(tmp_path)
    later = _seal(tmp_path)
    ids = [e.run_id for e in RunStore(tmp_path).list_runs()]
    assert sorted(ids) == sorted([lost, later])


def test_runs_unsealed_indexes_a_sealed_run_the_index_lacks(tmp_path, capsys):
    # As an older vitrine left it: sealed, no index line, no marker.
    run_id = _killed_between_seal_and_index(tmp_path)
    for marker in pending_dir(tmp_path).iterdir():
        marker.unlink()
    assert runs_main(["unsealed", "--output", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"reindexed                runs/{run_id}" in out
    assert "1 sealed runs, 0 unsealed" in out
    assert run_id in _listed(tmp_path, capsys)
    assert sealed_ids_path(tmp_path).read_text().count(run_id) == 1


def test_a_seal_in_progress_is_not_indexed_twice(tmp_path):
    run_id = _killed_between_seal_and_index(tmp_path)
    marker = pending_dir(tmp_path) / run_id
    fcntl = pytest.importorskip("fcntl")
    holder = subprocess.Popen(  # a live writer still holds its marker
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(30)\n",
            str(marker),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert recover_index(tmp_path) == []
        assert not index_path(tmp_path).exists()
    finally:
        holder.kill()
        holder.wait()
    assert fcntl is not None and recover_index(tmp_path) == [run_id]


# --- appends land whole or not at all -------------------------------------------------------


def _short_writes(monkeypatch, *, at_most: int, fail_after: int | None = None) -> None:
    real = os.write
    calls = {"n": 0}

    def write(fd, data):
        calls["n"] += 1
        if fail_after is not None and calls["n"] > fail_after:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, bytes(data)[:at_most])

    monkeypatch.setattr(store_files.os, "write", write)


def test_a_short_write_is_retried_so_the_index_line_lands_whole(tmp_path, monkeypatch):
    path = index_path(tmp_path)
    _short_writes(monkeypatch, at_most=50)
    append_line(path, {"run_id": "2026-01-01_00-00-00_00000001", "pad": "x" * 300})
    monkeypatch.undo()
    lines = read_json_lines(path)
    assert not lines.torn_tail and len(lines.records) == 1


def test_a_full_disk_mid_append_leaves_no_partial_line(tmp_path, monkeypatch):
    path = index_path(tmp_path)
    append_line(path, {"run_id": "2026-01-01_00-00-00_00000001"})
    before = path.read_bytes()
    _short_writes(monkeypatch, at_most=100, fail_after=1)
    with pytest.raises(OSError, match="No space"):
        append_line(path, {"run_id": "2026-01-01_00-00-01_00000002", "pad": "x" * 300})
    monkeypatch.undo()
    assert path.read_bytes() == before  # cut back: the caller was told it failed
    append_line(path, {"run_id": "2026-01-01_00-00-02_00000003"})
    assert [r["run_id"][-1] for r in read_json_lines(path).records] == ["1", "3"]


def test_a_failed_sync_takes_the_line_back_too(tmp_path, monkeypatch):
    path = index_path(tmp_path)
    append_line(path, {"run_id": "2026-01-01_00-00-00_00000001"})
    before = path.read_bytes()

    def fsync(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(store_files.os, "fsync", fsync)
    with pytest.raises(OSError):
        append_line(path, {"run_id": "2026-01-01_00-00-01_00000002"})
    monkeypatch.undo()
    assert path.read_bytes() == before


def test_a_row_append_on_a_full_disk_leaves_no_torn_trial(tmp_path, monkeypatch):
    writer = RunStore(tmp_path).create_run(DEFINITION, "agent")
    rows = [ScenarioRow("a", "answered", Observation.measured(1.0, True))]
    _short_writes(monkeypatch, at_most=10, fail_after=2)
    with pytest.raises(OSError, match="No space"):
        writer.record_trial("a", rows, duration_ms=1.0, error=None, response={"answer": "y"})
    monkeypatch.undo()
    writer.close()
    for log in (writer.paths.rows, writer.paths.traces):
        assert not read_json_lines(log).torn_tail


def test_a_torn_tail_is_set_aside_and_every_later_append_is_kept(tmp_path):
    path = index_path(tmp_path)
    append_line(path, {"run_id": "2026-01-01_00-00-00_00000001"})
    with path.open("ab") as handle:  # a writer killed mid-line
        handle.write(b'{"run_id": "2026-01-01_00-00-01_0000')
    append_line(path, {"run_id": "2026-01-01_00-00-02_00000003"})
    append_line(path, {"run_id": "2026-01-01_00-00-03_00000004"})
    lines = read_json_lines(path)
    assert lines.malformed == 0 and not lines.torn_tail
    assert [r["run_id"][-1] for r in lines.records] == ["1", "3", "4"]
    assert torn_path(path).read_bytes() == b'{"run_id": "2026-01-01_00-00-01_0000\n'


# --- every leftover can be resumed or swept with a reason -----------------------------------


def _interrupted(store: Path) -> Path:
    writer = RunStore(store).create_run(DEFINITION, "agent")
    writer.close()  # killed before any trial finished: no seal
    return writer.run_dir


def test_a_superseded_unsealed_run_is_abandoned_and_swept_with_its_reason(tmp_path, capsys):
    left = _interrupted(tmp_path)
    assert runs_main(["unsealed", "--output", str(tmp_path)]) == 1
    assert "unsealed-run" in capsys.readouterr().out  # nothing newer yet: resumable
    later = _seal(tmp_path)  # the command that left it was run again
    assert runs_main(["unsealed", "--output", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"abandoned-run            runs/{left.name}" in out
    assert f"superseded: run {later}" in out and "0 unsealed, 1 abandoned" in out
    assert runs_main(["sweep", "--older-than", "0", "--output", str(tmp_path)]) == 0
    assert left.is_dir()  # a plain sweep keeps it
    capsys.readouterr()
    sweep = ["sweep", "--abandoned", "--older-than", "0", "--output", str(tmp_path)]
    assert runs_main(sweep) == 0
    assert f"set aside runs/{left.name} in abandoned/" in capsys.readouterr().out
    moved = tmp_path / "abandoned" / left.name
    assert "superseded" in json.loads((moved / "abandoned.json").read_text())["reason"]
    assert not left.exists()
    assert runs_main(["unsealed", "--output", str(tmp_path)]) == 0


def test_an_unsealed_run_no_benchmark_will_resume_is_set_aside_by_name(tmp_path, capsys):
    left = _interrupted(tmp_path)  # a killed production check: nothing supersedes it
    assert runs_main(["unsealed", "--output", str(tmp_path)]) == 1
    assert "sweep --abandon RUN_ID" in capsys.readouterr().out
    bad = ["sweep", "--abandon", "2020-01-01_00-00-00_00000000", "--output", str(tmp_path)]
    assert runs_main(bad) == 2
    assert "is not an unsealed run of this store" in capsys.readouterr().err
    sweep = ["sweep", "--abandon", left.name, "--older-than", "0", "--output", str(tmp_path)]
    assert runs_main(sweep) == 0
    reason = json.loads((tmp_path / "abandoned" / left.name / "abandoned.json").read_text())
    assert "set aside by hand" in reason["reason"]
    assert runs_main(["unsealed", "--output", str(tmp_path)]) == 0


def test_a_full_disk_at_the_index_append_loses_no_run_once_space_returns(tmp_path, monkeypatch):
    import vitrine.store._index as index_module

    real_append = index_module.append_line

    def starved_index(path, record, **kwargs):
        if path != index_path(tmp_path):
            return real_append(path, record, **kwargs)
        with pytest.MonkeyPatch.context() as patch:
            _short_writes(patch, at_most=100, fail_after=1)  # 100 bytes land, then ENOSPC
            return real_append(path, record, **kwargs)

    monkeypatch.setattr(index_module, "append_line", starved_index)
    with pytest.raises(OSError, match="No space"):
        evaluate(DEFINITION, Arm("agent", _subject), store=tmp_path)
    monkeypatch.undo()
    assert not read_json_lines(index_path(tmp_path)).torn_tail  # cut back, not torn
    later = _seal(tmp_path)  # space is back: the next run in the store
    listed = [e.run_id for e in RunStore(tmp_path).list_runs()]
    assert len(listed) == 2 and later in listed
    assert not read_json_lines(index_path(tmp_path)).malformed


def test_the_board_lists_a_run_killed_between_seal_and_index(tmp_path):
    from vitrine._board.app import Board

    run_id = _killed_between_seal_and_index(tmp_path)
    assert run_id in Board(tmp_path, persist_cache=False).get("/", {}).body.decode()
