"""docs/testing.md's example runs as written against the fake server it describes."""

from __future__ import annotations

import pytest
from docs_examples import run_page

pytest.importorskip("openai")


def test_the_testing_page_runs(tmp_path):
    namespace = run_page("testing.md", tmp_path)
    server = namespace["server"]
    assert server.request_count == 3
    assert server.script_errors == []
