"""Text scorers over the subject's answer: included phrases, a pattern, a JSON schema, a number.

Each reads ``response.answer``: ``None`` (the subject produced no answer at all) is *not
measured*, and ``""`` is a measured answer that fails whatever it was asked to contain. None of
them has a chance floor to derive: the answer is the subject's own wording, with no random-draw
population behind it, so each states its floor as not derivable unless given one.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from vitrine._bench.model import AdmittedCheck, Authority, Case
from vitrine._bench.response import SubjectResponse
from vitrine._floors import ChanceFloor
from vitrine._outcomes import Observation
from vitrine._redact import bound_text
from vitrine.errors import ScorerError, ScorerUnavailableError
from vitrine.scorers._common import Expected, MetadataField, admitted, choose

__all__ = [
    "IncludeMode",
    "JsonSource",
    "NumberPick",
    "RegexMode",
    "includes",
    "json_schema",
    "numeric",
    "regex",
]

_NO_ANSWER = (
    "the subject produced no answer (answer is None), so there was nothing to read; an empty "
    'answer would be ""'
)
_WORDING = "the answer is the subject's own wording: there is no random-draw population of answers"


def _no_floor(what: str) -> str:
    return f"{what}: {_WORDING} to derive a chance rate from"


def _absent(response: SubjectResponse) -> Observation | None:
    return Observation.not_measured(_NO_ANSWER) if response.answer is None else None


# --- includes ---------------------------------------------------------------------------------


class IncludeMode(StrEnum):
    """Which of the phrases the answer must contain: ``all`` of them, ``any`` one, or ``none``."""

    ALL = "all"
    ANY = "any"
    NONE = "none"


def _phrases(given: Any, where: str) -> tuple[str, ...]:
    phrases = (given,) if isinstance(given, str) else given
    if (
        not isinstance(phrases, Sequence)
        or not phrases
        or not all(isinstance(p, str) and p for p in phrases)
    ):
        raise ScorerError(
            f"{where}: the phrases are one non-empty string or a non-empty list of them (an "
            f"empty phrase is in every answer); got {given!r}"
        )
    return tuple(phrases)


def includes(
    phrases: str | Sequence[str] | MetadataField,
    *,
    mode: IncludeMode | str = IncludeMode.ALL,
    case_sensitive: bool = True,
    key: str | None = None,
    version: str = "1.0.0",
    floor: ChanceFloor | None = None,
    authority: Authority | str = Authority.GATE,
) -> AdmittedCheck:
    """A check that the answer contains ``phrases`` (substring search).

    ``phrases`` is one string, a list of them, or ``metadata("must_mention")`` to read them from
    each case. ``mode`` is ``all`` (every phrase), ``any`` (at least one) or ``none`` (no phrase:
    a forbidden-words check). ``case_sensitive=False`` compares case-folded text.

    Three states:

    * **pass**: the answer contains the phrases as the mode asks;
    * **fail** (measured): it does not; the evidence lists the phrases found and missing. An
      empty answer ``""`` is measured: it fails ``all`` and ``any`` and passes ``none``;
    * **not measured**: ``answer is None``, or the case lacks the metadata field, or the field
      holds no usable phrases.

    The value is the share of phrases found (``none``: the share absent; ``any``: 1 or 0), so
    1.0 is exactly a pass.

    Chance floor: not derivable (the answer is open wording, with no random-draw population).

    An empty phrase list or an empty phrase raises :class:`vitrine.errors.ScorerError` here.
    """
    include = choose(IncludeMode, mode, "mode")
    expectation = Expected(phrases, _phrases, "phrases")

    def fold(text: str) -> str:
        return text if case_sensitive else text.casefold()

    def score(case: Case, response: SubjectResponse) -> Observation:
        if (absent := _absent(response)) is not None:
            return absent
        wanted = expectation.for_case(case)
        if isinstance(wanted, Observation):
            return wanted
        text = fold(response.answer or "")
        found = [p for p in wanted if fold(p) in text]
        missing = [p for p in wanted if fold(p) not in text]
        if include is IncludeMode.ALL:
            value, passed = len(found) / len(wanted), not missing
        elif include is IncludeMode.ANY:
            passed = bool(found)
            value = float(passed)
        else:
            value, passed = len(missing) / len(wanted), not found
        evidence = {"mode": include.value, "found": found, "missing": missing}
        return Observation.measured(value, passed, evidence=evidence)

    return admitted(
        key=f"includes-{include.value}" if key is None else key,
        version=version,
        scoring=score,
        description=f"the answer contains {include.value} of the phrases",
        configuration={
            "scorer": "includes",
            "phrases": phrases if expectation.fixed is None else list(expectation.fixed),
            "mode": include,
            "case_sensitive": case_sensitive,
        },
        floor=floor,
        default_floor=_no_floor("a phrase search over the answer"),
        authority=authority,
    )


# --- regex ------------------------------------------------------------------------------------


class RegexMode(StrEnum):
    """Where the pattern must match: ``search`` anywhere, ``match`` at the start, ``fullmatch``
    the whole answer (as :mod:`re` defines them)."""

    SEARCH = "search"
    MATCH = "match"
    FULLMATCH = "fullmatch"


def _compiled(pattern: Any, flags: int, where: str) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        if flags:
            raise ScorerError(
                f"{where}: flags={flags!r} cannot be added to a compiled pattern; compile it "
                "with them, or give the pattern as a string"
            )
        if not isinstance(pattern.pattern, str):
            raise ScorerError(f"{where}: the pattern must be text, not bytes")
        return pattern
    if not isinstance(pattern, str):
        raise ScorerError(
            f"{where}: a pattern is a string or a compiled re.Pattern, got {pattern!r}"
        )
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise ScorerError(
            f"{where}: {pattern!r} is not a valid regular expression ({exc})"
        ) from None


def regex(
    pattern: str | re.Pattern[str] | MetadataField,
    *,
    mode: RegexMode | str = RegexMode.SEARCH,
    flags: int | re.RegexFlag = 0,
    key: str | None = None,
    version: str = "1.0.0",
    floor: ChanceFloor | None = None,
    authority: Authority | str = Authority.GATE,
) -> AdmittedCheck:
    """A check that the answer matches a regular expression.

    ``pattern`` is a string, a compiled pattern, or ``metadata("pattern")`` to read one from
    each case. ``mode`` is ``search`` (anywhere), ``match`` (at the start) or ``fullmatch`` (the
    whole answer); ``flags`` are :mod:`re` flags (``re.IGNORECASE | re.MULTILINE``).

    Three states:

    * **pass**: the pattern matches the answer under the mode (the evidence holds the matched
      text, bounded);
    * **fail** (measured): it does not. An empty answer ``""`` is measured like any other;
    * **not measured**: ``answer is None``, or the case lacks the metadata field, or the field's
      pattern does not compile.

    The value is 1 for a match and 0 otherwise.

    Chance floor: not derivable (the answer is open wording, with no random-draw population).

    A pattern that does not compile, flags on a compiled pattern or an unknown mode raise
    :class:`vitrine.errors.ScorerError` here.
    """
    where = choose(RegexMode, mode, "mode")
    if isinstance(flags, bool) or not isinstance(flags, int):
        raise ScorerError(f"flags must be re flags (an int), got {flags!r}")
    expectation = Expected(pattern, lambda given, at: _compiled(given, flags, at), "pattern")

    def score(case: Case, response: SubjectResponse) -> Observation:
        if (absent := _absent(response)) is not None:
            return absent
        compiled = expectation.for_case(case)
        if isinstance(compiled, Observation):
            return compiled
        found = getattr(compiled, where.value)(response.answer or "")
        evidence: dict[str, Any] = {
            "mode": where.value,
            "pattern": bound_text(compiled.pattern, 200),
        }
        if found is not None:
            evidence["matched"] = bound_text(found.group(0), 200)
        return Observation.measured(float(found is not None), found is not None, evidence=evidence)

    fixed = expectation.fixed
    return admitted(
        key=f"regex-{where.value}" if key is None else key,
        version=version,
        scoring=score,
        description=f"the answer matches the pattern ({where.value})",
        configuration={
            "scorer": "regex",
            "pattern": pattern if fixed is None else fixed.pattern,
            "flags": int(flags if fixed is None else fixed.flags),
            "mode": where,
        },
        floor=floor,
        default_floor=_no_floor("a pattern over the answer"),
        authority=authority,
    )


# --- JSON schema ------------------------------------------------------------------------------


class JsonSource(StrEnum):
    """What a JSON schema check validates: the ``answer`` parsed as JSON, or the response's
    ``structured`` mapping."""

    ANSWER = "answer"
    STRUCTURED = "structured"


_FENCE = re.compile(r"\A\s*```[\w-]*[ \t]*\n(?P<body>.*?)\n?```\s*\Z", re.S)


def _jsonschema() -> Any:
    try:
        return importlib.import_module("jsonschema")
    except ImportError:
        raise ScorerUnavailableError(
            "json_schema() validates with the jsonschema package, which is not installed: "
            "pip install jsonschema"
        ) from None


def _validator(library: Any, schema: Any, where: str) -> Any:
    if not isinstance(schema, Mapping | bool):
        raise ScorerError(f"{where}: a JSON schema is a mapping (or a boolean), got {schema!r}")
    document = dict(schema) if isinstance(schema, Mapping) else schema
    cls = library.validators.validator_for(document)
    try:
        cls.check_schema(document)
    except library.exceptions.SchemaError as exc:
        raise ScorerError(f"{where}: not a valid JSON schema ({exc.message})") from None
    return cls(document)


def json_schema(
    schema: Mapping[str, Any] | MetadataField,
    *,
    source: JsonSource | str = JsonSource.ANSWER,
    allow_fence: bool = True,
    key: str | None = None,
    version: str = "1.0.0",
    floor: ChanceFloor | None = None,
    authority: Authority | str = Authority.GATE,
) -> AdmittedCheck:
    """A check that the answer (or ``response.structured``) is valid against a JSON schema.

    ``schema`` is a JSON schema (any draft :mod:`jsonschema` knows; its ``$schema`` picks the
    draft) or ``metadata("schema")`` to read one from each case. ``source="answer"`` parses the
    answer as JSON; with ``allow_fence`` an answer that is one fenced code block (```json ...
    ```) is read from inside the fence. ``source="structured"`` validates the response's
    ``structured`` mapping.

    Three states:

    * **pass**: the document is valid against the schema;
    * **fail** (measured): the answer is not JSON (an empty answer ``""`` included), or the
      document breaks the schema; the evidence names the first violations and where they are;
    * **not measured**: ``answer is None`` (``source="answer"``); ``structured`` is empty
      (``source="structured"``: a response without structured output cannot be told from one
      whose structured output is empty); the case lacks the metadata field or its schema is
      not valid.

    The value is 1 for a valid document and 0 otherwise.

    Chance floor: not derivable (the document is the subject's own output, with no random-draw
    population).

    Needs the ``jsonschema`` package: without it, or with a schema that is not valid, this
    raises :class:`vitrine.errors.ScorerUnavailableError` or
    :class:`vitrine.errors.ScorerError` here, not during a run.
    """
    library = _jsonschema()
    read_from = choose(JsonSource, source, "source")
    expectation = Expected(schema, lambda given, at: _validator(library, given, at), "schema")

    def document(response: SubjectResponse) -> tuple[Any, Observation | None]:
        if read_from is JsonSource.STRUCTURED:
            if not response.structured:
                return None, Observation.not_measured(
                    "the response has no structured output (structured is empty), so there "
                    "was no document to validate"
                )
            return dict(response.structured), None
        if (absent := _absent(response)) is not None:
            return None, absent
        text = response.answer or ""
        fenced = _FENCE.match(text) if allow_fence else None
        try:
            return json.loads(fenced.group("body") if fenced else text), None
        except json.JSONDecodeError as exc:
            failed = Observation.measured(
                0.0,
                False,
                evidence={"source": read_from.value, "errors": [f"not JSON: {exc.msg}"]},
            )
            return None, failed

    def score(case: Case, response: SubjectResponse) -> Observation:
        validator = expectation.for_case(case)
        if isinstance(validator, Observation):
            return validator
        parsed, early = document(response)
        if early is not None:
            return early
        errors = sorted(validator.iter_errors(parsed), key=lambda e: list(e.absolute_path))
        described = [bound_text(f"at {e.json_path}: {e.message}", 200) for e in errors[:5]]
        evidence = {"source": read_from.value, "errors": described, "error_count": len(errors)}
        return Observation.measured(float(not errors), not errors, evidence=evidence)

    return admitted(
        key="json-schema" if key is None else key,
        version=version,
        scoring=score,
        description=f"the {read_from.value} is valid against the JSON schema",
        configuration={
            "scorer": "json_schema",
            "schema": schema,
            "source": read_from,
            "allow_fence": allow_fence,
        },
        floor=floor,
        default_floor=_no_floor("a schema over the subject's JSON"),
        authority=authority,
    )


# --- numeric ----------------------------------------------------------------------------------


class NumberPick(StrEnum):
    """Which number of the answer is its answer: the ``first``, the ``last``, or the ``only``
    one (an answer with several numbers then fails: it did not commit to one)."""

    FIRST = "first"
    LAST = "last"
    ONLY = "only"


# Thousands separators only in groups of three ("1,234.5"), so "3,4" reads as two numbers.
_NUMBER = re.compile(
    r"(?<![\w.])[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])"
    r"|(?<![\w.])[-+−]?\.\d+(?:[eE][-+]?\d+)?(?![\w])"
)


def _numbers(text: str) -> list[float]:
    return [float(m.group(0).replace(",", "").replace("−", "-")) for m in _NUMBER.finditer(text)]


def _expected_number(given: Any, where: str) -> float:
    if isinstance(given, bool):
        raise ScorerError(f"{where}: the expected value must be a number, got {given!r}")
    try:
        value = float(given)
    except (TypeError, ValueError):
        raise ScorerError(f"{where}: the expected value must be a number, got {given!r}") from None
    if not math.isfinite(value):
        raise ScorerError(f"{where}: the expected value must be finite, got {given!r}")
    return value


def _tolerance(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScorerError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ScorerError(f"{name} must be finite and at least 0, got {value!r}")
    return float(value)


def numeric(
    expected: float | MetadataField,
    *,
    abs_tol: float = 0.0,
    rel_tol: float = 0.0,
    pick: NumberPick | str = NumberPick.LAST,
    key: str | None = None,
    version: str = "1.0.0",
    floor: ChanceFloor | None = None,
    authority: Authority | str = Authority.GATE,
) -> AdmittedCheck:
    """A check that the number in the answer is within tolerance of the expected value.

    ``expected`` is a number, or ``metadata("expected")`` to read it from each case (a number,
    or a string that parses as one). The answer's numbers are read as decimals with an
    optional sign, exponent and thousands separators (``-1,234.5``, ``2e3``); ``pick`` chooses
    the ``last`` (the default, where worked answers put their result), the ``first``, or the
    ``only`` one. The number passes when ``|got - expected| <= max(abs_tol, rel_tol *
    |expected|)``; with both tolerances 0 (the default) it must be equal.

    Three states:

    * **pass**: the picked number is within tolerance;
    * **fail** (measured): it is not, or the answer holds no number (an empty answer ``""``
      included), or ``pick="only"`` and it holds several; the evidence has the number read and
      the error;
    * **not measured**: ``answer is None``, or the case lacks the metadata field, or the field
      is not a finite number.

    The value is 1 within tolerance and 0 otherwise.

    Chance floor: not derivable (the number is the subject's own, with no random-draw
    population to say how often chance would land within tolerance).

    A negative or non-finite tolerance, a non-numeric expected value or an unknown ``pick``
    raise :class:`vitrine.errors.ScorerError` here.
    """
    absolute = _tolerance(abs_tol, "abs_tol")
    relative = _tolerance(rel_tol, "rel_tol")
    which = choose(NumberPick, pick, "pick")
    expectation = Expected(expected, _expected_number, "expected")

    def score(case: Case, response: SubjectResponse) -> Observation:
        if (absent := _absent(response)) is not None:
            return absent
        target = expectation.for_case(case)
        if isinstance(target, Observation):
            return target
        found = _numbers(response.answer or "")
        evidence: dict[str, Any] = {"expected": target, "numbers_found": len(found)}
        if not found:
            return Observation.measured(0.0, False, evidence={**evidence, "why": "no number"})
        if which is NumberPick.ONLY and len(found) > 1:
            why = f"{len(found)} numbers, so the answer did not commit to one"
            return Observation.measured(0.0, False, evidence={**evidence, "why": why})
        got = found[0] if which is NumberPick.FIRST else found[-1]
        error = abs(got - target)
        allowed = max(absolute, relative * abs(target))
        passed = error <= allowed
        evidence.update({"got": got, "error": error, "allowed": allowed})
        return Observation.measured(float(passed), passed, evidence=evidence)

    return admitted(
        key="numeric" if key is None else key,
        version=version,
        scoring=score,
        description="the number in the answer is within tolerance of the expected value",
        configuration={
            "scorer": "numeric",
            "expected": expected if expectation.fixed is None else expectation.fixed,
            "abs_tol": absolute,
            "rel_tol": relative,
            "pick": which,
        },
        floor=floor,
        default_floor=_no_floor("a number read from the answer"),
        authority=authority,
    )
