"""Fixtures of the tracing tests: an untraced start for each test, one Phoenix per session."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tracing_support import TRACING_VARIABLES

from vitrine import tracing

_PHOENIX_READY_S = 120.0
_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _untraced(monkeypatch: pytest.MonkeyPatch):
    for name in TRACING_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield
    tracing.shutdown()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _phoenix_command() -> list[str] | None:
    """``phoenix serve`` from its own environment (``make phoenix``: Phoenix pins versions of
    the model SDKs that vitrine's extras must not inherit), else from this one or the PATH."""
    for script in (
        _ROOT / ".venv-phoenix" / "bin" / "phoenix",
        Path(sys.executable).with_name("phoenix"),
    ):
        if script.exists():
            return [str(script), "serve"]
    found = shutil.which("phoenix")
    if found:
        return [found, "serve"]
    if importlib.util.find_spec("phoenix") is not None:
        return [sys.executable, "-m", "phoenix.server.main", "serve"]
    return None


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Arize Phoenix on free loopback ports, for the whole session; yields its URL."""
    command = _phoenix_command()
    if command is None:
        pytest.skip("Arize Phoenix is not installed: make phoenix (its own environment)")
    workdir = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
    }
    log = (workdir / "phoenix.log").open("wb")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + _PHOENIX_READY_S
        while not _healthy(url):
            if process.poll() is not None:
                pytest.fail(f"phoenix serve exited with {process.returncode}; see {workdir}")
            if time.monotonic() > deadline:
                pytest.fail(f"phoenix serve was not ready within {_PHOENIX_READY_S:g} s")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
