"""Judge admission: a judge earns trust on labelled answers before its verdicts count."""

from __future__ import annotations

import json
import random

import pytest

from vitrine.judge._admission import (
    AdmissionPolicy,
    CalibrationExample,
    RefusedJudge,
    admit_judge,
)
from vitrine.judge._base import Criterion
from vitrine.judge._llm import LLMJudge
from vitrine.providers import ChatCompletion
from vitrine.providers._base import Provenance

CRITERIA = tuple(Criterion(c, f"criterion {c}") for c in ("a", "b", "c", "d"))


def _examples(cases: int = 4) -> list[CalibrationExample]:
    out = []
    for case in range(cases):
        for label, met in (("meets-all", True), ("misses-all", False)):
            out.append(
                CalibrationExample(
                    f"case-{case}",
                    label,
                    f"task {case}",
                    f"answer {case} {label}",
                    CRITERIA,
                    {c.id: met for c in CRITERIA},
                )
            )
    return out


class JudgeModel:
    """A chat model playing judge: ``decide(answer, criterion id) -> met``."""

    def __init__(self, decide):
        self.decide = decide
        self.calls = 0

    @property
    def model_id(self):
        return "judge-under-test"

    @property
    def provenance(self):
        return Provenance.LOCAL

    async def complete(self, request):
        self.calls += 1
        prompt = request.messages[-1].content
        answer = prompt.split("<<<ANSWER\n", 1)[1].split("\nANSWER>>>", 1)[0]
        ids = list(request.response_format.schema["required"])
        verdicts = {i: {"met": self.decide(answer, i), "explanation": "judged"} for i in ids}
        return ChatCompletion(json.dumps(verdicts))


def _labels_of(examples):
    return {(e.answer, cid): met for e in examples for cid, met in e.labels.items()}


async def test_a_judge_that_answers_at_random_is_refused():
    rng = random.Random(20261130)
    model = JudgeModel(lambda _answer, _cid: rng.random() < 0.5)
    admission = await admit_judge(LLMJudge(model), _examples())
    assert not admission.admitted
    assert admission.labels == 32 and model.calls == 8
    assert admission.interval is not None and admission.interval[0] <= 0.5
    assert admission.reason.startswith("refused: agreement")
    assert "several billion parameters" in admission.reason


async def test_a_scripted_judge_that_matches_the_labels_is_admitted():
    examples = _examples()
    labels = _labels_of(examples)
    model = JudgeModel(lambda answer, cid: labels[(answer, cid)])
    admission = await admit_judge(LLMJudge(model), examples)
    assert admission.admitted
    assert (admission.agreed, admission.labels, admission.agreement) == (32, 32, 1.0)
    assert admission.interval is not None and admission.interval[0] > 0.85
    assert admission.reason.startswith("admitted: agreement 32/32 = 1.00")


async def test_a_judge_that_calls_everything_met_is_refused_on_a_balanced_set():
    admission = await admit_judge(LLMJudge(JudgeModel(lambda *_: True)), _examples())
    assert not admission.admitted
    assert admission.agreed == 16


async def test_a_judge_whose_replies_do_not_parse_counts_as_disagreeing():
    class Babbler(JudgeModel):
        async def complete(self, request):
            self.calls += 1
            return ChatCompletion("I think it is fine.")

    admission = await admit_judge(LLMJudge(Babbler(None)), _examples(1))
    assert not admission.admitted
    assert (admission.agreed, admission.unusable) == (0, 2)
    assert "2 calibration evaluation(s) gave no usable verdict" in admission.reason


async def test_without_examples_a_judge_cannot_be_admitted():
    admission = await admit_judge(LLMJudge(JudgeModel(lambda *_: True)), [])
    assert not admission.admitted
    assert admission.to_dict()["agreement"] is None
    assert "no calibration examples" in admission.reason


async def test_one_mistake_in_sixteen_labels_still_passes_the_default_bar():
    examples = _examples(2)
    labels = _labels_of(examples)
    wrong = (examples[0].answer, "a")
    model = JudgeModel(lambda answer, cid: labels[(answer, cid)] != ((answer, cid) == wrong))
    admission = await admit_judge(LLMJudge(model), examples)
    assert (admission.agreed, admission.labels) == (15, 16)
    assert admission.admitted


