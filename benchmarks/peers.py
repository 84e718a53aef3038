"""The same workload in vitrine and its peers, with vitrine's ratio to each, in one run.

The workload: an instant subject (it answers each sample's expected text at once), one
exact-match check, 2,000 samples, results persisted the way each tool normally keeps them
(vitrine: a sealed run in a run store; Inspect AI: an ``.eval`` log; DeepEval: its test-run
results folder; promptfoo: its local database). Per tool, in a subprocess of its own:

- **per-sample cost**: the wall time of the evaluation call divided by the samples (for
  promptfoo, the command's wall time less its start-up);
- **peak RSS**: ``ru_maxrss`` of that subprocess, read by a launcher as small as a bare
  interpreter (``_measure.py``): read from here, the figure would include this script's own
  image, which Linux carries into a child's ``ru_maxrss`` across ``exec``;
- **start-up**: the best of three fresh interpreters running the imports the workload itself
  needs (for vitrine ``from vitrine import evaluate, Arm, ...``; a bare ``import vitrine`` is
  lazy and is printed beside it, labelled); ``promptfoo --version``;
- **live throughput**: 500 samples against an OpenAI-compatible endpoint (in a process of
  its own) that answers after 200 ms, 50 connections, as a share of the ideal 250/s, timed
  over the whole evaluation call, the tool's set-up included; where the tool can call such
  an endpoint (vitrine and Inspect AI can; promptfoo through its OpenAI provider; DeepEval
  evaluates outputs its caller produced, so n/a).

Inspect AI and DeepEval pin older versions of packages vitrine uses (rich, click), so install
them in a virtualenv of their own and point ``--peers-python`` at it::

    python -m venv /tmp/peers && /tmp/peers/bin/pip install 'inspect-ai==0.3.285' 'deepeval==4.3.1'
    python benchmarks/peers.py --peers-python /tmp/peers/bin/python

promptfoo is used when ``promptfoo`` is on PATH (``npm install -g promptfoo``). A tool that is
not installed is skipped with a line saying so. DeepEval runs with ``write_cache=False``: with
its default cache it rewrites the whole cache file after every case, which makes the cost per
sample grow with the run (minutes for 2,000 samples), not a cost of evaluating a sample.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _measure import run_measured  # noqa: E402
from live_concurrency import fake_endpoint  # noqa: E402

LIVE_LATENCY_S = 0.2
ANSWER = "GLX-0001 fits your budget."

# What a script that evaluates with each tool imports first; its start-up is timed on these.
VITRINE_IMPORT = (
    "from vitrine import Arm, BenchmarkDefinition, Case, ChanceFloor, Observation, "
    "SubjectResponse, admit, check, evaluate"
)
INSPECT_IMPORT = (
    "from inspect_ai import Task, eval\n"
    "from inspect_ai.dataset import Sample\n"
    "from inspect_ai.scorer import exact"
)
DEEPEVAL_IMPORT = (
    "from deepeval import evaluate\n"
    "from deepeval.metrics import ExactMatchMetric\n"
    "from deepeval.test_case import LLMTestCase"
)

# Each workload script prints one JSON object as its last line: {"wall_s", "correct"}.
VITRINE_OFFLINE = (
    "import sys, time, json\n"
    + VITRINE_IMPORT
    + """
samples, folder = int(sys.argv[1]), sys.argv[2]

@check("exact-match")
def exact(case, response):
    ok = response.answer == case.input["target"]
    return Observation.measured(ok, ok)

async def instant(case):
    return SubjectResponse(answer=case.input["target"])

cases = [Case(f"s{i}", {"target": f"answer {i}"}) for i in range(samples)]
floor = ChanceFloor.not_derivable("a deterministic predicate")
definition = BenchmarkDefinition("peers", "1", cases, [admit(exact, floor)])
started = time.perf_counter()
result = evaluate(definition, Arm("instant", instant), store=folder)
wall = time.perf_counter() - started
correct = sum(1 for run in result.runs for row in run.rows if row.observation.passed)
print(json.dumps({"wall_s": wall, "correct": correct}))
"""
)

VITRINE_LIVE = (
    "import sys, time, json\n"
    + VITRINE_IMPORT
    + """
