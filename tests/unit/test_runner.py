import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from vitrine._bench.events import (
    CheckCompleted,
    RunCompleted,
    RunStarted,
    TrialCompleted,
    TrialStarted,
)
from vitrine._bench.model import Arm, BenchmarkDefinition, Case, admit, check
from vitrine._bench.response import SubjectResponse
from vitrine._bench.runner import CANCELLED_REASON, resume_run, run_benchmark
from vitrine._floors import ChanceFloor
from vitrine._outcomes import MeasurementState, Observation, Verdict
from vitrine.store import ResumeMismatchError, RunStore, load_run

FLOOR = ChanceFloor.not_derivable("deterministic predicate")
CANARY_KEY = "sk-canary0123456789abcdefXYZ"
CANARY_URL = "https://internal.example.com/v1/chat?key=abc"


@check("non-empty")
def non_empty(case: Case, response: SubjectResponse) -> Observation:
    if response.answer is None:
        return Observation.not_applicable("no answer")
    return Observation.measured(bool(response.answer), bool(response.answer))


@check("mentions-case")
def mentions_case(case: Case, response: SubjectResponse) -> Observation:
    ok = case.id in (response.answer or "")
    return Observation.measured(ok, ok, evidence={"case": case.id})


@check("explodes")
def explodes(case: Case, response: SubjectResponse) -> Observation:
    raise ValueError(f"bad regex near {CANARY_KEY} from {CANARY_URL}")


@check("hangs")
async def hangs(case: Case, response: SubjectResponse) -> Observation:
    await asyncio.sleep(10)
    return Observation.measured(1, True)


@check("hands-back-a-hang")
def hands_back_a_hang(case: Case, response: SubjectResponse) -> Observation:
    return hangs.fn(case, response)  # type: ignore[return-value]  # a plain function's coroutine


@check("plain-timeout-error")
def plain_timeout_error(case: Case, response: SubjectResponse) -> Observation:
    raise TimeoutError("the check's own client gave up")


@check("wrong-type")
def wrong_type(case: Case, response: SubjectResponse) -> Observation:
    return True  # type: ignore[return-value]


def definition(n_cases: int = 4, checks=(non_empty, mentions_case)) -> BenchmarkDefinition:
    return BenchmarkDefinition(
        "demo",
        "1.0.0",
        [Case(f"case-{i}", {"i": i}) for i in range(n_cases)],
        [admit(c, FLOOR) for c in checks],
    )


async def echo(case: Case) -> SubjectResponse:
    return SubjectResponse(answer=f"about {case.id}")


def run_dir_of(store: RunStore) -> Path:
    (run_dir,) = list(store.runs_dir.iterdir())
    return run_dir


def all_text_under(root: Path) -> str:
    return "\n".join(p.read_text() for p in root.rglob("*") if p.is_file())


async def test_a_healthy_run_returns_what_load_run_reads_back(tmp_path):
    result = await run_benchmark(definition(), Arm("echo", echo), store=RunStore(tmp_path))
    assert result.complete
    assert result.verdict is Verdict.PASS
    assert len(result.rows) == 8
    assert load_run(result.run_dir) == result


async def test_rows_come_in_case_then_check_order_one_per_check(tmp_path):
    result = await run_benchmark(definition(5), Arm("echo", echo), store=RunStore(tmp_path))
    per_case = Counter(row.case_id for row in result.rows)
    assert per_case == {f"case-{i}": 2 for i in range(5)}
    assert [r.row_id for r in result.rows[:2]] == ["case-0·non-empty", "case-0·mentions-case"]


async def test_without_a_store_the_run_stays_in_memory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VITRINE_HOME", raising=False)
    result = await run_benchmark(definition(), Arm("echo", echo))
    assert result.run_dir is None
    assert result.complete and len(result.rows) == 8
    assert list(tmp_path.iterdir()) == []


async def test_a_measured_failure_makes_the_run_fail():
    async def wrong(case: Case) -> SubjectResponse:
        return SubjectResponse(answer="something else")

    result = await run_benchmark(definition(), Arm("wrong", wrong))
    assert result.verdict is Verdict.FAIL


async def test_the_response_summary_of_each_trial_is_persisted_in_traces(tmp_path):
    result = await run_benchmark(definition(2), Arm("echo", echo), store=RunStore(tmp_path))
    lines = (Path(result.run_dir) / "traces" / "trials.jsonl").read_text().splitlines()
    traces = {t["case_id"]: t for t in map(json.loads, lines)}
    assert traces["case-1"]["response"]["answer_preview"] == "about case-1"
    assert result.responses["case-1"]["answer_chars"] == len("about case-1")


