"""Names on disk: the store root, run ids and file names that are safe on every platform."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path

from vitrine._commandline import environment_path
from vitrine.errors import InvalidArgumentError

__all__ = [
    "CACHE_ENV",
    "HOME_ENV",
    "RUN_ID_PATTERN",
    "blocking_file",
    "cache_dir",
    "damaged_store",
    "new_run_id",
    "resolve_root",
    "sanitize_file_name",
]

HOME_ENV = "VITRINE_HOME"
CACHE_ENV = "VITRINE_CACHE_DIR"
RUN_ID_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2}_\d{8}$")

_FORBIDDEN = re.compile(r'[<>:"|?*/\\\x00-\x1f\x7f-\x9f]')
# Leaves room for the hash suffix and a ".json" extension inside the usual 255-byte limit.
_MAX_NAME_BYTES = 200


def resolve_root(output: str | os.PathLike[str] | None = None) -> Path:
    """Where runs live: an explicit path, else ``$VITRINE_HOME``, else ``./.vitrine``."""
    if output is not None and str(output).strip():
        # os.path.expanduser leaves "~unknown-user" as it is where Path.expanduser would raise.
        return Path(os.path.expanduser(os.fspath(output)))  # noqa: PTH111
    return environment_path(HOME_ENV) or Path.cwd() / ".vitrine"


def cache_dir(kind: str, root: Path | None = None) -> Path:
    """Where the cache of ``kind`` lives: ``$VITRINE_CACHE_DIR/kind``, else ``cache/kind`` under
    ``root`` (a command's ``--output``) or the store root the environment names
    (``$VITRINE_HOME``, else ``./.vitrine``)."""
    explicit = environment_path(CACHE_ENV)
    if explicit is not None:
        return explicit / kind
    return (root if root is not None else resolve_root()) / "cache" / kind


# The folders a store keeps its runs and indexes in: a file in their place is damage, not an
# empty store.
_STORE_FOLDERS = ("runs", "runs-index")


def damaged_store(root: Path) -> str | None:
    """Why the store at ``root`` cannot be read as one (a file where a folder must be), or None."""
    for name in _STORE_FOLDERS:
        path = root / name
        if path.exists() and not path.is_dir():
            return (
                f"the run store at {root} is damaged: {name}/ is a file, not a folder, so "
                "no run in it can be read"
            )
    return None


def blocking_file(path: Path) -> Path | None:
    """The existing non-folder at or above ``path`` that stops it being or holding a folder."""
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    return existing if existing is not None and not existing.is_dir() else None


def new_run_id(now: datetime | None = None) -> str:
    """``2026-09-10_07-08-15_45588192``: the UTC second the run began and 8 random digits.

    The timestamp makes directories sort in time order; the digits keep runs started in the same
    second apart.
    """
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment:%Y-%m-%d_%H-%M-%S}_{secrets.randbelow(10**8):08d}"


def sanitize_file_name(name: str) -> str:
    """A file name that every platform accepts and that no other input maps onto.

    Forbidden and control characters become ``-`` and leading/trailing dots and spaces go. Since
    ``a/b`` and ``a-b`` would then collide, any change appends ``__`` and 16 hex digits of the
    original's SHA-256, which an unchanged name can never end with by accident of sanitising.
    """
    if not name:
        raise InvalidArgumentError("cannot make a file name from an empty string")
    cleaned = _FORBIDDEN.sub("-", name).strip(". ")
    if len(cleaned.encode()) > _MAX_NAME_BYTES:
        cleaned = cleaned.encode()[:_MAX_NAME_BYTES].decode(errors="ignore")
    if cleaned == name:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return f"{cleaned}__{digest}"
