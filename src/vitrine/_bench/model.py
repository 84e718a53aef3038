"""The benchmark's data model: cases are stimuli, arms are system variants, checks observe.

A :class:`BenchmarkDefinition` is pure data with an identity (``key@version`` plus a content hash
of everything it binds), so two runs can only be compared when they measured the same thing.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from vitrine._bench.response import SubjectResponse
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Observation
from vitrine.errors import AdmissionError, DefinitionError, WrongTypeError

__all__ = [
    "AdmissionError",
    "AdmittedCheck",
    "Arm",
    "Authority",
    "BenchmarkDefinition",
    "Case",
    "Check",
    "DefinitionError",
    "FunctionCheck",
    "Subject",
    "admit",
    "canonical_json",
    "check",
]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def canonical_json(value: Any) -> str:
    """Stable JSON for hashing: sorted keys, no whitespace, non-JSON values refused."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Case:
    """One stimulus. ``input`` is what the subject receives; it must be JSON-representable."""

    id: str
    input: Any
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "input": self.input, "metadata": dict(self.metadata)}


@runtime_checkable
class Check(Protocol):
    """Observes one case's subject response and returns an observation."""

    @property
    def key(self) -> str: ...

    @property
    def version(self) -> str: ...

    async def evaluate(self, case: Case, response: SubjectResponse) -> Observation: ...


Evaluator = Callable[[Case, SubjectResponse], Observation | Awaitable[Observation]]


@dataclass(frozen=True, slots=True)
class FunctionCheck:
    """A check made from a plain function (sync or async)."""

    key: str
    version: str
    fn: Evaluator
    description: str = ""

    async def evaluate(self, case: Case, response: SubjectResponse) -> Observation:
        started = self.begin(case, response)
        return started if isinstance(started, Observation) else await started

    def begin(self, case: Case, response: SubjectResponse) -> Observation | Awaitable[Observation]:
        """Call the function: a plain one's observation now, an async one's still to await.

        The runner awaits (under the check's timeout) only what is left to await: a plain
        function has already run to its end, where no timeout could have stopped it.
        """
        result: object = self.fn(case, response)  # typed loosely: users' functions stray
        if isinstance(result, Observation):  # first: an ABC's isawaitable is the dearer test
            return result
        if inspect.isawaitable(result):
            return self._awaited(result)
        return self._refused_unless_observation(result)

    async def _awaited(self, pending: Awaitable[Observation]) -> Observation:
        return self._refused_unless_observation(await pending)

    def _refused_unless_observation(self, result: object) -> Observation:
        if not isinstance(result, Observation):
            raise WrongTypeError(
                f"check {self.key!r} returned {type(result).__name__}, not an Observation"
            )
        return result


def check(
    key: str, version: str = "1.0.0", *, description: str = ""
) -> Callable[[Evaluator], FunctionCheck]:
    """Decorator: turn ``fn(case, response) -> Observation`` into a :class:`Check`."""

    def wrap(fn: Evaluator) -> FunctionCheck:
        return FunctionCheck(key, version, fn, description or (fn.__doc__ or "").strip())

    return wrap


class Authority(StrEnum):
    """Whether a check's verdict may set the process exit code."""

    GATE = "gate"
    DIAGNOSTIC = "diagnostic"


@dataclass(frozen=True, slots=True)
class AdmittedCheck:
    check: Check
    floor: ChanceFloor
    authority: Authority = Authority.GATE

    def __post_init__(self) -> None:
        if not isinstance(self.floor, ChanceFloor):
            raise AdmissionError(
                f"check {getattr(self.check, 'key', '?')!r} has no chance floor: every admitted "
                "check declares one (use ChanceFloor.not_derivable(reason) when no random-draw "
                "population exists), so reports never invent a 0.5"
            )

    @property
    def key(self) -> str:
        return self.check.key

    def identity(self) -> dict[str, Any]:
        return {
            "key": self.check.key,
            "version": self.check.version,
            "floor": self.floor.to_dict(),
            "authority": self.authority.value,
        }


def admit(
    chk: Check, floor: ChanceFloor | None, authority: Authority = Authority.GATE
) -> AdmittedCheck:
    """Admit ``chk`` into a benchmark with its chance floor and its authority (gate or not)."""
    if floor is None:
        raise AdmissionError(
            f"check {chk.key!r} has no chance floor: every admitted check declares one (use "
            "ChanceFloor.not_derivable(reason) when no random-draw population exists), so "
            "reports never invent a 0.5"
        )
    return AdmittedCheck(chk, floor, authority)


