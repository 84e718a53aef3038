"""Suites: the plans and scenarios a project offers, loaded by import path.

The harness never imports a subject package; ``vitrine --suite module:attr`` names the suite to
load, and the default names the reference shop's. A suite module should stay cheap to import:
it is loaded for every command, including ones that are refused, so expensive registries go
behind :class:`LazyScenarios` and plan code imports its dependencies when it runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence, Set as AbstractSet
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from vitrine._commandline import DEFAULT_SUITE
from vitrine._plans.base import Plan, PlanKind, UsageError
from vitrine._usercode import UserCodeError, import_user_module, user_attribute
from vitrine.errors import InvalidArgumentError, NotFoundError, SuiteLoadError, WrongTypeError

__all__ = [
    "ALIAS_FLAGS",
    "DEFAULT_SUITE",
    "SUITE_MODES",
    "LazyScenarios",
    "ScenarioInfo",
    "Suite",
    "SuiteLoadError",
    "load_suite",
]

_DEFAULT_ATTRIBUTE = "SUITE"

# The offline modes a suite may offer; each runs in the suite's default plan, which reads the
# request's mode. A suite that does not declare one has it refused, never silently ignored.
SUITE_MODES: tuple[str, ...] = ("self-test", "ablate-catalogue", "controls-only")
# Command-line shorthands a suite may map to one of its plans.
ALIAS_FLAGS: tuple[str, ...] = ("--live-subjects-and-judge",)


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
    ``None``. ``modes`` names the offline modes (of :data:`SUITE_MODES`: ``self-test``,
    ``ablate-catalogue``, ``controls-only``) the default plan implements, reading
    ``request.mode``; the command line refuses any other. ``aliases`` maps a shorthand flag (of
    :data:`ALIAS_FLAGS`) to the plan it selects, e.g.
    ``{"--live-subjects-and-judge": "my-live-compare"}``.
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
    modes: AbstractSet[str] = frozenset()
    aliases: Mapping[str, str] = field(default_factory=dict)

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
        modes = frozenset(given)
        object.__setattr__(self, "modes", modes)
        unknown = sorted(modes - set(SUITE_MODES))
        if unknown:
            raise InvalidArgumentError(
                f"suite {self.name!r}: unknown mode(s) {', '.join(unknown)}; the modes are "
                f"{', '.join(SUITE_MODES)}"
            )
        if modes and self.default_plan is None:
            raise InvalidArgumentError(
                f"suite {self.name!r} declares modes ({', '.join(sorted(modes))}) but no "
                "default plan to run them in"
            )
        object.__setattr__(self, "aliases", MappingProxyType(dict(self.aliases)))
        for flag, target in self.aliases.items():
            if flag not in ALIAS_FLAGS:
                raise InvalidArgumentError(
                    f"suite {self.name!r}: {flag!r} is not an alias flag; the alias flags are "
                    f"{', '.join(ALIAS_FLAGS)}"
                )
            if target not in self.plans:
                raise InvalidArgumentError(
                    f"suite {self.name!r}: alias {flag} names plan {target!r}, which is not one "
                    f"of its plans ({', '.join(self.plans)})"
                )

    def require_mode(self, flag: str) -> None:
        """Refuse ``--<mode>`` unless this suite declares the mode (a usage error)."""
        mode = flag.removeprefix("--")
        if mode not in self.modes:
            declared = ", ".join(f"--{m}" for m in sorted(self.modes)) or "none"
            raise UsageError(
                f"suite {self.name} does not provide {flag}: it does not declare the {mode} "
                f"mode (its modes: {declared}), so the flag would run an ordinary evaluation"
            )

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


def load_suite(spec: str = DEFAULT_SUITE) -> Suite:
    """Import ``module:attr`` (``attr`` defaults to ``SUITE``) and return the Suite it names."""
    module_name, _, attr = spec.strip().partition(":")
    attr = attr or _DEFAULT_ATTRIBUTE
    if not module_name or not module_name.replace(".", "").replace("_", "").isalnum():
        raise SuiteLoadError(f"--suite expects module:attr (a Python import path), got {spec!r}")
    label = f"--suite {spec}"
    try:
        value = user_attribute(import_user_module(module_name, label), attr, label)
    except UserCodeError as exc:
        raise SuiteLoadError(str(exc), exc.exit_code) from exc
    from vitrine._evaluation import Evaluation  # noqa: PLC0415 - the model loads on use

    if isinstance(value, Evaluation):
        return value.suite()
    if not isinstance(value, Suite):
        raise SuiteLoadError(
            f"--suite {spec}: {module_name}.{attr} is a {type(value).__name__}, not a vitrine "
            "Suite or Evaluation"
        )
    return value
