"""Trials on a Ray cluster: a pool of async actors runs them, the driver records them.

Each actor (a *trial host*) takes one CPU, so the pool spreads over the cluster's nodes, and
runs many trials at once as coroutines: an I/O-bound subject (a model endpoint) keeps one host
busy with dozens of calls, a CPU-bound one gets one host per core. The runner's own worker
pool still bounds how many trials are in flight in total.

A trial's :class:`~vitrine._bench.trial.TrialRunner` (arm, checks, timeouts, retry policy) is
pickled once per run into Ray's object store and cached by each host; every call then carries
only the case. The host returns the very outcome the local executor returns, and the driver's
runner records it: the run store is written by one process, whatever happens on the cluster.

A host that dies (its worker process or its node) loses the trials it was running. Each lost
try is recorded as a failed attempt; the trial is tried again on a live host while the retry
policy has tries left, and is otherwise not measured, never dropped and never recorded twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Self

import ray
import ray.exceptions
from ray import cloudpickle
from ray._private import ray_constants

from vitrine._bench.executors import ExecutorError, ExecutorUnavailableError
from vitrine._bench.model import AdmittedCheck, Arm, Case
from vitrine._bench.retry import FailedAttempt
from vitrine._bench.trial import TrialOutcome, TrialRunner, not_measured_rows
from vitrine._redact import describe_exception

__all__ = ["LOOPBACK", "RayExecutor", "loopback_only", "start_local_ray"]

LOOPBACK = "127.0.0.1"
_LOOPBACK_NAMES = frozenset({LOOPBACK, "localhost", "::1"})

_log = logging.getLogger(__name__)

# Runners a host keeps unpickled; runs are sequential within an evaluation, so a few suffice.
_CACHED_RUNNERS = 8
_HOST_START_TIMEOUT_S = 120.0
_PROBE_TIMEOUT_S = 5.0
# How Ray reports a host that is gone, as opposed to an error raised by the trial itself.
_LOST_HOST = (
    ray.exceptions.RayActorError,
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.NodeDiedError,
)


class _TrialHost:
    """A Ray actor that runs trials of the runners it is sent (see the module docstring)."""

    def __init__(self) -> None:
        self._runners: OrderedDict[str, TrialRunner] = OrderedDict()

    def ready(self) -> str:
        return str(ray.get_runtime_context().get_node_id())

    async def observe(
        self,
        token: str,
        boxed: Sequence[Any],
        case: Case,
        lost: tuple[FailedAttempt, ...],
    ) -> TrialOutcome:
        # The runner's reference travels in a list so that Ray does not resolve (and unpickle)
        # it on every call; it is fetched once per run and host.
        runner = self._runners.get(token)
        if runner is None:
            runner = await boxed[0]
            self._runners[token] = runner
            while len(self._runners) > _CACHED_RUNNERS:
                self._runners.popitem(last=False)
        else:
            self._runners.move_to_end(token)
        return await runner.observe(case, lost=lost)


@dataclass(eq=False, slots=True)
class _Host:
    actor: Any
    node_id: str
    in_flight: int = 0
    alive: bool = True


class RayExecutor:
    """Runs trials on a Ray cluster; use it as a context manager (``with RayExecutor(): ...``).

    ``address`` names a running cluster (``host:port`` of its head, ``auto`` or ``ray://...``);
    ``None`` starts a local one with ``num_cpus`` CPUs (all of this machine's by default), no
    dashboard, listening on 127.0.0.1 only (:func:`start_local_ray`). ``hosts`` is the number
    of trial hosts (one CPU each); by default one per CPU of the cluster. A Ray connection made
    before ``start`` is reused and left open at ``close``.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        hosts: int | None = None,
    ) -> None:
        if address is not None and not address.strip():
            raise ExecutorError("the Ray address is empty: name the cluster's head as host:port")
        for label, value in (("num_cpus", num_cpus), ("hosts", hosts)):
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ExecutorError(f"{label} must be a whole number of at least 1, got {value!r}")
        self.address = address
        self.num_cpus = num_cpus
        self._wanted_hosts = hosts
        self._hosts: list[_Host] = []
        # Per run: its runner's object reference, boxed in a list (see _TrialHost.observe).
        self._shipped: OrderedDict[str, list[Any]] = OrderedDict()
        self._owns_ray = False
        self._next = 0

    @property
    def name(self) -> str:
        return "ray"

    @property
    def started(self) -> bool:
        return bool(self._hosts)

    @property
    def live_hosts(self) -> int:
        """How many trial hosts are still alive."""
        return sum(1 for host in self._hosts if host.alive)

    # Lifecycle --------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> Self:
        """Connect to (or start) the cluster and start the trial hosts; idempotent."""
        if self._hosts:
            return self
        if not ray.is_initialized():
            self._connect()
        try:
            self._start_hosts()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop the trial hosts, and the Ray connection when this executor made it."""
        for host in self._hosts:
            try:
                ray.kill(host.actor)
            except Exception as exc:  # a host on a node that is gone is already stopped
                _log.debug("could not stop a trial host: %s", describe_exception(exc))
        self._hosts.clear()
        self._shipped.clear()
        if self._owns_ray:
            self._owns_ray = False
            ray.shutdown()

    def _connect(self) -> None:
        if self.address is not None:
            _probe(self.address)
        try:
            if self.address is None:
                start_local_ray(num_cpus=self.num_cpus, log_to_driver=True)
            else:
                # A cluster at a loopback address is this machine's, listening on loopback
                # only: Ray would otherwise look for it at the machine's interface address.
                local = _host_of(self.address) in _LOOPBACK_NAMES
                with loopback_only() if local else contextlib.nullcontext():
                    ray.init(
                        address=self.address,
                        include_dashboard=False,
                        logging_level=logging.WARNING,
                        log_to_driver=True,
                    )
        except (ConnectionError, ValueError, RuntimeError, TimeoutError) as exc:
            where = "a local Ray cluster" if self.address is None else f"Ray at {self.address!r}"
            raise ExecutorUnavailableError(
                f"could not connect to {where}: {describe_exception(exc)}"
            ) from exc
        self._owns_ray = True

    def _start_hosts(self) -> None:
        cpus = int(ray.cluster_resources().get("CPU", 0))  # type: ignore[no-untyped-call]
        count = self._wanted_hosts or cpus
        if count < 1:
            raise ExecutorUnavailableError(
                "the Ray cluster has no CPUs to run trials on: add a node with CPUs"
            )
        # Ray's stubs cannot type an actor class made by calling ray.remote on a class.
        host_class: Any = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_TrialHost)
        actors = [host_class.options(max_concurrency=10_000).remote() for _ in range(count)]
        try:
            nodes = ray.get(
                [actor.ready.remote() for actor in actors], timeout=_HOST_START_TIMEOUT_S
            )
        except (ray.exceptions.GetTimeoutError, ray.exceptions.RayError) as exc:
            for actor in actors:
                ray.kill(actor)
            raise ExecutorUnavailableError(
                f"{count} Ray trial hosts could not start (the cluster has {cpus} CPUs, and "
                f"vitrine must be importable on every node): {describe_exception(exc)}"
            ) from exc
        self._hosts = [_Host(actor, node) for actor, node in zip(actors, nodes, strict=True)]

    # Running trials -----------------------------------------------------------------------------

    def admit(self, arm: Arm, checks: Sequence[AdmittedCheck]) -> None:
        """Refuse an arm whose subject, or a check, cannot be pickled for the workers."""
        _check_picklable(arm.subject, f"arm {arm.arm_id!r}: its subject")
        for admitted in checks:
            _check_picklable(admitted.check, f"check {admitted.key!r}")

    def prepare(self, trials: TrialRunner) -> None:
        """Admit the runner's arm and checks, then ship the runner to the cluster once."""
        if trials.token in self._shipped:
            return
        self.admit(trials.arm, trials.checks)
        self.start()
        self._shipped[trials.token] = [ray.put(trials)]
        while len(self._shipped) > _CACHED_RUNNERS:
            self._shipped.popitem(last=False)

    async def run(self, trials: TrialRunner, case: Case) -> TrialOutcome:
        """Run the trial of ``case`` on the least busy live host; retry a lost one in policy."""
        if trials.token not in self._shipped:
            self.prepare(trials)
        boxed = self._shipped[trials.token]
        lost: list[FailedAttempt] = []
        while True:
            host = self._pick_host()
            if host is None:
                return _not_measured(
                    trials, case, lost, "no Ray trial host is left alive to run the trial"
                )
            host.in_flight += 1
            ref = host.actor.observe.remote(trials.token, boxed, case, tuple(lost))
            try:
                outcome: TrialOutcome = await ref
                return outcome
            except _LOST_HOST as exc:
                _retire(host)
                reason = _lost_reason(exc, host)
                lost.append(FailedAttempt(len(lost) + 1, type(exc).__name__, reason))
                if len(lost) >= trials.retry.attempts:
                    return _not_measured(trials, case, lost, reason)
            except ray.exceptions.RayTaskError as exc:
                # The trial itself raised past its own guards: the local executor would let
                # that exception stop the run, so this one does too, as the same type.
                raise exc.as_instanceof_cause() from None  # type: ignore[no-untyped-call]
            except asyncio.CancelledError:
                _cancel(ref)
                raise
            finally:
                host.in_flight -= 1

    def _pick_host(self) -> _Host | None:
        live = [host for host in self._hosts if host.alive]
        if not live:
            return None
        # Least busy first; the rotating start spreads ties instead of filling host 0 first.
        self._next = (self._next + 1) % len(live)
        rotated = live[self._next :] + live[: self._next]
        return min(rotated, key=lambda host: host.in_flight)


def _not_measured(
    trials: TrialRunner, case: Case, lost: Sequence[FailedAttempt], reason: str
) -> TrialOutcome:
    # As in the local runner, only a trial that took more than one try carries its tries.
    tries = tuple(lost) if len(lost) > 1 else ()
    rows = not_measured_rows(case, trials.checks, f"the trial was not measured: {reason}")
    return TrialOutcome(case.id, rows, 0.0, reason, None, tries)


def _lost_reason(exc: BaseException, host: _Host) -> str:
    where = "its node died" if "node has died" in str(exc) else "its worker process died"
    return f"the Ray trial host on node {host.node_id[:12]} was lost ({where})"


def _retire(host: _Host) -> None:
    # A host that is only unreachable may still be running its trials: stop it, so that a
    # trial tried again elsewhere is not also finishing here.
    host.alive = False
    try:
        ray.kill(host.actor)
    except Exception as exc:  # already gone with its node
        _log.debug("could not stop a lost trial host: %s", describe_exception(exc))


def _cancel(ref: Any) -> None:
    try:
        ray.cancel(ref)
    except Exception as exc:  # the trial may already be over, or its host gone
        _log.debug("could not cancel a Ray trial: %s", describe_exception(exc))


def _check_picklable(value: object, what: str) -> None:
    try:
        cloudpickle.dumps(value)  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise ExecutorError(
            f"{what} cannot be pickled, so it cannot be sent to Ray workers "
            f"({describe_exception(exc)}); build what it holds (clients, locks, open files) "
            "inside the call, or run it with the local executor"
        ) from exc


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """Ray nodes started inside this block listen on 127.0.0.1 only.

    Ray resolves a node's address, even a given ``127.0.0.1``, to the machine's own interface
    address unless clustering is off, as it is on macOS and Windows; so it is switched off for
    the start (the started node then answers 127.0.0.1 to every later question).
    """
    saved = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved


def start_local_ray(num_cpus: int | None = None, *, log_to_driver: bool = False) -> None:
    """Start a Ray instance on this machine that listens on loopback only, without a dashboard.

    ``address="local"``: a new instance always, never one that ``RAY_ADDRESS`` or an earlier
    ``ray start`` names; a remote cluster is used only when an address is given.
    """
    with loopback_only():
        ray.init(
            address="local",
            num_cpus=num_cpus,
            include_dashboard=False,
            dashboard_host=LOOPBACK,
            logging_level=logging.WARNING,
            log_to_driver=log_to_driver,
            _node_ip_address=LOOPBACK,
        )


def _host_of(address: str) -> str:
    """The host part of a Ray address (``host:port``, ``ray://host:port``, ``[::1]:port``)."""
    target = address.removeprefix("ray://")
    host = target.rpartition(":")[0] if ":" in target else target
    return host.strip("[]")


def _probe(address: str) -> None:
    """Refuse quickly an address where nothing listens (Ray itself would wait for minutes)."""
    if address == "auto":
        return
    target = address.removeprefix("ray://")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ExecutorError(
            f"the Ray address {address!r} is not host:port (or 'auto', or ray://host:port)"
        )
    try:
        with socket.create_connection((host, int(port)), timeout=_PROBE_TIMEOUT_S):
            pass
    except OSError as exc:
        raise ExecutorUnavailableError(
            f"no Ray cluster answers at {address!r} ({describe_exception(exc)}): start one "
            "with `ray start --head` or check the address"
        ) from exc
