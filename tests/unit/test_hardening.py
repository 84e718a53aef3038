"""Faults and hostile inputs end in a sentence and the right exit code, never a false pass."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from vitrine._cli import main
from vitrine.reports._model import SuiteReport
from vitrine.reports._writer import write_reports
from vitrine.store._files import append_line, read_json_lines, torn_path
from vitrine.store._index import index_path, list_runs
from vitrine.store._maintenance import inspect_store, sweep

EXITING_SUITE = """
import asyncio, os, signal, sys
from vitrine._outcomes import ExitCode
from vitrine._plans.base import PlanOutcome, plan
from vitrine._suite import Suite


@plan("exits")
async def exits(request):
    '''Leaves through SystemExit(0) instead of returning an outcome.'''
    sys.exit(0)


@plan("slow")
async def slow(request):
    '''Signals readiness, then waits to be terminated.'''
    print("ready", flush=True)
    await asyncio.sleep(30)
    return PlanOutcome(ExitCode.PASS, ["never reached"])


SUITE = Suite(
    name="faults", plans={p.name: p for p in (exits, slow)}, scenarios={}, default_plan="exits"
)
"""


@pytest.fixture
def faults_suite(tmp_path, monkeypatch):
    name = f"faults_suite_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(EXITING_SUITE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, tmp_path
    sys.modules.pop(name, None)


def _index_record(run_id: str, **overrides: object) -> dict[str, object]:
    record: dict[str, object] = {
        "run_id": run_id,
        "run_dir": f"runs/{run_id}",
        "definition": {"key": "k", "version": "1", "content_hash": "sha256:00"},
        "arm": "a",
        "repetition": 1,
        "verdict": "PASS",
        "census": {},
        "timestamp": run_id,
    }
    record.update(overrides)
    return record


# --- the run index -------------------------------------------------------------------------


def test_a_torn_index_tail_does_not_swallow_the_next_sealed_run(tmp_path):
    path = index_path(tmp_path)
    append_line(path, _index_record("2026-01-01_00-00-00_00000001"))
    with path.open("ab") as handle:  # a writer killed mid-line
        handle.write(b'{"run_id": "2026-01-01_00-00-01_000')
    append_line(path, _index_record("2026-01-01_00-00-02_00000003"))
    ids = [entry.run_id for entry in list_runs(tmp_path)]
    assert ids == ["2026-01-01_00-00-02_00000003", "2026-01-01_00-00-00_00000001"]
    # The fragment is set aside beside the index, not glued into it.
    assert read_json_lines(path, skip_malformed=True).malformed == 0
    assert torn_path(path).read_bytes() == b'{"run_id": "2026-01-01_00-00-01_000\n'


@pytest.mark.parametrize(
    "line",
    [
        json.dumps(_index_record("2026-01-01_00-00-01_00000002")).replace(
            '"repetition": 1', '"repetition": 1e999'
        ),
        "[" * 100_000,
    ],
    ids=["infinite-number", "deep-nesting"],
)
def test_a_hostile_index_line_is_skipped_and_counted(tmp_path, line):
    path = index_path(tmp_path)
    append_line(path, _index_record("2026-01-01_00-00-00_00000001"))
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    append_line(path, _index_record("2026-01-01_00-00-02_00000003"))
    assert [e.run_id for e in list_runs(tmp_path)] == [
        "2026-01-01_00-00-02_00000003",
        "2026-01-01_00-00-00_00000001",
    ]


# --- arguments refused before anything runs -------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--all", "--suite", ""], "argument --suite: expected a value, got an empty one"),
        (["--all", "--json-report", ""], "argument --json-report: expected a value"),
        (["--all", "--html-report", "{dir}"], "is a directory"),
        (["--all", "--output", "~nosuchuser-vitrine/x"], "no such user's home directory"),
        (["--eval-plan", "eval03-compare", "--repetitions", "9" * 5000], "digit number"),
    ],
    ids=["empty-suite", "empty-json-report", "html-report-dir", "unknown-home", "huge-number"],
)
def test_bad_arguments_exit_2_with_one_sentence(argv, needle, tmp_path, capsys):
    argv = [a.replace("{dir}", str(tmp_path)) for a in argv]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err
    assert "Traceback" not in err
    assert len(err) < 400
    assert not (tmp_path / "runs").exists()


def test_a_plan_that_exits_the_process_is_an_infrastructure_failure(faults_suite, capsys):
    name, _ = faults_suite
    code = main(["--suite", f"{name}:SUITE", "--eval-plan", "exits"])
    err = capsys.readouterr().err
    assert code == 4
    assert "tried to exit the process" in err


def test_sigterm_during_a_run_is_handled_like_ctrl_c(faults_suite):
    name, folder = faults_suite
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "vitrine", "--suite", f"{name}:SUITE", "--eval-plan", "slow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 4
    assert "interrupted" in err
    assert "Traceback" not in err


def test_a_closed_pipe_ends_quietly_with_the_commands_own_code():
    script = textwrap.dedent(
        """
        import sys
        from vitrine._cli import main
        sys.argv = ["vitrine", "--list-plans"]
        sys.exit(main())
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    process.stdout.close()  # the reader goes away before the command writes
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0
    assert b"Traceback" not in err
    assert b"BrokenPipeError" not in err


