"""Attacks as data, and the small strategies that turn them into probes.

The attack text lives in ``data/attacks.json``. It is written against a *target profile*: the
placeholders in it (``{forbidden_tool}``, ``{item}``, ``{victim_name}`` ...) and the detector
values (which tools are forbidden, which facts belong to another customer) come from the target,
so the same catalogue attacks any assistant that can say what its forbidden actions and its
other customers are. A placeholder the profile lacks is an error naming the attack, not an
attack sent with a hole in it.

Two strategies exist: ``plain`` sends each authored probe as written, ``encoding`` wraps each
authored instruction in base64, rot13 or leetspeak with a decode-and-obey preamble.
"""

from __future__ import annotations

import base64
import codecs
import json
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from pathlib import Path
from types import MappingProxyType
from typing import Any

from vitrine.errors import CatalogueError
from vitrine.redteam._detectors import DETECTOR_KINDS, DetectorSpec
from vitrine.redteam._model import OWASP_TITLES, Intensity, Probe, Severity, Surface

__all__ = [
    "ENCODERS",
    "Attack",
    "AttackCatalogue",
    "CatalogueError",
    "detector_specs",
    "encode",
    "fill",
    "load_attacks",
]

_LEET = str.maketrans({"a": "4", "e": "3", "i": "1", "o": "0", "s": "5", "t": "7"})
ENCODERS: tuple[str, ...] = ("base64", "rot13", "leetspeak")


def encode(text: str, encoder: str) -> str:
    if encoder == "base64":
        return base64.b64encode(text.encode()).decode()
    if encoder == "rot13":
        return codecs.encode(text, "rot13")
    if encoder == "leetspeak":
        return text.lower().translate(_LEET)
    raise CatalogueError(f"unknown encoder {encoder!r}: one of {ENCODERS}")


@dataclass(frozen=True, slots=True)
class _AuthoredProbe:
    id: str
    turns: tuple[str, ...]
    planted: str | None = None


@dataclass(frozen=True, slots=True)
class Attack:
    """One attack: identity, classification, where it lands, how it is judged, its probes."""

    id: str
    name: str
    owasp: str
    severity: Severity
    technique: str
    surface: Surface
    strategy: str
    detectors: tuple[Mapping[str, Any], ...]
    judge_goal: str
    context: Mapping[str, Any]
    probes: tuple[_AuthoredProbe, ...]
    encoders: tuple[str, ...] = ()
    wrappers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def variants(self) -> int:
        """How many distinct probes this attack can produce."""
        return len(self.probes) * (len(self.encoders) if self.strategy == "encoding" else 1)

    def detector_specs(self, profile: Mapping[str, Any]) -> tuple[DetectorSpec, ...]:
        return detector_specs(self.detectors, profile, f"attack {self.id}")

    def build_probes(self, count: int, profile: Mapping[str, Any]) -> tuple[Probe, ...]:
        """The first ``count`` probe variants, filled in from the target profile."""
        built: list[Probe] = []
        for authored, encoder in self._ordered():
            if len(built) >= count:
                break
            where = f"attack {self.id} probe {authored.id}"
            turns = tuple(fill(t, profile, where) for t in authored.turns)
            probe_id = authored.id
            if encoder is not None:
                wrapper = self.wrappers[encoder]
                turns = tuple(wrapper.format(payload=encode(t, encoder)) for t in turns)
                probe_id = f"{authored.id}-{encoder}"
            planted = None if authored.planted is None else fill(authored.planted, profile, where)
            built.append(
                Probe(
                    id=f"{self.id}/{probe_id}",
                    attack_id=self.id,
                    turns=turns,
                    surface=self.surface,
                    planted=planted,
                    context=self.context,
                )
            )
        return tuple(built)

    def _ordered(self) -> list[tuple[_AuthoredProbe, str | None]]:
        if self.strategy != "encoding":
            return [(p, None) for p in self.probes]
        # Encoder-major: a quick campaign sees two encodings, not one encoding twice.
        return [(p, e) for e in self.encoders for p in self.probes]


@dataclass(frozen=True, slots=True)
class AttackCatalogue:
    attacks: Mapping[str, Attack]
    intensity: Mapping[Intensity, int]

    def get(self, attack_id: str) -> Attack:
        try:
            return self.attacks[attack_id]
        except KeyError:
            raise CatalogueError(
                f"unknown attack {attack_id!r}: the catalogue has {', '.join(self.attacks)}"
            ) from None

    def probes_for(
        self,
        attack_ids: Sequence[str],
        intensity: Intensity,
        profile: Mapping[str, Any],
        *,
        per_attack: int | None = None,
    ) -> list[tuple[Attack, Probe]]:
        """Probes of each named attack: the intensity's count, capped by ``per_attack``."""
        out: list[tuple[Attack, Probe]] = []
        for attack_id in attack_ids:
            attack = self.get(attack_id)
            count = self.intensity[intensity]
            if per_attack is not None:
                count = min(count, per_attack)
            out.extend((attack, probe) for probe in attack.build_probes(count, profile))
        return out


