"""The board is its owner's: every route wants the access token, and runs ignore the cwd."""

from __future__ import annotations

import http.client
import json
import os
import pwd
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from vitrine._board.app import ROUTES, Board, Route
from vitrine._board.server import BoardServer, serve
from vitrine._board.setup import JobRunner


def _request(
    server: BoardServer,
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    body: str = "",
) -> tuple[int, dict[str, str], str]:
    connection = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        sent = {"Host": f"127.0.0.1:{server.port}", **(headers or {})}
        if method == "POST":
            sent.setdefault("Origin", f"http://127.0.0.1:{server.port}")
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        connection.request(method, path, body=body.encode() if body else None, headers=sent)
        reply = connection.getresponse()
        return reply.status, dict(reply.getheaders()), reply.read().decode("utf-8", "replace")
    finally:
        connection.close()


def _fill(route: Route, board: Board) -> str:
    """A path of ``route`` whose parameters name things that exist in the store."""
    benchmark = next(h for h in board.catalog.headers() if h.kind == "benchmark")
    redteam = next(h for h in board.catalog.headers() if h.kind == "redteam")
    values = {
        "{kind}": "benchmark",
        "{key}": benchmark.key,
        "{run}": redteam.key if route.method == "POST" else benchmark.key,
        "{case}": "hello",
        "{number}": "1",
        "{file}": "board.css",
    }
    return "/" + "/".join(values.get(part, part) for part in route.segments)


@pytest.fixture
def board_server(board_store: Path) -> Iterator[tuple[Board, BoardServer]]:
    board = Board(board_store, persist_cache=False)
    with serve(board) as server:
        yield board, server


def test_every_route_wants_the_token_and_answers_its_owner(board_server):
    board, server = board_server
    assert {r.method for r in ROUTES} == {"GET", "POST"}
    owner = {"Authorization": f"Bearer {server.token}"}
    strangers: list[dict[str, str]] = [
        {},
        {"Authorization": "Bearer not-the-token"},
        {"Cookie": f"{server.cookie_name}=not-the-token"},
        {"Cookie": f"{server.cookie_name}={server.token[:-1]}"},
    ]
    csrf = f"csrf={board.csrf_token}&finding=F-x&by=eve&reason=r&plan=offline-suite"
    checked = []
    for route in ROUTES:
        path = _fill(route, board)
        methods = ("GET", "HEAD") if route.method == "GET" else ("POST",)
        for method in methods:
            for headers in strangers:
                # Even a stranger who knows the anti-forgery token gets nothing.
                body = csrf if method == "POST" else ""
                status, _, text = _request(server, method, path, headers, body)
                assert status == 401, (method, path, headers, status)
                assert "access token" in text or method == "HEAD"
            if method == "GET":
                status, _, text = _request(server, method, path, owner)
                # The owner is answered: a page, or a refusal of what was asked (/compare with
                # nothing to compare is 400, job 1 was never started: 404), never 401.
                assert status in (200, 400, 404), (path, status)
                assert server.token not in text, f"{path} shows the access token"
        checked.append(path)
    # A path no route answers is refused the same way: nothing tells a stranger what exists.
    assert _request(server, "GET", "/no/such/page")[0] == 401
    assert _request(server, "GET", "/no/such/page", owner)[0] == 404
    assert len(checked) == len(ROUTES)
    assert board.jobs.started == 0


def test_the_printed_token_becomes_a_cookie_and_leaves_the_address(board_server):
    _, server = board_server
    login = urlsplit(server.login_url)
    status, headers, _ = _request(server, "GET", f"/compare?a=x&{login.query}")
    assert status == 303
    assert headers["Location"] == "/compare?a=x"
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    jar = {"Cookie": cookie.split(";")[0]}
    status, _, text = _request(server, "GET", "/", jar)
    assert status == 200 and "<table" in text
    assert server.token not in text
    assert _request(server, "GET", "/?token=wrong")[0] == 401
    status, headers, _ = _request(server, "GET", f"//elsewhere.example/?{login.query}")
    assert (status, headers["Location"]) == (303, "/elsewhere.example/")  # stays on the board


