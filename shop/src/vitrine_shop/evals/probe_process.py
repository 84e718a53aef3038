"""The invariants gate's probes, run beside the rest of the suite in a process of their own.

The probes are a large share of the offline suite's work and need nothing from it but the swept
shop's services, and they return plain facts. On Linux they run in a forked child while the
parent runs the benchmarks, so the suite uses both cores of a small machine. A fork, not a fresh
interpreter: the child is the parent at that instant, so a mutant planted in the parent (by
``vitrine mutants``, in memory) is planted in the child too, and nothing is loaded twice.

The fork is made before the rest of the evidence starts (no other thread at work) and on the
event loop's thread between two awaits (see :func:`start_probes`). The child writes its facts
(or the exception it raised, with its traceback as a note) to a pipe and leaves with
``os._exit``: no atexit handler, buffered output or trace exporter of the parent runs twice.
Anywhere without ``fork`` the probes run inline, one after another, with the same results.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import signal
import sys
import traceback
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from vitrine import tracing
from vitrine_shop.embeddings import model_in_use
from vitrine_shop.evals.probe_guard import guarded

__all__ = ["PendingProbes", "ProbeProcessError", "run_probes", "start_probes"]

Probe = Callable[[Any], Awaitable[dict[str, Any]]]
Facts = dict[str, dict[str, Any]]


class ProbeProcessError(RuntimeError):
    """The probes' child process ended without handing back its facts."""


async def _inline(probes: Mapping[str, Probe], services: Any) -> Facts:
    # One after another: they share the swept shop's services.
    return {key: await guarded(key, run(services)) for key, run in probes.items()}


def _child(probes: Mapping[str, Probe], services: Any, write: int) -> None:
    # Another thread of the parent may have held the standard streams' locks at the fork; the
    # child's copies of them may never be released, so it writes nowhere but its pipe.
    sys.stdout = sys.stderr = Path(os.devnull).open("w")  # noqa: SIM115 - kept until os._exit
    logging.disable(logging.CRITICAL)  # its handlers hold the parent's streams
    tracing.detach()  # the parent's trace is the parent's to send; the probes' spans are not
    try:
        outcome: tuple[str, Any] = ("facts", asyncio.run(_inline(probes, services)))
    except BaseException as exc:  # everything is handed to the parent
        exc.add_note("raised in the invariants probes' process:\n" + traceback.format_exc())
        try:
            outcome = ("raised", pickle.dumps(exc))
        except Exception:  # one that cannot travel travels as text
            outcome = ("failed", traceback.format_exc())
    with os.fdopen(write, "wb") as out:
        pickle.dump(outcome, out)


def _fork(probes: Mapping[str, Probe], services: Any) -> tuple[int, int]:
    """Fork the child that runs the probes; the parent gets its pid and the pipe to read."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: it never returns into the parent's code
        os.close(read)
        code = 0
        try:
            _child(probes, services, write)
        except BaseException:
            code = 1
        os._exit(code)
    os.close(write)
    return pid, read


def _collect(pid: int, read: int) -> Facts:
    with os.fdopen(read, "rb") as source:
        data = source.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        raise ProbeProcessError(
            f"the invariants probes' process ended ({_ended(status)}) without its facts"
        )
    kind, value = pickle.loads(data)  # our own child, over our own pipe
    if kind == "facts":
        return dict(value)
    if kind == "raised":
        raise pickle.loads(value)
    raise ProbeProcessError(f"the invariants probes raised in their process:\n{value}")


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit {os.WEXITSTATUS(status)}" if os.WIFEXITED(status) else f"status {status}"


def can_fork() -> bool:
    """Whether the probes run in a forked child here: on Linux, and only while this process
    has not loaded the embedding model (nor is loading it, in a thread that would hold its lock
    at the fork). The shipped vectors need no model; a changed catalogue does, and then the
    probes run inline, since a model's own threads do not survive a fork."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and not model_in_use()


class PendingProbes:
    """Probes started by :func:`start_probes`: their facts, once :meth:`facts` is awaited."""

    def __init__(self, probes: Mapping[str, Probe], services: Any) -> None:
        self._probes, self._services = probes, services
        self._child: tuple[int, int] | None = None
        if can_fork():
            self._child = _fork(probes, services)

    async def facts(self) -> Facts:
        if self._child is None:
            return await _inline(self._probes, self._services)
        pid, read = self._child
        self._child = None
        collecting = asyncio.get_running_loop().run_in_executor(None, _collect, pid, read)
        try:
            return await asyncio.shield(collecting)
        except asyncio.CancelledError:
            # A trial timeout or an interrupt: the child goes too, so the thread reading its
            # pipe sees the end of it and the process can exit.
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(BaseException):
                await collecting
            raise


def start_probes(probes: Mapping[str, Probe], services: Any) -> PendingProbes:
    """Start the probes now, in a forked child where the platform allows it.

    Call it where no other thread of the process is at work, before anything else is started
    (a thread loading data or importing a module at the instant of the fork leaves the child a
    copy of a lock that nobody will release), and on the event loop's own thread between two
    awaits, where that thread holds no lock either. asyncio knows that a forked child's copy of
    the parent's loop is not running in it, so the child runs a loop of its own.
    """
    return PendingProbes(probes, services)


async def run_probes(probes: Mapping[str, Probe], services: Any) -> Facts:
    """Every probe's facts (or its ``raised`` violation), keyed as ``probes`` is."""
    return await start_probes(probes, services).facts()
