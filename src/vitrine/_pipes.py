"""Standard output that a closed pipe cannot turn into a traceback.

``vitrine redteam status | head`` closes the pipe after ten lines. A program that keeps
writing then meets ``BrokenPipeError``; the reader chose to stop listening, which is not the
program's failure, so the rest of the output is dropped and the command still finishes with its
own exit code.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TextIO, cast

__all__ = ["console_safe_streams", "pipe_safe_stdout"]


class _PipeSafeStream:
    """A text stream that stops writing, silently, once its reader has gone away."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._silence()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._silence()

    def _silence(self) -> None:
        self.broken = True
        # The interpreter flushes stdout once more at exit; point the descriptor at the null
        # device so that flush has somewhere to go.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def pipe_safe_stdout() -> None:
    """Wrap ``sys.stdout`` (once) so writes after the reader has gone are dropped quietly."""
    if not isinstance(sys.stdout, _PipeSafeStream):
        sys.stdout = cast(TextIO, _PipeSafeStream(sys.stdout))


def console_safe_streams() -> None:
    """Let ``sys.stdout`` and ``sys.stderr`` write any text, whatever their encoding.

    With ``PYTHONIOENCODING=ascii`` (or a terminal in a narrow code page) a report line holding
    a character the encoding lacks would raise ``UnicodeEncodeError`` and turn a finished,
    passing run into an infrastructure failure; the character is written as an escape
    (``\\u2014``) instead. The encoding itself is kept: what a reader expects still arrives.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) == "strict":
            with contextlib.suppress(OSError, ValueError):
                reconfigure(errors="backslashreplace")
