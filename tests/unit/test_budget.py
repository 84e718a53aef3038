"""The session spend ceiling: the meter's bound, its refusals, and the flags that set it."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from vitrine import (
    Arm,
    BenchmarkDefinition,
    Case,
    ChanceFloor,
    ExitCode,
    Observation,
    SubjectResponse,
    admit,
    check,
    evaluate,
)
from vitrine._bench.response import TokenUsage
from vitrine._budget import (
    BudgetReached,
    MeteredModel,
    Price,
    PriceTableError,
    SpendCeiling,
    SpendMeter,
    load_price_table,
)
from vitrine._cli import main as cli_main
from vitrine.providers import ChatCompletion, ChatMessage, ChatRequest
from vitrine.providers._base import Provenance


class Model:
    """Replies after a random delay with a random usage; counts what it was sent."""

    def __init__(self, seed: int, *, usage: bool = True) -> None:
        self.rng = random.Random(seed)
        self.sent = 0
        self.usage = usage

    model_id = "openai:small"
    provenance = Provenance.PAID

    async def complete(self, request: ChatRequest) -> ChatCompletion:
        self.sent += 1
        await asyncio.sleep(self.rng.random() / 500)
        prompt = self.rng.randint(5, 50)
        output = self.rng.randint(1, request.max_output_tokens)
        return ChatCompletion("ok", usage=TokenUsage(prompt, output) if self.usage else None)


REQUEST = ChatRequest((ChatMessage("user", "hi"),), max_output_tokens=40)


async def hammer(model: MeteredModel, workers: int, per_worker: int) -> int:
    refused = 0

    async def worker() -> None:
        nonlocal refused
        for _ in range(per_worker):
            try:
                await model.complete(REQUEST)
            except BudgetReached:
                refused += 1

    await asyncio.gather(*(worker() for _ in range(workers)))
    return refused


@pytest.mark.parametrize("seed", range(8))
async def test_tokens_exceed_the_ceiling_by_at_most_the_open_requests_own_spend(seed):
    inner = Model(seed)
    meter = SpendMeter(SpendCeiling(max_tokens=500))
    refused = await hammer(MeteredModel(inner, meter), workers=6, per_worker=20)
    assert meter.reached is not None and refused > 0
    assert inner.sent == meter.calls  # a refused request is never sent
    # Each request spends at most its prompt (<= 50) and its output ceiling (40): the one that
    # crossed the ceiling and those still open then are all that can land past it.
    assert meter.tokens - 500 <= (1 + meter.open_at_reach) * (50 + 40)
    assert meter.open_at_reach <= 5


@pytest.mark.parametrize("seed", range(4))
async def test_calls_never_exceed_the_call_ceiling(seed):
    inner = Model(seed)
    meter = SpendMeter(SpendCeiling(max_calls=17))
    refused = await hammer(MeteredModel(inner, meter), workers=5, per_worker=10)
    assert inner.sent == meter.calls == 17 and refused == 50 - 17


async def test_cost_is_computed_from_declared_prices_and_stops_the_session():
    meter = SpendMeter(SpendCeiling(max_cost=0.001), {"small": Price(10.0, 30.0)})
    inner = Model(3)
    await hammer(MeteredModel(inner, meter), workers=2, per_worker=30)
    expected = (meter.input_tokens * 10.0 + meter.output_tokens * 30.0) / 1e6
    assert meter.cost == pytest.approx(expected)
    assert meter.reached is not None and "--max-cost" in meter.reached
    assert meter.to_dict()["spent"]["cost_usd"] == pytest.approx(expected, abs=1e-6)


async def test_a_reply_without_usage_stops_a_token_ceiling_it_cannot_count():
    meter = SpendMeter(SpendCeiling(max_tokens=10_000))
    inner = Model(1, usage=False)
    refused = await hammer(MeteredModel(inner, meter), workers=1, per_worker=3)
    assert inner.sent == 1 and refused == 2
    assert "reported no usage" in (meter.reached or "")


def test_prices_match_a_model_by_name_after_its_provider():
    meter = SpendMeter(SpendCeiling(max_cost=1.0), {"small": Price(1.0, 2.0)})
    assert meter.price_of("openai:small") == Price(1.0, 2.0)
    assert meter.unpriced({"subject": "openai:small", "judge": "openai:big"}) == [
        "the judge model 'openai:big'"
    ]


def test_the_price_table_is_validated(tmp_path):
    good = tmp_path / "prices.json"
    good.write_text(json.dumps({"small": {"input_per_million": 0.15, "output_per_million": 0.6}}))
    assert load_price_table(good) == {"small": Price(0.15, 0.6)}
    for body, says in (
        ("{", "not JSON"),
        ("[]", "non-empty JSON object"),
        (json.dumps({"m": {"input_per_million": -1, "output_per_million": 1}}), "non-negative"),
        (json.dumps({"m": {"input_per_million": 1}}), "output_per_million"),
    ):
        bad = tmp_path / "bad.json"
        bad.write_text(body)
        with pytest.raises(PriceTableError, match=says):
            load_price_table(bad)
    with pytest.raises(PriceTableError, match="no such file"):
        load_price_table(tmp_path / "absent.json")


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--max-tokens", "0"], "--max-tokens must be at least 1"),
        (["--max-calls", "many"], "--max-calls must be a whole number"),
        (["--max-cost", "nan"], "--max-cost must be a positive number"),
        (["--max-cost", "2"], "--max-cost needs --price-table"),
        (["--price-table", "nowhere.json"], "no such file"),
    ],
)
def test_bad_ceilings_are_refused_before_anything_runs(capsys, tmp_path, extra, says):
    argv = ["--eval-plan", "eval01-agent", "--confirm-paid", "--output", str(tmp_path), *extra]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("error:") == 1 and "Traceback" not in err
    assert not (tmp_path / "live").exists()


def test_an_offline_plan_refuses_a_spend_ceiling(capsys, tmp_path):
    assert cli_main(["--all", "--max-calls", "5", "--output", str(tmp_path)]) == 2
    assert "a spend ceiling bounds the model calls of a live plan" in capsys.readouterr().err


def test_the_api_stops_new_trials_at_the_ceiling_and_reports_them_not_measured():
    meter = SpendMeter(SpendCeiling(max_calls=3))
    model = MeteredModel(Model(9), meter)

    async def subject(case):
        reply = await model.complete(REQUEST)
        return SubjectResponse(answer=f"{reply.content} {case.input}")

    @check("answered")
    def answered(case, response):
        return Observation.measured(1.0, True)

    floor = ChanceFloor.not_derivable("a toy predicate")
    cases = [Case(f"c{i}", f"topic {i}") for i in range(6)]
    definition = BenchmarkDefinition("budget-toy", "1.0.0", cases, [admit(answered, floor)])
    result = evaluate(definition, Arm("small", subject), concurrency=1, spend=meter)
    (run,) = result.runs
    assert meter.calls == 3 and model.inner.sent == 3
    stopped = {case: why for case, why in run.subject_errors.items() if "budget" in why}
    assert len(stopped) == 3 and len(run.subject_errors) == 3
    assert result.exit_code is ExitCode.NOT_MEASURED
    with pytest.raises(ValueError, match="counted in this process"):
        evaluate(definition, Arm("small", subject), spend=meter, executor="ray")