from vitrine.providers._base import ChatMessage, ChatRequest
from vitrine.providers._openai_compat import OpenAICompatibleModel
samples, folder, base_url, connections = sys.argv[1:5]
answer = sys.argv[5]

@check("exact-match")
def exact(case, response):
    ok = response.answer == answer
    return Observation.measured(ok, ok)

started = time.perf_counter()
model = OpenAICompatibleModel(
    "bench-model", api_key="bench-key", base_url=base_url, max_connections=int(connections)
)

async def subject(case):
    completion = await model.complete(ChatRequest((ChatMessage("user", case.input),)))
    return SubjectResponse(answer=completion.content)

cases = [Case(f"s{i}", f"case {i}") for i in range(int(samples))]
floor = ChanceFloor.not_derivable("a deterministic predicate")
definition = BenchmarkDefinition("peers-live", "1", cases, [admit(exact, floor)])
result = evaluate(
    definition, Arm("endpoint", subject), store=folder, concurrency=int(connections)
)
wall = time.perf_counter() - started
correct = sum(1 for run in result.runs for row in run.rows if row.observation.passed)
print(json.dumps({"wall_s": wall, "correct": correct}))
"""
)

INSPECT_OFFLINE = (
    "import sys, time, json\n"
    + INSPECT_IMPORT
    + """
from inspect_ai.model import ModelOutput
from inspect_ai.solver import solver
samples, folder = int(sys.argv[1]), sys.argv[2]

@solver
def instant():
    async def solve(state, generate):
        state.output = ModelOutput.from_content("instant", state.target.text)
        return state
    return solve

dataset = [Sample(input=f"s{i}", target=f"answer {i}", id=i) for i in range(samples)]
task = Task(dataset=dataset, solver=instant(), scorer=exact())
started = time.perf_counter()
log = eval(task, model="mockllm/model", log_dir=folder, display="none")[0]
wall = time.perf_counter() - started
correct = sum(1 for s in log.samples if s.scores and s.scores["exact"].value == "C")
print(json.dumps({"wall_s": wall, "correct": correct}))
"""
)

INSPECT_LIVE = (
    "import sys, time, json\n"
    + INSPECT_IMPORT
    + """
from inspect_ai.solver import generate
samples, folder, base_url, connections = sys.argv[1:5]
dataset = [Sample(input=f"case {i}", target=sys.argv[5], id=i) for i in range(int(samples))]
task = Task(dataset=dataset, solver=generate(), scorer=exact())
started = time.perf_counter()
log = eval(
    task, model="openai/bench-model", model_base_url=base_url, log_dir=folder, display="none",
    # The endpoint speaks chat completions, not OpenAI's newer Responses API.
    model_args={"responses_api": False},
    max_connections=int(connections), max_samples=int(connections), max_retries=0,
)[0]
wall = time.perf_counter() - started
correct = sum(1 for s in log.samples if s.scores and s.scores["exact"].value == "C")
print(json.dumps({"wall_s": wall, "correct": correct}))
"""
)

DEEPEVAL_OFFLINE = (
    "import sys, time, json\n"
    + DEEPEVAL_IMPORT
    + """
from deepeval.evaluate.configs import AsyncConfig, CacheConfig, DisplayConfig
samples, folder = int(sys.argv[1]), sys.argv[2]

def instant(text):
    return text

