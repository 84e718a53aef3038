"""Evidence, tool arguments and results shown as structured fields, never as raw JSON.

A check's evidence or a tool's result is a tree of mappings, lists and scalars; printed as JSON
(or worse, as a Python repr inside a JSON string: ``"{'met': True}"``) it cannot be read. Here a
mapping becomes a two-column table, a list of mappings a table with one column per key, a list
of scalars a comma-separated line, and a string that holds a Python or JSON literal is read
back (with :func:`ast.literal_eval`, which evaluates nothing) and shown as what it holds.

Every piece of text is escaped here, with control characters made visible first, exactly as
the templates' autoescape does: the values come from a model, a tool or a case file.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup, escape

from vitrine.reports._formatting import DASH, visible

__all__ = ["field_table", "literal_value"]

_MAX_DEPTH = 6
_MAX_ITEMS = 200
_MAX_TEXT = 4000
_MAX_LITERAL = 20_000


def literal_value(value: Any) -> Any:
    """``value``, or what a string holding a JSON or Python literal (a dict or a list) holds."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if len(text) > _MAX_LITERAL or not (text[:1] in "{[" and text[-1:] in "}]"):
        return value
    for parse in (json.loads, ast.literal_eval):
        try:
            parsed = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(parsed, dict | list | tuple):
            return parsed
    return value


def _text(value: str) -> Markup:
    shown = value if len(value) <= _MAX_TEXT else value[:_MAX_TEXT] + " … (truncated)"
    return escape(visible(shown))


def _scalar(value: Any) -> Markup:
    if value is None:
        return Markup('<span class="muted">none</span>')
    if isinstance(value, bool):
        return Markup("yes") if value else Markup("no")
    if isinstance(value, float):
        return escape(f"{value:.4g}")
    return _text(str(value))


def _is_record_list(value: Sequence[Any]) -> bool:
    return bool(value) and all(isinstance(item, Mapping) for item in value)


def _render(value: Any, depth: int) -> Markup:
    value = literal_value(value)
    if depth >= _MAX_DEPTH and isinstance(value, Mapping | list | tuple):
        return _text(json.dumps(value, default=str, ensure_ascii=False)[:_MAX_TEXT])
    if isinstance(value, Mapping):
        if not value:
            return Markup('<span class="muted">(empty)</span>')
        rows = [
            Markup("<tr><th scope='row'>{}</th><td>{}</td></tr>").format(
                _text(str(key)), _render(item, depth + 1)
            )
            for key, item in list(value.items())[:_MAX_ITEMS]
        ]
        more = _more(len(value))
        return Markup('<table class="kv"><tbody>{}</tbody></table>{}').format(
            Markup("").join(rows), more
        )
    if isinstance(value, list | tuple):
        if not value:
            return Markup('<span class="muted">(none)</span>')
        if _is_record_list(value):
            columns = list(dict.fromkeys(key for item in value[:_MAX_ITEMS] for key in item))
            head = Markup("").join(
                Markup("<th scope='col'>{}</th>").format(_text(str(c))) for c in columns
            )
            body = Markup("").join(
                Markup("<tr>{}</tr>").format(
                    Markup("").join(
                        Markup("<td>{}</td>").format(
                            _render(item[c], depth + 1) if c in item else Markup(DASH)
                        )
                        for c in columns
                    )
                )
                for item in value[:_MAX_ITEMS]
            )
            return Markup(
                '<table class="kv records"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>{}'
            ).format(head, body, _more(len(value)))
        if all(not isinstance(item, Mapping | list | tuple) for item in value):
            return Markup(", ").join(_scalar(item) for item in value[:_MAX_ITEMS]) + _more(
                len(value)
            )
        items = Markup("").join(
            Markup("<li>{}</li>").format(_render(item, depth + 1)) for item in value[:_MAX_ITEMS]
        )
        return Markup("<ol>{}</ol>{}").format(items, _more(len(value)))
    return _scalar(value)


def _more(count: int) -> Markup:
    if count <= _MAX_ITEMS:
        return Markup("")
    return Markup(' <span class="muted">… and {} more</span>').format(count - _MAX_ITEMS)


def field_table(value: Any) -> Markup:
    """``value`` as escaped HTML fields: tables for mappings and records, lines for scalars."""
    return _render(value, 0)
