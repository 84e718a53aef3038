"""Run the benchmark scripts at stated sizes and write their output into docs/performance.md.

Run: python benchmarks/performance_page.py [--quick] [--only SCRIPT ...] [--print]

Each script runs in a process of its own, one after another, with the arguments listed in
``SCRIPTS`` (``--quick``: the smaller ones, a smoke test of every script in a few minutes). What
each prints is copied verbatim between the page's markers, under a header that says when, on
which commit (and whether the working tree differed from it), on how many CPUs and under what
load it was measured, so that no figure on the page is typed by hand. ``--only`` runs a subset
and ``--print`` writes the section to stdout instead of the page; a subset is never written
to the page, so the page always holds one run of every script.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "performance.md"
BEGIN = "<!-- figures: written by benchmarks/performance_page.py; do not edit by hand -->"
END = "<!-- end of figures -->"


@dataclass(frozen=True)
class Script:
    """One benchmark script: what it measures and the arguments of a full and a quick run."""

    name: str
    measures: str
    full: tuple[str, ...]
    quick: tuple[str, ...]


SCRIPTS = (
    Script(
        "runner_overhead.py",
        "harness overhead per trial and peak RSS (instant subject, five checks), both store "
        "layouts; `vitrine --help` cold start",
        (),
        ("--trials", "500", "--per-file-trials", "100"),
    ),
    Script(
        "offline_suite.py",
        "cold and warm `vitrine --all` (43 controls and the invariants gate included)",
        ("--runs", "5"),
        ("--runs", "1"),
    ),
    Script("controls.py", "the 43 registered controls alone", ("--runs", "10"), ("--runs", "2")),
    Script(
        "store_scale.py",
        "`vitrine runs list`, `--arm` and `runs unsealed` on a large store",
        ("--runs", "100000", "--repeats", "5"),
        ("--runs", "2000", "--repeats", "1"),
    ),
    Script(
        "live_concurrency.py",
        "live trials against a 200 ms endpoint in its own process, as a share of the ideal "
        "throughput, with calibration clients beside vitrine",
        (),
        ("--workload", "100@50", "--client", "vitrine", "raw"),
    ),
    Script(
        "peers.py",
        "the same workload in vitrine and in Inspect AI, DeepEval and promptfoo where installed",
        (),
        ("--samples", "200", "--live-samples", "100"),
    ),
    Script(
        "sse_load.py",
        "concurrent SSE chat sessions against `vitrine serve`",
        ("--sessions", "50", "--duration", "30"),
        ("--sessions", "5", "--duration", "3"),
    ),
    Script(
        "rag.py",
        "retrieval on the shop's chunks, and an HNSW table of synthetic chunks against exact "
        "search",
        ("--synthetic", "100000"),
        ("--synthetic", "2000"),
    ),
    Script(
        "board.py",
        "the board over a store of sealed runs: start, first rows, opening a run, memory",
        ("--runs", "10000"),
        ("--runs", "1000", "--reports", "50", "--repeat", "2"),
    ),
    Script(
        "tracing_overhead.py",
        "the offline suite with tracing off, recording and exporting",
        ("--runs", "3"),
        ("--runs", "1", "--no-op-calls", "10000"),
    ),
)


@dataclass(frozen=True)
class Outcome:
    """What one script printed, how it ended and the load around it."""

    script: Script
    arguments: tuple[str, ...]
    output: str
    returncode: int | None  # None: stopped at the time limit
    wall_s: float
    load_after: tuple[float, float, float]


def _load() -> tuple[float, float, float]:
    return os.getloadavg()


def _loads(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{value:.2f}" for value in load)


def _git(*arguments: str) -> str:
    done = subprocess.run(
        ["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return done.stdout.strip()


def _anonymous(text: str, scratch: str) -> str:
    """The output without this machine's paths: the checkout, the interpreter, temp folders."""
    for path, name in (
        (sys.executable, "python"),
        (str(ROOT), "."),
        (scratch, "$TMP"),
        (tempfile.gettempdir(), "$TMP"),
        (str(Path.home()), "~"),
    ):
        text = text.replace(path, name)
    return text


