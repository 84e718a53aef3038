"""Suites: the plans and scenarios a project offers, loaded by import path.

The harness never imports a subject package by name: ``vitrine --suite module:attr`` names the
suite to load, else the project's ``pyproject.toml`` or the one installed suite does (see
:mod:`vitrine._discovery`). A suite module should stay cheap to import: it is loaded for every
command that needs a suite, including ones that are refused, so expensive registries go behind
:class:`LazyScenarios` and plan code imports its dependencies when it runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from vitrine._discovery import find_suite
from vitrine._plans.base import Plan, PlanKind, UsageError
from vitrine._suite_flags import (
    PROTOCOL_MODES,
    Mode,
    ServiceFlag,
    canonical_modes,
    check_alias_flag,
)
from vitrine._usercode import UserCodeError, import_user_module, user_attribute
from vitrine.errors import InvalidArgumentError, NotFoundError, SuiteLoadError, WrongTypeError

__all__ = [
    "LazyScenarios",
    "Mode",
    "ScenarioInfo",
    "ServiceFlag",
    "Suite",
    "SuiteLoadError",
    "load_suite",
]

_DEFAULT_ATTRIBUTE = "SUITE"
_DEFAULT_CONFLICT = "they are separate proofs with different expected exits; run them apart"


@dataclass(frozen=True, slots=True)
class ScenarioInfo:
    """What an operator sees about a scenario before choosing it: enough to know the stimulus."""

    id: str
    title: str
    description: str
    query: str


class LazyScenarios(Mapping[str, ScenarioInfo]):
    """Scenario ids known up front, details loaded on first use.

    Validating ``--scenario`` needs only the ids, so a refused command never pays for reading
    (and validating) a scenario registry. The loader must return every declared id; a registry
    that lost one is an error, not a shorter list.
    """

    def __init__(
        self, ids: Sequence[str], loader: Callable[[], Mapping[str, ScenarioInfo]]
    ) -> None:
        if len(set(ids)) != len(ids):
            raise InvalidArgumentError(f"scenario ids repeat: {list(ids)}")
        self._ids = tuple(ids)
        self._loader = loader
        self._loaded: Mapping[str, ScenarioInfo] | None = None
        self._lock = threading.Lock()

    def _details(self) -> Mapping[str, ScenarioInfo]:
        with self._lock:
            if self._loaded is None:
                loaded = dict(self._loader())
                missing = [i for i in self._ids if i not in loaded]
                if missing:
                    raise NotFoundError(f"the scenario registry lacks declared scenarios {missing}")
                self._loaded = MappingProxyType({i: loaded[i] for i in self._ids})
            return self._loaded

    def __getitem__(self, key: str) -> ScenarioInfo:
        if key not in self._ids:  # the Mapping protocol: get() and `in` rely on a KeyError
            raise KeyError(key)
        return self._details()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


@dataclass(frozen=True)
class Suite:
    """A named set of plans and the scenarios they can be pointed at.

    ``default_plan`` is the plan ``--all`` selects; a suite without an offline lane leaves it
    ``None``. ``modes`` are the offline modes it offers, each a :class:`Mode` (or just its name):
    ``--NAME`` runs the mode's plan (the default plan unless the mode names another) with
    ``request.mode == NAME``. ``self-test`` and ``controls-only`` are the protocol's modes;
    any other name is the suite's own flag, offered only while this suite is loaded, and every
    undeclared mode is refused by name. ``aliases`` maps a shorthand flag of the suite's own
    to the plan it selects, e.g. ``{"--live-compare": "my-live-compare"}``.
    ``service_options`` are the suite's own ``vitrine serve`` flags (:class:`ServiceFlag`);
    their values reach the ``"service"`` component as ``ServiceOptions.suite_options``.
    """

    name: str
    plans: Mapping[str, Plan]
    scenarios: Mapping[str, ScenarioInfo]
    default_plan: str | None = None
    description: str = ""
    # Named parts a subcommand may need: "redteam-target" (vitrine redteam), "service" (vitrine
    # serve), "rag" (vitrine rag), "mutants" (vitrine mutants). Each is a "module:attr" import
    # path, so that declaring it costs nothing at start-up, or the object itself. A missing one
    # is refused by name.
    components: Mapping[str, str | object] = field(default_factory=dict)
    modes: Collection[Mode | str] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    service_options: Sequence[ServiceFlag] = ()
    _modes: Mapping[str, Mode] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name or not self.name.strip():
            raise InvalidArgumentError("a suite needs a non-blank name")
        if not self.plans:
            raise InvalidArgumentError(
                f"suite {self.name!r} has no plans: there would be nothing to run"
            )
        # A suite is shared module state; a read-only copy keeps one caller from editing the
        # plans another caller validated against.
        object.__setattr__(self, "plans", MappingProxyType(dict(self.plans)))
        for key, item in self.plans.items():
            if not isinstance(item, Plan):
                raise WrongTypeError(
                    f"suite {self.name!r}: plans[{key!r}] is {type(item).__name__}, not a Plan"
                )
            if item.name != key:
                # The CLI selects by key and reports by name; they must be the same string.
                raise InvalidArgumentError(
                    f"suite {self.name!r}: plans[{key!r}] is named {item.name!r}; the key "
                    "must be the plan's name"
                )
        if self.default_plan is not None:
            if self.default_plan not in self.plans:
                raise InvalidArgumentError(
                    f"suite {self.name!r}: default plan {self.default_plan!r} is not one of "
                    f"its plans ({', '.join(self.plans)})"
                )
            if self.plans[self.default_plan].kind is not PlanKind.OFFLINE:
                raise InvalidArgumentError(
                    f"suite {self.name!r}: the default plan must be offline, because --all "
                    "must never start paid work"
                )
        self._check_modes_and_aliases()
        # Iterating keys does not load lazy scenario details.
        blank = [key for key in self.scenarios if not key or not key.strip() or key == "all"]
        if blank:
            raise InvalidArgumentError(
                f"suite {self.name!r}: scenario ids must be non-blank and not 'all' "
                f"(which selects every scenario): {blank}"
            )

    def _check_modes_and_aliases(self) -> None:
        given: Any = self.modes  # a bare string would be read as a set of letters
        if isinstance(given, str):
            raise WrongTypeError(
                f"suite {self.name!r}: modes is a set of mode names, got the string "
                f"{given!r}; write modes={{{given!r}}}"
            )
        items = sorted(given) if isinstance(given, (set, frozenset)) else list(given)
        modes = tuple(item if isinstance(item, Mode) else Mode(item) for item in items)
        table = {mode.name: mode for mode in modes}
        if len(table) != len(modes):
            raise InvalidArgumentError(f"suite {self.name!r}: a mode is declared twice")
        object.__setattr__(self, "modes", modes)
        object.__setattr__(self, "_modes", MappingProxyType(table))
        for mode in modes:
            self._check_mode(mode)
        object.__setattr__(self, "aliases", MappingProxyType(dict(self.aliases)))
        for flag, target in self.aliases.items():
            check_alias_flag(self.name, flag)
            if flag.removeprefix("--") in table or flag.removeprefix("--") in PROTOCOL_MODES:
                raise InvalidArgumentError(
                    f"suite {self.name!r}: alias {flag} is also the flag of a mode"
                )
            if target not in self.plans:
                raise InvalidArgumentError(
                    f"suite {self.name!r}: alias {flag} names plan {target!r}, which is not one "
                    f"of its plans ({', '.join(self.plans)})"
                )
        self._check_service_options()

    def _check_mode(self, mode: Mode) -> None:
        target = self.default_plan if mode.plan is None else mode.plan
        if target is None:
            raise InvalidArgumentError(
                f"suite {self.name!r} declares modes ({', '.join(self._modes)}) but no "
                "default plan to run them in"
            )
        if target not in self.plans or self.plans[target].kind is not PlanKind.OFFLINE:
            raise InvalidArgumentError(
                f"suite {self.name!r}: mode {mode.name} runs plan {target!r}, which is not one "
                "of its offline plans: a mode must never start paid work"
            )
        stray = [other for other in mode.conflicts if other not in canonical_modes(self._modes)]
        if stray:
            raise InvalidArgumentError(
                f"suite {self.name!r}: mode {mode.name} names conflicts with modes it does not "
                f"offer: {', '.join(stray)}"
            )

    def _check_service_options(self) -> None:
        flags = tuple(self.service_options)
        object.__setattr__(self, "service_options", flags)
        for item in flags:
            if not isinstance(item, ServiceFlag):
                raise WrongTypeError(
                    f"suite {self.name!r}: service option {item!r} is not a ServiceFlag"
                )
        for attribute in ("flag", "key"):
            names = [getattr(item, attribute) for item in flags]
            if len(set(names)) != len(names):
                raise InvalidArgumentError(
                    f"suite {self.name!r}: two service options share a {attribute}: "
                    f"{', '.join(names)}"
                )

    def require_mode(self, name: str) -> Mode:
        """The declared mode ``name``; an undeclared one is refused (a usage error)."""
        mode = self._modes.get(name)
        if mode is None:
            declared = ", ".join(f"--{m}" for m in sorted(self._modes)) or "none"
            raise UsageError(
                f"suite {self.name} does not provide --{name}: it does not declare the {name} "
                f"mode (its modes: {declared}), so the flag would run an ordinary evaluation"
            )
        return mode

    @property
    def declared_modes(self) -> tuple[Mode, ...]:
        """The declared modes, in the order the command line lists their flags."""
        return tuple(self._modes[n] for n in canonical_modes(self._modes) if n in self._modes)

    def own_modes(self) -> tuple[Mode, ...]:
        """The declared modes that are not the protocol's: flags of this suite alone."""
        return tuple(mode for mode in self._modes.values() if mode.name not in PROTOCOL_MODES)

    def conflict(self, first: str, second: str) -> str:
        """Why modes ``first`` and ``second`` cannot run in one command."""
        for one, other in ((first, second), (second, first)):
            mode = self._modes.get(one)
            if mode is not None and other in mode.conflicts:
                return mode.conflicts[other]
        return _DEFAULT_CONFLICT

    def live_refusal(self, name: str) -> str:
        """Why a live or safety plan does not accept the mode ``name``."""
        mode = self._modes.get(name)
        return mode.live_refusal if mode is not None else Mode(name).live_refusal

    def own_flags(self, *, service: bool = False) -> tuple[str, ...]:
        """The flags this suite adds: to a plan command, or (``service``) to vitrine serve."""
        if service:
            return tuple(item.flag for item in self.service_options)
        return (*(mode.flag for mode in self.own_modes()), *self.aliases)

    def alias(self, flag: str) -> str:
        """The plan ``flag`` stands for in this suite; a suite without it is a usage error."""
        try:
            return self.aliases[flag]
        except KeyError:
            raise UsageError(
                f"suite {self.name} does not provide {flag}: it maps that shorthand to no "
                f"plan; choose one with --eval-plan ({', '.join(self.plans)})"
            ) from None

    def plan(self, name: str) -> Plan:
        try:
            return self.plans[name]
        except KeyError:
            raise UsageError(
                f"unknown plan {name!r}: suite {self.name} has {', '.join(self.plans)}"
            ) from None

    @property
    def scenario_ids(self) -> tuple[str, ...]:
        return tuple(self.scenarios)

    def component(self, name: str) -> Any:
        """Import and return the component ``name``; a suite without it is a usage error."""
        spec = self.components.get(name)
        if spec is None:
            provided = ", ".join(self.components) or "none"
            raise UsageError(
                f"suite {self.name} provides no {name!r} component (it provides: {provided})"
            )
        if not isinstance(spec, str):  # the component itself, already built
            return spec
        module_name, _, attr = spec.partition(":")
        label = f"component {name!r} of suite {self.name} ({spec})"
        try:
            return user_attribute(import_user_module(module_name, label), attr, label)
        except UserCodeError as exc:
            raise SuiteLoadError(str(exc), exc.exit_code) from exc


