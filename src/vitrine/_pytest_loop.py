"""The pytest plugin's one event loop, and its retried, never-crashing ask of the subject.

Every coroutine the plugin runs for a pytest session (the in-process subject, the judge) runs on
one :class:`SessionLoop`: an event loop on a background thread, started on first use and closed
when the session ends. A client the subject keeps between tests (a module-level
``openai.AsyncOpenAI``) binds its connection pool to that loop on first use and keeps working in
every later test, which a fresh ``asyncio.run`` per call breaks ("Event loop is closed"). Being
on its own thread, the loop serves synchronous tests and ``async def`` tests alike: a test whose
own loop is running blocks on the session loop (``run``) or awaits it (``run_async``), and never
nests one loop inside another.

:func:`ask` asks the subject once per case with the same :class:`~vitrine.RetryPolicy` and the
same single try (timeout, journal) as a trial of ``vitrine.evaluate()``, and returns an
:class:`Ask`: the response, or why the subject was not measured, and every failed try.
The plugin imports this module on first use, not when pytest starts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from vitrine._bench.model import Arm, Case
from vitrine._bench.response import SubjectResponse
from vitrine._bench.retry import FailedAttempt, RetryPolicy
from vitrine._bench.trial import TrialRunner
from vitrine.errors import RunningLoopError, WrongTypeError

__all__ = ["Ask", "SessionLoop", "ask"]

T = TypeVar("T")

_CLOSE_TIMEOUT_S = 10.0


class SessionLoop:
    """One event loop for a whole pytest session, on a background thread.

    The thread starts on the first coroutine it is given, so a session that asks nothing
    starts nothing. :meth:`run` blocks until a coroutine finished on the loop; :meth:`run_async`
    awaits it from another running loop (an ``async def`` test). Either way the coroutine sees
    the caller's context variables, as under ``asyncio.run``. :meth:`close` cancels what is
    still running, finishes async generators and the default executor, then closes the loop.
    """

    def __init__(self, name: str = "vitrine-session-loop") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The session's loop, started on first use; refused once the session closed it."""
        with self._lock:
            if self._closed:
                raise RunningLoopError(
                    "the pytest session's event loop is closed: the session has ended"
                )
            if self._loop is None:
                self._loop, self._thread = self._start()
            return self._loop

    @property
    def started(self) -> bool:
        """Whether a coroutine was ever run on the loop (and its thread started)."""
        return self._loop is not None

    def _start(self) -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        # A daemon, so a session that dies without closing the loop still lets Python exit.
        thread = threading.Thread(target=serve, name=self._name, daemon=True)
        thread.start()
        ready.wait()
        return loop, thread

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coroutine`` on the loop, in a copy of the caller's context."""
        try:
            loop = self.loop
        except RunningLoopError:
            coroutine.close()
            raise
        if threading.current_thread() is self._thread:
            coroutine.close()
            # Blocking on the loop from its own thread would wait for itself forever.
            raise RunningLoopError(
                "vitrine_ask was called from a coroutine running on the session's event loop "
                "(inside the subject or the judge): await vitrine_ask.respond(...) instead"
            )
        context = contextvars.copy_context()
        result: concurrent.futures.Future[T] = concurrent.futures.Future()

        def start() -> None:
            if result.cancelled():
                coroutine.close()
                return
            task = loop.create_task(coroutine, context=context)

            def settle(done: asyncio.Task[T]) -> None:
                # The result stays pending until here, so a cancelled task can cancel it.
                if done.cancelled():
                    result.cancel()
                if not result.set_running_or_notify_cancel():
                    return
                if (error := done.exception()) is not None:
                    result.set_exception(error)
                else:
                    result.set_result(done.result())

            task.add_done_callback(settle)
            # A caller that gives up (Ctrl-C, a cancelled async test) stops the task too.
            result.add_done_callback(
                lambda f: loop.call_soon_threadsafe(task.cancel) if f.cancelled() else None
            )

        loop.call_soon_threadsafe(start)
        return result

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the session's loop and wait for its result here."""
        future = self.submit(coroutine)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    async def run_async(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Await ``coroutine`` run on the session's loop, from any running loop."""
        if asyncio.get_running_loop() is self._loop:
            return await coroutine
        return await asyncio.wrap_future(self.submit(coroutine))

    def close(self) -> None:
        """Cancel what still runs on the loop, finish its generators and executor, close it."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def finish() -> None:
            current = asyncio.current_task()
            leftovers = [task for task in asyncio.all_tasks() if task is not current]
            for task in leftovers:
                task.cancel()
            await asyncio.gather(*leftovers, return_exceptions=True)
            await loop.shutdown_asyncgens()
            await loop.shutdown_default_executor()

        try:
            asyncio.run_coroutine_threadsafe(finish(), loop).result(_CLOSE_TIMEOUT_S)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(_CLOSE_TIMEOUT_S)
            if not thread.is_alive():
                loop.close()


@dataclass(frozen=True, slots=True)
class Ask:
    """One ask of the subject: its response, or why it was not measured, and every failed try.

    ``tries`` counts the subject's calls (1 when it answered at once); ``transient`` says
    whether the last failure was one the retry policy retries (so retries ran out) rather than
    a permanent one (not retried). ``contract`` says the subject broke the contract of an
    ``Arm`` (it returned something other than a SubjectResponse): a wiring error in the test
    suite, not a behaviour of the subject, so the plugin fails the test instead of skipping it.
    """

    case_id: str
    response: SubjectResponse | None
    tries: int
    failed_attempts: tuple[FailedAttempt, ...] = ()
    error: str | None = None
    transient: bool = False
    contract: bool = False

    @property
    def measured(self) -> bool:
        """Whether the subject answered, so the test observed something."""
        return self.response is not None

    @property
    def reason(self) -> str:
        """Why the subject was not measured, in one sentence; empty when it was, or when it
        broke the contract (a failure of the suite, said by :attr:`error`)."""
        if self.measured or self.contract:
            return ""
        if self.transient:
            why = f"still failing after {self.tries} {'try' if self.tries == 1 else 'tries'}"
        else:
            why = "not retried: not a transient error" if self.tries == 1 else "not transient"
        return f"the subject was not measured on case {self.case_id!r}: {self.error} ({why})"

    def to_dict(self) -> dict[str, Any]:
        """The ask as the behaviour report records it."""
        state = "measured" if self.measured else "failed" if self.contract else "not_measured"
        entry: dict[str, Any] = {"case": self.case_id, "state": state, "tries": self.tries}
        if self.failed_attempts:
            entry["failed_attempts"] = [attempt.to_dict() for attempt in self.failed_attempts]
        if not self.measured:
            entry["reason"] = self.reason or str(self.error)
        return entry


async def ask(arm: Arm, case: Case, policy: RetryPolicy, *, trial_timeout_s: float) -> Ask:
    """Ask ``arm`` about ``case`` as a trial of ``vitrine.evaluate()`` asks it: each try with
    its timeout and journal, a transient failure retried with the policy's backoff."""
    # The trial runner's single try, so a try here is a try there (timeout, journal, the
    # sanitized error); its checks are the test's own, so it is given none.
    runner = TrialRunner(
        arm, (), trial_timeout_s=trial_timeout_s, check_timeout_s=trial_timeout_s, retry=policy
    )
    tried = await runner.respond(case)
    if tried.response is not None:
        return Ask(case.id, tried.response, tried.tries, tried.failures)
    contract = isinstance(tried.exception, WrongTypeError)
    transient = not contract and tried.retryable
    return Ask(case.id, None, tried.tries, tried.failures, tried.error, transient, contract)