def _run(script: Script, quick: bool, limit_s: float) -> Outcome:
    arguments = script.quick if quick else script.full
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vitrine-perf-page-") as scratch:
        # Temporary folders go under one scratch folder, so their paths can be masked.
        env = {**os.environ, "NO_COLOR": "1", "TMPDIR": scratch}
        try:
            done = subprocess.run(
                [sys.executable, str(ROOT / "benchmarks" / script.name), *arguments],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=limit_s,
                check=False,
            )
            output, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as exc:
            captured = (exc.stdout or b"") + (exc.stderr or b"")
            output = captured.decode(errors="replace") if isinstance(captured, bytes) else captured
            code = None
        output = _anonymous(output, scratch)
    return Outcome(script, arguments, output, code, time.perf_counter() - started, _load())


def _ending(outcome: Outcome) -> str:
    if outcome.returncode is None:
        return f"stopped at the time limit after {outcome.wall_s:.0f} s"
    return f"exit {outcome.returncode}, {outcome.wall_s:.0f} s"


def render(outcomes: list[Outcome], quick: bool, load_before: tuple[float, float, float]) -> str:
    """The figures section: a header naming the machine state, then each script's output."""
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    changed = [
        line[3:]
        for line in _git("status", "--porcelain", "--untracked-files=no").splitlines()
        if line[3:] != "docs/performance.md"
    ]
    tree = (
        f"; the working tree differed from it in {len(changed)} tracked files"
        if changed
        else ", unmodified"
    )
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    sizes = (
        "quick sizes (a smoke test: smaller than the sizes the tables above name)"
        if quick
        else "full sizes"
    )
    lines = [
        BEGIN,
        "",
        f"Measured {now} at commit `{commit}`{tree}, at {sizes}: {os.cpu_count()} CPUs "
        f"({usable} usable), {platform.system()} {platform.machine()}, Python "
        f"{platform.python_version()}. Load average (1 / 5 / 15 min) {_loads(load_before)} "
        "before the first script; each script's own line gives it after that script. Other "
        "work on the machine shares its CPUs, so the figures are of the machine as it was.",
        "",
    ]
    for outcome in outcomes:
        command = " ".join(["python", f"benchmarks/{outcome.script.name}", *outcome.arguments])
        lines += [
            f"### `{outcome.script.name}`",
            "",
            f"{outcome.script.measures[0].upper()}{outcome.script.measures[1:]}. "
            f"`{command}`: {_ending(outcome)}, load average {_loads(outcome.load_after)} after.",
            "",
            "```text",
            outcome.output.rstrip() or "(no output)",
            "```",
            "",
        ]
    lines.append(END)
    return "\n".join(lines) + "\n"


def write_page(section: str, page: Path = PAGE) -> None:
    """Replace what lies between the page's markers (the markers included) with ``section``."""
    text = page.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END) + r"\n?", re.S)
    if len(pattern.findall(text)) != 1:
        raise SystemExit(f"{page.name} must hold the figures markers exactly once")
    page.write_text(pattern.sub(lambda _: section, text), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="each script at its small sizes")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=[script.name for script in SCRIPTS],
        metavar="SCRIPT",
        help="run only these scripts (implies --print)",
    )
    parser.add_argument(
        "--print", action="store_true", help="write the section to stdout, not to the page"
    )
    parser.add_argument(
        "--limit", type=float, default=1200.0, help="seconds one script may run (default 1200)"
    )
    args = parser.parse_args()
    chosen = [script for script in SCRIPTS if not args.only or script.name in args.only]
    load_before = _load()
    outcomes = []
    for script in chosen:
        print(f"{script.name} ...", file=sys.stderr, flush=True)
        outcome = _run(script, args.quick, args.limit)
        print(f"  {_ending(outcome)}", file=sys.stderr, flush=True)
        outcomes.append(outcome)
    section = render(outcomes, args.quick, load_before)
    if args.print or args.only:
        sys.stdout.write(section)
    else:
        write_page(section)
        print(f"wrote the figures of {len(outcomes)} scripts into docs/performance.md")
    return 0 if all(outcome.returncode == 0 for outcome in outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
