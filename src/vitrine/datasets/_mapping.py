"""From rows to cases: which field is the id, which make the input, which go to metadata.

Every loader reads its format into :class:`Record` objects (a row and where it came from) and
hands them to :func:`build_cases`, so that the mapping, the id rules and every error about a
row are the same whatever the file was.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from vitrine._bench.model import Case
from vitrine._redact import describe_exception
from vitrine.errors import DatasetArgumentError, DatasetFileError, WrongTypeError

__all__ = [
    "REST",
    "IdSpec",
    "InputSpec",
    "MetadataSpec",
    "Record",
    "Source",
    "build_cases",
    "fail",
    "field_value",
    "kind_of",
    "refuse_mapping",
]

Row: TypeAlias = Mapping[str, Any]
IdSpec: TypeAlias = "str | Callable[[Row], Any] | None"
InputSpec: TypeAlias = "str | Sequence[str] | Callable[[Row], Any]"
MetadataSpec: TypeAlias = "Literal['rest'] | Sequence[str] | Callable[[Row], Mapping[str, Any]]"

REST: Literal["rest"] = "rest"
DEFAULT_ID = "id"
_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class Source:
    """A dataset as its errors name it (``name``) and as its positional ids begin (``stem``)."""

    name: str
    stem: str


@dataclass(frozen=True, slots=True)
class Record:
    """One row as read, not yet known to be a mapping, and where it is.

    ``where`` is how a message names the place (``line 7``, ``row 3``), ``line`` the line it
    starts on when it has one, and ``number`` the number a positional id gives it.
    """

    row: Any
    where: str
    line: int | None
    number: int


def fail(
    source: Source,
    why: str,
    *,
    record: Record | None = None,
    line: int | None = None,
    field: str | None = None,
) -> DatasetFileError:
    """The error for a problem at ``record`` (or ``line``, or the whole file), naming all three."""
    if record is not None:
        where, line = f" {record.where}", record.line
    else:
        where = f" line {line}" if line is not None else ""
    named = f"field {field!r}: " if field is not None else ""
    return DatasetFileError(
        f"{source.name}{where}: {named}{why}", source=source.name, line=line, field=field
    )


def field_value(row: Row, path: str) -> Any:
    """``row[path]`` when it is a key, else the dotted ``path`` walked into nested mappings
    and lists (``messages.0.content``); ``_MISSING`` when there is nothing there."""
    if path in row:
        return row[path]
    value: Any = row
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def refuse_mapping(id: IdSpec, input: InputSpec, metadata: MetadataSpec) -> None:
    """Refuse a mapping argument of the wrong shape before any row is read."""
    if id is not None and not callable(id) and not (isinstance(id, str) and id.strip()):
        raise WrongTypeError(f"id= takes a field name, a callable or None; got {id!r}")
    if isinstance(input, str):
        if not input.strip():
            raise DatasetArgumentError("input= names no field: the field name is blank")
    elif isinstance(input, Sequence):
        if not input or not all(isinstance(name, str) and name.strip() for name in input):
            raise DatasetArgumentError(
                f"input= as a list names the fields of the input dict; got {list(input)!r}"
            )
    elif not callable(input):
        raise WrongTypeError(
            f"input= takes a field name, a list of fields or a callable; got {input!r}"
        )
    if isinstance(metadata, str):
        if metadata != REST:
            raise DatasetArgumentError(
                f"metadata= takes 'rest', a list of fields or a callable; got {metadata!r} "
                f"(for that one field, write metadata=[{metadata!r}])"
            )
    elif isinstance(metadata, Sequence):
        if not all(isinstance(name, str) and name.strip() for name in metadata):
            raise DatasetArgumentError(f"metadata= as a list names fields; got {list(metadata)!r}")
    elif not callable(metadata):
        raise WrongTypeError(
            f"metadata= takes 'rest', a list of fields or a callable; got {metadata!r}"
        )


def _not_json(value: Any, path: str) -> str | None:
    """Why ``value`` (found at ``path``) is not a JSON value, or None when it is one."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value}, which JSON cannot hold"
    if isinstance(value, list):
        for index, item in enumerate(value):
            if (why := _not_json(item, f"{path}.{index}")) is not None:
                return why
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has the key {key!r}, which is not a string"
            if (why := _not_json(item, f"{path}.{key}")) is not None:
                return why
        return None
    return f"{path} is a {type(value).__name__}, not a JSON value"


def _refuse_non_json(
    source: Source, record: Record, value: Any, field: str | None, what: str
) -> None:
    """Refuse ``value`` unless it is JSON; ``field`` is where it came from, when one did."""
    if (why := _not_json(value, field or "the value")) is not None:
        raise fail(source, f"{why}; {what} must be JSON", record=record, field=field)


