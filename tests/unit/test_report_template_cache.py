"""The HTML report's compiled-template cache: same page, and never a reason to fail."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from jinja2 import Environment

from vitrine.reports import _html as html, _templates as templates
from vitrine.reports._model import GateRow, SuiteReport


def _report() -> SuiteReport:
    return SuiteReport(
        suite="demo",
        plan="offline-suite",
        mode="suite",
        provenance="offline-deterministic",
        started_at="2026-01-01T00:00:00+00:00",
        duration_s=0.5,
        exit_code=0,
        exit_meaning="pass",
        exit_reason="all gates passed",
        gates=[
            GateRow(
                name="honesty",
                authority="gate",
                status="PASS",
                state="measured",
                value=1.0,
                label="<b>3/3</b> claims",
                exit_code=0,
            )
        ],
        benchmarks=[],
    )


@pytest.fixture(autouse=True)
def _fresh_environment() -> Iterator[None]:
    templates.environment.cache_clear()
    yield
    templates.environment.cache_clear()


def _render_without_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("VITRINE_CACHE_DIR", str(blocker))
    templates.environment.cache_clear()
    page = html.render_html(_report())
    templates.environment.cache_clear()
    return page


def test_a_page_rendered_from_the_cache_is_the_page_compiled_afresh(monkeypatch, tmp_path):
    fresh = _render_without_cache(monkeypatch, tmp_path)
    cache = tmp_path / "cache"
    monkeypatch.setenv("VITRINE_CACHE_DIR", str(cache))

    first = html.render_html(_report())
    assert list((cache / "templates").iterdir()), "the compiled template was not stored"

    templates.environment.cache_clear()

    def no_compiling(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cached template was compiled again")

    monkeypatch.setattr(Environment, "compile", no_compiling)
    second = html.render_html(_report())
    assert first == second == fresh
    assert "&lt;b&gt;3/3&lt;/b&gt;" in second  # autoescape holds in the cached code too


def test_a_cache_folder_that_cannot_be_made_costs_speed_only(monkeypatch, tmp_path):
    page = _render_without_cache(monkeypatch, tmp_path)
    assert page.lower().startswith("<!doctype html>")
    assert not (tmp_path / "not-a-folder").read_text(encoding="utf-8")


def test_a_damaged_cache_file_is_compiled_again(monkeypatch, tmp_path):
    cache = tmp_path / "cache"
    monkeypatch.setenv("VITRINE_CACHE_DIR", str(cache))
    expected = html.render_html(_report())
    for stored in (cache / "templates").iterdir():
        stored.write_bytes(b"not a compiled template")
    templates.environment.cache_clear()
    assert html.render_html(_report()) == expected


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX ownership and modes")
def test_a_cache_folder_others_can_write_to_is_not_used(monkeypatch, tmp_path):
    # Loading a cached template executes it: a folder another user could write to is refused.
    shared = tmp_path / "shared" / "templates"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    monkeypatch.setenv("VITRINE_CACHE_DIR", str(shared.parent))
    assert templates._template_cache_dir() is None
    html.render_html(_report())
    assert not list(shared.iterdir())


def test_no_store_root_is_made_just_to_hold_the_cache(monkeypatch, tmp_path):
    # A report for a store elsewhere (--output) leaves nothing where the environment points.
    monkeypatch.delenv("VITRINE_CACHE_DIR", raising=False)
    absent = tmp_path / "no-store-here"
    monkeypatch.setenv("VITRINE_HOME", str(absent))
    assert templates._template_cache_dir() is None
    assert html.render_html(_report()).lower().startswith("<!doctype html>")
    assert not absent.exists()

    absent.mkdir()
    assert templates._template_cache_dir() == absent / "cache" / "templates"
