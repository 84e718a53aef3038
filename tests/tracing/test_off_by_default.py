"""Tracing off costs nothing: no OpenTelemetry import, no export, in the commands and in a
pytest session with vitrine's plugin; a bad destination exits 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tracing_support import TRACING_VARIABLES, start_receiver

from vitrine._cli import main
from vitrine._outcomes import ExitCode

_IMPORTED = (
    "import sys\n"
    "from vitrine._cli import main\n"
    "code = main({argv!r})\n"
    "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry')\n"
    "print('OTEL-MODULES', len(loaded), code)\n"
)

_PYTEST_SESSION = (
    "import sys\n"
    "import pytest\n"
    "code = pytest.main({argv!r})\n"
    "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry')\n"
    "print('OTEL-MODULES', len(loaded), int(code))\n"
)
_PLUGIN_TEST = """
def test_metric(vitrine_metrics):
    vitrine_metrics.check("greets", True, "said hello")
"""


def _run_python(code: str, **extra_env: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in TRACING_VARIABLES}
    env.update(extra_env)
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    marker = [line for line in done.stdout.splitlines() if line.startswith("OTEL-MODULES")]
    assert marker, done.stderr[-2000:]
    return marker[0]


def test_the_version_imports_no_opentelemetry():
    assert _run_python(_IMPORTED.format(argv=["--version"])) == "OTEL-MODULES 0 0"


def test_the_offline_suite_untraced_imports_no_opentelemetry_and_exports_nothing(tmp_path):
    # A receiver on the loopback that nothing is configured to reach: it must stay silent.
    receiver = start_receiver()
    try:
        line = _run_python(
            _IMPORTED.format(argv=["--all", "--output", str(tmp_path / "store")]),
            OTEL_SERVICE_NAME="vitrine-test",  # a variable that is not a destination
        )
    finally:
        receiver.server.shutdown()
    assert line == "OTEL-MODULES 0 0"
    assert receiver.requests == []
    manifests = list((tmp_path / "store").rglob("manifest.json"))
    assert manifests
    assert all('"trace_ids"' not in path.read_text() for path in manifests)


def test_a_bad_trace_destination_exits_2_with_a_sentence_and_runs_nothing(tmp_path, capsys):
    store = tmp_path / "store"
    code = main(["--all", "--output", str(store), "--trace-to", "localhost:4318"])
    assert code == ExitCode.INVALID_ARGUMENTS
    err = capsys.readouterr().err
    assert "--trace-to must be an http:// or https:// URL with a host" in err
    assert "Traceback" not in err
    assert not any(Path(store).rglob("manifest.json"))


def test_a_bad_endpoint_variable_exits_2_naming_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")
    code = main(["--all", "--output", str(tmp_path / "store")])
    assert code == ExitCode.INVALID_ARGUMENTS
    assert "OTEL_EXPORTER_OTLP_ENDPOINT must be an http" in capsys.readouterr().err


def _pytest_session(tmp_path: Path, *options: str) -> str:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_plugin.py").write_text(_PLUGIN_TEST)
    argv = [str(tmp_path), "-c", str(tmp_path / "pytest.ini"), "-q", "-p", "no:randomly"]
    return _run_python(_PYTEST_SESSION.format(argv=[*argv, *options]))


def test_a_pytest_session_untraced_imports_no_opentelemetry_and_exports_nothing(tmp_path):
    receiver = start_receiver()
    try:
        line = _pytest_session(tmp_path)
    finally:
        receiver.server.shutdown()
    assert line == "OTEL-MODULES 0 0"
    assert receiver.requests == []


def test_a_pytest_session_with_a_destination_loads_opentelemetry_and_exports(tmp_path):
    # The counterpart of the test above: the same session, traced, is seen to be.
    receiver = start_receiver()
    try:
        line = _pytest_session(tmp_path, "--vitrine-trace-to", receiver.url)
    finally:
        receiver.server.shutdown()
    modules, code = line.split()[1:]
    assert int(modules) > 0 and code == "0"
    assert receiver.trace_requests()
