"""A model that repeats credentials: none of them is stored, traced or shown by vitrine.

The fake OpenAI server answers as the scripted shop model and appends to the subject's answer
the configured API key, a partly masked copy of it, a URL with ``user:password@`` and a Basic
credential. Every file the live session writes, every page of the board exported from its
store, and every span captured with content, is then searched for each of them.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from live_fakes import CANARY_KEY, is_judge, is_stage, live_env, receipt, scripted_reply

from vitrine import ExitCode, PlanOutcome, PlanRequest, UsageError, tracing
from vitrine._board.export import export_board
from vitrine.testing._openai_server import FakeOpenAIServer, FakeReply, FakeRequest
from vitrine_shop.evals.live.plans import EVAL01
from vitrine_shop.evals.live.session import LiveOptions, run_live_plan

pytest.importorskip("openai")

LUCA = "luca-safe-abstention"
PASSWORD = "Pa55-canary-word-31"
BASIC = base64.b64encode(f"shopper:{PASSWORD}".encode()).decode()
MASKED = f"{CANARY_KEY[:16]}...{CANARY_KEY[-6:]}"
LEAK = (
    f" Your key is {CANARY_KEY} ({MASKED} for short). Mirror: "
    f"https://shopper:{PASSWORD}@mirror.example.com/v1. Send 'Authorization: Basic {BASIC}'."
)
# What must appear nowhere: each secret, and each half of the masked key.
SECRETS = (CANARY_KEY, PASSWORD, BASIC, CANARY_KEY[:16], CANARY_KEY[-6:])


def leaky_reply(request: FakeRequest) -> FakeReply:
    reply = scripted_reply(request)
    if is_judge(request) or is_stage(request) or reply.tool_calls:
        return reply
    return FakeReply.text((reply.content or "") + LEAK)


async def _eval01(store: Path, environ: dict[str, str]) -> PlanOutcome:
    """eval01 over HTTP on one scenario, paid and confirmed, into ``store``."""
    request = PlanRequest(
        plan=EVAL01.name,
        scenarios=(LUCA,),
        repetitions=1,
        confirm_paid=True,
        provider="openai",
        output=store,
    )
    return await run_live_plan(EVAL01, request, LiveOptions(environ=environ))


@pytest.fixture
def spans():
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from vitrine.tracing._settings import TraceSettings

    exporter = InMemorySpanExporter()
    settings = TraceSettings("http://127.0.0.1:9/v1/traces", capture_content=True)
    assert tracing.setup(settings, exporter=exporter)
    yield exporter
    tracing.shutdown()


async def test_credentials_in_a_models_answer_reach_no_artifact_page_or_span(tmp_path, spans):
    with FakeOpenAIServer(leaky_reply) as server:
        outcome = await _eval01(tmp_path, live_env(server, VITRINE_JUDGE_ADMISSION="skip"))
        answered = [r for r in server.requests if not is_judge(r) and not is_stage(r)]
    assert outcome.exit_code is ExitCode.PASS, outcome.summary
    assert answered, "the subject was never asked"
    # The answer itself is kept, its credentials replaced where they stood.
    previews = [
        line
        for path in (tmp_path / "live" / "runs").rglob("trials.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert any("Your key is [redacted]" in line for line in previews), previews
    assert any("https://[redacted]@mirror.example.com/v1" in line for line in previews)
    assert any("Basic [redacted]" in line for line in previews)
    assert receipt(tmp_path)["trials"]

    pages = export_board(tmp_path, tmp_path / "board-copy")
    assert pages > 1
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "trials.jsonl" for p in written)
    for path in written:
        data = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret!r} is in {path.relative_to(tmp_path)}"

    tracing.shutdown()
    finished = spans.get_finished_spans()
    outputs = [
        str(value)
        for span in finished
        for key, value in (span.attributes or {}).items()
        if key == "gen_ai.output.messages"
    ]
    assert outputs, "no model output was captured in a span"
    for span in finished:
        for value in (span.attributes or {}).values():
            for secret in SECRETS:
                assert secret not in str(value), f"{secret!r} is in span {span.name}"


async def test_a_base_url_with_credentials_is_refused_in_a_sentence_before_any_call(tmp_path):
    with FakeOpenAIServer(leaky_reply) as server:
        environ = live_env(server, VITRINE_JUDGE_ADMISSION="skip")
        environ["OPENAI_BASE_URL"] = f"http://shopper:{PASSWORD}@127.0.0.1:{server.port}/v1"
        # The caller's mistake (exit 2 on the command line), never an unready service (4) or a
        # run of bad_response trials.
        with pytest.raises(UsageError, match=r"OPENAI_BASE_URL holds credentials \(user:passw"):
            await _eval01(tmp_path, environ)
        sent = server.request_count
    assert sent == 0
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        assert PASSWORD.encode() not in path.read_bytes()


@pytest.mark.parametrize("name", ["OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "ANTHROPIC_BASE_URL"])
def test_the_command_line_refuses_a_credentialed_service_url_with_exit_2(
    name, tmp_path, monkeypatch, capsys
):
    from vitrine._cli import main

    with FakeOpenAIServer(leaky_reply) as server:
        for key, value in live_env(server).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv(name, f"https://shopper:{PASSWORD}@127.0.0.1:{server.port}/v1")
        argv = ["--eval-plan", "eval01-agent", "--provider", "openai", "--confirm-paid"]
        code = main([*argv, "--output", str(tmp_path)])
        sent = server.request_count
    out, err = capsys.readouterr()
    assert (code, sent, out) == (2, 0, "")
    assert err == (
        f"vitrine: error: {name} holds credentials (user:password@); vitrine sends them only "
        "in a header, from the API key setting, so take them out of the URL\n"
    )
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


async def test_vitrine_serve_streams_the_answer_without_its_credentials(monkeypatch):
    import httpx

    from vitrine.service._app import ServiceConfig, create_app
    from vitrine.service._protocol import ServiceOptions
    from vitrine_shop.served_assistant import create_assistant

    with FakeOpenAIServer(leaky_reply) as server:
        for name, value in live_env(server).items():
            monkeypatch.setenv(name, value)
        options = ServiceOptions(
            provider="openai", model="fake-subject", suite_options={"front_desk": False}
        )
        app = create_app(create_assistant(options), ServiceConfig())
        await app.warm_up()
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://service") as client:
            reply = await client.post(
                "/v1/chat",
                json={"message": "I need a tent for two, what do you suggest?"},
            )
        answered = server.request_count
    assert reply.status_code == 200
    assert answered >= 1
    assert "message.final" in reply.text
    assert "Your key is [redacted]" in reply.text
    for secret in SECRETS:
        assert secret not in reply.text


def test_a_model_built_on_a_credentialed_url_is_refused_in_python_too():
    from vitrine.providers._openai_compat import OpenAICompatibleModel

    with pytest.raises(ValueError, match=r"base_url holds credentials \(user:password@\)"):
        OpenAICompatibleModel(
            "m", api_key=CANARY_KEY, base_url=f"http://shopper:{PASSWORD}@127.0.0.1:9/v1"
        )
