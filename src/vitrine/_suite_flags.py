"""The flags a suite adds to vitrine's commands: its offline modes and its serve options.

The harness owns the protocol's two modes (``--self-test``, ``--controls-only``, see
:mod:`vitrine._modes`), which a suite may declare or not; every other mode, shorthand and serve
option is the suite's own, named and explained by the suite, and offered on the command line
only when that suite is the one loaded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from vitrine._modes import CONTROLS_ONLY, NO_MODE, PROTOCOL_MODES, SELF_TEST, canonical_modes
from vitrine.errors import InvalidArgumentError

__all__ = [
    "CONTROLS_ONLY",
    "NO_MODE",
    "PROTOCOL_MODES",
    "SELF_TEST",
    "Mode",
    "ServiceFlag",
    "canonical_modes",
    "check_alias_flag",
]

_WORD = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*"
_MODE_NAME = re.compile(_WORD)
_FLAG = re.compile(f"--{_WORD}")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_flag(owner: str, flag: str) -> None:
    if not isinstance(flag, str) or not _FLAG.fullmatch(flag):
        raise InvalidArgumentError(
            f"{owner}: {flag!r} is not a flag: write two dashes and lower-case words joined by "
            "dashes, e.g. '--my-option'"
        )


@dataclass(frozen=True, slots=True)
class Mode:
    """An offline mode a suite offers: ``--NAME`` runs ``plan`` (the suite's default plan when
    None) with ``request.mode == NAME``; the plan reads the mode and decides what runs.

    ``live_refusal`` says why a live or safety plan does not accept the flag; ``conflicts``
    says, per other mode, why the two cannot run in one command (the refusal quotes it).
    The protocol's modes (``self-test``, ``controls-only``) keep the harness's words when
    ``help`` or ``live_refusal`` is left empty.
    """

    name: str
    help: str = ""
    plan: str | None = None
    live_refusal: str = ""
    conflicts: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _MODE_NAME.fullmatch(self.name):
            raise InvalidArgumentError(
                f"mode {self.name!r}: a mode name is lower-case words joined by dashes (its "
                "flag is --NAME), e.g. 'ablate-index'"
            )
        if self.name == NO_MODE:
            raise InvalidArgumentError(
                f"mode {NO_MODE!r} is reserved: it is the request of no mode"
            )
        protocol = PROTOCOL_MODES.get(self.name)
        if not self.help:
            help_text = protocol.help if protocol else f"run the suite's {self.name} mode"
            object.__setattr__(self, "help", help_text)
        if not self.live_refusal:
            reason = protocol.live_refusal if protocol else f"{self.flag} is an offline mode"
            object.__setattr__(self, "live_refusal", reason)
        object.__setattr__(self, "conflicts", MappingProxyType(dict(self.conflicts)))

    @property
    def flag(self) -> str:
        return f"--{self.name}"


ServiceFlagKind = Literal["value", "on", "off"]


@dataclass(frozen=True, slots=True)
class ServiceFlag:
    """A flag a suite adds to ``vitrine serve``. Its value reaches the suite's assistant
    factory as ``ServiceOptions.suite_options[key]``.

    ``kind`` is ``"value"`` (the flag takes a value: one of ``choices`` when given, else
    ``default``), ``"on"`` (present: True, absent: False) or ``"off"`` (present: False, absent:
    True, as ``--no-cache`` with ``key="cache"`` turns a default-on feature off). ``key``
    defaults to the flag's words joined by underscores (``--max-depth`` → ``max_depth``).
    """

    flag: str
    help: str
    key: str = ""
    kind: ServiceFlagKind = "value"
    choices: tuple[str, ...] = ()
    default: str | None = None
    metavar: str | None = None

    def __post_init__(self) -> None:
        _check_flag("service flag", self.flag)
        if not self.key:
            object.__setattr__(self, "key", self.flag[2:].replace("-", "_"))
        if not _KEY.fullmatch(self.key):
            raise InvalidArgumentError(
                f"service flag {self.flag}: key {self.key!r} is not an identifier"
            )
        if self.kind not in ("value", "on", "off"):
            raise InvalidArgumentError(
                f"service flag {self.flag}: kind {self.kind!r} is not 'value', 'on' or 'off'"
            )
        object.__setattr__(self, "choices", tuple(self.choices))
        if self.kind != "value" and (self.choices or self.default is not None or self.metavar):
            raise InvalidArgumentError(
                f"service flag {self.flag} is a switch ({self.kind}): it takes no choices, "
                "default or metavar"
            )
        if self.choices and self.default is not None and self.default not in self.choices:
            raise InvalidArgumentError(
                f"service flag {self.flag}: default {self.default!r} is not one of its choices "
                f"({', '.join(self.choices)})"
            )

    @property
    def initial(self) -> str | bool | None:
        """The value when the flag is not given."""
        if self.kind == "value":
            return self.default
        return self.kind == "off"


def check_alias_flag(suite: str, flag: str) -> None:
    """Refuse an alias that is not spelled as a flag."""
    _check_flag(f"suite {suite!r}: alias", flag)
