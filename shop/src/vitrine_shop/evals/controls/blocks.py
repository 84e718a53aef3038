"""Small building blocks the shop's 43 controls are assembled from.

Three shapes cover them all:

- ``Seams``: a control's observe / perturb / evaluate triple, bound to captured state;
- ``contract``: a public implementation checked against an authored table of cases, whose
  perturbation swaps in one plausible wrong implementation (the mutant);
- ``verdict``: a measured pass or fail with a label, for evaluators written here.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vitrine import Observation

__all__ = [
    "Binding",
    "Seams",
    "contract",
    "refuses",
    "strip",
    "thaw",
    "verdict",
]


@dataclass(frozen=True, slots=True)
class Seams:
    observe: Callable[[], Any]
    perturb: Callable[[Any], Any]
    evaluate: Callable[[Any], Observation | Awaitable[Observation]]
    expected_exception: type[BaseException] | None = None


# A binding turns captured shipped state into a control's seams; fixtures ignore the state.
Binding = Callable[[Any], Seams]


def verdict(ok: bool, label: str, **evidence: Any) -> Observation:
    return Observation.measured(1.0 if ok else 0.0, ok, evidence=evidence, label=label)


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of captured (read-only) evidence."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value


def strip(pattern: str | re.Pattern[str]) -> Callable[[str], str]:
    """An answer mutation that deletes every match of ``pattern``."""
    compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
    return lambda text: compiled.sub("", text)


def refuses(call: Callable[..., object], error: type[BaseException]) -> Callable[..., bool]:
    """``call`` turned into "was this input refused with ``error``?", for refusal contracts."""

    def refused(*args: Any) -> bool:
        try:
            call(*args)
        except error:
            return True
        return False

    return refused


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, float) and isinstance(got, int | float):
        return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-15)
    return bool(got == want)


CaseTable = Sequence[tuple[tuple[Any, ...], Any]]


def contract(
    implementation: Callable[..., Any],
    mutant: Callable[..., Any],
    cases: CaseTable,
    project: Callable[[Any], Any] = lambda value: value,
) -> Seams:
    """The implementation must give the authored answer on every case; the mutant must not.

    ``project`` reduces a result to the fact the contract is about (a state, an exit code).
    """

    async def holds(subject: Callable[..., Any]) -> Observation:
        broken = []
        for args, want in cases:
            got = subject(*args)
            if inspect.isawaitable(got):
                got = await got
            got = project(got)
            if not _same(got, want):
                broken.append(f"{args!r:.60}: got {got!r:.40}, authored {want!r:.40}")
        held = len(cases) - len(broken)
        return verdict(not broken, f"{held}/{len(cases)} contract cases hold", broken=broken)

    return Seams(lambda: implementation, lambda _: mutant, holds)
