"""A suite's seams: where generated mutants may be planted without editing the subject's source.

A hand-written mutant is one bug someone thought of. Generated mutants ask the other question,
"which part of the subject does no check see?": the harness applies the same few operators at
every seam a suite declares (the model, each tool, each prompt rule, the conversation, each
threshold), and the kill matrix reports which of them no gate, check, control or test noticed.

The harness knows nothing of the subject, so a suite says *how* to plant at each seam; the
harness decides *what* is planted. Each planter returns a context manager, like a hand-written
mutant's, that makes the defect live while it is entered and restores the subject on exit::

    SEAMS = Seams(
        model=wrap_every_model,             # (ModelTransform) -> context manager
        tools=(Tool("search", ("limit",)),),
        tool=wrap_one_tool,                 # (tool name, ToolFault) -> context manager
        rules=RULES,
        without_rule=prompt_without_rule,   # (rule number, from 1) -> context manager
        conversation=transform_user_turns,  # (TurnsTransform) -> context manager
        thresholds=(Threshold("retries", 3, set_retries),),
    )

and names it as the suite's ``seams`` component.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal

from vitrine.errors import InvalidArgumentError, WrongTypeError
from vitrine.providers._base import ChatModel

__all__ = [
    "SEAM_KINDS",
    "ModelPlanter",
    "ModelTransform",
    "SeamKind",
    "SeamTarget",
    "Seams",
    "Threshold",
    "Tool",
    "ToolCall",
    "ToolFault",
    "ToolNext",
    "ToolOutput",
    "TurnsTransform",
]

SeamKind = Literal["model", "tool", "prompt-rule", "conversation", "threshold"]
SEAM_KINDS: tuple[SeamKind, ...] = ("model", "tool", "prompt-rule", "conversation", "threshold")

Plant = AbstractContextManager[object]

#: Wraps the subject's model in a faulty one; the suite applies it to every model it builds.
ModelTransform = Callable[[ChatModel], ChatModel]
ModelPlanter = Callable[[ModelTransform], Plant]

#: The customer's turns as the subject receives them, oldest first.
TurnsTransform = Callable[[Sequence[str]], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of a tool as the subject dispatches it: its name and parsed arguments."""

    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool answered, in the only terms the harness needs: ok or not, data, a message.

    The suite's planter translates its own result type to and from this one.
    """

    ok: bool
    data: Any
    message: str


#: The healthy tool: call it to get what the subject would have answered.
ToolNext = Callable[[ToolCall], Awaitable[ToolOutput]]
#: A faulty tool: it sees the call and the healthy tool, and answers in its place.
ToolFault = Callable[[ToolCall, ToolNext], Awaitable[ToolOutput]]


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the subject offers, and the arguments a call may leave out.

    ``optional`` lists the arguments a call is valid without: each is ignored in turn by one
    generated mutant (the tool behaves as if it had not been passed). A required argument is
    left out of that list, since ignoring it only makes every call invalid, which the
    "errors" mutant already covers.
    """

    name: str
    optional: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise InvalidArgumentError("a declared tool needs a name")
        object.__setattr__(self, "optional", tuple(self.optional))
        if len(set(self.optional)) != len(self.optional):
            raise InvalidArgumentError(f"tool {self.name}: an optional argument is listed twice")


@dataclass(frozen=True, slots=True)
class Threshold:
    """A number the subject decides by (a budget, a limit, a window), and how to set it.

    Two mutants move it one ``step`` each way: an int by 1 unless told otherwise, a float by a
    tenth of its value. ``plant(value)`` makes the subject use ``value`` while entered.
    """

    name: str
    value: int | float
    plant: Callable[[int | float], Plant]
    step: int | float | None = None

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise InvalidArgumentError("a declared threshold needs a name")
        if isinstance(self.value, bool) or not isinstance(self.value, int | float):
            raise WrongTypeError(f"threshold {self.name}: its value must be a number")
        if not math.isfinite(self.value):
            raise InvalidArgumentError(f"threshold {self.name}: its value must be finite")
        if self.step is not None and not (math.isfinite(self.step) and self.step > 0):
            raise InvalidArgumentError(f"threshold {self.name}: step must be a positive number")
        if not callable(self.plant):
            raise WrongTypeError(f"threshold {self.name}: plant must be callable")

    @property
    def delta(self) -> int | float:
        if self.step is not None:
            return self.step
        return 1 if isinstance(self.value, int) else abs(self.value) / 10 or 0.1


@dataclass(frozen=True, slots=True)
class SeamTarget:
    """Where a mutant is planted: the kind of seam, which one (a tool, a rule) and how."""

    kind: SeamKind
    target: str  # "model", a tool's name, "rule 5", "user turns", a threshold's name
    operator: str  # "refuses", "errors", "deleted", "newest turn dropped", "raised", ...


@dataclass(frozen=True)
class Seams:
    """The seams a suite declares for generated mutants; every one of them is optional.

    ``rules`` are the prompt's rules in order; ``without_rule(n)`` plants the prompt with rule
    ``n`` (counted from 1, as a prompt numbers them) deleted. ``tool(name, fault)`` makes tool
    ``name`` answer through ``fault``. ``plan`` overrides the catalogue's plan for suites that
    have no hand-written catalogue. Generated mutants may survive (``must_kill=False``): they
    are evidence of what the checks see, not bugs anyone promised to catch.
    """

    model: ModelPlanter | None = None
    tools: Sequence[Tool] = ()
    tool: Callable[[str, ToolFault], Plant] | None = None
    rules: Sequence[str] = ()
    without_rule: Callable[[int], Plant] | None = None
    conversation: Callable[[TurnsTransform], Plant] | None = None
    thresholds: Sequence[Threshold] = ()
    plan: str | None = None
    must_kill: bool = False
    description: str = ""
    _kinds: tuple[SeamKind, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tools = tuple(self.tools)
        rules = tuple(self.rules)
        thresholds = tuple(self.thresholds)
        _require(tools, self.tool, "tools", "tool")
        _require(rules, self.without_rule, "rules", "without_rule")
        _unique([t.name for t in tools], "tool")
        _unique([t.name for t in thresholds], "threshold")
        if any(not rule.strip() for rule in rules):
            raise InvalidArgumentError("a declared prompt rule is blank")
        for name, planter in (("model", self.model), ("conversation", self.conversation)):
            if planter is not None and not callable(planter):
                raise WrongTypeError(f"seams: {name} must be callable")
        kinds: list[SeamKind] = []
        if self.model is not None:
            kinds.append("model")
        if tools:
            kinds.append("tool")
        if rules:
            kinds.append("prompt-rule")
        if self.conversation is not None:
            kinds.append("conversation")
        if thresholds:
            kinds.append("threshold")
        if not kinds:
            raise InvalidArgumentError("seams declare nothing to plant at: name at least one seam")
        object.__setattr__(self, "tools", tools)
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "thresholds", thresholds)
        object.__setattr__(self, "_kinds", tuple(kinds))

    @property
    def kinds(self) -> tuple[SeamKind, ...]:
        """The seam kinds this suite declares, in the harness's order."""
        return self._kinds


def _require(items: tuple[object, ...], planter: object, plural: str, name: str) -> None:
    if items and planter is None:
        raise InvalidArgumentError(
            f"seams declare {plural} but no {name}= planter to plant at them"
        )
    if planter is not None and not callable(planter):
        raise WrongTypeError(f"seams: {name} must be callable")
    if planter is not None and not items:
        raise InvalidArgumentError(f"seams give a {name}= planter but declare no {plural}")


def _unique(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidArgumentError(f"{what} {name!r} is declared twice")
        seen.add(name)
