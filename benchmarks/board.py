"""The board over a store of 10,000 sealed runs: time to first rows, to open a run, and memory.

Run: python benchmarks/board.py [--runs N] [--repeat N]

One real run is written by the runner; it is then cloned N times with new run ids, each clone
re-sealed with the store's own content hasher and listed in the run index, so every clone loads
and verifies exactly like a run the runner wrote (the clone is only how 10,000 of them are made
in seconds). The clones share their rows and traces files as hard links; where the filesystem's
limit on links to one file is reached (about 65,000 on ext4), the next clone gets a copy, which
later clones link to, so any number of runs can be made, as disk space allows (about 10 KB a
run). The board is started as ``vitrine board`` in its own process; timings are taken by an HTTP
client, and the memory is that process's resident set.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import vitrine
from vitrine import (
    Arm,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    Observation,
    SubjectResponse,
    admit,
    check,
)
from vitrine.store._contents import read_contents
from vitrine.store._files import encode_json, encode_line, read_json
from vitrine.store._index import index_path
from vitrine.store._layout import RunPaths
from vitrine.store._rows import row_layout


@check("non-empty")
def non_empty(case: Case, response: SubjectResponse) -> Observation:
    ok = bool(response.answer)
    return Observation.measured(ok, passed=ok)


@check("mentions-input")
def mentions_input(case: Case, response: SubjectResponse) -> Observation:
    ok = case.input in (response.answer or "")
    return Observation.measured(ok, passed=ok)


async def echo(case: Case) -> SubjectResponse:
    return SubjectResponse(answer=f"you said {case.input}")


def _template(root: Path) -> Path:
    definition = BenchmarkDefinition(
        "board-bench",
        "1.0.0",
        cases=[Case(f"c{i}", f"input {i}") for i in range(10)],
        checks=[
            admit(non_empty, ChanceFloor.not_derivable("deterministic")),
            admit(mentions_input, ChanceFloor.not_derivable("deterministic")),
        ],
    )
    result = vitrine.evaluate(definition, [Arm("echo", echo)], store=root)
    return Path(result.runs[0].run_dir or "")


class _Linker:
    """Hard-links ``target`` to ``source``, or to the latest copy of it once ``source`` has as
    many links as the filesystem allows (``EMLINK``); the copy is what later links share."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.copies = 0

    def link(self, target: Path) -> None:
        try:
            os.link(self.source, target)
        except OSError as exc:
            if exc.errno != errno.EMLINK:
                raise
            shutil.copyfile(self.source, target)
            self.source = target
            self.copies += 1


def _clone(template: Path, root: Path, count: int) -> int:
    """Write ``count`` sealed clones of ``template``; the number of files copied (not linked)."""
    paths = RunPaths(template)
    manifest = read_json(paths.manifest)
    summary = read_json(paths.summary)
    contents = read_contents(
        paths, manifest, row_layout(paths, int(manifest["schema_version"])), strict=True
    )
    index_lines = []
    rows, traces = _Linker(paths.rows), _Linker(paths.traces)
    arms = ("echo", "echo-b", "echo-c", "echo-d")
    for i in range(count):
        run_id = f"2026-{1 + i // 2600 % 12:02d}-{1 + i // 100 % 26:02d}_00-00-00_{i:08d}"
        stamp = f"{run_id[:10]}T{i % 24:02d}:{i % 60:02d}:00.000000+00:00"
        arm = arms[i % len(arms)]
        run = {**manifest["run"], "run_id": run_id, "timestamp": stamp}
        clone = {**manifest, "run": run, "subject": arm}
        clone.pop("content_hash", None)
        clone_summary = {**summary, "run_id": run_id}
        clone["content_hash"] = contents.hasher.digest(clone, clone_summary)
        target = root / "runs" / run_id
        (target / "traces").mkdir(parents=True)
        rows.link(target / "rows.jsonl")
        traces.link(target / "traces" / "trials.jsonl")
        (target / "manifest.json").write_bytes(encode_json(clone))
        (target / "summary.json").write_bytes(encode_json(clone_summary))
        index_lines.append(
            encode_line(
                {
                    "schema_version": 1,
                    "run_id": run_id,
                    "run_dir": f"runs/{run_id}",
                    "definition": {
                        "key": run["definition_key"],
                        "version": run["definition_version"],
                        "content_hash": run["definition_hash"],
                    },
                    "arm": arm,
                    "repetition": run["repetition"],
                    "verdict": summary["verdict"],
                    "census": summary["census"],
                    "timestamp": stamp,
                    "content_hash": clone["content_hash"],
                }
            )
        )
    shutil.rmtree(template)
    index_path(root).write_bytes(b"".join(index_lines))
    return rows.copies + traces.copies


