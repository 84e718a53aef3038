"""Store folders and files that only their owner can read.

A run store holds prompts, model answers, traces and receipts. Created with the process umask
(commonly 022), its folders would let every local user read them. So every folder vitrine
creates for a store, its caches included, is created owner-only (0700) at every level it
creates, and every file holding run data is written owner-only (0600). A folder that already
exists (one the user made, a shared CI workspace) keeps the mode its owner gave it.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PRIVATE_DIR", "PRIVATE_FILE", "private_dirs"]

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def private_dirs(path: Path) -> Path:
    """Make ``path`` and each missing folder above it owner-only, as
    ``mkdir(parents=True, exist_ok=True)`` makes them with the umask; returns ``path``.

    ``Path.mkdir`` applies its mode to the last folder only: the parents it creates get the
    umask's, which is how a store root became readable by everyone.
    """
    try:
        path.mkdir(mode=PRIVATE_DIR)
    except FileNotFoundError:
        private_dirs(path.parent)
        path.mkdir(mode=PRIVATE_DIR, exist_ok=True)
    except FileExistsError:
        if not path.is_dir():
            raise
    return path
