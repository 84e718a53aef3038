"""Where the vectors live: a user's PostgreSQL, else an embedded one started from ``pgserver``.

``VITRINE_DATABASE_URL`` wins when set (``RAGAS_DB_URL``, the pipelines specification's name,
is read when it is not). Otherwise a real PostgreSQL server (with pgvector) runs
from the ``pgserver`` package with its data directory in ``<store root>/pg``: started once per
process and reused by every later call, stopped when the last process using that data directory
exits (pgserver keeps a per-directory list of live client processes for that). A second process
pointed at the same directory attaches to the running server instead of starting another.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import threading
import warnings
from pathlib import Path
from typing import Any

from vitrine._redact import describe_exception
from vitrine.errors import DatabaseUnavailable

__all__ = [
    "DATABASE_URL_ALIAS",
    "DATABASE_URL_ENV",
    "DatabaseUnavailable",
    "database_url",
    "embedded_server_url",
    "release_embedded_servers",
    "running_servers",
]

DATABASE_URL_ENV = "VITRINE_DATABASE_URL"
# The pipelines specification's name for the same setting, read when vitrine's own is unset.
DATABASE_URL_ALIAS = "RAGAS_DB_URL"

_servers: dict[Path, Any] = {}
_lock = threading.Lock()


def database_url(store_root: Path) -> str:
    """The connection URL: the user's database (``VITRINE_DATABASE_URL``, else the
    specification's ``RAGAS_DB_URL``), else the embedded server under the store."""
    explicit = (
        os.environ.get(DATABASE_URL_ENV, "").strip()
        or os.environ.get(DATABASE_URL_ALIAS, "").strip()
    )
    if explicit:
        return explicit
    return embedded_server_url(store_root / "pg")


def _prune_dead_clients(pgdata: Path) -> None:
    """Drop client pids of processes that died without running their exit hooks.

    pgserver stops the server only when the exiting process is the last one listed; a client
    killed with SIGKILL stays listed forever and the server would then never be stopped.
    """
    import psutil

    listing = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(listing.read_text())
    except (OSError, ValueError):
        return
    if not isinstance(pids, list):
        return
    alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
    if alive != pids:
        listing.write_text(json.dumps(alive))


_SYSTEM_USER = "pgserver"  # the user pgserver runs PostgreSQL as when it is started as root
_USER_EXISTS = 9  # useradd's exit status for a name already taken


def ensure_system_user() -> None:
    """Create the system user pgserver needs as root, treating a concurrent creation as done.

    pgserver looks the user up and runs ``useradd`` when it is missing; two processes starting
    at once (test workers, two suites) both find it missing, and the second ``useradd`` fails
    with "already exists". Doing it here first makes that clash harmless.
    """
    if platform.system() == "Windows" or os.geteuid() != 0:
        return
    import pwd

    try:
        pwd.getpwnam(_SYSTEM_USER)
        return
    except KeyError:
        pass
    done = subprocess.run(
        ["useradd", "-s", "/bin/bash", _SYSTEM_USER], capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, _USER_EXISTS):
        raise DatabaseUnavailable(
            f"the system user {_SYSTEM_USER!r} that PostgreSQL runs as under root could not be "
            f"created: useradd exited {done.returncode} ({done.stderr.strip()[:200]})"
        )


def embedded_server_url(pgdata: Path) -> str:
    """Start (or attach to) the embedded server for ``pgdata`` and return its URL."""
    pgdata = pgdata.expanduser().resolve()
    with _lock:
        server = _servers.get(pgdata)
        if server is None:
            try:
                with warnings.catch_warnings():
                    # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers); the
                    # fallback it picks is fine for pgserver's lock file.
                    warnings.simplefilter("ignore")
                    from pgserver.postgres_server import PostgresServer, get_server
            except ImportError as exc:
                raise DatabaseUnavailable(
                    "no VITRINE_DATABASE_URL is set and the embedded PostgreSQL is not "
                    f"installed ({describe_exception(exc)}); install vitrine with the 'rag' extra"
                ) from exc
            ensure_system_user()
            try:
                pgdata.parent.mkdir(parents=True, exist_ok=True)
                with PostgresServer._lock:
                    if pgdata.exists():
                        _prune_dead_clients(pgdata)
                server = get_server(pgdata, cleanup_mode="stop")
            except Exception as exc:
                log = pgdata / "log"
                tail = ""
                with contextlib.suppress(OSError):
                    tail = " | ".join(log.read_text(errors="replace").splitlines()[-3:])
                raise DatabaseUnavailable(
                    f"the embedded PostgreSQL in {pgdata.name!r} did not start: "
                    f"{describe_exception(exc)}" + (f" (server log: {tail})" if tail else "")
                ) from exc
            _servers[pgdata] = server
        return str(server.get_uri())


def running_servers() -> frozenset[Path]:
    """The data directories of the embedded servers this process holds."""
    with _lock:
        return frozenset(_servers)


def release_embedded_servers(keep: frozenset[Path] = frozenset()) -> None:
    """Detach this process from the embedded servers it started (all but ``keep``), now
    rather than at exit.

    The server stops if no other live process still uses it. pgserver does the same from an
    exit hook, which a SIGTERM never reaches; calling it earlier also matters where the data
    directory may vanish before exit (a test session's temporary folders).
    """
    with _lock:
        servers = [server for path, server in _servers.items() if path not in keep]
        for path in list(_servers):
            if path not in keep:
                del _servers[path]
    for server in servers:
        server.cleanup()
