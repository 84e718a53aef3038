"""Run ``vitrine serve`` as a child process and wait until it is ready (standard library only).

Used by the Makefile's ``behaviour`` target, the regression experiment and the SSE load
benchmark, so that each starts, waits for and stops a service the same way:
``python -m vitrine.service._process wait URL [--pid N] [--timeout S]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["free_port", "running_service", "wait_until_ready"]


def free_port() -> int:
    """A port the kernel just handed out on loopback (a race with other binders is possible)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_until_ready(base_url: str, *, timeout_s: float = 120.0, pid: int | None = None) -> None:
    """Poll ``/health`` until it says ready; raise if the service dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    reason = "no answer yet"
    while time.monotonic() < deadline:
        if pid is not None and not _alive(pid):
            raise RuntimeError(f"the service process {pid} exited before it was ready")
        try:
            with urllib.request.urlopen(f"{base_url.rstrip('/')}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except urllib.error.HTTPError as exc:  # 503 while warming up
            with contextlib.suppress(ValueError):
                reason = str(json.loads(exc.read()).get("reason"))
        except (urllib.error.URLError, OSError):
            reason = "not listening yet"
        time.sleep(0.25)
    raise TimeoutError(f"the service at {base_url} was not ready after {timeout_s:g} s: {reason}")


@contextlib.contextmanager
def running_service(
    arguments: Sequence[str] = (),
    *,
    log_path: Path,
    timeout_s: float = 120.0,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Start ``vitrine serve`` on a free loopback port; yield its base URL; always stop it."""
    port = free_port()
    command = [sys.executable, "-m", "vitrine", "serve", "--port", str(port)]
    command += [*arguments, "--log-file", str(log_path)]
    with log_path.with_suffix(".stderr").open("wb") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until_ready(url, timeout_s=timeout_s, pid=process.pid)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vitrine.service")
    commands = parser.add_subparsers(dest="command", required=True)
    wait = commands.add_parser("wait", help="wait until a service's /health says ready")
    wait.add_argument("url")
    wait.add_argument("--pid", type=int, help="fail at once if this process exits")
    wait.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    try:
        wait_until_ready(args.url, timeout_s=args.timeout, pid=args.pid)
    except (RuntimeError, TimeoutError) as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
