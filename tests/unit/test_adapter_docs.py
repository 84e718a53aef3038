"""The adapter pages: every ```python block runs, in order, against a fake OpenAI server.

Each page's examples talk to the server through the environment the SDK reads
(``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), so a page shows ``OpenAI()`` as a reader would
write it. A page added to :data:`PAGES` runs with :func:`agent_script` unless
:data:`SCRIPTS` gives it a script of its own.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from docs_examples import run_page

from vitrine.testing import FakeOpenAIServer, FakeReply, FakeRequest, FakeToolCall

PAGES = ["adapter-openai.md", "cache.md"]


def agent_script(request: FakeRequest) -> FakeReply:
    """Call the first tool offered (with the user's text as ``city``) until a tool answered,
    then answer in text; a request without tools gets a plain answer."""
    body = request.body or {}
    messages = body.get("messages") or []
    tools = body.get("tools") or []
    if messages and messages[-1].get("role") == "tool":
        return FakeReply.text(f"Forecast: {messages[-1]['content']}")
    if tools:
        name = tools[0]["function"]["name"]
        return FakeReply.tools(FakeToolCall(name, {"city": messages[0]["content"]}))
    return FakeReply.text("Hello!")


SCRIPTS: dict[str, Callable[[FakeRequest], FakeReply]] = {}


@pytest.mark.parametrize("page", PAGES)
def test_every_python_block_of_the_page_runs(page, tmp_path, monkeypatch, capsys):
    with FakeOpenAIServer(SCRIPTS.get(page, agent_script)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-docs")
        monkeypatch.delenv("VITRINE_PROVIDER_COST", raising=False)
        run_page(page, tmp_path)
        asked = server.request_count
    printed = capsys.readouterr().out
    assert asked > 0, f"docs/{page} never reached the model server"
    if page == "adapter-openai.md":
        assert "weather ok" in printed
        assert "[('lookup_order', {'order_id': 'A-1001', 'include_items': False}, 'ok')" in printed
    if page == "cache.md":
        assert "offline-deterministic+model-cache" in printed
        assert "1 1 1" in printed
        assert "is damaged (not JSON)" in printed
        assert "refuses a paid service" in printed
        assert asked == 1  # the second evaluation asked nothing