async def test_a_judge_better_than_chance_but_below_the_bar_is_refused_for_that_reason():
    examples = _examples(5)  # 40 labels
    labels = _labels_of(examples)
    wrong = {(e.answer, "a") for e in examples[:7]} | {(examples[7].answer, "b")}
    model = JudgeModel(lambda answer, cid: labels[(answer, cid)] != ((answer, cid) in wrong))
    admission = await admit_judge(LLMJudge(model), examples)
    assert (admission.agreed, admission.labels) == (32, 40)
    assert admission.interval is not None and admission.interval[0] > 0.5
    assert admission.admitted  # 0.80 meets the bar exactly
    wrong.add((examples[8].answer, "c"))
    admission = await admit_judge(LLMJudge(model), examples)
    assert (admission.agreed, admission.admitted) == (31, False)
    assert "more often than chance, but not often enough" in admission.reason


async def test_a_stricter_bar_refuses_what_the_default_admits():
    examples = _examples(2)
    labels = _labels_of(examples)
    wrong = (examples[0].answer, "a")
    model = JudgeModel(lambda answer, cid: labels[(answer, cid)] != ((answer, cid) == wrong))
    admission = await admit_judge(LLMJudge(model), examples, AdmissionPolicy(min_agreement=1.0))
    assert not admission.admitted


async def test_a_refused_judge_makes_no_call_and_every_evaluation_is_not_measured():
    model = JudgeModel(lambda *_: True)
    admission = await admit_judge(LLMJudge(model), _examples(1))
    calls = model.calls
    stand_in = RefusedJudge(admission)
    result = await stand_in.evaluate("task", "answer", CRITERIA)
    assert model.calls == calls
    assert result.evaluation_failed and result.judge_calls == 0
    assert all(v.met is None for v in result.verdicts)
    assert "refused at admission (4/8" in result.summary


def test_a_calibration_example_must_label_exactly_its_criteria():
    with pytest.raises(ValueError, match="must label exactly its criteria"):
        CalibrationExample("c", "x", "task", "answer", CRITERIA, {"a": True})


def _with_hard_cases() -> list[CalibrationExample]:
    """The reference pair, a hard negative that meets three of four criteria, a hard positive."""
    negative = {c.id: c.id != "d" for c in CRITERIA}
    return [
        *_examples(2),
        CalibrationExample(
            "case-0", "limit", "task 0", "I hit my limit.", CRITERIA, negative, "the limit message"
        ),
        CalibrationExample(
            "case-0",
            "paraphrase",
            "task 0",
            "the same, reworded",
            CRITERIA,
            {c.id: True for c in CRITERIA},
            "the correct answer in other words",
        ),
    ]


async def test_a_judge_that_agrees_often_enough_but_passes_a_hard_negative_is_refused_by_name():
    examples = _with_hard_cases()
    labels = _labels_of(examples)
    model = JudgeModel(
        lambda answer, cid: True if answer == "I hit my limit." else labels[(answer, cid)]
    )
    admission = await admit_judge(LLMJudge(model), examples)
    assert (admission.agreed, admission.labels) == (23, 24)  # one label wrong: above the bar
    assert not admission.admitted
    assert admission.reason.startswith("refused: the judge passed the limit message (case-0);")
    assert "cannot tell these answers from good ones" in admission.reason
    assert admission.to_dict()["hard_confusions"] == ["case-0/limit"]


async def test_a_judge_that_fails_the_hard_positive_is_refused_by_name():
    examples = _with_hard_cases()
    labels = _labels_of(examples)
    model = JudgeModel(
        lambda answer, cid: False if answer == "the same, reworded" else labels[(answer, cid)]
    )
    admission = await admit_judge(LLMJudge(model), examples)
    assert not admission.admitted
    assert admission.reason.startswith(
        "refused: the judge failed the correct answer in other words (case-0);"
    )


async def test_a_tolerance_for_hard_confusions_is_the_policy_s_to_declare():
    examples = _with_hard_cases()
    labels = _labels_of(examples)
    model = JudgeModel(
        lambda answer, cid: True if answer == "I hit my limit." else labels[(answer, cid)]
    )
    admission = await admit_judge(LLMJudge(model), examples, AdmissionPolicy(max_hard_confusions=1))
    assert admission.admitted and admission.confused == ("case-0/limit",)
