"""`vitrine serve` takes the reply timeout and the output ceiling a local model needs."""

from __future__ import annotations

import pytest

from vitrine._redact import forget_secrets
from vitrine.service._command import build_parser, main
from vitrine.service._protocol import ServiceOptions
from vitrine.service._providers import provider_model

_FREE = {
    "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1",
    "VITRINE_MODEL": "smollm2",
    "VITRINE_PROVIDER_COST": "free",
}


@pytest.fixture(autouse=True)
def _free_endpoint(monkeypatch):
    for name, value in _FREE.items():
        monkeypatch.setenv(name, value)
    yield
    forget_secrets()


def test_the_reply_timeout_and_the_ceiling_are_parsed():
    args = build_parser().parse_args(["--reply-timeout", "300", "--max-output-tokens", "256"])
    assert (args.reply_timeout, args.max_output_tokens) == (300.0, 256)
    assert build_parser().parse_args([]).reply_timeout == 60.0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--reply-timeout", "0"], "argument --reply-timeout: '0' is not between 0.001 and 3600"),
        (["--max-output-tokens", "0"], "argument --max-output-tokens: '0' is not a whole number"),
    ],
)
def test_a_bad_timeout_or_ceiling_is_refused_with_exit_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_the_served_model_gets_the_ceiling_from_the_flag():
    model, reason = provider_model(ServiceOptions(provider="openai", max_output_tokens=256))
    assert reason is None and model is not None
    assert model.max_output_tokens == 256  # type: ignore[attr-defined]


def test_a_ceiling_that_does_not_fit_the_context_leaves_the_service_unready_with_the_numbers():
    model, reason = provider_model(ServiceOptions(provider="openai", max_output_tokens=4000))
    assert model is None
    assert reason is not None
    assert "VITRINE_SUBJECT_MAX_OUTPUT_TOKENS (4000) leaves 96" in reason