async def test_a_subject_that_raises_yields_not_measured_rows_without_secrets(tmp_path):
    async def leaky(case: Case) -> SubjectResponse:
        if case.id == "case-1":
            raise ConnectionError(f"401 for api_key={CANARY_KEY} calling {CANARY_URL}")
        return await echo(case)

    store = RunStore(tmp_path)
    result = await run_benchmark(definition(), Arm("leaky", leaky), store=store)

    failed = [row for row in result.rows if row.case_id == "case-1"]
    assert len(failed) == 2
    for row in failed:
        assert row.observation.state is MeasurementState.NOT_MEASURED
        assert "ConnectionError" in (row.observation.reason or "")
    assert "ConnectionError" in result.subject_errors["case-1"]
    assert result.verdict is Verdict.WARN
    stored = all_text_under(tmp_path)
    assert "ConnectionError" in stored
    assert "sk-canary" not in stored
    assert "internal.example.com" not in stored
    assert "https://" not in stored


async def test_a_subject_that_times_out_yields_not_measured_rows():
    async def slow(case: Case) -> SubjectResponse:
        await asyncio.sleep(10)
        return await echo(case)

    result = await run_benchmark(definition(2), Arm("slow", slow), trial_timeout_s=0.05)
    assert {row.observation.state for row in result.rows} == {MeasurementState.NOT_MEASURED}
    assert "did not answer within 0.05 s" in (result.rows[0].observation.reason or "")


async def test_a_subject_returning_the_wrong_type_is_not_measured():
    async def sloppy(case: Case) -> SubjectResponse:
        return "plain text"  # type: ignore[return-value]

    result = await run_benchmark(definition(1), Arm("sloppy", sloppy))
    assert "not a SubjectResponse" in (result.rows[0].observation.reason or "")


async def test_a_check_that_raises_is_not_measured_and_never_a_pass(tmp_path):
    defn = definition(3, checks=(non_empty, explodes))
    result = await run_benchmark(defn, Arm("echo", echo), store=RunStore(tmp_path))
    exploded = result.rows_for("explodes")
    assert len(exploded) == 3
    for row in exploded:
        assert row.observation.state is MeasurementState.NOT_MEASURED
        assert "ValueError" in (row.observation.reason or "")
    assert all(row.observation.passed for row in result.rows_for("non-empty"))
    stored = all_text_under(tmp_path)
    assert "sk-canary" not in stored and "internal.example.com" not in stored


async def test_a_check_that_hangs_or_returns_garbage_is_not_measured():
    defn = definition(2, checks=(non_empty, hangs, wrong_type))
    result = await run_benchmark(defn, Arm("echo", echo), check_timeout_s=0.05)
    assert "did not finish within 0.05 s" in (result.rows_for("hangs")[0].observation.reason or "")
    assert "not an Observation" in (result.rows_for("wrong-type")[0].observation.reason or "")
    assert all(r.observation.is_measured for r in result.rows_for("non-empty"))


async def test_what_a_plain_check_hands_back_to_await_is_still_under_the_check_timeout():
    # A plain function runs to its end before any timeout could stop it; what it returns to
    # await is where the timeout applies, and a TimeoutError of its own is not the deadline.
    defn = definition(2, checks=(hands_back_a_hang, plain_timeout_error))
    result = await run_benchmark(defn, Arm("echo", echo), check_timeout_s=0.05)
    hang = result.rows_for("hands-back-a-hang")[0].observation
    assert hang.state is MeasurementState.NOT_MEASURED
    assert "did not finish within 0.05 s" in (hang.reason or "")
    own = result.rows_for("plain-timeout-error")[0].observation
    assert own.state is MeasurementState.NOT_MEASURED
    assert "gave up" in (own.reason or "") and "did not finish" not in (own.reason or "")


async def test_concurrency_never_exceeds_the_bound():
    running = 0
    peak = 0

    async def counted(case: Case) -> SubjectResponse:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return await echo(case)

    result = await run_benchmark(definition(20), Arm("counted", counted), concurrency=3)
    assert peak == 3
    assert len(result.rows) == 40


@pytest.mark.parametrize("bad", [{"concurrency": 0}, {"trial_timeout_s": 0}, {"repetition": 0}])
async def test_nonsense_options_are_refused_before_anything_runs(tmp_path, bad):
    with pytest.raises(ValueError):
        await run_benchmark(definition(), Arm("echo", echo), store=RunStore(tmp_path), **bad)
    assert not (tmp_path / "runs").exists()


def assert_events_pair_up(events) -> None:
    kinds = [type(e) for e in events]
    assert kinds[0] is RunStarted
    assert kinds[-1] is RunCompleted
    assert kinds.count(RunStarted) == kinds.count(RunCompleted) == 1
    started = Counter(e.case_id for e in events if isinstance(e, TrialStarted))
    completed = Counter(e.case_id for e in events if isinstance(e, TrialCompleted))
    assert started == completed
    assert all(count == 1 for count in started.values())


