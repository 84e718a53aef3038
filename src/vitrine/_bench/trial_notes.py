"""What the console must say about trials beside the gates: why some were not measured, and
what the subject's own clients absorbed or answered from a cache.

A not-measured trial that is only counted reads like noise; grouped by its reason ("12 trials:
InternalServerError: ...") it is a finding a reader can act on. Retries a client made on its
own and cached answers change what a run measured, so they are stated, never left implicit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from vitrine._bench.results import RunResult
from vitrine._outcomes import ExitCode

__all__ = ["outages", "trial_notes", "unmeasured_reasons"]

_SHOWN_REASONS = 5


def unmeasured_reasons(runs: Iterable[RunResult]) -> Counter[str]:
    """How many trials were left not measured for each reason the subject failed."""
    return Counter(error for run in runs for error in run.subject_errors.values())


def _model_calls(runs: Iterable[RunResult]) -> Iterable[Mapping[str, Any]]:
    for run in runs:
        for response in run.responses.values():
            yield from response.get("model_calls") or ()


def trial_notes(runs: Iterable[RunResult]) -> list[str]:
    """Notes on not-measured trials (grouped by reason), client retries and cached answers."""
    runs = list(runs)
    notes: list[str] = []
    reasons = unmeasured_reasons(runs)
    if reasons:
        total = sum(reasons.values())
        shown = "; ".join(
            f"{count} × {reason}" for reason, count in reasons.most_common(_SHOWN_REASONS)
        )
        more = len(reasons) - _SHOWN_REASONS
        tail = f"; and {more} other reason(s) in the runs' rows" if more > 0 else ""
        notes.append(f"{total} trial(s) not measured, by reason: {shown}{tail}")
    calls = list(_model_calls(runs))
    retried = sum(int(call.get("sdk_retries") or 0) for call in calls)
    if retried:
        notes.append(
            f"the subject's model clients retried {retried} time(s) on their own before "
            f"answering ({len(calls)} model calls recorded); those faults were absorbed "
            "inside the client, not by vitrine's retry policy"
        )
    cached = sum(1 for call in calls if call.get("cached"))
    if cached:
        notes.append(
            f"{cached} of {len(calls)} model calls were answered from the model-call cache, "
            "not by the model: those trials repeat an earlier answer"
        )
    return notes


def outages(runs: Iterable[RunResult], arms: Iterable[str]) -> list[tuple[ExitCode, str]]:
    """An infrastructure cause for each arm whose subject answered none of its trials.

    A subject that fails every call (an endpoint that is down, a key that is refused) has not
    been measured badly: it has not been reached. That is an outage (exit 4), not a missing
    measurement (exit 3), whatever the single trials say.
    """
    runs = list(runs)
    causes: list[tuple[ExitCode, str]] = []
    for arm in arms:
        mine = [run for run in runs if run.arm_id == arm]
        trials = sum(len(run.case_ids) for run in mine)
        if not trials or any(run.responses for run in mine):
            continue
        failed = unmeasured_reasons(mine)
        if sum(failed.values()) < trials:
            continue
        reason, _ = failed.most_common(1)[0]
        causes.append(
            (
                ExitCode.INFRASTRUCTURE,
                f"arm {arm}: the subject answered none of its {trials} trials ({reason})",
            )
        )
    return causes