def test_the_board_command_prints_an_address_that_carries_a_fresh_token(board_store: Path):
    def start() -> tuple[subprocess.Popen[str], str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "vitrine", "board", "--store", str(board_store)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        return process, line.split()[2]

    first, url = start()
    try:
        second, other = start()
        second.terminate()
        second.wait(timeout=30)
        parts = urlsplit(url)
        assert parts.query.startswith("token=") and len(parts.query) > 40
        assert urlsplit(other).query != parts.query, "each start draws its own token"
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        connection.request("GET", "/setup")
        assert connection.getresponse().status == 401
        connection.close()
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        connection.request("GET", f"/?{parts.query}")
        assert connection.getresponse().status == 303
        connection.close()
    finally:
        first.terminate()
        first.wait(timeout=30)


def _wait(job: Any) -> None:
    deadline = time.monotonic() + 120
    while job.running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not job.running, "the run did not finish"


def test_a_vitrine_module_planted_in_the_working_directory_is_not_what_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    marker = tmp_path / "planted-ran"
    (tmp_path / "vitrine.py").write_text(
        f"open({str(marker)!r}, 'w').write('the planted module ran')\n"
    )
    monkeypatch.chdir(tmp_path)
    job = JobRunner().start("help", ["--help"])
    _wait(job)
    assert not marker.exists(), "a run the board started imported the working directory's file"
    assert job.exit_code == 0
    assert any("usage" in line for line in job.lines)


def _as_user(uid: int, gid: int, probe: Any) -> Any:
    """``probe()`` run in a forked child that has become ``uid``; its JSON result."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no exec, so nothing it would need to read from root's files
        status = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            os.write(write, json.dumps(probe()).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        result = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the other user's probe failed"
    return json.loads(result)


def test_another_local_user_can_neither_read_a_page_nor_start_a_run(board_server):
    if os.geteuid() != 0:
        pytest.skip("switching to another user needs root; this test runs as a normal user")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("this system has no 'nobody' user to act as the other local user")
    board, server = board_server
    # The other user knows the port and even the anti-forgery token, not the access token.
    start = f"csrf={board.csrf_token}&plan=offline-suite"

    def probe() -> dict[str, int]:
        assert os.getuid() == nobody.pw_uid
        seen = {}
        for method, path, body in (
            ("GET", "/", ""),
            ("GET", "/setup", ""),
            ("GET", "/static/board.css", ""),
            ("POST", "/setup/start", start),
        ):
            seen[path] = _request(server, method, path, {}, body)[0]
        return seen

    seen = _as_user(nobody.pw_uid, nobody.pw_gid, probe)
    assert seen == {"/": 401, "/setup": 401, "/static/board.css": 401, "/setup/start": 401}
    assert board.jobs.started == 0


def test_a_half_sent_request_is_closed_and_a_client_that_hangs_up_prints_nothing(
    board_store: Path, capfd: pytest.CaptureFixture[str]
):
    import socket
    import struct

    with serve(Board(board_store, persist_cache=False), idle_timeout_s=0.5) as server:
        quiet = socket.create_connection((server.host, server.port), timeout=10)
        quiet.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
        started = time.monotonic()
        assert quiet.recv(1024) == b"", "the board kept a half-sent request open"
        assert time.monotonic() - started < 5
        quiet.close()
        rude = socket.create_connection((server.host, server.port), timeout=10)
        rude.sendall(b"GET / HTTP/1.1\r\n")
        rude.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        rude.close()  # a reset, mid-request
        time.sleep(0.5)
        # The board still answers its owner.
        headers = {"Authorization": f"Bearer {server.token}"}
        assert _request(server, "GET", "/static/board.css", headers)[0] == 200
    assert "Traceback" not in capfd.readouterr().err