@dataclass(frozen=True)
class BenchmarkDefinition:
    """What is measured: cases x admitted checks, plus everything else the result depends on.

    ``bindings`` holds the other inputs that change what a score means (rubric hash, quality
    threshold, judge model, token ceilings); they enter the content hash so that runs with
    different bindings can never be compared as if they were the same benchmark.
    """

    key: str
    version: str
    cases: tuple[Case, ...]
    checks: tuple[AdmittedCheck, ...]
    bindings: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    description: str = ""

    def __init__(
        self,
        key: str,
        version: str,
        cases: Sequence[Case],
        checks: Sequence[AdmittedCheck],
        bindings: Mapping[str, Any] | None = None,
        description: str = "",
    ) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "cases", tuple(cases))
        object.__setattr__(self, "checks", tuple(checks))
        object.__setattr__(self, "bindings", MappingProxyType(dict(bindings or {})))
        object.__setattr__(self, "description", description)
        self._validate()
        object.__setattr__(self, "_hash", self._compute_hash())

    def _validate(self) -> None:
        where = f"benchmark {self.key or '<blank>'}@{self.version or '<blank>'}"
        if not self.key.strip() or not self.version.strip():
            raise DefinitionError(f"{where}: key and version must not be blank")
        if not self.cases:
            raise DefinitionError(
                f"{where}: no cases. An empty case set is not a zero score: the benchmark "
                "would not run"
            )
        if not self.checks:
            raise DefinitionError(f"{where}: no checks, so no case could be observed")
        seen: set[str] = set()
        for case in self.cases:
            if not case.id or not case.id.strip():
                raise DefinitionError(f"{where}: a case has a blank id")
            if case.id in seen:
                raise DefinitionError(f"{where}: duplicate case id {case.id!r}")
            seen.add(case.id)
        keys: set[str] = set()
        for admitted in self.checks:
            if not isinstance(admitted, AdmittedCheck):
                raise DefinitionError(
                    f"{where}: {admitted!r} was not admitted; wrap it with admit(check, floor)"
                )
            key = admitted.key
            if not key or not key.strip():
                raise DefinitionError(f"{where}: a check has a blank key")
            if key in keys:
                raise DefinitionError(f"{where}: duplicate check key {key!r}")
            keys.add(key)
        try:
            canonical_json([c.to_dict() for c in self.cases])
            canonical_json(dict(self.bindings))
        except (TypeError, ValueError) as exc:
            raise DefinitionError(
                f"{where}: cases and bindings must be JSON-representable to be hashed ({exc})"
            ) from exc

    def _compute_hash(self) -> str:
        payload = {
            "key": self.key,
            "version": self.version,
            "cases": [c.to_dict() for c in self.cases],
            "checks": [c.identity() for c in self.checks],
            "bindings": dict(self.bindings),
        }
        return "sha256:" + hashlib.sha256(canonical_json(payload).encode()).hexdigest()

    @property
    def identity(self) -> str:
        return f"{self.key}@{self.version}"

    @property
    def content_hash(self) -> str:
        return str(self.__dict__["_hash"])

    def check_keys(self) -> tuple[str, ...]:
        return tuple(c.key for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "version": self.version,
            "identity": self.identity,
            "content_hash": self.content_hash,
            "cases": [c.to_dict() for c in self.cases],
            "checks": [c.identity() for c in self.checks],
            "bindings": dict(self.bindings),
            "description": self.description,
        }


Subject = Callable[[Case], Awaitable[SubjectResponse]] | Callable[[Case], SubjectResponse]


def _is_async_callable(fn: Any) -> bool:
    # functools.partial and callable objects hide the coroutine function one level down.
    target = getattr(fn, "func", fn)
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004 - the bound __call__ is what runs
    )


@dataclass(frozen=True, slots=True)
class Arm:
    """A system variant under test: an id and the subject that answers a case.

    The subject is ``async def subject(case) -> SubjectResponse`` or a plain function with the
    same shape; a plain function runs in a worker thread (``asyncio.to_thread``), so a blocking
    client does not stall the other trials.
    """

    arm_id: str
    subject: Subject
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    # Decided once: inspecting the subject on every trial cost a tenth of the harness's time.
    _awaits: bool = field(init=False, repr=False, compare=False, default=False)

    def __post_init__(self) -> None:
        if not self.arm_id or not self.arm_id.strip():
            raise DefinitionError("an arm needs a non-blank arm_id")
        if not callable(self.subject):
            raise DefinitionError(f"arm {self.arm_id!r}: subject is not callable")
        object.__setattr__(self, "_awaits", _is_async_callable(self.subject))

    async def respond(self, case: Case) -> SubjectResponse:
        """Ask the subject for its response to ``case``, refusing anything but a response."""
        if self._awaits:
            produced: Any = await self.subject(case)  # type: ignore[misc]
        else:
            produced = await asyncio.to_thread(self.subject, case)
            if inspect.isawaitable(produced):  # a plain function that hands back a coroutine
                produced = await produced
        if not isinstance(produced, SubjectResponse):
            raise WrongTypeError(
                f"arm {self.arm_id!r}: the subject returned {type(produced).__name__}, not a "
                "SubjectResponse; wrap the answer as vitrine.SubjectResponse(answer=...)"
            )
        return produced
