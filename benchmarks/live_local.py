"""Seconds per live trial and tokens per second for both free paths, on this machine.

Run: python benchmarks/live_local.py [--scenario ID] [--plans eval01-agent,eval02-workflow]

Path "in-process": ``--provider local``, SmolLM2-135M-Instruct loaded by llama-cpp-python.
Path "server": ``python -m llama_cpp.server`` serving the same GGUF (chat format
``chatml-function-calling``), reached as a free OpenAI-compatible endpoint.

For each path: tokens per second of one plain 128-token generation (from the usage the model
reports), then each plan on one scenario with small ceilings, timed from its receipt
(``duration_s``), with the judge's admission result. Every session writes to a temporary run
store that is removed afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from vitrine import PlanRequest
from vitrine.providers._base import ChatMessage, ChatModel, ChatRequest
from vitrine.providers._local import SMOLLM2_135M_INSTRUCT, LocalGGUFModel
from vitrine.providers._openai_compat import OpenAICompatibleModel
from vitrine.providers._retry import ProviderBackoff
from vitrine_shop.evals.live.plans import EVAL01, EVAL02, LOCAL_AGENT_BUDGET
from vitrine_shop.evals.live.session import LiveOptions, run_live_plan

PLANS = {"eval01-agent": EVAL01, "eval02-workflow": EVAL02}
CEILINGS = {"VITRINE_SUBJECT_MAX_OUTPUT_TOKENS": "160", "VITRINE_JUDGE_MAX_OUTPUT_TOKENS": "260"}
PROMPT = "Describe a good rain jacket for hut-to-hut hiking in five sentences."


async def tokens_per_second(model: ChatModel) -> tuple[float, int]:
    request = ChatRequest((ChatMessage("user", PROMPT),), max_output_tokens=128, temperature=0.0)
    started = time.perf_counter()
    completion = await model.complete(request)
    elapsed = time.perf_counter() - started
    produced = completion.usage.output_tokens if completion.usage else 0
    return (produced / elapsed if elapsed else 0.0), produced


async def plan_seconds(spec_name: str, scenario: str, provider: str, env: dict[str, str]) -> dict:
    spec = PLANS[spec_name]
    with tempfile.TemporaryDirectory(prefix="vitrine-live-local-") as root:
        request = PlanRequest(
            plan=spec.name, scenarios=(scenario,), provider=provider, output=Path(root)
        )
        options = LiveOptions(environ=env, agent_budget=LOCAL_AGENT_BUDGET)
        outcome = await run_live_plan(spec, request, options)
        (receipt,) = (Path(root) / "live" / "live-sessions").glob("*/outcome.json")
        doc = json.loads(receipt.read_text())
    admission = doc.get("judge_admission") or {}
    return {
        "plan": spec_name,
        "exit": int(outcome.exit_code),
        "seconds_per_trial": doc["duration_s"] / max(1, len(doc.get("trials") or ())),
        "judge_admitted": admission.get("admitted"),
        "agreement": admission.get("agreement"),
        "structured_output": (doc.get("structured_output") or {}).get("mode", "grammar"),
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(gguf: Path, port: int) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
        "--model_alias", "smollm2", "--chat_format", "chatml-function-calling",
        "--n_ctx", "4096", "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", str(os.cpu_count() or 1),
    ]  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return process
        except OSError:
            time.sleep(0.5)
    process.terminate()
    raise SystemExit("llama_cpp.server did not start within 120 s")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="nadia-cross-category")
    parser.add_argument("--plans", default="eval01-agent,eval02-workflow")
    args = parser.parse_args()
    plans = [name for name in args.plans.split(",") if name]
    gguf = SMOLLM2_135M_INSTRUCT.path()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "VITRINE_"))}
    rows: list[tuple[str, dict]] = []

    rate, produced = await tokens_per_second(LocalGGUFModel(gguf, max_output_tokens=128))
    print(f"in-process: {rate:.1f} tokens/s ({produced} tokens)")
    for name in plans:
        rows.append(
            ("in-process", await plan_seconds(name, args.scenario, "local", {**base, **CEILINGS}))
        )

    port = free_port()
    server = start_server(gguf, port)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        model = OpenAICompatibleModel(
            "smollm2", api_key="not-needed", base_url=url, retry=ProviderBackoff(max_retries=0),
            token_limit_parameter="max_tokens",
        )  # fmt: skip
        rate, produced = await tokens_per_second(model)
        print(f"server: {rate:.1f} tokens/s ({produced} tokens)")
        env = {
            **base, **CEILINGS, "OPENAI_BASE_URL": url, "VITRINE_MODEL": "smollm2",
            "VITRINE_PROVIDER_COST": "free",
        }  # fmt: skip
        for name in plans:
            rows.append(("server", await plan_seconds(name, args.scenario, "openai", env)))
    finally:
        server.terminate()
        server.wait(timeout=15)
    for path, row in rows:
        print(
            f"{path:10s} {row['plan']:16s} {row['seconds_per_trial']:7.1f} s/trial  "
            f"exit {row['exit']}  structured={row['structured_output']}  "
            f"judge admitted={row['judge_admitted']} agreement={row['agreement']}"
        )


if __name__ == "__main__":
    asyncio.run(main())