started = time.perf_counter()
cases = [
    LLMTestCase(input=f"s{i}", actual_output=instant(f"answer {i}"), expected_output=f"answer {i}")
    for i in range(samples)
]
result = evaluate(
    cases,
    [ExactMatchMetric()],
    cache_config=CacheConfig(write_cache=False, use_cache=False),
    display_config=DisplayConfig(
        show_indicator=False, print_results=False, inspect_after_run=False, results_folder=folder
    ),
    async_config=AsyncConfig(run_async=True),
)
wall = time.perf_counter() - started
correct = sum(1 for r in result.test_results if r.success)
print(json.dumps({"wall_s": wall, "correct": correct}))
"""
)


@dataclass
class Figures:
    """One tool's measurements; None where not measured, with the reason in ``notes``."""

    tool: str
    per_sample_ms: float | None = None
    peak_rss_mb: float | None = None
    startup_s: float | None = None
    bare_startup_s: float | None = None
    startup_import: str = ""
    live_share: float | None = None
    notes: list[str] = field(default_factory=list)


def _run_measured(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[str, float, float]:
    """Run ``command``: its stdout, wall seconds and its own peak RSS in MB."""
    out_file = cwd / "stdout.txt"
    err_file = cwd / "stderr.txt"
    with out_file.open("w") as out, err_file.open("w") as err:
        measured = run_measured(command, cwd=cwd, env=env, stdout=out, stderr=err)
    if measured.returncode != 0:
        text = err_file.read_text() or out_file.read_text()
        tail = text.strip().splitlines()[-5:]
        raise RuntimeError(
            f"{Path(command[0]).name} exited {measured.returncode}: " + " | ".join(tail)
        )
    return out_file.read_text(), measured.wall_s, measured.peak_rss_mb


def _result(stdout: str) -> dict[str, Any]:
    lines = [line for line in stdout.strip().splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError("the workload printed no result line")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _startup_s(command: list[str], env: dict[str, str], cwd: Path) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=True)
        best = min(best, time.perf_counter() - started)
    return best


def _env(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": str(ROOT / "src"),
            "NO_COLOR": "1",
            "XDG_DATA_HOME": str(scratch / "xdg-data"),
            "XDG_CACHE_HOME": str(scratch / "xdg-cache"),
            "OPENAI_API_KEY": "bench-key",
            "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
            "DEEPEVAL_UPDATE_WARNING_OPT_IN": "NO",
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
        }
    )
    return env


def _has_module(python: str, module: str) -> bool:
    probe = [
        python,
        "-c",
        f"import importlib.util, sys; sys.exit(not importlib.util.find_spec({module!r}))",
    ]
    try:
        return subprocess.run(probe, check=False, capture_output=True).returncode == 0
    except OSError:  # no such interpreter
        return False


def _offline(figures: Figures, python: str, script: str, samples: int, scratch: Path) -> None:
    folder = scratch / "results"
    folder.mkdir()
    command = [python, "-c", script, str(samples), str(folder)]
    stdout, _, rss = _run_measured(command, scratch, _env(scratch))
    result = _result(stdout)
    if result["correct"] != samples:
        figures.notes.append(f"only {result['correct']} of {samples} samples scored correct")
    figures.per_sample_ms = result["wall_s"] * 1000.0 / samples
    figures.peak_rss_mb = rss


def _live(python: str, script: str, samples: int, connections: int, scratch: Path) -> float:
    """The share of the ideal throughput that ``script`` reached against the endpoint, timed
    from before its model client exists to its last result (its set-up included)."""
    with fake_endpoint(LIVE_LATENCY_S) as endpoint:
        command = [
            python,
            "-c",
            script,
            str(samples),
            str(scratch / "live-logs"),
            endpoint.base_url,
            str(connections),
            ANSWER,
        ]
        stdout, _, _ = _run_measured(command, scratch, _env(scratch))
    result = _result(stdout)
    if result["correct"] != samples:
        raise RuntimeError(f"only {result['correct']} of {samples} live samples scored correct")
    return float(samples / result["wall_s"] / (connections / LIVE_LATENCY_S))


