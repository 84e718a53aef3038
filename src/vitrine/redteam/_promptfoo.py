"""Read a promptfoo config as vitrine red-team work, so it runs unchanged.

A team with a ``promptfooconfig.yaml`` can point ``vitrine redteam run`` at it. What is read:

- ``prompts``: one prompt template; ``{{var}}`` placeholders are filled from each test's
  ``vars``. Without ``prompts``, a test needs exactly one var, which is the message.
- ``defaultTest``: ``vars``, ``assert`` and ``metadata`` merged into every test.
- ``tests``: ``description``, ``vars``, ``assert`` and ``metadata`` (``id``, ``category``,
  ``owasp``, ``severity``, ``persona``, ``signed_in``). Every test states its case id, in
  ``metadata.id`` or as a ``TC-...`` id in its description: an id taken from a test's position
  would rename every later case's findings when a test is added or removed.
- assertion types ``not-contains``, ``contains``, ``icontains``, ``regex``, ``llm-rubric``.
- ``redteam``: ``purpose``, ``plugins`` and ``strategies``, mapped onto what vitrine runs. A
  plugin is one of the static case categories (the suite's own cases of that category run,
  as promptfoo would run the tests it generates for the plugin); a strategy is ``goat`` or
  ``crescendo`` (vitrine's adaptive attacks, with ``config.maxTurns``). Any other plugin,
  strategy or key is refused by name in one sentence.
- ``providers`` and ``description`` are accepted; the target is always the suite's red-team
  target, never a provider named in the file.

Everything else is refused by name, never ignored: a key vitrine would skip silently could be
the one that made the original run meaningful.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from vitrine.errors import InvalidDataError

if TYPE_CHECKING:
    from vitrine.redteam._adaptive import Strategy

__all__ = [
    "AdaptiveRequest",
    "RedteamBlock",
    "is_promptfoo_config",
    "promptfoo_cases",
    "redteam_block",
]

_TOP_KEYS = {"description", "prompts", "providers", "defaultTest", "tests", "redteam"}
_TEST_KEYS = {"description", "vars", "assert", "metadata"}
_ASSERT_KEYS = {"type", "value"}
_ASSERT_TYPES = {"not-contains", "contains", "icontains", "regex", "llm-rubric"}
_METADATA_KEYS = {"id", "category", "owasp", "severity", "persona", "signed_in"}
# The case id form of the behaviour tests too (TC-P1-003); see CaseSpec.
_CASE_ID = re.compile(r"\bTC-[A-Z0-9]+-\d{3}\b")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_DEFAULTS = {"category": "prompt-injection", "owasp": "LLM01", "severity": "medium"}


def is_promptfoo_config(raw: object) -> bool:
    """A mapping with promptfoo's ``tests`` or ``redteam`` and none of vitrine's case-file keys."""
    return isinstance(raw, Mapping) and ("tests" in raw or "redteam" in raw) and "cases" not in raw


def promptfoo_cases(raw: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The config as a vitrine case-file document; every problem is named, then raised.

    Raises ``ValueError`` with one line per problem.
    """
    problems: list[str] = []
    _refuse_unknown(raw, _TOP_KEYS, name, problems, hint=_TOP_HINTS)
    template = _template(raw.get("prompts"), name, problems)
    default = raw.get("defaultTest") or {}
    if not isinstance(default, Mapping):
        problems.append(f"{name}: defaultTest must be a mapping")
        default = {}
    _refuse_unknown(default, _TEST_KEYS, f"{name}: defaultTest", problems)
    tests = raw.get("tests")
    if not isinstance(tests, list) or not tests:
        problems.append(f"{name}: tests must be a non-empty list")
        tests = []
    cases = []
    for index, test in enumerate(tests, start=1):
        where = f"{name}: tests[{index}]"
        if not isinstance(test, Mapping):
            problems.append(f"{where} must be a mapping")
            continue
        case = _case(index, test, default, template, where, problems)
        if case is not None:
            cases.append(case)
    if problems:
        raise InvalidDataError("\n".join(problems))
    description = raw.get("description")
    return {
        "version": 1,
        "description": str(description) if description else f"promptfoo config {name}",
        "cases": cases,
    }


