import hashlib

import pytest

from vitrine._redact import (
    bound_text,
    describe_exception,
    forget_secrets,
    redact_credentials,
    register_secret,
    sanitize_text,
)
from vitrine.judge._base import Criterion, rubric_hash
from vitrine.store._receipts import ReceiptStore, new_session_id


def test_urls_keys_and_bearer_tokens_are_scrubbed():
    text = (
        "POST https://canary-host.example.net/v1/chat failed; Authorization: Bearer abc.def "
        "api_key=sk-live-1234567890abcdef token: zzz"
    )
    out = sanitize_text(text, limit=500)
    for secret in ("canary-host", "abc.def", "sk-live", "zzz"):
        assert secret not in out


def test_registered_secrets_are_removed_verbatim():
    register_secret("hunter2-canary")
    try:
        assert "hunter2-canary" not in sanitize_text("the key hunter2-canary leaked")
    finally:
        forget_secrets()


def test_bounding_marks_the_cut():
    assert bound_text("abcdef", 4) == "abc…"
    assert bound_text("abc", 4) == "abc"
    assert len(sanitize_text("x " * 1000)) <= 240


def test_exception_description_names_the_type():
    assert describe_exception(TimeoutError()) == "TimeoutError"
    described = describe_exception(RuntimeError("bad at http://10.0.0.1:8080/x"))
    assert described.startswith("RuntimeError: bad at")
    assert "10.0.0.1" not in described


def test_ordinary_prose_survives():
    text = "catalogue.json: product GLX-2003 field price_chf must be > 0"
    assert sanitize_text(text) == text


# The live receipt that redacted itself: its seal, its rubric hash and one criterion id.
_DIGEST = hashlib.sha256(b"a sealed run").hexdigest()
_RUBRIC = rubric_hash([Criterion("recognizes-insufficient-evidence", "says when it cannot tell")])


def test_a_receipt_keeps_its_hashes_ids_and_folder_names(tmp_path):
    store = ReceiptStore(tmp_path)
    session = new_session_id()
    document = {
        "content_hash": f"sha256:{_DIGEST}",
        "row_digest": _DIGEST,
        "rubric_hash": _RUBRIC,
        "criteria": [{"criterion": "recognizes-insufficient-evidence", "met": True}],
        "run_id": "2026-09-10_07-08-15_45588192",
        "report": "reports/redteam-20261130T180000Z-0a1b2c-offline-suite",
        "note": f"sealed as sha256:{_DIGEST} under rubric {_RUBRIC}",
    }
    store.write(session, document)
    stored = store.read(session)
    assert {key: stored[key] for key in document} == document


@pytest.mark.parametrize(
    "planted",
    [
        "sk-proj-Zx81Lq0aTt4eWm2PvN7cRb5YhK3uJ9sD",  # provider prefix
        "sk-abcdefghijklmnopqrstuvwxyz",  # prefix without a digit
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9Pl",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "AKIAABCDEFGHIJKLMNOP",
        "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cD1fG2hJ4",  # bare random key
    ],
)
def test_a_planted_key_shape_is_removed_anywhere(planted):
    assert planted not in sanitize_text(f"the provider said {planted} was refused", limit=500)


@pytest.mark.parametrize(
    "text",
    [
        "api_key=Zx81Lq0aTt4e",
        "key=Zx81Lq0aTt4e",
        "Authorization: Bearer Zx81Lq0aTt4e",
        "AZURE_OPENAI_API_KEY=abcdefghijklmnopqrstuvwxyzabcdef",
        "Ocp-Apim-Subscription-Key: 0f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "api-key: 0f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "Access denied: invalid subscription key 0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    ],
)
def test_a_key_in_an_assignment_header_or_key_context_is_removed(text):
    secret = text.rsplit(" ", 1)[-1].split("=")[-1]
    out = sanitize_text(text, limit=500)
    assert secret not in out and "[redacted]" in out


@pytest.mark.parametrize(
    "text",
    [
        f"sha256:{_DIGEST}",
        _DIGEST,
        _DIGEST[:32],  # an Azure-key-shaped hex string is a digest unless a key names it
        "criterion recognizes-insufficient-evidence was met",
        "key-facts-are-mentioned-in-the-answer-every-time",
        "missing key: price_chf",
    ],
)
def test_digests_and_identifiers_are_not_secrets(text):
    assert sanitize_text(text, limit=500) == text


# -- credentials in a model's own text ------------------------------------------------------

_KEY = "sk-live-9fQx2LmP7rT4vB8nK3wZ6yH1"


@pytest.fixture
def configured():
    register_secret(_KEY)
    register_secret("https://alice:S3cretPassw0rd@gw.example.com/v1", endpoint=True)
    register_secret("llm.internal.example.com", endpoint=True)
    yield
    forget_secrets()


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        (f"your key is {_KEY}.", _KEY),
        (f"shown as {_KEY[:12]}...{_KEY[-6:]}", _KEY[-6:]),  # a partly masked key
        (f"shown as {_KEY[:14]}****{_KEY[-9:]}", _KEY[:14]),
        ("the password is S3cretPassw0rd", "S3cretPassw0rd"),  # the configured URL's
        ("log in as alice:S3cretPassw0rd", "S3cretPassw0rd"),
        ("see https://bob:hunter22x@mirror.example.org/p", "hunter22x"),  # any URL's
        ("Authorization: Basic Ym9iOmh1bnRlcjIyeA==", "Ym9iOmh1bnRlcjIyeA=="),
        ("send Bearer tok3nAbcdefGhij", "tok3nAbcdefGhij"),
    ],
)
def test_a_credential_in_model_text_is_redacted_where_it_stood(configured, text, gone):
    out = redact_credentials(text)
    assert gone not in out and "[redacted]" in out
    assert sanitize_text(text, limit=500).count(gone) == 0


@pytest.mark.parametrize(
    "text",
    [
        "The gw.example.com mirror at https://example.com/ok is documented.",
        "llm.internal.example.com hosts the model",  # an endpoint: errors hide it, answers not
        "Basic steps first, then the Basic Understanding course.",
        "She is the bearer of good news; bearer bonds are gone.",
        "GLX-2003 costs 120 CHF; key facts are price and weight.",
        "sha256:" + _DIGEST,
    ],
)
def test_a_models_ordinary_words_urls_and_hosts_survive(configured, text):
    assert redact_credentials(text) == text


def test_a_short_configured_value_is_not_taken_out_of_every_word():
    register_secret("http://u:test@127.0.0.1:9/v1", endpoint=True)
    register_secret("test")  # an API key of four letters, as test setups use
    try:
        text = "a unit test of the ultimate upgrade"
        assert redact_credentials(text) == text  # answers keep their words
        assert "a unit" in sanitize_text(text) and "ultimate upgrade" in sanitize_text(text)
    finally:
        forget_secrets()


def test_each_configured_header_value_is_a_credential_in_model_text():
    from vitrine.tracing._settings import resolve_settings

    header = "Collector-Token-7f3Kq9Zp2Lw8"
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
        "OTEL_EXPORTER_OTLP_HEADERS": f"x-collector-token={header}",
    }
    try:
        assert resolve_settings(env) is not None
        out = redact_credentials(f"the collector wants {header} in every request")
        assert header not in out and "[redacted]" in out
        assert "7f3Kq9Zp" not in redact_credentials(f"it starts {header[:20]}")
    finally:
        forget_secrets()