def _call(source: Source, record: Record, what: str, fn: Callable[[Row], Any]) -> Any:
    try:
        return fn(record.row)
    except Exception as exc:  # the caller's function; its failure is named at its row
        raise fail(
            source, f"the {what} callable raised {describe_exception(exc)}", record=record
        ) from exc


def _field(source: Source, record: Record, path: str, why: str) -> Any:
    value = field_value(record.row, path)
    if value is _MISSING:
        raise fail(source, f"missing ({why})", record=record, field=path)
    return value


def _case_id(source: Source, record: Record, id: IdSpec, positional: bool) -> str:
    if positional:
        return f"{source.stem}-{record.number}"
    if callable(id):
        value, field = _call(source, record, "id", id), None
    else:
        assert id is not None  # positional covers None
        value, field = _field(source, record, id, "id= names it as the case id"), id
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    shown = repr(value)[:60]
    raise fail(
        source,
        f"a case id is a non-blank string or an integer, not {shown}",
        record=record,
        field=field,
    )


def _input(source: Source, record: Record, input: InputSpec) -> Any:
    if isinstance(input, str):
        return _field(source, record, input, "input= names it as the case input")
    if callable(input):
        return _call(source, record, "input", input)
    return {name: _field(source, record, name, "input= lists it") for name in input}


def _used(row: Row, spec: IdSpec | InputSpec) -> set[str]:
    """The top-level fields ``spec`` takes whole (a dotted path into one takes none)."""
    names = [spec] if isinstance(spec, str) else [] if callable(spec) or spec is None else spec
    return {name for name in names if name in row}


def _metadata(
    source: Source,
    record: Record,
    metadata: MetadataSpec,
    used: set[str],
    keep: Sequence[str],
) -> dict[str, Any]:
    if isinstance(metadata, str):  # REST, checked by refuse_mapping
        return {k: v for k, v in record.row.items() if k not in used or k in keep}
    if callable(metadata):
        produced = _call(source, record, "metadata", metadata)
        if not isinstance(produced, Mapping):
            raise fail(
                source,
                f"the metadata callable returned {type(produced).__name__}, not a mapping",
                record=record,
            )
        return dict(produced)
    return {name: _field(source, record, name, "metadata= lists it") for name in metadata}


def build_cases(
    source: Source,
    records: Sequence[Record],
    *,
    id: IdSpec,
    input: InputSpec,
    metadata: MetadataSpec,
    keep: Sequence[str] = (),
) -> list[Case]:
    """One case per record, in order; every problem is a :class:`DatasetFileError` at its row.

    ``keep`` names fields that stay in the rest's metadata even when the input takes them.
    """
    refuse_mapping(id, input, metadata)
    if not records:
        raise fail(source, "no rows: an empty dataset is refused, never read as zero cases")
    for record in records:
        if not isinstance(record.row, Mapping):
            raise fail(
                source,
                f"a row is an object of fields, not {kind_of(record.row)}",
                record=record,
            )
    positional = id is None or (
        id == DEFAULT_ID and not any(DEFAULT_ID in record.row for record in records)
    )
    if id == DEFAULT_ID and not positional:
        # A file where some rows carry an id and others do not is half-edited, not id-less:
        # a made-up id could collide with a real one or rename a case when rows move.
        having = next(record for record in records if DEFAULT_ID in record.row)
        for record in records:
            if DEFAULT_ID not in record.row:
                raise fail(
                    source,
                    f"missing, while the row at {having.where} has one; give every row an "
                    "id, or none (then each case is numbered)",
                    record=record,
                    field=DEFAULT_ID,
                )
    cases: list[Case] = []
    seen: dict[str, Record] = {}
    for record in records:
        case_id = _case_id(source, record, id, positional)
        if case_id in seen:
            raise fail(
                source,
                f"case id {case_id!r} repeats: {seen[case_id].where} and {record.where} "
                "both have it",
                record=record,
                field=id if isinstance(id, str) else None,
            )
        seen[case_id] = record
        value = _input(source, record, input)
        used = _used(record.row, id) | _used(record.row, input)
        extra = _metadata(source, record, metadata, used, keep)
        if isinstance(input, str):
            _refuse_non_json(source, record, value, input, "a case input")
        elif isinstance(value, Mapping) and not callable(input):
            for name, item in value.items():
                _refuse_non_json(source, record, item, name, "a case input")
        else:
            _refuse_non_json(source, record, value, None, "a case input")
        for key, item in extra.items():
            if not isinstance(key, str):
                raise fail(source, f"metadata key {key!r} is not a string", record=record)
            _refuse_non_json(source, record, item, key, "case metadata")
        cases.append(Case(case_id, value, extra))
    return cases


def kind_of(value: Any) -> str:
    """What ``value`` is, in a few words, for a sentence that refuses it."""
    if isinstance(value, str):
        return f"the string {value[:60]!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return "null" if value is None else f"the {type(value).__name__} {value!r}"[:80]
