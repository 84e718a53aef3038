"""Hold 50 concurrent SSE chat sessions against `vitrine serve` for 30 s on loopback.

Each session is one conversation that sends turn after turn until the deadline; every turn is
timed to its first event and to its final message. A session is dropped when any turn ends
without ``message.final`` (an error event, a non-200 status, a broken stream). The run stops by
itself: turns still in flight at the deadline get a bounded grace period, then count as
dropped. Without ``--url`` it starts its own service (scripted model, rate limit lifted) and
stops it afterwards.

    python benchmarks/sse_load.py [--sessions 50] [--duration 30] [--url http://127.0.0.1:8000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from vitrine.service._process import running_service

PERSONAS = ("nadia", "marco", "sofia", "elena", "luca")
MESSAGES = (
    "What would you suggest for me?",
    "my maximum budget is CHF 250",
    "Anything else you would suggest?",
    "What is your return policy?",
)
GRACE_S = 30.0


@dataclass
class Session:
    persona: str
    first_event_s: list[float] = field(default_factory=list)
    final_s: list[float] = field(default_factory=list)
    dropped: str | None = None


async def _turn(client: httpx.AsyncClient, body: dict[str, str]) -> tuple[float, float, dict]:
    started = time.perf_counter()
    first: float | None = None
    final: dict | None = None
    event = ""
    async with client.stream("POST", "/v1/chat", json=body) as response:
        if response.status_code != 200:
            raise RuntimeError(f"status {response.status_code}")
        async for line in response.aiter_lines():
            if first is None and line:
                first = time.perf_counter() - started
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "message.final":
                final = json.loads(line[6:])
            elif line.startswith("data: ") and event == "error":
                raise RuntimeError("error event")
    if final is None or first is None:
        raise RuntimeError("stream ended without message.final")
    return first, time.perf_counter() - started, final


async def _session(client: httpx.AsyncClient, session: Session, deadline: float) -> None:
    session_id: str | None = None
    turn = 0
    while time.perf_counter() < deadline and session.dropped is None:
        body = {"message": MESSAGES[turn % len(MESSAGES)]}
        if session_id is None:
            body["persona_id"] = session.persona
        else:
            body["session_id"] = session_id
        try:
            first, total, final = await _turn(client, body)
        except (httpx.HTTPError, RuntimeError) as exc:
            session.dropped = f"{type(exc).__name__}: {exc}"
            return
        session_id = str(final["session_id"])
        session.first_event_s.append(first)
        session.final_s.append(total)
        turn += 1


def _percentile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


async def run(url: str, sessions: int, duration_s: float) -> int:
    limits = httpx.Limits(max_connections=sessions + 10, max_keepalive_connections=sessions + 10)
    async with httpx.AsyncClient(base_url=url, timeout=60.0, limits=limits) as client:
        group = [Session(PERSONAS[i % len(PERSONAS)]) for i in range(sessions)]
        deadline = time.perf_counter() + duration_s
        tasks = [asyncio.create_task(_session(client, s, deadline)) for s in group]
        _, pending = await asyncio.wait(tasks, timeout=duration_s + GRACE_S)
        for task in pending:  # bounded: a hung turn is a dropped session, not a hung benchmark
            task.cancel()
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for session, task in zip(group, tasks, strict=True):
            if task in pending and session.dropped is None:
                session.dropped = "still running after the grace period"
    first = [v for s in group for v in s.first_event_s]
    final = [v for s in group for v in s.final_s]
    dropped = [s for s in group if s.dropped]
    print(f"sessions {sessions}, duration {duration_s:g} s, turns completed {len(final)}")
    print(f"throughput {len(final) / duration_s:.1f} turns/s")
    for label, values in (("first event", first), ("final message", final)):
        print(
            f"time to {label}: p50 {_percentile(values, 50) * 1000:.1f} ms, "
            f"p95 {_percentile(values, 95) * 1000:.1f} ms"
        )
    print(f"dropped sessions {len(dropped)}")
    for session in dropped[:5]:
        print(f"  {session.persona}: {session.dropped}")
    return 1 if dropped or not final else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--url", help="an already running service (default: start one)")
    args = parser.parse_args()
    if args.url:
        return asyncio.run(run(args.url, args.sessions, args.duration))
    with tempfile.TemporaryDirectory() as folder:
        lifted = ["--rate-limit", "100000", "--rate-burst", "100000"]
        with running_service(lifted, log_path=Path(folder) / "service.log") as url:
            return asyncio.run(run(url, args.sessions, args.duration))


if __name__ == "__main__":
    sys.exit(main())
