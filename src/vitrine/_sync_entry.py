"""The guard of vitrine's synchronous entry points (``evaluate``, ``resume_unsealed``)."""

from __future__ import annotations

import asyncio

from vitrine.errors import RunningLoopError

__all__ = ["refuse_inside_event_loop"]


def refuse_inside_event_loop(name: str, async_name: str) -> None:
    """Raise when synchronous ``name`` is called where an event loop already runs."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    # asyncio.run cannot nest, and running the subjects on a second loop in another thread
    # would break any client they hold that belongs to this loop.
    raise RunningLoopError(
        f"{name}() was called inside a running event loop (a notebook cell or an async "
        f"application): use `await vitrine.{async_name}(...)` there"
    )