def _promptfoo_config(path: Path, tests: list[dict[str, Any]], provider: Any, prompt: str) -> None:
    config = {"prompts": [prompt], "providers": [provider], "tests": tests}
    path.write_text(json.dumps(config))


def _promptfoo(
    command: list[str], samples: int, live_samples: int, connections: int, scratch: Path
) -> Figures:
    figures = Figures("promptfoo")
    env = _env(scratch)
    figures.startup_s = _startup_s([*command, "--version"], env, scratch)
    offline = scratch / "offline.json"
    tests = [
        {"vars": {"answer": f"answer {i}"}, "assert": [{"type": "equals", "value": f"answer {i}"}]}
        for i in range(samples)
    ]
    _promptfoo_config(offline, tests, "echo", "{{answer}}")
    eval_command = [
        *command,
        "eval",
        "-c",
        str(offline),
        "--no-cache",
        "--no-progress-bar",
        "--no-table",
    ]
    _, wall, rss = _run_measured(eval_command, scratch, env)
    figures.per_sample_ms = max(wall - figures.startup_s, 0.0) * 1000.0 / samples
    figures.peak_rss_mb = rss
    figures.notes.append("per-sample cost is the command's wall time less its start-up")
    with fake_endpoint(LIVE_LATENCY_S) as endpoint:
        live = scratch / "live.json"
        provider = {
            "id": "openai:chat:bench-model",
            "config": {"apiBaseUrl": endpoint.base_url, "apiKey": "bench-key"},
        }
        tests = [
            {"vars": {"n": i}, "assert": [{"type": "equals", "value": ANSWER}]}
            for i in range(live_samples)
        ]
        _promptfoo_config(live, tests, provider, "case {{n}}")
        live_command = [
            *command,
            "eval",
            "-c",
            str(live),
            "--no-cache",
            "--no-progress-bar",
            "--no-table",
            "--max-concurrency",
            str(connections),
        ]
        _, wall, _ = _run_measured(live_command, scratch, env)
    achieved = live_samples / max(wall - figures.startup_s, 1e-9)
    figures.live_share = achieved / (connections / LIVE_LATENCY_S)
    return figures


def _import_startup(
    figures: Figures, python: str, module: str, imports: str, scratch: Path
) -> None:
    """Start-up as a user script pays it (the imports its workload needs), and the bare
    ``import module`` beside it, which a package with lazy attributes makes look cheaper."""
    figures.startup_import = imports.replace("\n", "; ")
    env = _env(scratch)
    figures.startup_s = _startup_s([python, "-c", imports], env, scratch)
    figures.bare_startup_s = _startup_s([python, "-c", f"import {module}"], env, scratch)


def _vitrine(samples: int, live_samples: int, connections: int, scratch: Path) -> Figures:
    figures = Figures("vitrine")
    _import_startup(figures, sys.executable, "vitrine", VITRINE_IMPORT, scratch)
    _offline(figures, sys.executable, VITRINE_OFFLINE, samples, scratch)
    figures.live_share = _live(sys.executable, VITRINE_LIVE, live_samples, connections, scratch)
    return figures


def _python_peer(
    tool: str, module: str, imports: str, python: str, script: str, samples: int, scratch: Path
) -> Figures:
    figures = Figures(tool)
    _import_startup(figures, python, module, imports, scratch)
    _offline(figures, python, script, samples, scratch)
    return figures


def _ratio(mine: float | None, theirs: float | None) -> str:
    if mine is None or theirs is None or theirs == 0:
        return "n/a"
    return f"{mine / theirs:.2f}x"


def _cell(value: float | None, form: str) -> str:
    return "n/a" if value is None else format(value, form)


