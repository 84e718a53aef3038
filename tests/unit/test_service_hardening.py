"""The service under faults and hostile input: a port in use, forged log lines, absurd limits,
spoofed client addresses, an unusable log file, a client that hangs up mid-turn, and the
exposure defaults (schema pages, health details, persona lists, sessions as bearer tokens).

Faults are real where they can be: the port is really bound, the server really runs on a
loopback socket and the client really closes its connection.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from test_service_app import FakeAssistant

from vitrine.service._app import ServiceApp, ServiceConfig, create_app
from vitrine.service._command import main, uvicorn_config
from vitrine.service._limits import MAX_RETRY_AFTER_S, SessionStore, TokenBuckets
from vitrine.service._logsafe import escape_controls
from vitrine.service._protocol import AssistantReply, AssistantUnavailable


class SlowAssistant(FakeAssistant):
    """Takes its time over any message containing "slow", and notes when it is abandoned."""

    def __init__(self) -> None:
        super().__init__(tools=0)
        self.started = threading.Event()
        self.abandoned = threading.Event()

    async def reply(self, persona_id: str | None, user_turns: Sequence[str]) -> AssistantReply:
        if "slow" in user_turns[-1]:
            self.started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.abandoned.set()
                raise
        return await super().reply(persona_id, user_turns)


async def _ready(assistant: FakeAssistant, **config: object) -> ServiceApp:
    app = create_app(assistant, ServiceConfig(**config))  # type: ignore[arg-type]
    await app.warm_up()
    return app


def _client(app: ServiceApp, address: str = "127.0.0.1") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://service")


def _final(response: httpx.Response) -> dict[str, object]:
    from test_service_app import _events

    kind, data = _events(response)[-1]
    assert kind == "message.final", response.text
    return data


@contextmanager
def _served(app: ServiceApp, *, forwarded_allow_ips: list[str] | None = None) -> Iterator[str]:
    """Run ``app`` on a loopback port with the settings ``vitrine serve`` uses."""
    server = uvicorn.Server(uvicorn_config(app, forwarded_allow_ips=forwarded_allow_ips))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            server.should_exit = True
            thread.join(10)


# --- start-up faults: exit 4 at once, exit 2 for bad numbers and log files -----------------


def test_a_port_in_use_exits_4_within_a_second(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        started = time.monotonic()
        code = main(["--port", str(taken.getsockname()[1])])
        elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 4 and elapsed < 1.0
    assert "Address already in use" in err and "Traceback" not in err


@pytest.mark.parametrize("host", ["999.1.1.1", "256.0.0.1", "1.2.3", "no\x00where"])
def test_an_address_that_cannot_be_bound_exits_4_within_a_second(
    host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    code = main(["--host", host, "--port", "8123"])
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 4 and elapsed < 1.0
    assert err.count("error:") == 1 and "cannot listen on" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--rate-limit", "nan"],
        ["--rate-burst", "nan"],
        ["--rate-limit", "inf"],
        ["--rate-burst", "-inf"],
        ["--rate-limit", "1e-300"],
        ["--rate-burst", "1e300"],
        ["--reply-timeout", "nan"],
        ["--port", "9" * 5000],
        ["--forwarded-allow-ips", "example.org"],
        ["--forwarded-allow-ips", ","],
        ["--sessions-per-client", "2000"],
        ["--host", ""],
    ],
)
def test_unbounded_or_meaningless_limits_are_refused_with_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "Traceback" not in err


def test_retry_after_is_bounded_however_slow_the_rate() -> None:
    assert TokenBuckets.retry_after(1e300) == MAX_RETRY_AFTER_S
    assert TokenBuckets.retry_after(float("inf")) == MAX_RETRY_AFTER_S
    assert TokenBuckets.retry_after(0.2) == 1
    with pytest.raises(ValueError, match="finite"):
        TokenBuckets(rate=float("nan"))


async def test_a_tiny_rate_gives_a_short_retry_after_header() -> None:
    app = await _ready(FakeAssistant(), rate_capacity=1, rate_per_s=1e-300)
    async with _client(app) as client:
        await client.post("/v1/chat", json={"message": "hi"})
        refused = await client.post("/v1/chat", json={"message": "hi"})
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == str(MAX_RETRY_AFTER_S)


@pytest.mark.parametrize("kind", ["directory", "missing parent", "unwritable"])
def test_an_unusable_log_file_is_refused_with_a_sentence(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = {
        "directory": tmp_path,
        "missing parent": tmp_path / "absent" / "service.log",
        "unwritable": Path("/proc/version"),  # not writable even for root
    }[kind]
    code = main(["--log-file", str(target), "--host", "999.1.1.1"])
    err = capsys.readouterr().err
    assert code in (2, 4)
    assert err.count("error:") == 1 and "--log-file" in err and "Traceback" not in err
    assert not (tmp_path / "absent").exists()


def test_running_the_command_in_process_leaves_the_service_logger_as_it_was(
    tmp_path: Path,
) -> None:
    logger = logging.getLogger("vitrine.service")
    before = (list(logger.handlers), logger.propagate, logger.level)
    assert main(["--host", "999.1.1.1", "--log-file", str(tmp_path / "service.log")]) == 4
    assert (list(logger.handlers), logger.propagate, logger.level) == before


# --- the log: a client cannot forge a line ----------------------------------------------------


def test_control_characters_are_escaped_in_every_log_field() -> None:
    assert escape_controls("a\nb\r\x1b[31m\x85\u2028") == "a\\nb\\r\\x1b[31m\\x85\\u2028"


async def test_a_path_with_a_newline_cannot_forge_a_service_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = await _ready(FakeAssistant())
    forged = "/nope%0A2099-01-01%2000:00:00,000%20ERROR%20vitrine.service:%20FORGED"
    with caplog.at_level(logging.INFO, logger="vitrine.service"):
        async with _client(app) as client:
            response = await client.get(forged)
    assert response.status_code == 404
    lines = [logging.Formatter().format(record) for record in caplog.records]
    assert any("FORGED" in line for line in lines)
    assert all("\n" not in line for line in lines)
    assert any("/nope\\n2099-01-01" in line for line in lines)


# --- who the client is: forwarded headers only from configured proxies -----------------------


def _rotating_forwarded_statuses(url: str, count: int) -> list[int]:
    with httpx.Client(base_url=url, timeout=10) as client:
        return [
            client.get("/nope", headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code
            for i in range(count)
        ]


def test_rotating_forwarded_for_from_loopback_does_not_dodge_the_rate_limit() -> None:
    app = create_app(FakeAssistant(), ServiceConfig(rate_capacity=5, rate_per_s=0.01))
    with _served(app) as url:
        statuses = _rotating_forwarded_statuses(url, 12)
    assert statuses[:5] == [404] * 5
    assert statuses[5:] == [429] * 7


def test_forwarded_for_is_trusted_from_a_configured_proxy() -> None:
    app = create_app(FakeAssistant(), ServiceConfig(rate_capacity=5, rate_per_s=0.01))
    with _served(app, forwarded_allow_ips=["127.0.0.1"]) as url:
        statuses = _rotating_forwarded_statuses(url, 12)
    assert statuses == [404] * 12  # each forwarded address has its own bucket


# --- an abandoned turn leaves no trace ---------------------------------------------------------


def test_a_client_that_hangs_up_mid_turn_leaves_no_trace_in_the_session() -> None:
    assistant = SlowAssistant()
    app = create_app(assistant, ServiceConfig(reply_timeout_s=60))
    with _served(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        first = client.post("/v1/chat", json={"message": "hello"})
        session_id = _final(first)["session_id"]
        with client.stream(
            "POST", "/v1/chat", json={"message": "slow one", "session_id": session_id}
        ) as response:
            assert response.status_code == 200
            assert assistant.started.wait(10)
        # The connection is closed: the server must notice and cancel the turn.
        assert assistant.abandoned.wait(10), "the abandoned turn was never cancelled"
        third = client.post("/v1/chat", json={"message": "again", "session_id": session_id})
    assert _final(third)["turn"] == 2
    assert assistant.seen[-1] == (None, ("hello", "again"))


async def test_a_failed_turn_keeps_the_oldest_turn_of_a_full_conversation() -> None:
    store = SessionStore(max_turns=2)
    session = store.create(None)
    store.add_turn(session, "one")
    store.add_turn(session, "two")
    assert store.conversation(session, "three") == ("two", "three")
    assert session.turns == ["one", "two"]  # nothing recorded until the turn is answered


# --- exposure defaults --------------------------------------------------------------------------


@pytest.mark.parametrize("docs", [False, True])
async def test_schema_pages_are_published_only_when_asked(docs: bool) -> None:
    app = await _ready(FakeAssistant(), docs=docs)
    async with _client(app) as client:
        statuses = {path: (await client.get(path)).status_code for path in ("/docs", "/redoc")}
        statuses["/openapi.json"] = (await client.get("/openapi.json")).status_code
    assert set(statuses.values()) == ({200} if docs else {404})


@pytest.mark.parametrize("details", [False, True])
async def test_health_reports_counts_only_when_asked(details: bool) -> None:
    app = await _ready(FakeAssistant(), health_details=details)
    async with _client(app) as client:
        health = (await client.get("/health")).json()
    assert health["status"] == "ready" and health["assistant"] == {"subject": "fake"}
    assert ("sessions" in health and "requests_served" in health) is details


@pytest.mark.parametrize("listed", [False, True])
async def test_an_unknown_persona_error_lists_personas_only_when_asked(listed: bool) -> None:
    # The assistant owns its personas, and so whether to name them (the shop: --list-personas).
    app = await _ready(FakeAssistant(list_personas=listed))
    async with _client(app) as client:
        problem = (await client.post("/v1/chat", json={"message": "hi", "persona_id": "z"})).json()
    assert problem["status"] == 404 and "'z'" in problem["detail"]
    assert ("ann, bob" in problem["detail"]) is listed


@pytest.mark.parametrize("bound", [True, False])
async def test_a_session_answers_only_the_client_that_opened_it_unless_shared(
    bound: bool,
) -> None:
    app = await _ready(FakeAssistant(), bind_sessions=bound)
    async with _client(app, "10.0.0.1") as owner, _client(app, "10.0.0.2") as stranger:
        session_id = _final(await owner.post("/v1/chat", json={"message": "hi"}))["session_id"]
        body = {"message": "mine now", "session_id": session_id}
        taken = await stranger.post("/v1/chat", json=body)
        kept = await owner.post(
            "/v1/chat", json={"message": "still mine", **{"session_id": session_id}}
        )
    assert taken.status_code == (404 if bound else 200)
    assert kept.status_code == 200


async def test_one_clients_load_evicts_only_its_own_sessions() -> None:
    app = await _ready(FakeAssistant(), sessions_per_client=3, max_sessions=10, rate_capacity=100)
    async with _client(app, "10.0.0.1") as victim, _client(app, "10.0.0.9") as flood:
        kept = _final(await victim.post("/v1/chat", json={"message": "hi"}))["session_id"]
        opened = [
            _final(await flood.post("/v1/chat", json={"message": "x"}))["session_id"]
            for _ in range(30)
        ]
        again = await victim.post("/v1/chat", json={"message": "hi", "session_id": kept})
        oldest = await flood.post("/v1/chat", json={"message": "x", "session_id": opened[0]})
        newest = await flood.post("/v1/chat", json={"message": "x", "session_id": opened[-1]})
    assert again.status_code == 200
    assert oldest.status_code == 404 and newest.status_code == 200


# --- messages are redacted for secrets only ------------------------------------------------------


async def test_a_safe_message_keeps_report_names_and_loses_secrets() -> None:
    message = "Report 20261130T184512Z-all-offline-3f9a2c1b is not ready; key sk-abcdefghijklmnopqr"
    app = await _ready(FakeAssistant(fail=AssistantUnavailable(message)))
    async with _client(app) as client:
        response = await client.post("/v1/chat", json={"message": "hi"})
    from test_service_app import _events

    [(kind, data)] = _events(response)
    assert kind == "error"
    assert "20261130T184512Z-all-offline-3f9a2c1b" in str(data["message"])
    assert "sk-abc" not in str(data["message"])


# --- an idle pooled connection outlives the client's own idle expiry ------------------------


def test_an_idle_connection_is_kept_past_the_clients_own_idle_expiry() -> None:
    """httpx expires an idle pooled connection after 5 s, uvicorn's own keep-alive default:
    a server that closes at the same moment races the client's next request on it, which then
    fails with a read error. One connection, idle a little past 5 s, must still be answered."""
    app = create_app(FakeAssistant(), ServiceConfig())
    with _served(app) as url:
        port = int(url.rsplit(":", 1)[1])
        request = b"GET /health HTTP/1.1\r\nHost: service\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(request)
            assert _response(sock).startswith(b"HTTP/1.1 200")
            time.sleep(5.5)
            sock.sendall(request)
            assert _response(sock).startswith(b"HTTP/1.1 200")


def _response(sock: socket.socket) -> bytes:
    """One whole HTTP/1.1 response (head and Content-Length body), however it arrives."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data  # closed by the server: not a response
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body