_TOP_HINTS = {"scenarios": "write each scenario's tests out under tests:"}


def _refuse_unknown(
    mapping: Mapping[str, Any],
    allowed: set[str],
    where: str,
    problems: list[str],
    hint: Mapping[str, str] | None = None,
) -> None:
    for key in mapping:
        if key not in allowed:
            extra = (hint or {}).get(str(key))
            reason = f" ({extra})" if extra else ""
            problems.append(f"{where}: key {key!r} is not supported{reason}")


def _template(prompts: object, name: str, problems: list[str]) -> str | None:
    if prompts is None:
        return None
    if isinstance(prompts, str):
        return prompts
    if isinstance(prompts, list) and len(prompts) == 1 and isinstance(prompts[0], str):
        return prompts[0]
    problems.append(
        f"{name}: prompts must be one prompt template; several prompts would multiply every "
        "case, so split them into one config each"
    )
    return None


def _case(
    index: int,
    test: Mapping[str, Any],
    default: Mapping[str, Any],
    template: str | None,
    where: str,
    problems: list[str],
) -> dict[str, Any] | None:
    _refuse_unknown(test, _TEST_KEYS, where, problems)
    variables = {**_mapping(default.get("vars")), **_mapping(test.get("vars"))}
    metadata = {**_mapping(default.get("metadata")), **_mapping(test.get("metadata"))}
    _refuse_unknown(metadata, _METADATA_KEYS, f"{where}: metadata", problems)
    asserts = [*_list(default.get("assert")), *_list(test.get("assert"))]
    converted = []
    for number, spec in enumerate(asserts, start=1):
        at = f"{where}: assert[{number}]"
        if not isinstance(spec, Mapping):
            problems.append(f"{at} must be a mapping with type and value")
            continue
        _refuse_unknown(spec, _ASSERT_KEYS, at, problems)
        kind = spec.get("type")
        if kind not in _ASSERT_TYPES:
            supported = ", ".join(sorted(_ASSERT_TYPES))
            problems.append(f"{at}: type {kind!r} is not supported (supported: {supported})")
            continue
        converted.append({"type": kind, "value": spec.get("value")})
    prompt = _prompt(template, variables, where, problems)
    description = str(test.get("description") or f"promptfoo test {index}")
    found = _CASE_ID.search(description)
    case_id = metadata.get("id") or (found.group(0) if found else None)
    if case_id is None:
        problems.append(
            f"{where}: no case id; set metadata.id or put a TC-... id in the description, so "
            "the case keeps its name when tests are added or removed"
        )
    if prompt is None or case_id is None:
        return None
    case: dict[str, Any] = {
        "id": case_id,
        "category": metadata.get("category", _DEFAULTS["category"]),
        "owasp": metadata.get("owasp", _DEFAULTS["owasp"]),
        "severity": metadata.get("severity", _DEFAULTS["severity"]),
        "description": description[:300],
        "prompt": prompt,
        "assert": converted,
    }
    for key in ("persona", "signed_in"):
        if key in metadata:
            case[key] = metadata[key]
    return case


def _prompt(
    template: str | None, variables: Mapping[str, Any], where: str, problems: list[str]
) -> str | None:
    if template is None:
        if len(variables) != 1:
            problems.append(
                f"{where}: without prompts, a test needs exactly one var (the message); "
                f"got {sorted(variables) or 'none'}"
            )
            return None
        return str(next(iter(variables.values())))
    missing = sorted({m for m in _PLACEHOLDER.findall(template) if m not in variables})
    if missing:
        problems.append(f"{where}: the prompt uses {{{{{missing[0]}}}}}, which vars does not set")
        return None
    return _PLACEHOLDER.sub(lambda m: str(variables[m.group(1)]), template)