def load_suite(spec: str | None = None) -> Suite:
    """Import ``module:attr`` (``attr`` defaults to ``SUITE``) and return the Suite it names.

    With no ``spec`` the suite is found as every command finds it (:func:`find_suite`): the
    project's ``[tool.vitrine] suite``, else the one installed suite.
    """
    source = find_suite(spec)
    spec = source.spec
    module_name, _, attr = spec.strip().partition(":")
    attr = attr or _DEFAULT_ATTRIBUTE
    if not module_name or not module_name.replace(".", "").replace("_", "").isalnum():
        raise SuiteLoadError(
            f"{source.where} expects module:attr (a Python import path), got {spec!r}"
        )
    label = source.label
    try:
        value = user_attribute(import_user_module(module_name, label), attr, label)
    except UserCodeError as exc:
        raise SuiteLoadError(str(exc), exc.exit_code) from exc
    if isinstance(value, Suite):
        return value
    # Only for a value that is not a Suite: the evaluation model costs more than --help.
    from vitrine._evaluation import Evaluation  # noqa: PLC0415

    if isinstance(value, Evaluation):
        return value.suite()
    raise SuiteLoadError(
        f"{label}: {module_name}.{attr} is a {type(value).__name__}, not a vitrine "
        "Suite or Evaluation"
    )
