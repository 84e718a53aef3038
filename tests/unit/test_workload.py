import pytest

from vitrine import PlanRequest, UsageError
from vitrine._plans.workload import WorkloadPreview, require_paid_confirmation


def preview(**kw):
    base = dict(subject_max_output_tokens=4000, judge_max_output_tokens=1200, paid=True)
    base.update(kw)
    return WorkloadPreview("eval03-compare", ("a", "b", "c"), ("agent", "workflow"), 3, **base)


def test_subject_trials_are_scenarios_times_arms_times_repetitions():
    p = preview()
    assert p.subject_trials == 18
    assert p.max_judge_calls == 18
    assert p.runs == 6


def test_the_preview_states_ceilings_and_that_request_counts_can_be_larger():
    text = "\n".join(preview().lines())
    assert "18 subject trial(s)" in text
    assert "at most 18" in text
    assert "4,000" in text and "1,200" in text
    assert "retries" in text
    assert preview().to_dict()["subject_trials"] == 18


def test_an_empty_workload_is_refused():
    with pytest.raises(ValueError, match="at least one scenario"):
        WorkloadPreview(
            "x", (), ("a",), 1, subject_max_output_tokens=1, judge_max_output_tokens=1, paid=True
        )


def test_a_paid_plan_called_without_confirmation_is_refused():
    with pytest.raises(UsageError, match="must be confirmed"):
        require_paid_confirmation(PlanRequest(plan="eval01-agent"), paid=True)
    require_paid_confirmation(PlanRequest(plan="eval01-agent", confirm_paid=True), paid=True)
    require_paid_confirmation(PlanRequest(plan="eval01-agent"), paid=False)