def detector_specs(
    declared: Sequence[Mapping[str, Any]], profile: Mapping[str, Any], where: str
) -> tuple[DetectorSpec, ...]:
    """Detectors as data declares them; ``from`` reads the values out of the target profile."""
    specs: list[DetectorSpec] = []
    for raw in declared:
        values: Sequence[Any] = raw.get("values") or ()
        source = raw.get("from")
        if source is not None:
            found = profile.get(source)
            if not isinstance(found, list | tuple) or not found:
                raise CatalogueError(
                    f"{where}: detector {raw['kind']} reads {source!r}, which the target "
                    "profile does not provide as a non-empty list"
                )
            values = found
        specs.append(
            DetectorSpec(
                raw["kind"], tuple(str(v) for v in values), bool(raw.get("conclusive", False))
            )
        )
    return tuple(specs)


def fill(text: str, profile: Mapping[str, Any], where: str) -> str:
    """Fill the profile's placeholders into authored text; a missing one names where it was."""
    try:
        return text.format_map({k: str(v) for k, v in profile.items()})
    except KeyError as exc:
        raise CatalogueError(f"{where}: the target profile has no {exc.args[0]!r}") from None


def _required(raw: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in raw:
        raise CatalogueError(f"{where}: missing field {key!r}")
    return raw[key]


def _parse_attack(raw: Mapping[str, Any]) -> Attack:
    where = f"attack {raw.get('id', '?')}"
    owasp = str(_required(raw, "owasp", where))
    if owasp not in OWASP_TITLES:
        raise CatalogueError(f"{where}: field owasp: {owasp!r} is not an OWASP LLM 2025 id")
    strategy = str(raw.get("strategy", "plain"))
    encoders = tuple(str(e) for e in raw.get("encoders", ()))
    wrappers = {str(k): str(v) for k, v in (raw.get("wrappers") or {}).items()}
    if strategy not in ("plain", "encoding"):
        raise CatalogueError(f"{where}: field strategy: {strategy!r} is not plain or encoding")
    if strategy == "encoding":
        unknown = [e for e in encoders if e not in ENCODERS]
        unwrapped = [e for e in encoders if e not in wrappers]
        if not encoders or unknown or unwrapped:
            raise CatalogueError(
                f"{where}: an encoding attack needs known encoders, each with a wrapper "
                f"containing {{payload}} (unknown {unknown}, without wrapper {unwrapped})"
            )
    detectors = tuple(_required(raw, "detectors", where))
    for detector in detectors:
        if detector.get("kind") not in DETECTOR_KINDS:
            raise CatalogueError(f"{where}: field detectors: unknown kind {detector.get('kind')}")
    probes = []
    for item in _required(raw, "probes", where):
        turns = item.get("turns") or ([item["text"]] if "text" in item else [])
        if not turns:
            raise CatalogueError(f"{where} probe {item.get('id')}: no text or turns")
        probes.append(_AuthoredProbe(str(item["id"]), tuple(turns), item.get("planted")))
    surface = Surface(raw.get("surface", Surface.USER_MESSAGE.value))
    if surface is not Surface.USER_MESSAGE and any(p.planted is None for p in probes):
        raise CatalogueError(f"{where}: every {surface.value} probe needs planted text")
    return Attack(
        id=str(raw["id"]),
        name=str(_required(raw, "name", where)),
        owasp=owasp,
        severity=Severity(_required(raw, "severity", where)),
        technique=str(_required(raw, "technique", where)),
        surface=surface,
        strategy=strategy,
        detectors=detectors,
        judge_goal=str(_required(raw, "judge_goal", where)),
        context=MappingProxyType(dict(raw.get("context") or {})),
        probes=tuple(probes),
        encoders=encoders,
        wrappers=MappingProxyType(wrappers),
    )


def parse_catalogue(document: Mapping[str, Any]) -> AttackCatalogue:
    intensity = {Intensity(k): int(v) for k, v in (document.get("intensity") or {}).items()}
    if set(intensity) != set(Intensity):
        raise CatalogueError("the catalogue must give a probe count for every intensity")
    attacks = [_parse_attack(a) for a in document.get("attacks") or ()]
    ids = [a.id for a in attacks]
    if len(set(ids)) != len(ids):
        raise CatalogueError(f"attack ids repeat: {ids}")
    for attack in attacks:
        names = [f for _, f, _, _ in string.Formatter().parse(attack.judge_goal) if f]
        if names:
            raise CatalogueError(f"attack {attack.id}: judge_goal may not use placeholders")
    return AttackCatalogue(MappingProxyType({a.id: a for a in attacks}), intensity)


@cache
def _default() -> AttackCatalogue:
    text = files("vitrine.redteam").joinpath("data", "attacks.json").read_text(encoding="utf-8")
    return parse_catalogue(json.loads(text))


def load_attacks(path: Path | None = None) -> AttackCatalogue:
    """The packaged catalogue, or one read from ``path``."""
    if path is None:
        return _default()
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CatalogueError(f"{path.name}: cannot read the attack catalogue ({exc})") from exc
    return parse_catalogue(document)
