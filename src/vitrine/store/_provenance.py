"""Where a run came from: the source commit and the interpreter, gathered once per process."""

from __future__ import annotations

import functools
import platform
import re
import sys
from pathlib import Path
from typing import Any

from vitrine import __version__

__all__ = ["environment_info", "git_commit", "library_version"]

_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


@functools.cache
def git_commit() -> str | None:
    """The commit checked out in the working directory, or None outside a repository.

    Read straight from ``.git`` instead of spawning ``git``: a subprocess would cost tens of
    milliseconds per process and fail where git is not installed.
    """
    try:
        git_dir = _find_git_dir(Path.cwd())
        return None if git_dir is None else _resolve_head(git_dir)
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _find_git_dir(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / ".git"
        if candidate.is_dir():
            return candidate
        if candidate.is_file():  # a worktree or submodule points elsewhere
            text = candidate.read_text().strip()
            if text.startswith("gitdir:"):
                return (folder / text.removeprefix("gitdir:").strip()).resolve()
    return None


def _resolve_head(git_dir: Path) -> str | None:
    head = (git_dir / "HEAD").read_text().strip()
    if not head.startswith("ref:"):
        return head if _SHA.match(head) else None
    ref = head.removeprefix("ref:").strip()
    common = git_dir
    commondir = git_dir / "commondir"
    if commondir.is_file():
        common = (git_dir / commondir.read_text().strip()).resolve()
    for base in (git_dir, common):
        loose = base / ref
        if loose.is_file():
            sha = loose.read_text().strip()
            return sha if _SHA.match(sha) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text().splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and _SHA.match(sha):
                return sha
    return None  # an unborn branch has no commit yet


@functools.cache
def environment_info() -> dict[str, Any]:
    # platform.platform() probes the C library by reading the interpreter binary; uname is enough.
    uname = platform.uname()
    return {
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": f"{uname.system}-{uname.release}-{uname.machine}",
    }


def library_version() -> str:

    return __version__
