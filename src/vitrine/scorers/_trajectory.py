"""Trajectory match: the tool calls a subject journalled, against a reference trajectory.

The four trajectory modes and the argument modes are agentevals' (``strict``, ``unordered``,
``subset``, ``superset``; ``exact``, ``ignore``, ``subset``, ``superset``, with per-tool
overrides). Where agentevals' implementation and its definition part ways, this follows the
definition:

* calls are paired one to one by a maximum matching, not first fit, so a trajectory is never
  refused because an early reference call took the subject call a later one needed;
* an argument mode always reads the subject's call against the reference call (``subset``:
  the subject passed nothing the reference does not have); agentevals swaps the two in its
  ``subset`` and ``unordered`` trajectory modes;
* the journal is flat (no chat messages around the calls), so ``strict`` is the calls in order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from vitrine._bench.model import AdmittedCheck, Authority, Case
from vitrine._bench.response import SubjectResponse, ToolCallRecord
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Observation
from vitrine._redact import sanitize_text
from vitrine.errors import ScorerError
from vitrine.scorers._common import Expected, MetadataField, admitted, choose, plain

__all__ = ["ArgumentMode", "TrajectoryMode", "trajectory_match"]

_NO_FLOOR = (
    "a tool trajectory is the subject's own choice among an open set of tools and arguments: "
    "there is no random-draw population of trajectories to derive a chance rate from"
)
_MISSING_ARGUMENT = object()


class TrajectoryMode(StrEnum):
    """How the subject's tool calls must relate to the reference trajectory.

    ``strict``: the same calls in the same order, nothing more. ``unordered``: the same calls,
    as many of each, in any order. ``superset``: every reference call was made (extra calls
    allowed). ``subset``: every call made is in the reference (reference calls may be left out).
    """

    STRICT = "strict"
    UNORDERED = "unordered"
    SUBSET = "subset"
    SUPERSET = "superset"


class ArgumentMode(StrEnum):
    """How a subject call's arguments must relate to the reference call's, for the same tool.

    ``exact``: equal. ``ignore``: not compared. ``subset``: every argument the subject passed is
    in the reference with the same value. ``superset``: every reference argument was passed
    with the same value (extra arguments allowed).
    """

    EXACT = "exact"
    IGNORE = "ignore"
    SUBSET = "subset"
    SUPERSET = "superset"


ArgumentMatcher = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
Override = ArgumentMode | str | Sequence[str] | ArgumentMatcher


@dataclass(frozen=True, slots=True)
class _Call:
    """One call of either side: its tool, and its arguments (None: any arguments will do)."""

    name: str
    arguments: dict[str, Any] | None

    def describe(self) -> str:
        if self.arguments is None:
            return f"{self.name}(...)"
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.arguments.items())})"


def _by_mode(mode: ArgumentMode) -> ArgumentMatcher:
    if mode is ArgumentMode.EXACT:
        return lambda made, ref: made == ref
    if mode is ArgumentMode.SUBSET:
        return lambda made, ref: all(k in ref and ref[k] == v for k, v in made.items())
    if mode is ArgumentMode.SUPERSET:
        return lambda made, ref: all(k in made and made[k] == v for k, v in ref.items())
    return lambda made, ref: True


def _nested(arguments: Mapping[str, Any], path: str) -> Any:
    current: Any = arguments
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return _MISSING_ARGUMENT
        current = current[part]
    return current


def _on_keys(keys: Sequence[str]) -> ArgumentMatcher:
    def matcher(made: Mapping[str, Any], ref: Mapping[str, Any]) -> bool:
        for key in keys:
            value = _nested(made, key)
            # A key absent on both sides is not agreement: nothing was compared.
            if value is _MISSING_ARGUMENT or value != _nested(ref, key):
                return False
        return True

    return matcher


def _override(tool: str, given: Override) -> ArgumentMatcher:
    if isinstance(given, str):
        return _by_mode(choose(ArgumentMode, given, f"argument_overrides[{tool!r}]"))
    if callable(given):
        return given
    if isinstance(given, Sequence) and given and all(isinstance(k, str) and k for k in given):
        return _on_keys(list(given))
    raise ScorerError(
        f"argument_overrides[{tool!r}] must be an argument mode, a non-empty list of argument "
        f"names (dotted for nested ones) or a function (made, reference) -> bool; got {given!r}"
    )


def _reference_call(item: Any, where: str) -> _Call:
    if isinstance(item, ToolCallRecord):
        return _Call(item.name, plain(item.arguments))
    if isinstance(item, str) and item:
        return _Call(item, None)
    if isinstance(item, Mapping) and isinstance(item.get("name"), str) and item["name"]:
        arguments = item.get("arguments", item.get("args"))
        if arguments is None:
            return _Call(item["name"], None)
        if isinstance(arguments, Mapping):
            return _Call(item["name"], plain(arguments))
    raise ScorerError(
        f"{where}: a reference call is a tool name, a vitrine.ToolCallRecord or a mapping with "
        f"a 'name' and optional 'arguments' mapping; got {item!r}"
    )


def _reference(given: Any, where: str) -> tuple[_Call, ...]:
    if isinstance(given, str | bytes) or not isinstance(given, Sequence):
        raise ScorerError(f"{where}: a reference trajectory is a list of calls, got {given!r}")
    return tuple(_reference_call(item, f"{where}[{i}]") for i, item in enumerate(given))


def _max_matching(
    made: Sequence[_Call], ref: Sequence[_Call], agree: Callable[[_Call, _Call], bool]
) -> dict[int, int]:
    """A maximum one-to-one pairing of reference calls with subject calls that agree with
    them (augmenting paths; journals are short). Maps reference index to subject index."""
    edges = [[j for j, m in enumerate(made) if agree(m, r)] for r in ref]
    owner: dict[int, int] = {}  # subject index -> reference index

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(ref)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


@dataclass(frozen=True, slots=True)
class _Verdict:
    passed: bool
    value: float
    why: str


class _Matcher:
    def __init__(
        self,
        mode: TrajectoryMode,
        arguments: ArgumentMode,
        overrides: Mapping[str, ArgumentMatcher],
    ) -> None:
        self.mode = mode
        self.default = _by_mode(arguments)
        self.overrides = overrides

    def agree(self, made: _Call, ref: _Call) -> bool:
        if made.name != ref.name:
            return False
        if ref.arguments is None:  # the reference named the tool only
            return True
        matcher = self.overrides.get(ref.name, self.default)
        return bool(matcher(made.arguments or {}, ref.arguments))

    def verdict(self, made: Sequence[_Call], ref: Sequence[_Call]) -> _Verdict:
        if self.mode is TrajectoryMode.STRICT:
            return self._strict(made, ref)
        pairs = _max_matching(made, ref, self.agree)
        unmatched_ref = [ref[i] for i in range(len(ref)) if i not in pairs]
        used = set(pairs.values())
        extra = [made[j] for j in range(len(made)) if j not in used]
        if self.mode is TrajectoryMode.SUPERSET:
            need, problems = len(ref), _missing(unmatched_ref)
        elif self.mode is TrajectoryMode.SUBSET:
            need, problems = len(made), _unexpected(extra)
        else:
            need = max(len(ref), len(made))
            problems = [*_missing(unmatched_ref), *_unexpected(extra)]
        value = 1.0 if need == 0 else len(pairs) / need
        if problems:
            return _Verdict(False, value, "; ".join(problems))
        return _Verdict(True, value, f"{self.mode.value} match of {len(made)} call(s)")

    def _strict(self, made: Sequence[_Call], ref: Sequence[_Call]) -> _Verdict:
        agreeing = sum(1 for m, r in zip(made, ref, strict=False) if self.agree(m, r))
        value = 1.0 if not made and not ref else agreeing / max(len(made), len(ref))
        for position, (m, r) in enumerate(zip(made, ref, strict=False), start=1):
            if not self.agree(m, r):
                return _Verdict(
                    False, value, f"call {position}: expected {r.describe()}, got {m.describe()}"
                )
        if len(made) < len(ref):
            return _Verdict(False, value, "; ".join(_missing(ref[len(made) :])))
        if len(made) > len(ref):
            return _Verdict(False, value, "; ".join(_unexpected(made[len(ref) :])))
        return _Verdict(True, value, f"strict match of {len(made)} call(s)")


def _missing(calls: Sequence[_Call]) -> list[str]:
    return [f"missing call {c.describe()}" for c in calls]


def _unexpected(calls: Sequence[_Call]) -> list[str]:
    return [f"unexpected call {c.describe()}" for c in calls]


def trajectory_match(
    reference: Sequence[ToolCallRecord | Mapping[str, Any] | str] | MetadataField,
    *,
    mode: TrajectoryMode | str = TrajectoryMode.STRICT,
    arguments: ArgumentMode | str = ArgumentMode.EXACT,
    argument_overrides: Mapping[str, Override] | None = None,
    key: str | None = None,
    version: str = "1.0.0",
    floor: ChanceFloor | None = None,
    authority: Authority | str = Authority.GATE,
) -> AdmittedCheck:
    """A check that the subject's tool calls (``response.tool_calls``) match a reference.

    ``reference`` is the expected trajectory, or ``metadata("expected_tools")`` to read it from
    each case. A reference call is a tool name (any arguments will do), a mapping ``{"name":
    ..., "arguments": {...}}`` (``"args"`` is read too; without either, any arguments will do)
    or a :class:`vitrine.ToolCallRecord`. Calls are compared by tool name and arguments; a
    call's status and result are not compared.

    ``mode`` is a :class:`TrajectoryMode` (``strict``, ``unordered``, ``subset``,
    ``superset``), ``arguments`` an :class:`ArgumentMode` (``exact``, ``ignore``, ``subset``,
    ``superset``). ``argument_overrides`` maps a tool name to its own rule: an argument mode, a
    list of argument names that must be present and equal on both sides (dotted for nested
    ones: ``"filters.colour"``), or a function ``(made, reference) -> bool``. Arguments are
    compared as JSON values, so a tuple and a list with the same items agree.

    Three states:

    * **pass**: the journal matches the reference under the mode;
    * **fail** (measured): it does not; the evidence names the first difference (the call
      missing, the call not expected, or the position that differs). An empty journal ``()``
      is a measured trajectory of no calls: it fails ``strict`` against a non-empty reference
      and passes ``subset``;
    * **not measured**: the subject keeps no journal (``tool_calls is None``), or the case
      lacks the metadata field the reference is read from, or that field is not a trajectory.

    The value is the share of calls paired with a counterpart (``strict``: the share of
    positions that agree), so a near miss reads higher than a wrong trajectory.

    Chance floor: not derivable by default (no random-draw population of trajectories exists
    for an open set of tools and arguments). Pass ``floor=`` when you have one, e.g.
    ``ChanceFloor.uniform_choice(n)`` for a one-call reference over a catalogue of ``n`` tools
    with arguments ignored, where a uniform pick is the chance policy.

    Bad arguments (an unknown mode, a malformed reference or override) raise
    :class:`vitrine.errors.ScorerError` here, not during a run.
    """
    trajectory_mode = choose(TrajectoryMode, mode, "mode")
    argument_mode = choose(ArgumentMode, arguments, "arguments")
    overrides = {
        str(tool): _override(str(tool), given) for tool, given in (argument_overrides or {}).items()
    }
    expectation = Expected(reference, _reference, "reference", names_field=True)
    matcher = _Matcher(trajectory_mode, argument_mode, overrides)

    def score(case: Case, response: SubjectResponse) -> Observation:
        if response.tool_calls is None:
            return Observation.not_measured(
                "the subject reported no tool journal (tool_calls is None), so its trajectory "
                "was not observed; an empty journal would be ()"
            )
        expected = expectation.for_case(case)
        if isinstance(expected, Observation):
            return expected
        made = tuple(_Call(c.name, plain(c.arguments)) for c in response.tool_calls)
        verdict = matcher.verdict(made, expected)
        evidence = {
            "mode": trajectory_mode.value,
            "arguments": argument_mode.value,
            "expected": [c.name for c in expected],
            "called": [c.name for c in made],
            # Arguments may carry anything the subject was given; the detail is persisted.
            "detail": sanitize_text(verdict.why, 500),
        }
        return Observation.measured(verdict.value, verdict.passed, evidence=evidence)

    fixed = expectation.fixed
    return admitted(
        key=f"trajectory-{trajectory_mode.value}" if key is None else key,
        version=version,
        scoring=score,
        description=f"the tool calls match the reference trajectory ({trajectory_mode.value})",
        configuration={
            "scorer": "trajectory_match",
            "reference": reference
            if fixed is None
            else [{"name": c.name, "arguments": c.arguments} for c in fixed],
            "mode": trajectory_mode,
            "arguments": argument_mode,
            "overrides": dict(argument_overrides or {}),
        },
        floor=floor,
        default_floor=_NO_FLOOR,
        authority=authority,
    )
