"""Service log lines that a client cannot forge.

A request path, a header or an exception message may carry a newline: logged raw, it starts a
line that looks like the service's own (``2099-01-01 ... ERROR vitrine.service: ...``). Every
record of the service logger is escaped once, after formatting its arguments, so every field
is covered whichever handler writes it.
"""

from __future__ import annotations

import logging
import re

__all__ = ["escape_controls", "install"]

# C0 and C1 controls, DEL and the Unicode line and paragraph separators: each can end a line
# or rewrite one in a terminal.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape_controls(text: str) -> str:
    """``text`` with every control character written as its Python escape (``\\n``, ``\\x1b``)."""
    return _UNSAFE.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


class _EscapeControls(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = escape_controls(record.getMessage())
        record.args = None
        return True


_FILTER = _EscapeControls()


def install(logger: logging.Logger) -> None:
    """Escape control characters in every record ``logger`` handles (idempotent)."""
    logger.addFilter(_FILTER)
