"""`.env.example` lists every environment variable vitrine reads, and nothing it does not."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A quoted name with one of the prefixes vitrine reads from the environment.
_READ = re.compile(
    r"""["']((?:VITRINE|OPENAI|AZURE_OPENAI|ANTHROPIC|EVAL|LANGFUSE|OTEL|PHOENIX|RAGAS|PROMPTFOO)_[A-Z0-9_]+)["']"""
)
_LISTED = re.compile(r"^#?\s*([A-Z][A-Z0-9_]+)=", re.MULTILINE)


def _read_in_code() -> set[str]:
    names: set[str] = set()
    # The harness and the shop: the example file serves the repository, both distributions.
    for path in [*(ROOT / "src").rglob("*.py"), *(ROOT / "shop" / "src").rglob("*.py")]:
        names.update(_READ.findall(path.read_text(encoding="utf-8")))
    return names


def _listed() -> set[str]:
    return set(_LISTED.findall((ROOT / ".env.example").read_text(encoding="utf-8")))


def test_every_variable_the_code_reads_is_listed():
    missing = sorted(_read_in_code() - _listed())
    assert not missing, f"add these to .env.example: {missing}"


def test_every_listed_variable_is_read_somewhere():
    code = _read_in_code() | {"HF_HUB_OFFLINE"}
    stale = sorted(name for name in _listed() - code if not name.startswith("HF_"))
    assert not stale, f".env.example lists variables nothing reads: {stale}"


def test_the_example_holds_no_real_looking_secret():
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    assert not re.search(r"sk-[A-Za-z0-9]{16,}", text)
    for line in text.splitlines():
        if re.match(r"^[A-Z0-9_]*(KEY|SECRET|TOKEN)[A-Z0-9_]*=", line):
            assert line.split("=", 1)[1] in ("", "<your-key>"), line
