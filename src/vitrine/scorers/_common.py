"""What every scorer shares: expected values read from a case, and admission with its identity.

A scorer is a factory that returns an :class:`~vitrine.checks.AdmittedCheck`: a
:class:`~vitrine.checks.FunctionCheck` admitted with its chance floor and its authority, so it
goes into ``Evaluation(checks=[...])`` and ``BenchmarkDefinition`` like any admitted check.
Its configuration (the pattern, the mode, the reference) enters the check's version, so two
benchmarks that score differently never share a content hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from vitrine._bench.model import (
    AdmittedCheck,
    Authority,
    Case,
    FunctionCheck,
    admit,
    canonical_json,
)
from vitrine._bench.response import SubjectResponse
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Observation
from vitrine.errors import ScorerError

__all__ = [
    "Expected",
    "MetadataField",
    "Missing",
    "admitted",
    "choose",
    "metadata",
    "plain",
    "resolve",
]

E = TypeVar("E", bound=StrEnum)
T = TypeVar("T")
Scoring = Callable[[Case, SubjectResponse], Observation | Awaitable[Observation]]


@dataclass(frozen=True, slots=True)
class MetadataField:
    """An expected value read from each case's ``metadata[name]`` instead of given once.

    A case without the field is *not measured* with a reason naming the case and the field:
    an expectation nobody wrote down is never a pass.
    """

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ScorerError(f"metadata() needs a non-blank field name, got {self.name!r}")


def metadata(name: str) -> MetadataField:
    """Read the expected value from ``case.metadata[name]``, case by case.

    ``includes(metadata("must_mention"))`` checks each case against its own list. A case
    without the field is not measured, with the reason; never a pass.
    """
    return MetadataField(name)


class Missing:
    """The reason an expected value could not be read from a case."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def resolve(expected: Any, case: Case) -> Any:
    """``expected`` itself, or the case's metadata field it names (a :class:`Missing` when
    the case lacks it)."""
    if not isinstance(expected, MetadataField):
        return expected
    if expected.name not in case.metadata:
        return Missing(
            f"case {case.id!r} has no metadata field {expected.name!r}: the expected value "
            "was never written down, so nothing could be compared"
        )
    return case.metadata[expected.name]


class Expected(Generic[T]):
    """A scorer's expected value: given once and read when the scorer is built, or named by
    :func:`metadata` and read from each case as it is scored.

    ``read(given, where)`` turns what was given into the value the scorer compares against,
    raising :class:`ScorerError` (with ``where`` in its message) when it cannot. A fixed
    value that cannot be read is the caller's mistake and raises at once; a case whose field
    is missing or unreadable is *not measured* for that case only.
    """

    __slots__ = ("_names_field", "_read", "_source")

    def __init__(
        self,
        given: Any,
        read: Callable[[Any, str], T],
        argument: str,
        *,
        names_field: bool = False,
    ) -> None:
        self._read = read
        self._names_field = names_field
        # A fixed value is boxed, so that even a falsy one is told apart from a field.
        self._source: MetadataField | tuple[T] = (
            given if isinstance(given, MetadataField) else (read(given, argument),)
        )

    @property
    def fixed(self) -> T | None:
        """The value given once, read; None when it is read from each case."""
        return None if isinstance(self._source, MetadataField) else self._source[0]

    def for_case(self, case: Case) -> T | Observation:
        """The value ``case`` is scored against, or the not-measured observation saying why
        there is none."""
        field = self._source
        if not isinstance(field, MetadataField):
            return field[0]
        given = resolve(field, case)
        if isinstance(given, Missing):
            return Observation.not_measured(given.reason)
        where = f"case {case.id!r} metadata"
        if self._names_field:
            where = f"{where} {field.name!r}"
        try:
            return self._read(given, where)
        except ScorerError as exc:
            return Observation.not_measured(str(exc))


def choose(enum: type[E], value: E | str, argument: str) -> E:
    """``value`` as a member of ``enum``, or a :class:`ScorerError` listing the choices."""
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(repr(m.value) for m in enum)
        raise ScorerError(f"{argument}={value!r} is not one of {choices}") from None


def plain(value: Any) -> Any:
    """JSON-shaped ``value``: mappings as dicts and tuples as lists, all the way down.

    A subject that journals ``("a", "b")`` and a reference read from JSON as ``["a", "b"]``
    passed the same arguments; only the container type differs.
    """
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _describe(value: Any) -> Any:
    """A stable, hashable account of a configuration value (a callable by its name)."""
    if isinstance(value, MetadataField):
        return {"metadata": value.name}
    if isinstance(value, StrEnum):
        return value.value
    if callable(value) and not isinstance(value, type):
        return f"callable:{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', '?')}"
    if isinstance(value, Mapping):
        return {str(k): _describe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_describe(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return repr(value)


def admitted(
    *,
    key: str,
    version: str,
    scoring: Scoring,
    description: str,
    configuration: Mapping[str, Any],
    floor: ChanceFloor | None,
    default_floor: str,
    authority: Authority | str,
) -> AdmittedCheck:
    """The scorer as an admitted check: its configuration digest in its version, and its floor
    the caller's (derived elsewhere) or stated as not derivable for ``default_floor``."""
    if not isinstance(key, str) or not key.strip():
        raise ScorerError(f"a scorer needs a non-blank key, got {key!r}")
    if not isinstance(version, str) or not version.strip():
        raise ScorerError(f"scorer {key!r}: version must be a non-blank string, got {version!r}")
    if floor is not None and not isinstance(floor, ChanceFloor):
        raise ScorerError(
            f"scorer {key!r}: floor must be a vitrine.ChanceFloor, got {type(floor).__name__}"
        )
    digest = hashlib.sha256(canonical_json(_describe(dict(configuration))).encode()).hexdigest()
    chk = FunctionCheck(key, f"{version}+{digest[:12]}", scoring, description)
    stated = floor if floor is not None else ChanceFloor.not_derivable(default_floor)
    return admit(chk, stated, choose(Authority, authority, "authority"))
