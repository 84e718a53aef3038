"""Fakes shared by the live-lane tests: a judge model, a paid-looking scripted subject, and an
HTTP backend that lets FakeOpenAIServer answer as the scripted shop model and a judge."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from pathlib import Path

from vitrine._bench.response import TokenUsage
from vitrine.providers import (
    ChatCompletion,
    ChatMessage,
    ChatRequest,
    ProviderError,
    ProviderFailure,
)
from vitrine.providers._base import Provenance, ResponseFormat, ToolCallRequest, ToolSpec
from vitrine.testing._openai_server import FakeReply, FakeRequest
from vitrine_shop.scripted import ScriptedFaults, ScriptedShopModel
from vitrine_shop.workflow.stages import MODEL_STAGES

JUDGE_FORMAT = "criterion_verdicts"
CANARY_KEY = "sk-canarykey-0123456789abcdefghijklmnop"
CANARY_PATH = "canary-endpoint-host-5521"
CANARY_ERROR = "CANARY-ERROR-BODY-8842"


def verdicts(ids, met=None):
    """A judge reply: every id met unless listed in ``met`` as False."""
    met = met or {}
    return {
        "verdicts": [
            {"criterion": i, "met": met.get(i, True), "explanation": f"{i} checked"} for i in ids
        ],
        "summary": "judged",
    }


def _calibration_labels():
    from vitrine_shop.evals.live.calibration import examples_for
    from vitrine_shop.scenarios import load_scenarios

    # The content-free hard cases (a refusal, the step-limit message) recur across scenarios
    # with each scenario's criteria; the judge reads only the ids it was asked about.
    labels: dict[str, dict[str, bool]] = {}
    for scenario in load_scenarios().values():
        for example in examples_for(scenario, ""):
            labels.setdefault(example.answer, {}).update(example.labels)
    return labels


CALIBRATION_LABELS = _calibration_labels()


def calibration_reply(messages):
    """The labelled verdicts when the judge is shown a calibration answer, else None.

    A fake judge that knows the labels passes admission, so the tests of what comes after
    admission see an admitted judge; ``FakeJudge(calibrated=False)`` does not know them.
    """
    prompt = messages[-1]["content"] if isinstance(messages[-1], dict) else messages[-1].content
    if "<<<ANSWER\n" not in (prompt or ""):
        return None
    answer = prompt.split("<<<ANSWER\n", 1)[1].split("\nANSWER>>>", 1)[0]
    labels = CALIBRATION_LABELS.get(answer)
    if labels is None:
        return None
    return {cid: {"met": met, "explanation": "labelled"} for cid, met in labels.items()}


def criterion_ids(response_format):
    schema = (
        response_format["json_schema"]["schema"]
        if "json_schema" in response_format
        else (response_format)
    )
    return schema["required"]


class FakeJudge:
    """An in-process judge model; ``policy(ids) -> content`` decides each reply."""

    def __init__(self, policy=None, model_id="judge-model", *, calibrated=True):
        self.policy = policy or (lambda ids: json.dumps(verdicts(ids)))
        self._model_id = model_id
        self.calibrated = calibrated
        self.calls = 0
        self.calibration_calls = 0

    @property
    def model_id(self):
        return self._model_id

    @property
    def provenance(self):
        return Provenance.PAID

    async def complete(self, request):
        labelled = calibration_reply(request.messages) if self.calibrated else None
        if labelled is not None:
            self.calibration_calls += 1
            return ChatCompletion(json.dumps(labelled), usage=TokenUsage(300, 60))
        self.calls += 1
        ids = criterion_ids(dict(request.response_format.schema))
        content = self.policy(ids)
        if isinstance(content, BaseException):
            raise content
        return ChatCompletion(content, usage=TokenUsage(300, 60))


class PaidScripted(ScriptedShopModel):
    """The scripted shop model presented as a paid subject."""

    def __init__(self, faults=None, *, fail_with=None):
        super().__init__(faults or ScriptedFaults())
        self.fail_with = fail_with

    @property
    def provenance(self):
        return Provenance.PAID

    async def complete(self, request):
        if self.fail_with is not None:
            raise self.fail_with
        return await super().complete(request)


def provider_failure(detail=CANARY_ERROR):
    return ProviderError(ProviderFailure.SERVER_ERROR, detail)


# -- HTTP ------------------------------------------------------------------------------------


def chat_request(body) -> ChatRequest:
    """Rebuild the ChatRequest a provider sent, so the scripted model can answer it."""
    messages = []
    for m in body["messages"]:
        calls = tuple(
            ToolCallRequest(c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in m.get("tool_calls") or ()
        )
        messages.append(
            ChatMessage(m["role"], m.get("content"), calls, m.get("tool_call_id"), m.get("name"))
        )
    tools = tuple(
        ToolSpec(
            t["function"]["name"],
            t["function"].get("description", ""),
            t["function"].get("parameters", {}),
        )
        for t in body.get("tools") or ()
    )
    fmt = body.get("response_format")
    response_format = None
    purpose = "agent"
    if fmt:
        name = fmt["json_schema"]["name"]
        response_format = ResponseFormat(name, fmt["json_schema"]["schema"])
        purpose = name if name in MODEL_STAGES else "judge"
    return ChatRequest(tuple(messages), tools, response_format, purpose=purpose)


def is_judge(request: FakeRequest) -> bool:
    fmt = (request.body or {}).get("response_format") or {}
    if fmt.get("type") == "json_object":  # the schema rides along, without its name
        properties = (fmt.get("schema") or {}).get("properties") or {}
        return bool(properties) and all(
            "met" in (p.get("properties") or {}) for p in properties.values()
        )
    return (fmt.get("json_schema") or {}).get("name") == JUDGE_FORMAT


def is_stage(request: FakeRequest) -> bool:
    fmt = (request.body or {}).get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name") in MODEL_STAGES


_POOL = concurrent.futures.ThreadPoolExecutor(4)


def scripted_reply(request: FakeRequest) -> FakeReply:
    """Answer as the healthy scripted shop model (subject or stage) or an all-met judge."""
    body = request.body
    if is_judge(request):
        labelled = calibration_reply(body["messages"])
        if labelled is not None:
            return FakeReply.structured(labelled)
        fmt = body["response_format"]
        return FakeReply.structured(verdicts(criterion_ids(fmt.get("schema") or fmt)))
    # The server calls this on its own event loop's thread: run the async model elsewhere.
    completion = _POOL.submit(
        asyncio.run, ScriptedShopModel().complete(chat_request(body))
    ).result()
    if completion.tool_calls:
        from vitrine.testing._openai_server import FakeToolCall

        return FakeReply.tools(
            *(FakeToolCall(c.name, c.arguments, c.id) for c in completion.tool_calls),
            content=completion.content,
        )
    return FakeReply.text(completion.content or "")


def live_env(server, **extra):
    """An OpenAI configuration pointing at the fake server, with canaries in key and URL."""
    env = {
        "OPENAI_API_KEY": CANARY_KEY,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{server.port}/{CANARY_PATH}/v1",
        "VITRINE_MODEL": "fake-subject",
        "VITRINE_PROVIDER_MAX_RETRIES": "1",
        "VITRINE_PROVIDER_TIMEOUT_S": "5",
    }
    env.update(extra)
    return env


def assert_no_canary(root: Path, *canaries: str) -> int:
    """Walk every file under ``root``; none may contain a canary. Returns the files read."""
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files, "nothing was written"
    for path in files:
        data = path.read_bytes()
        for canary in canaries:
            assert canary.encode() not in data, f"{canary} leaked into {path}"
    return len(files)


def receipt(root: Path) -> dict:
    sessions = sorted((root / "live" / "live-sessions").glob("*/outcome.json"))
    assert sessions, "no receipt was written"
    return json.loads(sessions[-1].read_text())
