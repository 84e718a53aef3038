"""The battery's budget and sandbox types (the fixtures that build them are in conftest.py), and
the one way every example runs a command: in-process, with its output captured, under a limit."""

from __future__ import annotations

import contextlib
import io
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from vitrine._cli import main

BUDGET_S = 60.0
EXAMPLE_LIMIT_S = 20


@dataclass(frozen=True)
class Budget:
    deadline: float

    @property
    def spent(self) -> bool:
        return time.monotonic() > self.deadline


@dataclass(frozen=True)
class Sandbox:
    """Folders the generated arguments point into, and the folders that must stay empty."""

    plain_file: Path  # a regular file, where a directory is expected
    folder: Path  # a directory, where a file is expected
    missing: Path  # a path under a folder that does not exist
    watched: tuple[Path, ...]  # the working directory, home and store: nothing may appear

    def written(self) -> list[Path]:
        return [path for folder in self.watched for path in folder.rglob("*")]

    def clear(self) -> None:
        for path in self.written():
            if path.parent in self.watched:
                shutil.rmtree(path) if path.is_dir() else path.unlink()


class _TooLong(BaseException):
    """Raised in the command when an example outlives its limit (BaseException: uncatchable
    by a command's own ``except Exception``)."""


@contextlib.contextmanager
def _time_limit(seconds: int, expired: list[bool]) -> Iterator[None]:
    def expire(signum: int, frame: FrameType | None) -> None:
        expired.append(True)  # recorded even if the command swallows the exception
        raise _TooLong(f"still running after {seconds} s: the arguments were accepted")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _text_stream() -> io.TextIOWrapper:
    # A real text stream over bytes, so code that writes to ``.buffer`` works as on a terminal.
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")


def run_in_process(argv: list[str]) -> tuple[int, str, str]:
    """``vitrine ARGV`` in this process: (exit code, stdout, stderr); -1 when it outlived
    :data:`EXAMPLE_LIMIT_S` (the arguments were accepted and something ran)."""
    out, err = _text_stream(), _text_stream()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    expired: list[bool] = []
    try:
        with _time_limit(EXAMPLE_LIMIT_S, expired):
            code = main(argv)
    except SystemExit as exc:  # a command that exits instead of returning: still a code
        code = exc.code if isinstance(exc.code, int) else 1
    except _TooLong:
        pass
    finally:
        sys.stdout, sys.stderr = old
    if expired:
        code = -1
        err.write(f"\nstill running after {EXAMPLE_LIMIT_S} s: the arguments were accepted\n")
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode("utf-8", "backslashreplace"))  # type: ignore[attr-defined]
    return code, texts[0], texts[1]