# --- reports on a failing disk ---------------------------------------------------------------


def _report() -> SuiteReport:
    return SuiteReport(
        suite="s",
        plan="p",
        mode="suite",
        provenance="offline-deterministic",
        started_at="2026-01-01T00:00:00+00:00",
        duration_s=0.1,
        exit_code=0,
        exit_meaning="pass",
        exit_reason="every gate passed",
        gates=[],
        benchmarks=[],
    )


def test_no_report_lands_when_one_of_its_files_cannot_be_written(tmp_path, monkeypatch):
    import vitrine.reports._writer as writer

    real = writer._stage_text
    calls = []

    def failing_second(path: Path, text: str, *, what: str) -> Path:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(path, text, what=what)

    monkeypatch.setattr(writer, "_stage_text", failing_second)
    with pytest.raises(OSError, match="No space left"):
        write_reports(_report(), tmp_path / "out")
    leftovers = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert leftovers == []  # neither report.json nor a staged temporary file


# --- debris of killed processes ---------------------------------------------------------------


def test_debris_is_listed_and_swept_while_unsealed_runs_are_kept(tmp_path):
    runs = tmp_path / "runs"
    (runs / "2026-01-01_00-00-00_00000001").mkdir(parents=True)  # no manifest
    unsealed = runs / "2026-01-01_00-00-01_00000002"
    unsealed.mkdir()
    (unsealed / "manifest.json").write_text(
        json.dumps({"schema_version": 2, "status": "running"}), encoding="utf-8"
    )
    stray = tmp_path / "history" / ".a.jsonl.123.0.tmp"
    stray.parent.mkdir()
    stray.write_text("x", encoding="utf-8")
    health = inspect_store(tmp_path)
    assert sorted(x.kind for x in health.leftovers) == [
        "folder-without-manifest",
        "temporary-file",
        "unsealed-run",
    ]
    assert sweep(tmp_path, grace_s=600) == []  # too fresh: a live writer may own them
    removed = sweep(tmp_path, grace_s=600, now=time.time() + 3600)
    assert sorted(removed) == ["history/.a.jsonl.123.0.tmp", "runs/2026-01-01_00-00-00_00000001"]
    assert unsealed.exists()


def test_runs_command_lists_and_reports_unsealed(tmp_path, capsys):
    append_line(index_path(tmp_path), _index_record("2026-01-01_00-00-00_00000001"))
    assert main(["runs", "list", "--output", str(tmp_path)]) == 0
    assert "2026-01-01_00-00-00_00000001" in capsys.readouterr().out
    assert main(["runs", "unsealed", "--output", str(tmp_path)]) == 0
    (tmp_path / "runs" / "2026-01-01_00-00-05_00000009").mkdir(parents=True)
    assert main(["runs", "unsealed", "--output", str(tmp_path)]) == 1
    assert "folder-without-manifest" in capsys.readouterr().out
    assert main(["runs", "sweep", "--older-than", "nan", "--output", str(tmp_path)]) == 2


def test_a_command_whose_extra_is_missing_names_the_install_command(monkeypatch, tmp_path, capsys):
    import vitrine._cli as cli

    module = tmp_path / "needs_service_extra.py"
    module.write_text(
        "def main(argv):\n"
        "    raise ModuleNotFoundError(\"No module named 'uvicorn'\", name='uvicorn')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.SUBCOMMANDS, "needs-extra", "needs_service_extra")
    code = main(["needs-extra"])
    err = capsys.readouterr().err
    assert code == 4
    assert "pip install 'vitrine[service]'" in err
    assert "Traceback" not in err


def test_the_newest_runs_are_read_from_the_end_across_chunk_boundaries(tmp_path, monkeypatch):
    import vitrine.store._index as index

    monkeypatch.setattr(index, "_CHUNK", 97)  # lines straddle many chunk boundaries
    path = index_path(tmp_path)
    for number in range(40):
        arm = "alpha" if number % 2 else "beta"
        append_line(
            path, _index_record(f"2026-01-01_00-00-{number:02d}_000000{number:02d}", arm=arm)
        )
    with path.open("ab") as handle:
        handle.write(b'{"run_id": "torn')
    newest = index.newest_runs(tmp_path, limit=3)
    assert [e.run_id[-2:] for e in newest] == ["39", "38", "37"]
    alphas = index.newest_runs(tmp_path, contains=('"alpha"',), where=lambda e: e.arm == "alpha")
    assert len(alphas) == 20 and alphas[0].run_id.endswith("39")
    assert len(index.indexed_run_ids(tmp_path)) == 40


def test_the_usage_hint_names_every_subcommand(capsys, monkeypatch):
    import vitrine._cli as cli

    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main([]) == 2
    err = capsys.readouterr().err
    for name in cli.SUBCOMMANDS:
        assert name in err