def _reports(root: Path, count: int) -> None:
    # One suite report per twenty runs, as `vitrine --all` leaves them: the index lists each
    # from its header, so what matters here is how many files the board must look at.
    for i in range(count):
        directory = root / "reports" / f"offline-2026-01-01_00-00-{i:06d}-1"
        directory.mkdir(parents=True)
        header = {
            "schema_version": 1,
            "suite": "board-bench",
            "plan": "offline-suite",
            "started_at": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}+00:00",
            "exit_code": i % 2,
            "gates": [],
            "benchmarks": [],
        }
        (directory / "report.json").write_bytes(encode_json(header))


def _get(url: str, token: str) -> tuple[float, bytes]:
    started = time.perf_counter()
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        body = reply.read()
    return time.perf_counter() - started, body


def _rss_mb(pid: int) -> tuple[float, float]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
    peak = int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
    return rss, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs",
        type=int,
        default=10_000,
        help="sealed runs in the store (default 10000); any number, as disk space allows "
        "(about 10 KB a run); 100000 takes minutes to generate",
    )
    parser.add_argument("--reports", type=int, default=500, help="suite report directories")
    parser.add_argument("--repeat", type=int, default=5, help="warm requests per measurement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vitrine-board-bench-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        copies = _clone(_template(root), root, args.runs)
        _reports(root, args.reports)
        print(
            f"store: {args.runs:,} sealed runs and {args.reports} suite reports generated in "
            f"{time.perf_counter() - started:.1f} s ({copies} shared files copied at the "
            "filesystem's hard-link limit)"
        )
        launched = time.perf_counter()
        board = subprocess.Popen(
            [sys.executable, "-m", "vitrine", "board", "--store", str(root)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert board.stdout is not None
            line = board.stdout.readline()
            url = re.search(r"(http://\S+/)\?token=(\S+)", line)
            if url is None:
                print("the board did not start (it printed no address with its token)")
                return 4
            base, token = url.group(1), url.group(2)
            ready = time.perf_counter() - launched
            _, idle_peak = _rss_mb(board.pid)
            cold, body = _get(base, token)
            total = f"of {args.runs + args.reports}".encode()
            assert total in body, "the index does not list every run and report"
            warm = [_get(base, token)[0] for _ in range(args.repeat)]
            deep = [_get(f"{base}?arm=echo-c&page=40", token)[0] for _ in range(args.repeat)]
            run_id = re.search(rb'href="/run/benchmark/([^"]+)"', body).group(1).decode()  # type: ignore[union-attr]
            first_open, _ = _get(f"{base}run/benchmark/{run_id}", token)
            opened = [_get(f"{base}run/benchmark/{run_id}", token)[0] for _ in range(args.repeat)]
            trial = [_get(f"{base}trial/{run_id}/c3", token)[0] for _ in range(args.repeat)]
            rss, peak = _rss_mb(board.pid)
        finally:
            board.terminate()
            board.wait(timeout=10)
        median = statistics.median
        print(f"board start to ready (imports, header index read, page compiled): {ready:.2f} s")
        print(f"index, first rows (first request): {cold:.3f} s")
        print(f"index, first rows (warm): median {median(warm):.3f} s, max {max(warm):.3f} s")
        print(f"index, filter by arm + page 40 (warm): median {median(deep):.3f} s")
        print(f"open one run (first): {first_open:.3f} s; warm median {median(opened):.3f} s")
        print(f"open one trial (warm): median {median(trial):.3f} s")
        print(
            f"board memory: RSS {rss:.0f} MB (peak {peak:.0f} MB; "
            f"{idle_peak:.0f} MB before the first request)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