async def test_every_start_event_has_exactly_one_terminal_event(tmp_path):
    events = []
    result = await run_benchmark(
        definition(6), Arm("echo", echo), store=RunStore(tmp_path), on_event=events.append
    )
    assert_events_pair_up(events)
    assert sum(isinstance(e, CheckCompleted) for e in events) == 12
    assert events[-1].run_dir == result.run_dir
    assert events[-1].verdict == "PASS"


async def test_a_failing_event_sink_does_not_break_the_run(tmp_path):
    def broken_sink(event) -> None:
        raise RuntimeError("display crashed")

    result = await run_benchmark(
        definition(), Arm("echo", echo), store=RunStore(tmp_path), on_event=broken_sink
    )
    assert result.verdict is Verdict.PASS
    assert load_run(result.run_dir).complete


async def test_cancellation_still_seals_the_run_then_propagates(tmp_path):
    store = RunStore(tmp_path)
    events = []
    two_done = asyncio.Event()

    async def slow_after_two(case: Case) -> SubjectResponse:
        if int(case.id.split("-")[1]) >= 2:
            await asyncio.sleep(10)
        return await echo(case)

    def sink(event) -> None:
        events.append(event)
        if sum(isinstance(e, TrialCompleted) for e in events) == 2:
            two_done.set()

    task = asyncio.create_task(
        run_benchmark(
            definition(8), Arm("slow", slow_after_two), store=store, concurrency=3, on_event=sink
        )
    )
    await asyncio.wait_for(two_done.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    loaded = load_run(run_dir_of(store))
    assert loaded.complete
    assert len(loaded.rows) == 16
    finished = {r.case_id for r in loaded.rows if r.observation.is_measured}
    assert finished == {"case-0", "case-1"}
    cancelled = [r for r in loaded.rows if r.case_id not in finished]
    assert all(r.observation.reason == CANCELLED_REASON for r in cancelled)
    assert loaded.verdict is Verdict.WARN
    assert_events_pair_up(events)
    assert events[-1].error == CANCELLED_REASON


async def test_resume_refuses_a_different_definition_or_arm(tmp_path):
    store = RunStore(tmp_path)
    writer = store.create_run(definition(), "echo")
    writer.close()
    with pytest.raises(ResumeMismatchError, match="different definition"):
        await resume_run(writer.run_dir, definition(5), Arm("echo", echo))
    with pytest.raises(ResumeMismatchError, match="another arm"):
        await resume_run(writer.run_dir, definition(), Arm("other", echo))


async def test_resuming_a_run_that_never_started_a_trial_runs_every_case(tmp_path):
    store = RunStore(tmp_path)
    writer = store.create_run(definition(), "echo", repetition=3, seed=7)
    writer.close()
    result = await resume_run(writer.run_dir, definition(), Arm("echo", echo))
    assert result.repetition == 3
    assert len(result.rows) == 8
    assert load_run(writer.run_dir) == result
    manifest = json.loads((writer.run_dir / "manifest.json").read_text())
    assert manifest["run"]["seed"] == 7
    assert len(manifest["run"]["resumed_at"]) == 1


async def test_resuming_a_sealed_run_returns_it_unchanged(tmp_path):
    result = await run_benchmark(definition(), Arm("echo", echo), store=RunStore(tmp_path))
    assert await resume_run(result.run_dir, definition(), Arm("echo", echo)) == result


async def test_a_run_killed_after_its_last_trial_but_before_the_seal_is_only_sealed(tmp_path):
    done = await run_benchmark(definition(3), Arm("echo", echo))
    writer = RunStore(tmp_path).create_run(definition(3), "echo")
    for case_id in done.case_ids:
        rows = [r for r in done.rows if r.case_id == case_id]
        writer.record_trial(case_id, rows, duration_ms=1.0, error=None, response=None)
    writer.close()

    calls = []

    async def must_not_run(case: Case) -> SubjectResponse:
        calls.append(case.id)
        return await echo(case)

    resumed = await resume_run(writer.run_dir, definition(3), Arm("echo", must_not_run))
    assert calls == []
    assert [r.observation for r in resumed.rows] == [r.observation for r in done.rows]
    assert load_run(writer.run_dir).complete


# Retries ------------------------------------------------------------------------------------


def flaky_subject(failure_rate: float, seed: int):
    """A subject whose backend times out on a seeded share of calls, independently per call."""
    import random

    rng = random.Random(seed)
    calls: Counter[str] = Counter()

    async def subject(case: Case) -> SubjectResponse:
        calls[case.id] += 1
        if rng.random() < failure_rate:
            raise TimeoutError("backend timed out")
        return await echo(case)

    return subject, calls


async def test_transient_failures_are_retried_until_every_trial_is_measured(tmp_path):
    from vitrine._bench.retry import RetryPolicy

    subject, calls = flaky_subject(0.05, seed=7)
    policy = RetryPolicy(retries=2, retry_on=(TimeoutError,), backoff_s=0.0, seed=1)
    result = await run_benchmark(
        definition(100), Arm("flaky", subject), store=RunStore(tmp_path), retry=policy
    )

    assert result.census.not_measured == 0
    assert result.verdict is Verdict.PASS
    retried = {case for case, n in calls.items() if n > 1}
    assert retried  # the seed draws some failures: the test would be empty otherwise
    assert set(result.retries) == retried
    assert result.retried_trials == len(retried)
    for case_id in retried:
        assert all(a.category == "TimeoutError" for a in result.retries[case_id])
    traces = [json.loads(x) for x in (Path(result.run_dir) / "traces" / "trials.jsonl").open()]
    by_case = {t["case_id"]: t for t in traces}
    some = next(iter(retried))
    assert by_case[some]["attempts"] == calls[some]
    assert by_case[some]["failed_attempts"][0]["category"] == "TimeoutError"
    summary = json.loads((Path(result.run_dir) / "summary.json").read_text())
    assert summary["retried_trials"] == len(retried)
    assert load_run(result.run_dir) == result


async def test_a_trial_that_exhausts_its_retries_stays_not_measured():
    from vitrine._bench.retry import RetryPolicy

    calls = Counter[str]()

    async def down(case: Case) -> SubjectResponse:
        calls[case.id] += 1
        raise ConnectionError("connection refused")

    policy = RetryPolicy(retries=2, backoff_s=0.0)
    result = await run_benchmark(definition(2), Arm("down", down), retry=policy)
    assert calls == {"case-0": 3, "case-1": 3}
    assert result.census.not_measured == result.census.total
    assert [a.attempt for a in result.retries["case-0"]] == [1, 2, 3]
    assert "ConnectionError" in result.subject_errors["case-0"]


async def test_an_error_outside_retry_on_is_not_retried():
    from vitrine._bench.retry import RetryPolicy

    calls = Counter[str]()

    async def broken(case: Case) -> SubjectResponse:
        calls[case.id] += 1
        raise KeyError("bug, not a transient fault")

    result = await run_benchmark(
        definition(1), Arm("broken", broken), retry=RetryPolicy(retries=3, backoff_s=0.0)
    )
    assert calls == {"case-0": 1}
    assert result.retried_trials == 0
    assert result.census.not_measured == 2


def test_the_backoff_doubles_is_capped_and_jitter_is_seeded():
    from vitrine._bench.retry import RetryPolicy

    policy = RetryPolicy(retries=5, backoff_s=1.0, max_backoff_s=4.0, jitter=0.0)
    rng = policy.rng()
    assert [policy.delay_s(k, rng) for k in range(1, 5)] == [1.0, 2.0, 4.0, 4.0]
    jittered = RetryPolicy(retries=1, backoff_s=1.0, jitter=0.5, seed=3)
    first = [jittered.delay_s(1, r) for r in [jittered.rng()] * 3]
    second = [jittered.delay_s(1, r) for r in [jittered.rng()] * 3]
    assert first == second
    assert all(0.5 <= d <= 1.5 for d in first) and len(set(first)) > 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"retries": -1}, "0 or more"),
        ({"retries": 2, "retry_on": ()}, "retries nothing"),
        ({"retry_on": ("TimeoutError",)}, "exception classes"),
        ({"jitter": 2.0}, "fraction"),
    ],
)
def test_a_retry_policy_that_cannot_work_is_refused(kwargs, message):
    from vitrine._bench.retry import RetryPolicy

    with pytest.raises(ValueError, match=message):
        RetryPolicy(**kwargs)


# Sync subjects ------------------------------------------------------------------------------


async def test_a_plain_function_subject_runs_in_a_worker_thread():
    import threading

    threads: set[int] = set()

    def blocking(case: Case) -> SubjectResponse:
        threads.add(threading.get_ident())
        return SubjectResponse(answer=f"about {case.id}")

    result = await run_benchmark(definition(3), Arm("sync", blocking))
    assert result.verdict is Verdict.PASS
    assert threading.get_ident() not in threads


async def test_a_subject_returning_something_else_is_refused_naming_the_arm():
    def plain(case: Case) -> str:
        return "just text"

    result = await run_benchmark(definition(1), Arm("text-arm", plain))  # type: ignore[arg-type]
    reason = result.rows[0].observation.reason or ""
    assert result.rows[0].observation.state is MeasurementState.NOT_MEASURED
    assert "arm 'text-arm'" in reason and "str, not a SubjectResponse" in reason
