"""Read a promptfoo config's ``tests:`` as vitrine red-team cases, so it runs unchanged.

A team with a ``promptfooconfig.yaml`` can point ``vitrine redteam run`` at it. What is read:

- ``prompts``: one prompt template; ``{{var}}`` placeholders are filled from each test's
  ``vars``. Without ``prompts``, a test needs exactly one var, which is the message.
- ``defaultTest``: ``vars``, ``assert`` and ``metadata`` merged into every test.
- ``tests``: ``description``, ``vars``, ``assert`` and ``metadata`` (``id``, ``category``,
  ``owasp``, ``severity``, ``persona``, ``signed_in``); an id ``TC-RT-ddd`` in the
  description is used when the metadata has none.
- assertion types ``not-contains``, ``contains``, ``icontains``, ``regex``, ``llm-rubric``.
- ``providers`` and ``description`` are accepted; the target is always the suite's red-team
  target, never a provider named in the file.

Everything else is refused by name, never ignored: a key vitrine would skip silently could be
the one that made the original run meaningful.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vitrine.errors import InvalidDataError

__all__ = ["is_promptfoo_config", "promptfoo_cases"]

_TOP_KEYS = {"description", "prompts", "providers", "defaultTest", "tests"}
_TEST_KEYS = {"description", "vars", "assert", "metadata"}
_ASSERT_KEYS = {"type", "value"}
_ASSERT_TYPES = {"not-contains", "contains", "icontains", "regex", "llm-rubric"}
_METADATA_KEYS = {"id", "category", "owasp", "severity", "persona", "signed_in"}
_CASE_ID = re.compile(r"\bTC-RT-\d{3}\b")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_DEFAULTS = {"category": "prompt-injection", "owasp": "LLM01", "severity": "medium"}


def is_promptfoo_config(raw: object) -> bool:
    """A mapping with promptfoo's ``tests`` list and none of vitrine's own case-file keys."""
    return isinstance(raw, Mapping) and "tests" in raw and "cases" not in raw


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


_TOP_HINTS = {
    "redteam": "adaptive attacks run with `vitrine redteam adaptive --strategy goat|crescendo`",
    "scenarios": "write each scenario's tests out under tests:",
}


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
    case_id = metadata.get("id") or (found.group(0) if found else f"TC-RT-{index:03d}")
    if prompt is None:
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
