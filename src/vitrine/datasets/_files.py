"""Cases from JSON Lines, a JSON array and CSV/TSV files.

Each loader reads rows with the line each starts on, then maps them with
:func:`vitrine.datasets._mapping.build_cases`; the mapping is described once, on
:func:`vitrine.datasets.load_cases`.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

from vitrine._bench.model import Case
from vitrine.datasets._mapping import (
    REST,
    IdSpec,
    InputSpec,
    MetadataSpec,
    Record,
    Source,
    build_cases,
    fail,
    refuse_mapping,
)

__all__ = [
    "load_csv",
    "load_json",
    "load_jsonl",
    "read_text",
    "source_of",
]

PathLike = str | os.PathLike[str]
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_JSON_KINDS = {dict: "an object", str: "a string", type(None): "null"}


def source_of(path: PathLike) -> Source:
    """The file as its errors name it (the path as given) and its stem for positional ids."""
    return Source(str(path), Path(path).stem)


def read_text(path: PathLike, source: Source) -> str:
    """The file's UTF-8 text (a byte-order mark dropped), or an error naming the file."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise fail(
            source, f"not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x})"
        ) from exc
    except OSError as exc:
        raise fail(source, f"cannot be read ({exc.strerror or type(exc).__name__})") from exc


def load_jsonl(
    path: PathLike,
    *,
    id: IdSpec = "id",
    input: InputSpec = "input",
    metadata: MetadataSpec = REST,
) -> list[Case]:
    """Cases from a JSON Lines file: one JSON object per line, blank lines skipped.

    A line that is not JSON, or is JSON but not an object, is refused with its line number.
    The mapping (``id``, ``input``, ``metadata``) is the one :func:`load_cases` describes; an
    id-less file numbers its cases ``<stem>-<n>``, n the row's position (1 for the first row).
    """
    refuse_mapping(id, input, metadata)
    source = source_of(path)
    records: list[Record] = []
    for number, line in enumerate(read_text(path, source).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise fail(
                source, f"not valid JSON ({exc.msg} at column {exc.colno})", line=number
            ) from exc
        records.append(Record(row, f"line {number}", number, len(records) + 1))
    return build_cases(source, records, id=id, input=input, metadata=metadata)


def load_json(
    path: PathLike,
    *,
    id: IdSpec = "id",
    input: InputSpec = "input",
    metadata: MetadataSpec = REST,
) -> list[Case]:
    """Cases from a ``.json`` file holding one array of objects, each row named by its line.

    The mapping is the one :func:`load_cases` describes; an id-less file numbers its cases
    ``<stem>-<n>``, n the row's position in the array (1 for the first).
    """
    refuse_mapping(id, input, metadata)
    source = source_of(path)
    text = read_text(path, source)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(
            source, f"not valid JSON ({exc.msg} at column {exc.colno})", line=exc.lineno
        ) from exc
    if not isinstance(data, list):
        kind = _JSON_KINDS.get(type(data), "a single value")
        raise fail(
            source,
            f"a .json dataset is one array of rows, not {kind} (a promptfoo test file is read "
            "from YAML)",
            line=text.count("\n", 0, _skip(text, 0)) + 1,
        )
    return build_cases(
        source, _array_records(text, len(data)), id=id, input=input, metadata=metadata
    )


def _array_records(text: str, count: int) -> list[Record]:
    """The array's items with the line each starts on; ``text`` is already known to be JSON."""
    decoder = json.JSONDecoder()
    records: list[Record] = []
    at = _skip(text, 0) + 1  # past the opening bracket
    line, counted = 1, 0
    for number in range(1, count + 1):
        at = _skip(text, at)
        line += text.count("\n", counted, at)
        counted = at
        row, at = decoder.raw_decode(text, at)
        records.append(Record(row, f"line {line}", line, number))
        at = _skip(text, at) + 1  # past the comma (or the closing bracket)
    return records


def _skip(text: str, at: int) -> int:
    match = _JSON_SPACE.match(text, at)
    return at if match is None else match.end()


def load_csv(
    path: PathLike,
    *,
    id: IdSpec = "id",
    input: InputSpec = "input",
    metadata: MetadataSpec = REST,
    delimiter: str | None = None,
) -> list[Case]:
    """Cases from a CSV file (``.tsv``: tab-separated) whose first row names the columns.

    Every cell is a string, as CSV has no types: an ``expected`` column of ``4`` arrives as
    ``"4"``. A row is named by the line it starts on (a quoted cell may span lines); a row with
    more or fewer cells than the header, and a header with a blank or repeated name, are
    refused. ``delimiter`` defaults to a tab for ``.tsv`` and a comma otherwise. The mapping is
    the one :func:`load_cases` describes; an id-less file numbers its cases ``<stem>-<n>``, n
    the data row's position (1 for the row under the header).
    """
    refuse_mapping(id, input, metadata)
    source = source_of(path)
    if delimiter is None:
        delimiter = "\t" if Path(path).suffix.lower() == ".tsv" else ","
    # StringIO splits lines only where CSV does, never at a form feed or U+2028 in a cell.
    reader = csv.reader(io.StringIO(read_text(path, source), newline=""), delimiter=delimiter)
    header: list[str] | None = None
    header_line = 1
    records: list[Record] = []
    end = 0
    try:
        for cells in reader:
            start, end = end + 1, reader.line_num
            if not cells or (len(cells) == 1 and not cells[0].strip()):
                continue
            if header is None:
                header, header_line = _header(source, cells, start), start
                continue
            if len(cells) != len(header):
                raise fail(
                    source,
                    f"the row has {len(cells)} cells and the header (line {header_line}) names "
                    f"{len(header)} columns",
                    line=start,
                )
            row = dict(zip(header, cells, strict=True))
            records.append(Record(row, f"line {start}", start, len(records) + 1))
    except csv.Error as exc:
        raise fail(source, f"not valid CSV ({exc})", line=reader.line_num) from exc
    return build_cases(source, records, id=id, input=input, metadata=metadata)


def _header(source: Source, cells: list[str], line: int) -> list[str]:
    names = [cell.strip() for cell in cells]
    for column, name in enumerate(names, start=1):
        if not name:
            raise fail(source, f"the header's column {column} has no name", line=line)
        if name in names[: column - 1]:
            raise fail(source, "the header names this column twice", line=line, field=name)
    return names
