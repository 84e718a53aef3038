import json

import pytest

from vitrine.judge._base import EXPLANATION_LIMIT, Criterion
from vitrine.judge._llm import JUDGE_EXPLANATION_CHARS, LLMJudge, judge_schema
from vitrine.providers import ChatCompletion, ProviderError, ProviderFailure
from vitrine.providers._base import Provenance
from vitrine.subjects import TokenUsage

CRITERIA = (
    Criterion("a", "first criterion"),
    Criterion("b", "second criterion"),
    Criterion("c", "third criterion"),
    Criterion("d", "fourth criterion"),
)


class OneReply:
    def __init__(self, reply):
        self.reply = reply
        self.requests = []

    @property
    def model_id(self):
        return "judge-model"

    @property
    def provenance(self):
        return Provenance.PAID

    async def complete(self, request):
        self.requests.append(request)
        if isinstance(self.reply, BaseException):
            raise self.reply
        return self.reply


USAGE = TokenUsage(120, 40)


def reply(verdicts, summary="done", usage=USAGE):
    return ChatCompletion(json.dumps({"verdicts": verdicts, "summary": summary}), usage=usage)


def verdict(cid, met=True, why="reason"):
    return {"criterion": cid, "met": met, "explanation": why}


async def test_all_criteria_met_scores_100_and_records_tokens_from_one_call():
    model = OneReply(reply([verdict(c.id) for c in CRITERIA]))
    result = await LLMJudge(model).evaluate("task", "answer", CRITERIA)
    assert result.usable and result.score == 100.0
    assert (result.input_tokens, result.output_tokens) == (120, 40)
    assert len(model.requests) == 1


async def test_three_of_four_scores_75_with_each_verdict_kept_in_criteria_order():
    rows = [verdict("d"), verdict("c", met=False), verdict("b"), verdict("a")]
    result = await LLMJudge(OneReply(reply(rows))).evaluate("task", "answer", CRITERIA)
    assert result.score == 75.0
    assert [v.criterion for v in result.verdicts] == ["a", "b", "c", "d"]
    assert [v.met for v in result.verdicts] == [True, True, False, True]


@pytest.mark.parametrize(
    "rows",
    [
        [verdict("a"), verdict("b"), verdict("c")],  # one missing
        [verdict("a"), verdict("b"), verdict("c"), verdict("d"), verdict("a")],  # repeated
        [verdict("a"), verdict("b"), verdict("c"), verdict("zzz")],  # unknown id
        [verdict("a"), verdict("b"), verdict("c"), {"criterion": "d", "met": "yes"}],
        [verdict("a"), verdict("b"), verdict("c"), {"criterion": "d", "met": True}],
    ],
)
async def test_a_reply_that_is_not_one_boolean_verdict_per_criterion_fails_the_evaluation(rows):
    result = await LLMJudge(OneReply(reply(rows))).evaluate("task", "answer", CRITERIA)
    assert result.evaluation_failed and not result.usable and result.score is None
    assert all(v.met is None for v in result.verdicts)
    assert result.input_tokens == 120  # the spent tokens are still recorded


async def test_text_that_is_not_json_fails_the_evaluation():
    model = OneReply(ChatCompletion("Sure! All criteria are met."))
    result = await LLMJudge(model).evaluate("task", "answer", CRITERIA)
    assert result.evaluation_failed
    assert "not JSON" in result.summary


async def test_a_provider_failure_is_a_failed_evaluation_that_keeps_only_the_category():
    canary = "CANARY-provider-body-7731"
    model = OneReply(ProviderError(ProviderFailure.SERVER_ERROR, canary))
    result = await LLMJudge(model).evaluate("task", "answer", CRITERIA)
    assert result.evaluation_failed
    assert result.summary == "judge provider failure: server_error"
    assert canary not in json.dumps(result.to_dict())


async def test_explanations_are_scrubbed_and_bounded():
    long = "see https://internal.example.com/x?key=abc " + "word " * 200
    rows = [verdict(c.id, why=long) for c in CRITERIA]
    result = await LLMJudge(OneReply(reply(rows))).evaluate("task", "answer", CRITERIA)
    for v in result.verdicts:
        assert v.explanation is not None
        assert len(v.explanation) <= EXPLANATION_LIMIT
        assert "internal.example.com" not in v.explanation


async def test_the_request_asks_for_structured_output_within_the_token_ceiling():
    model = OneReply(reply([verdict(c.id) for c in CRITERIA]))
    await LLMJudge(model, max_output_tokens=1200).evaluate("task", "answer", CRITERIA)
    request = model.requests[0]
    assert request.purpose == "judge"
    assert request.max_output_tokens == 1200
    assert request.response_format is not None
    assert dict(request.response_format.schema) == judge_schema(CRITERIA)


def test_the_schema_fixes_each_criterion_in_place_with_a_bounded_explanation():
    schema = judge_schema(CRITERIA)
    assert list(schema["properties"]) == schema["required"] == ["a", "b", "c", "d"]
    assert schema["additionalProperties"] is False
    for verdict_schema in schema["properties"].values():
        assert verdict_schema["required"] == ["met", "explanation"]
        assert verdict_schema["properties"]["explanation"]["maxLength"] == JUDGE_EXPLANATION_CHARS
    # Within the bound the local grammar keeps, so a small model cannot ramble.
    assert JUDGE_EXPLANATION_CHARS <= 64


def keyed(met=None, why="ok"):
    met = met or {}
    return {c.id: {"met": met.get(c.id, True), "explanation": why} for c in CRITERIA}


async def test_a_fixed_order_reply_is_read_in_criteria_order():
    content = json.dumps(keyed({"b": False}))
    result = await LLMJudge(OneReply(ChatCompletion(content))).evaluate("t", "a", CRITERIA)
    assert result.usable and result.score == 75.0
    assert [v.met for v in result.verdicts] == [True, False, True, True]


async def test_a_fixed_order_reply_missing_a_criterion_fails_the_evaluation():
    rows = keyed()
    del rows["c"]
    result = await LLMJudge(OneReply(ChatCompletion(json.dumps(rows)))).evaluate("t", "a", CRITERIA)
    assert result.evaluation_failed
    assert "criteria without a verdict: c" in result.summary


async def test_raw_control_characters_inside_an_explanation_do_not_spoil_the_verdict():
    raw = json.dumps(keyed(why="PLACEHOLDER")).replace("PLACEHOLDER", "tab\there\nnewline")
    assert "\t" in raw and "\n" in raw
    result = await LLMJudge(OneReply(ChatCompletion(raw))).evaluate("t", "a", CRITERIA)
    assert result.usable, result.summary
