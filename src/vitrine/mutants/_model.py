"""Subject mutants: plausible defects planted through a subject's real seams.

A registered control proves an *evaluator* tells pass from fail. A mutant proves the *suite*
sees the *subject* fail: the whole plan runs against a subject with one ordinary bug planted in
its producer (a tool that skips its approval check, a workflow without its loop-back, a
presenter that drops a lane), and some gate must turn red.

A mutant is planted by a context manager. Entering it makes the defect live in this process
(for example by swapping a subject factory or one function of the subject for its faulty
twin); leaving it restores the healthy subject. It must never edit evidence, reports or source
files on disk: what is broken is the producer, and the checks must find out by themselves.
The runner enters each mutant in a process of its own, so a mutant cannot leak into another.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vitrine.errors import InvalidArgumentError, UnknownKeyError, WrongTypeError

if TYPE_CHECKING:
    from vitrine.mutants._seams import SeamTarget

__all__ = ["Mutant", "MutantCatalogue", "MutantPlanter"]

MutantPlanter = Callable[[], AbstractContextManager[object]]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Mutant:
    """One named defect of a subject.

    ``component`` names the producer the defect lives in (``"tools.place_order"``);
    ``expected_killers`` names the gates, checks or controls expected to notice it, so a
    survivor can be read against an intention; ``must_kill`` makes a survivor fail the
    ``vitrine mutants`` command. ``plant`` returns a context manager that makes the defect live.

    ``tests`` are pytest arguments (``("tests/behaviour", "-m", "not adversarial")``) run after
    the plan, with the mutant still planted, against the suite's ``service`` component started
    on a loopback port (its URL in ``EVAL_API_URL``): for a defect only a test over the running
    service can see. Each test that fails where it passed for the healthy subject is a killer.

    ``seam`` says which seam the defect is planted at, so the matrix can count what each seam
    kind's checks see; ``generated`` marks a mutant the harness derived from a suite's seams.
    """

    id: str
    component: str
    description: str
    plant: MutantPlanter
    expected_killers: tuple[str, ...] = ()
    must_kill: bool = True
    tests: tuple[str, ...] = ()
    seam: SeamTarget | None = None
    generated: bool = False

    def __post_init__(self) -> None:
        if not _ID.match(self.id):
            raise InvalidArgumentError(
                f"mutant id {self.id!r} must be 1-64 letters, digits, '.', '_' or '-', "
                "starting with a letter or digit (it names a store folder)"
            )
        if not self.component.strip():
            raise InvalidArgumentError(f"mutant {self.id}: name the component the defect lives in")
        if not self.description.strip():
            raise InvalidArgumentError(f"mutant {self.id}: describe the defect in one sentence")
        if not callable(self.plant):
            raise WrongTypeError(
                f"mutant {self.id}: plant must be a callable returning a context manager"
            )
        object.__setattr__(self, "expected_killers", tuple(self.expected_killers))
        object.__setattr__(self, "tests", tuple(self.tests))


@dataclass(frozen=True)
class MutantCatalogue:
    """The mutants a suite declares, the plan they run against, and the score it promises.

    ``plan`` is the suite plan each mutant is run through (``None``: the suite's default
    plan). ``minimum_score`` is the least share of mutants that must be killed.
    """

    mutants: Sequence[Mutant]
    minimum_score: float = 0.9
    plan: str | None = None
    description: str = ""
    _by_id: dict[str, Mutant] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        mutants = tuple(self.mutants)
        if not mutants:
            raise InvalidArgumentError("a mutant catalogue needs at least one mutant")
        if not 0.0 <= self.minimum_score <= 1.0:
            raise InvalidArgumentError(
                f"minimum_score must lie in [0, 1], got {self.minimum_score}"
            )
        by_id: dict[str, Mutant] = {}
        for mutant in mutants:
            if not isinstance(mutant, Mutant):
                raise WrongTypeError(
                    f"mutant catalogue entries must be Mutant, got {type(mutant).__name__}"
                )
            if mutant.id in by_id:
                raise InvalidArgumentError(f"mutant id {mutant.id!r} is declared twice")
            by_id[mutant.id] = mutant
        object.__setattr__(self, "mutants", mutants)
        object.__setattr__(self, "_by_id", by_id)

    def __iter__(self) -> Iterator[Mutant]:
        return iter(self.mutants)

    def __len__(self) -> int:
        return len(self.mutants)

    def get(self, mutant_id: str) -> Mutant:
        try:
            return self._by_id[mutant_id]
        except KeyError:
            raise UnknownKeyError(
                f"no mutant {mutant_id!r}; the catalogue has {', '.join(self._by_id)}"
            ) from None
