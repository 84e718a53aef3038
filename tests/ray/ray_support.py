"""What the Ray tests run: a toy benchmark with known verdicts, and subjects that misbehave.

Ray workers cannot import the tests folder, so the conftest registers this module with Ray's
cloudpickle to travel by value, as a user's own module would be installed on the cluster.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter

import pytest

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
from vitrine.runs import RunResult

# Every Ray test starts or joins a cluster: one xdist worker runs them all (`--dist loadgroup`),
# so two clusters never start at once, and `-m "not ray"` leaves them out.
RAY_TESTS = [pytest.mark.ray, pytest.mark.xdist_group("ray")]

FLOOR = ChanceFloor.not_derivable("a deterministic toy predicate has no random-draw population")
CRASH_INPUT = 5


@check("even-answer")
def even_answer(case, response):
    even = int(response.answer) % 2 == 0
    return Observation.measured(1.0 if even else 0.0, even)


@check("never-thirteen")
def never_thirteen(case, response):
    if int(response.answer) == 13:
        raise ValueError("thirteen is not a number this check can look at")
    return Observation.measured(1.0, True)


def definition(count: int) -> BenchmarkDefinition:
    """``count`` cases whose inputs are 0..count-1, seen by two checks."""
    return BenchmarkDefinition(
        "ray-toy",
        "1.0.0",
        [Case(f"case-{i:03d}", i) for i in range(count)],
        [admit(even_answer, FLOOR), admit(never_thirteen, FLOOR)],
    )


async def arithmetic(case):
    """Answers its input plus one: odd inputs pass, even ones fail, 12 crashes a check, and
    every seventh input raises a connection error (not measured)."""
    if case.input % 7 == 6:
        raise ConnectionError("the toy backend refused the connection")
    await asyncio.sleep(0.01)
    return SubjectResponse(answer=str(case.input + 1))


def sleeper(seconds: float):
    """A subject that answers twice its input after ``seconds`` of waiting."""

    async def slow(case):
        await asyncio.sleep(seconds)
        return SubjectResponse(answer=str(case.input * 2))

    return slow


async def crashing(case):
    """Kills its own worker process on one case, as a native crash in a client library would."""
    if case.input == CRASH_INPUT:
        await asyncio.sleep(0.2)  # let the other trials land on this worker too
        os._exit(1)
    await asyncio.sleep(0.5)
    return SubjectResponse(answer=str(case.input * 2))


ARITHMETIC = Arm("arithmetic", arithmetic)


def row_facts(run: RunResult) -> list[tuple[str, str, str, bool | None, float | None, str | None]]:
    """Every row as plain facts, sorted: what must not depend on where the trials ran."""
    return sorted(
        (
            row.case_id,
            row.check_key,
            row.observation.state.value,
            row.observation.passed,
            row.observation.value,
            row.observation.reason,
        )
        for row in run.rows
    )


def rows_per_trial(run: RunResult) -> Counter[tuple[str, str]]:
    """How many rows each (case, check) pair has: exactly one when nothing was lost or doubled."""
    return Counter((row.case_id, row.check_key) for row in run.rows)


def listening_sockets() -> list[tuple[str, int, str]]:
    """(address, port, process name) of every listening TCP socket of this process and the
    processes it started: a local Ray cluster's GCS, raylets, agents and workers among them."""
    import psutil

    me = psutil.Process()
    names = {me.pid: me.name()}
    for child in me.children(recursive=True):
        try:
            names[child.pid] = child.name()
        except psutil.Error:
            continue  # gone since it was listed: it listens on nothing now
    return sorted(
        (conn.laddr.ip, conn.laddr.port, names[conn.pid])
        for conn in psutil.net_connections("inet")
        if conn.status == psutil.CONN_LISTEN and conn.pid in names
    )


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1, or 127.x as an IPv4-mapped IPv6 address (``::ffff:127.0.0.1``)."""
    import ipaddress

    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback
