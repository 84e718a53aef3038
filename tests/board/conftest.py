"""Fixtures of the board's tests: one real store per session, the board on it, a browser."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from board_fixtures import build_redteam, build_store
from browser_support import board_browser


@pytest.fixture(scope="session")
def board_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("board-store")
    build_store(root)
    build_redteam(root)
    return root


@pytest.fixture
def served(board_store: Path) -> Iterator[tuple[object, object]]:
    """The board over the shared store and its running server (``server.login_url`` opens it)."""
    from vitrine._board.app import Board
    from vitrine._board.server import serve

    board = Board(board_store)
    with serve(board) as server:
        yield board, server


@pytest.fixture
def page(served) -> Iterator[tuple[Any, str, list[str], list[str]]]:
    """A headless Chromium tab logged in to the board: (tab, URL, dialogs, foreign requests)."""
    with board_browser(served[1]) as opened:
        yield opened
