"""Cases from YAML: a plain list of rows, or a promptfoo test file (``tests:``, ``defaultTest:``).

Each row is named by the line its node starts on (PyYAML's mark), so an error points into the
file even though the values themselves carry no position.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import yaml

from vitrine._bench.model import Case
from vitrine._redact import sanitize_text
from vitrine.datasets._files import PathLike, read_text, source_of
from vitrine.datasets._mapping import (
    REST,
    IdSpec,
    InputSpec,
    MetadataSpec,
    Record,
    Source,
    build_cases,
    fail,
    kind_of,
    refuse_mapping,
)

__all__ = ["load_yaml"]

# Keys of a promptfoo file that define the tests themselves: a loader that skipped them would
# read a different test set than promptfoo runs, so they are refused by name.
_UNREAD_TEST_SOURCES = {
    "scenarios": "write each scenario's tests out under tests:",
    "redteam": "red-team generation is vitrine redteam's; list the tests under tests:",
}
# Keys of a test whose defaultTest and test values merge key by key (the test's win).
_MERGED = ("vars", "metadata", "options")


def load_yaml(
    path: PathLike,
    *,
    id: IdSpec = "id",
    input: InputSpec | None = None,
    metadata: MetadataSpec = REST,
) -> list[Case]:
    """Cases from a YAML file: a list of rows, or a promptfoo test file.

    A **list of rows** (``- {id: q1, input: ..., expected: ...}``) maps like any other file;
    ``input`` defaults to ``"input"``.

    A **promptfoo test file** is a mapping with ``tests:``, a list of tests each with ``vars``
    (the case input by default), optional ``description``, ``assert`` and ``metadata``. Each
    test is first merged with ``defaultTest:`` as promptfoo merges them: ``vars``, ``metadata``
    and ``options`` key by key (the test's values win), ``assert`` as the default's assertions
    followed by the test's, any other key the test's when it has one. The merged test is the
    row: ``description``, ``vars``, ``assert`` (always, ``[]`` when none), ``options`` and any
    other key, plus the keys of its ``metadata`` lifted to the top (so ``metadata.id`` is the
    case id). With the default ``metadata="rest"``, a case's metadata holds all of that, and
    ``vars`` too, even when it is the input: promptfoo assertions refer to the vars, so a
    scorer reading ``case.metadata["assert"]`` finds them beside it. ``prompts``,
    ``providers`` and runner options are not read (the arm is the subject); ``scenarios`` and
    ``redteam`` are refused, as are tests or a ``defaultTest`` given as ``file://`` paths (load
    that file itself).

    The mapping is the one :func:`load_cases` describes; an id-less file numbers its cases
    ``<stem>-<n>``, n the test's (or row's) position, 1 for the first.
    """
    refuse_mapping(id, "input" if input is None else input, metadata)
    source = source_of(path)
    root, data = _parse(source, read_text(path, source))
    if root is None:
        raise fail(source, "no rows: an empty dataset is refused, never read as zero cases")
    if isinstance(root, yaml.SequenceNode):
        records = _records(root, data)
        return build_cases(
            source, records, id=id, input="input" if input is None else input, metadata=metadata
        )
    if isinstance(root, yaml.MappingNode) and isinstance(data, Mapping) and "tests" in data:
        records = _promptfoo_records(source, root, data)
        return build_cases(
            source,
            records,
            id=id,
            input="vars" if input is None else input,
            metadata=metadata,
            keep=("vars",),
        )
    raise fail(
        source,
        "a YAML dataset is a list of rows or a promptfoo test file with tests:, not "
        + ("a mapping without tests:" if isinstance(root, yaml.MappingNode) else "one value"),
        line=_line(root),
    )


def _parse(source: Source, text: str) -> tuple[yaml.Node | None, Any]:
    """The document's node tree (for lines) and its value, constructed from that same tree."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        return node, None if node is None else loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = None if mark is None else mark.line + 1
        raise fail(source, f"not valid YAML ({sanitize_text(str(exc))})", line=line) from exc
    finally:
        loader.dispose()


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _records(sequence: yaml.SequenceNode, items: list[Any]) -> list[Record]:
    # A constructed sequence has one item per node, in order.
    return [
        Record(item, f"line {_line(node)}", _line(node), number)
        for number, (node, item) in enumerate(zip(sequence.value, items, strict=True), start=1)
    ]


def _value_node(mapping: yaml.MappingNode, key: str) -> yaml.Node:
    for key_node, value_node in mapping.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return cast("yaml.Node", value_node)
    return mapping


def _promptfoo_records(
    source: Source, root: yaml.MappingNode, data: Mapping[str, Any]
) -> list[Record]:
    for key, hint in _UNREAD_TEST_SOURCES.items():
        if key in data:
            raise fail(
                source,
                f"promptfoo's {key}: is not read ({hint})",
                line=_line(_value_node(root, key)),
                field=key,
            )
    tests_node = _value_node(root, "tests")
    tests = data["tests"]
    if not isinstance(tests, list) or not isinstance(tests_node, yaml.SequenceNode):
        raise fail(
            source,
            f"tests: is a list of tests, not {kind_of(tests)} (load a file named there by itself)",
            line=_line(tests_node),
            field="tests",
        )
    default = _default_test(source, root, data)
    records = []
    for record in _records(tests_node, tests):
        if isinstance(record.row, Mapping):
            row = _merged(source, record, default, record.row)
        elif isinstance(record.row, str):
            raise fail(
                source,
                f"a test given as {record.row[:60]!r} is not read; load that file by itself",
                record=record,
            )
        else:
            row = record.row  # build_cases names it as a row that is not an object
        records.append(Record(row, record.where, record.line, record.number))
    return records


def _default_test(
    source: Source, root: yaml.MappingNode, data: Mapping[str, Any]
) -> Mapping[str, Any]:
    default = data.get("defaultTest")
    if default is None:
        return {}
    if not isinstance(default, Mapping):
        raise fail(
            source,
            f"defaultTest: is a mapping of test keys, not {kind_of(default)} (a file:// "
            "defaultTest is not read)",
            line=_line(_value_node(root, "defaultTest")),
            field="defaultTest",
        )
    return default


def _merged(
    source: Source, record: Record, default: Mapping[str, Any], test: Mapping[str, Any]
) -> dict[str, Any]:
    """One promptfoo test merged with defaultTest, as one flat row (its metadata lifted)."""
    merged: dict[str, Any] = {**default, **test}
    for key in _MERGED:
        parts: list[Mapping[str, Any]] = []
        for part in (default.get(key), test.get(key)):
            if part is None:
                continue
            if not isinstance(part, Mapping):
                raise fail(
                    source, f"a mapping is expected, not {kind_of(part)}", record=record, field=key
                )
            parts.append(part)
        if parts:
            merged[key] = {k: v for part in parts for k, v in part.items()}
    asserts = []
    for part in (default, test):
        listed = part.get("assert")
        if listed is not None and not isinstance(listed, list):
            raise fail(
                source,
                f"a list of assertions is expected, not {kind_of(listed)}",
                record=record,
                field="assert",
            )
        asserts.extend(listed or [])
    merged["assert"] = asserts
    lifted = merged.pop("metadata", {})
    for key in lifted:
        if key in merged:
            raise fail(
                source,
                f"the key {key!r} is also a key of the test, so the two would overwrite each "
                "other; rename it",
                record=record,
                field=f"metadata.{key}",
            )
    return {**merged, **lifted}
