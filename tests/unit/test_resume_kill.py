"""A run killed with SIGKILL mid-way is refused as incomplete, then resumed without loss."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import vitrine
from vitrine._bench.runner import resume_run
from vitrine.store import IncompleteRunError, load_run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")

CASES = 20
CHECKS = 2

HELPER = """
import asyncio
import sys

from vitrine._bench.model import Arm, BenchmarkDefinition, Case, admit, check
from vitrine._bench.response import SubjectResponse
from vitrine._bench.runner import run_benchmark
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Observation
from vitrine.store import RunStore

FLOOR = ChanceFloor.not_derivable("deterministic predicate")
DELAY_S = 0.0  # slowed down only in the process that gets killed


@check("answered")
def answered(case, response):
    return Observation.measured(bool(response.answer), bool(response.answer))


@check("names-case")
def names_case(case, response):
    ok = case.id in (response.answer or "")
    return Observation.measured(ok, ok, evidence={"case": case.id})


async def slow_subject(case):
    await asyncio.sleep(DELAY_S)
    return SubjectResponse(answer=f"answer for {case.id}")


def build():
    definition = BenchmarkDefinition(
        "resume-demo",
        "1.0.0",
        [Case(f"case-{i:02d}", {"i": i}) for i in range(__CASES__)],
        [admit(answered, FLOOR), admit(names_case, FLOOR)],
    )
    return definition, Arm("slow-arm", slow_subject)


if __name__ == "__main__":
    DELAY_S = float(sys.argv[2])
    definition, arm = build()
    asyncio.run(run_benchmark(definition, arm, store=RunStore(sys.argv[1]), concurrency=2))
""".replace("__CASES__", str(CASES))


def committed_lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1].splitlines(keepends=True)


def wait_for_rows(root: Path, at_least: int, proc: subprocess.Popen[bytes]) -> Path:
    deadline = time.monotonic() + 90  # a loaded CI machine can be slow to start Python
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the benchmark process ended before it could be killed"
        for rows in root.glob("runs/*/rows.jsonl"):
            if len(committed_lines(rows)) >= at_least:
                return rows.parent
        time.sleep(0.02)
    raise AssertionError("no rows appeared on disk within 90 s")


def start_then_kill(script: Path, root: Path) -> Path:
    """Run the slow benchmark in a real process and SIGKILL it once some trials are on disk."""
    env = dict(os.environ, PYTHONPATH=str(Path(vitrine.__file__).resolve().parents[1]))
    proc = subprocess.Popen([sys.executable, str(script), str(root), "0.3"], env=env)
    try:
        run_dir = wait_for_rows(root, 4, proc)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return run_dir


async def test_a_killed_run_is_refused_then_resumed_with_every_case_exactly_once(tmp_path):
    script = tmp_path / "slow_benchmark.py"
    script.write_text(HELPER)
    root = tmp_path / "store"
    run_dir = start_then_kill(script, root)

    with pytest.raises(IncompleteRunError, match="never sealed"):
        load_run(run_dir)

    rows_file = run_dir / "rows.jsonl"
    kept_lines = committed_lines(rows_file)
    kept_cases = [json.loads(line)["case_id"] for line in kept_lines]
    assert 4 <= len(kept_cases) < CASES
    # What a kill between or inside appends leaves behind, made certain rather than left to
    # timing: a trace whose rows never landed, and a torn rows line.
    unfinished = next(f"case-{i:02d}" for i in range(CASES) if f"case-{i:02d}" not in kept_cases)
    with (run_dir / "traces" / "trials.jsonl").open("ab") as fh:
        fh.write(json.dumps({"schema_version": 2, "case_id": unfinished}).encode() + b"\n")
    with rows_file.open("ab") as fh:
        fh.write(b'{"schema_version":2,"case_id":"' + unfinished.encode() + b'","rows":[{"che')
    partial = load_run(run_dir, allow_incomplete=True)
    assert not partial.complete
    previous_rows = {row.row_id: row for row in partial.rows}

    spec = importlib.util.spec_from_file_location("slow_benchmark", script)
    assert spec is not None and spec.loader is not None
    helper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helper)
    definition, arm = helper.build()
    result = await resume_run(run_dir, definition, arm, concurrency=4)

    assert result.complete
    assert Counter(row.case_id for row in result.rows) == {
        f"case-{i:02d}": CHECKS for i in range(CASES)
    }
    for row in result.rows:
        if row.row_id in previous_rows:
            assert row == previous_rows[row.row_id]
    final_lines = committed_lines(rows_file)
    assert final_lines[: len(kept_lines)] == kept_lines  # finished trials kept byte for byte
    assert len(final_lines) == CASES
    assert rows_file.read_bytes().endswith(b"\n")
    traces = [json.loads(line) for line in committed_lines(run_dir / "traces" / "trials.jsonl")]
    assert sorted(t["case_id"] for t in traces) == [f"case-{i:02d}" for i in range(CASES)]

    loaded = load_run(run_dir)
    assert loaded == result
    assert loaded.verdict.value == "PASS"
    index = (root / "runs-index" / "recent.jsonl").read_text().splitlines()
    assert [json.loads(line)["run_id"] for line in index] == [run_dir.name]
