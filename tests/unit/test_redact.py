from vitrine.redact import (
    bound_text,
    describe_exception,
    forget_secrets,
    register_secret,
    sanitize_text,
)


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