def _mapping(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class AdaptiveRequest:
    """One adaptive strategy a ``redteam:`` block asks for; ``max_turns`` None: the default."""

    strategy: Strategy
    max_turns: int | None = None


@dataclass(frozen=True, slots=True)
class RedteamBlock:
    """A ``redteam:`` block in vitrine's terms: static case categories and adaptive runs."""

    purpose: str | None
    categories: tuple[str, ...]
    adaptive: tuple[AdaptiveRequest, ...]


_REDTEAM_KEYS = {"purpose", "plugins", "strategies"}


def redteam_block(
    raw: Mapping[str, Any],
    name: str,
    *,
    plugins: Sequence[str],
    strategies: Sequence[str],
) -> RedteamBlock | None:
    """The config's ``redteam:`` block mapped onto ``plugins`` (the static categories vitrine
    runs) and ``strategies`` (its adaptive attacks); None when the config has none.

    Raises ``InvalidDataError`` with one sentence naming everything that is not supported.
    """
    if "redteam" not in raw:
        return None
    block = raw["redteam"]
    if not isinstance(block, Mapping):
        raise InvalidDataError(f"{name}: redteam must be a mapping of purpose, plugins, strategies")
    refused: dict[str, list[str]] = {"plugins": [], "strategies": [], "keys": []}
    refused["keys"].extend(str(k) for k in block if k not in _REDTEAM_KEYS)
    categories = _entries(block.get("plugins"), plugins, "plugins", refused)
    adaptive = [
        # Each id was checked against ``strategies``, the adaptive attacks' own names.
        AdaptiveRequest(cast("Strategy", strategy), _max_turns(strategy, options, refused))
        for strategy, options in _entries_with_options(
            block.get("strategies"), strategies, "strategies", refused
        )
    ]
    unsupported = [
        f"{kind} {', '.join(repr(n) for n in names)}" for kind, names in refused.items() if names
    ]
    if unsupported:
        raise InvalidDataError(
            f"{name}: vitrine cannot run the redteam {'; '.join(unsupported)}; it runs plugins "
            f"{', '.join(plugins)} (its static cases) and strategies {', '.join(strategies)}"
        )
    if not categories and not adaptive:
        raise InvalidDataError(
            f"{name}: the redteam block names no plugin and no strategy, so it asks for nothing"
        )
    purpose = block.get("purpose")
    return RedteamBlock(
        None if purpose is None else str(purpose), tuple(dict.fromkeys(categories)), tuple(adaptive)
    )


def _entries(
    value: object, known: Sequence[str], kind: str, refused: dict[str, list[str]]
) -> list[str]:
    return [entry for entry, _ in _entries_with_options(value, known, kind, refused)]


def _entries_with_options(
    value: object, known: Sequence[str], kind: str, refused: dict[str, list[str]]
) -> list[tuple[str, Mapping[str, Any]]]:
    """Each entry's id and ``config``; an entry is an id or a mapping with ``id`` (and, for a
    strategy, ``config``). Unknown ids and entry keys go to ``refused``."""
    if value is None:
        return []
    if not isinstance(value, list):
        refused["keys"].append(f"{kind} (a list of ids)")
        return []
    out = []
    allowed = {"id", "config"} if kind == "strategies" else {"id"}
    for entry in value:
        options: Mapping[str, Any] = {}
        ident = entry
        if isinstance(entry, Mapping):
            refused["keys"].extend(f"{kind}.{k}" for k in entry if k not in allowed)
            options = _mapping(entry.get("config"))
            ident = entry.get("id")
        if ident in known:
            out.append((str(ident), options))
        else:
            refused[kind].append(str(ident))
    return out


def _max_turns(
    strategy: str, options: Mapping[str, Any], refused: dict[str, list[str]]
) -> int | None:
    refused["keys"].extend(f"{strategy}.config.{k}" for k in options if k != "maxTurns")
    turns = options.get("maxTurns")
    if turns is None:
        return None
    if isinstance(turns, bool) or not isinstance(turns, int):
        refused["keys"].append(f"{strategy}.config.maxTurns (a whole number)")
        return None
    return turns