def _print_table(rows: list[Figures], skipped: list[str]) -> None:
    mine = rows[0]
    print(
        f"\n{'tool':<11} {'ms/sample':>10} {'ratio':>7} {'peak MB':>8} {'ratio':>7} "
        f"{'start-up s':>10} {'ratio':>7} {'live share':>10} {'ratio':>7}"
    )
    for row in rows:
        same = row is mine
        print(
            f"{row.tool:<11} {_cell(row.per_sample_ms, '.3f'):>10} "
            f"{'' if same else _ratio(mine.per_sample_ms, row.per_sample_ms):>7} "
            f"{_cell(row.peak_rss_mb, '.0f'):>8} "
            f"{'' if same else _ratio(mine.peak_rss_mb, row.peak_rss_mb):>7} "
            f"{_cell(row.startup_s, '.2f'):>10} "
            f"{'' if same else _ratio(mine.startup_s, row.startup_s):>7} "
            f"{_cell(row.live_share, '.3f'):>10} "
            f"{'' if same else _ratio(mine.live_share, row.live_share):>7}"
        )
    print(
        "\nratio = vitrine / peer: below 1 means vitrine costs less (per sample, memory, "
        "start-up);\nfor the live share of ideal throughput, above 1 means vitrine is faster."
    )
    for row in rows:
        if row.bare_startup_s is not None:
            print(
                f"{row.tool} start-up: {row.startup_s:.3f} s for `{row.startup_import}` "
                f"(the column above); bare `import` {row.bare_startup_s:.3f} s"
            )
    for row in rows:
        for note in row.notes:
            print(f"{row.tool}: {note}")
    for line in skipped:
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--live-samples", type=int, default=500)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument(
        "--peers-python",
        default=sys.executable,
        help="the interpreter that has inspect-ai and deepeval (default: this one)",
    )
    args = parser.parse_args()
    if min(args.samples, args.live_samples, args.connections) < 1:
        parser.error("--samples, --live-samples and --connections must be positive")
    rows: list[Figures] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="vitrine-peers-") as tmp:
        scratch_root = Path(tmp)

        def scratch(name: str) -> Path:
            folder = scratch_root / name
            folder.mkdir()
            return folder

        def inspect_ai() -> Figures:
            figures = _python_peer(
                "Inspect AI", "inspect_ai", INSPECT_IMPORT, args.peers_python, INSPECT_OFFLINE,
                args.samples, scratch("inspect"),
            )  # fmt: skip
            figures.live_share = _live(
                args.peers_python, INSPECT_LIVE, args.live_samples, args.connections,
                scratch("inspect-live"),
            )  # fmt: skip
            return figures

        def deepeval() -> Figures:
            figures = _python_peer(
                "DeepEval", "deepeval", DEEPEVAL_IMPORT, args.peers_python, DEEPEVAL_OFFLINE,
                args.samples, scratch("deepeval"),
            )  # fmt: skip
            figures.notes.append("live throughput n/a: it scores outputs its caller produced")
            return figures

        def promptfoo() -> Figures:
            command = [str(shutil.which("promptfoo"))]
            return _promptfoo(
                command, args.samples, args.live_samples, args.connections, scratch("promptfoo")
            )

        print(f"vitrine: {args.samples} samples, then {args.live_samples} live ...", flush=True)
        rows.append(_vitrine(args.samples, args.live_samples, args.connections, scratch("vitrine")))
        peers = [
            ("Inspect AI", _has_module(args.peers_python, "inspect_ai"), inspect_ai),
            ("DeepEval", _has_module(args.peers_python, "deepeval"), deepeval),
            ("promptfoo", shutil.which("promptfoo") is not None, promptfoo),
        ]
        for name, installed, run in peers:
            if not installed:
                where = "on PATH" if name == "promptfoo" else f"for {args.peers_python}"
                skipped.append(f"{name}: skipped, not installed {where}")
                continue
            print(f"{name} ...", flush=True)
            try:
                rows.append(run())
            except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
                skipped.append(f"{name}: failed, {exc}")
    _print_table(rows, skipped)


if __name__ == "__main__":
    main()
