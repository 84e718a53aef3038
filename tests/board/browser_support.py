"""A headless Chromium opened on a running board, for the tests that drive it as a person would.

Chromium is Debian's (/usr/bin/chromium); the tests that need it are skipped without it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu"]

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian chromium is not installed at /usr/bin/chromium (apt-get install chromium)",
)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A launched headless browser, closed on leaving."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def board_browser(server: Any) -> Iterator[tuple[Any, str, list[str], list[str]]]:
    """A tab logged in to the board: (tab, board URL, dialogs seen, foreign requests).

    On leaving, no dialog may have opened (a script from the store ran) and no request may
    have gone outside the board.
    """
    url = server.url
    dialogs: list[str] = []
    foreign: list[str] = []
    with chromium() as browser:
        tab = browser.new_page()
        tab.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        tab.on(
            "request",
            lambda r: None if r.url.startswith(url) else foreign.append(r.url),
        )
        tab.set_default_timeout(20_000)
        tab.goto(server.login_url)  # as its owner does: the printed address, token and all
        assert tab.url == url, "the token stays out of the address once it is a cookie"
        yield tab, url, dialogs, foreign
    assert dialogs == [], "a script from the store ran in the board"
    assert foreign == [], "the board loaded something from outside itself"
