"""vitrine's pytest plugin: tests of an agent, in process or behind HTTP, with recorded metrics.

Loaded in every pytest session through the ``pytest11`` entry point, so importing it costs
only pytest and the standard library; httpx, the judge and the providers load on first use.

- ``vitrine_ask``: asks the in-process subject (an ``async def subject(case)`` or a plain
  function returning a :class:`vitrine.SubjectResponse`, the same shape an ``Arm`` takes)
  and returns its response. The subject is named in the ini file (``vitrine_subject =
  module:attr``), or a conftest overrides the ``vitrine_subject`` fixture. Its coroutines
  run on one event loop for the whole session (``vitrine_loop``), so a client the subject
  keeps between tests keeps working. Each ask is retried as a trial of ``vitrine.evaluate()``
  is (``vitrine.RetryPolicy``; ``vitrine_retries``/``--vitrine-retries``, default 2); a
  subject that still fails, or raises anything not transient, is not measured: the test is
  skipped with the reason, or fails with ``--vitrine-unmeasured=fail``.
- ``vitrine_chat``: a client that opens real sessions against a chat endpoint and returns
  what it captured. The URL comes from ``--vitrine-url``, the ``vitrine_url`` ini value or
  ``EVAL_API_URL`` (default http://localhost:8000); the adapter (how the endpoint is spoken
  to) from ``--vitrine-adapter``/``vitrine_adapter`` = ``module:attr``, or an override of the
  ``vitrine_adapter`` fixture; the default speaks ``vitrine serve``'s protocol (server-sent
  events on ``POST /v1/chat``), :class:`JsonChatAdapter` any JSON endpoint. When the endpoint
  is unreachable the test is skipped with the reason, unless ``VITRINE_REQUIRE_SERVICE`` is
  set, in which case it fails: CI must not pass by skipping.
- ``vitrine_metrics``: metrics recorded per test. Deterministic ones (regex and structural)
  have threshold 1.0 and always run; a structural check may also be not applicable
  (``check(name, None, why)`` or ``not_applicable(name, why)``), which neither passes nor
  fails. Judged ones (G-Eval style: criteria, evaluation steps, a 0–1 score, a threshold
  between 0.65 and 1.0) run only when a judge is configured (``VITRINE_JUDGE_PROVIDER`` =
  openai, azure, anthropic or local; ``PROMPTFOO_GRADING_PROVIDER``, the pipelines
  specification's name, when it is unset, also in promptfoo's ``openai:gpt-4o-mini`` form; or
  ``VITRINE_JUDGE_FACTORY`` = ``module:attr`` returning a judge).
  Every metric of a test is recorded, even after one failed; when the test body ends, a test
  with failed metrics fails with all their messages. A test with a judged metric that could
  not be measured is never reported as passed: it is skipped with the reason, or fails with
  ``--vitrine-unmeasured=fail`` (or ``VITRINE_UNMEASURED=fail``).
- ``@pytest.mark.case("TC-P1-003")`` gives a test its id, selectable with ``-k TC-P1-003``;
  ``adversarial`` marks tests kept out of the CI count.
- ``--vitrine-report DIR`` writes ``behaviour-report.json`` and ``behaviour-report.html``
  (self-contained, escaped) with every test's metrics, every ask of the subject (its tries,
  failed tries and whether it was measured) and, per turn, the ``layer`` of the service that
  produced the answer, at the end of the session; the endpoint's URL is named only when one
  was used.
- With a trace destination (``--vitrine-trace-to URL``, or the OpenTelemetry or Langfuse
  variables every vitrine command reads; see docs/tracing.md) the session is one trace: a span
  per test, its outcome and its metrics as scores. Without one, OpenTelemetry never loads.
"""

from __future__ import annotations

import dataclasses
import datetime
import html
import json
import os
import re
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# vitrine.evaluate()'s default; the module is light (no runner), so it loads with the plugin.
from vitrine._bench.retry import DEFAULT_RETRIES
from vitrine._commandline import TRACE_CONTENT_HELP, TRACE_TO_HELP
from vitrine._vocabulary import Status, status_of_label
from vitrine.errors import InvalidArgumentError
from vitrine.subjects._chat_client import (
    ChatAdapter,
    ChatClient,
    ChatSession,
    Event,
    JsonChatAdapter,
    ServiceChatAdapter,
    ServiceUnavailable,
    Transcript,
    Turn,
    parse_sse,
)

if TYPE_CHECKING:
    from vitrine._bench.response import SubjectResponse
    from vitrine._bench.retry import RetryPolicy
    from vitrine._plans.base import ProviderName
    from vitrine._pytest_loop import Ask, SessionLoop
    from vitrine.judge._base import Judge

__all__ = [
    "DEFAULT_API_URL",
    "ChatAdapter",
    "ChatClient",
    "ChatSession",
    "Event",
    "JsonChatAdapter",
    "Metric",
    "Metrics",
    "ServiceChatAdapter",
    "ServiceUnavailable",
    "SubjectProbe",
    "Transcript",
    "Turn",
    "metrics_of",
    "parse_sse",
]

DEFAULT_API_URL = "http://localhost:8000"
JUDGED_MIN_THRESHOLD = 0.65
CASE_ID = re.compile(r"^TC-[A-Z0-9]+-\d{3}$")
REPORT_SCHEMA = "vitrine.behaviour-report/1"
_DETAIL_LIMIT = 400

UNMEASURED_CHOICES = ("skip", "fail")
_UNMEASURED_ENV = "VITRINE_UNMEASURED"
METRIC_STATES = ("passed", "failed", "skipped", "not_applicable")

_metrics_key = pytest.StashKey["Metrics"]()
_turns_key = pytest.StashKey[list[Turn]]()
_api_url_key = pytest.StashKey[str]()
_asks_key = pytest.StashKey[list["Ask"]]()
_loop_key = pytest.StashKey["SessionLoop"]()

DEFAULT_TRIAL_TIMEOUT_S = 120.0  # vitrine.evaluate()'s trial_timeout_s

Runner = Callable[[Coroutine[Any, Any, Any]], Any]


# --- metrics -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    kind: str  # "regex", "structural" or "judged"
    score: float | None
    threshold: float
    state: str  # one of METRIC_STATES; "skipped" is a judged metric that was not measured
    detail: str = ""

    @property
    def status(self) -> Status:
        """The metric's state in vitrine's one outcome vocabulary (the stored label is kept)."""
        return status_of_label(self.state)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Metrics:
    """The metrics of one test. Each is recorded, never raised at once: :meth:`settle` (which
    the plugin calls when the test body ends) turns them into the test's verdict."""

    def __init__(
        self, judge_loader: Callable[[], Judge | str | None], run: Runner | None = None
    ) -> None:
        self.recorded: list[Metric] = []
        self._judge_loader = judge_loader
        # The fixture runs the judge on the session's loop; alone, a Metrics runs its own.
        self._run = run

    def _record(self, metric: Metric) -> Metric:
        self.recorded.append(metric)
        return metric

    @property
    def failures(self) -> list[str]:
        """One message per failed metric, in the order they were recorded."""
        return [failure_message(m) for m in self.recorded if m.status is Status.FAIL]

    @property
    def unmeasured(self) -> list[str]:
        return [
            f"judged metric {m.name!r} not measured: {m.detail}"
            for m in self.recorded
            if m.status is Status.NOT_MEASURED
        ]

    def settle(self, unmeasured: str = "skip") -> None:
        """Fail with every failed metric's message; else skip (or, with ``unmeasured="fail"``,
        fail) when a judged metric could not be measured; else return: the test passed."""
        if unmeasured not in UNMEASURED_CHOICES:
            raise InvalidArgumentError(
                f"unmeasured must be one of {UNMEASURED_CHOICES}, got {unmeasured!r}"
            )
        if self.failures:
            raise AssertionError("\n".join(self.failures))
        if self.unmeasured:
            reason = "; ".join(self.unmeasured)
            if unmeasured == "fail":
                pytest.fail(f"{reason} (--vitrine-unmeasured=fail)", pytrace=False)
            pytest.skip(reason)

    def check(self, name: str, passed: bool | None, detail: str = "") -> Metric:
        """A structural metric: a fact about the captured response, threshold 1.0.

        ``passed=None`` records that the check does not apply to this response (``detail``
        says why): neither a pass nor a failure, and never a reason to skip the test.
        """
        if passed is None:
            return self.not_applicable(name, detail)
        score = 1.0 if passed else 0.0
        return self._record(
            Metric(name, "structural", score, 1.0, "passed" if passed else "failed", _bound(detail))
        )

    def not_applicable(self, name: str, why: str) -> Metric:
        """Record that structural check ``name`` does not apply here, and why."""
        if not why.strip():
            raise InvalidArgumentError(f"metric {name!r}: say why it does not apply")
        return self._record(Metric(name, "structural", None, 1.0, "not_applicable", _bound(why)))

    def regex(
        self, name: str, text: str, pattern: str, *, present: bool = True, flags: int = re.I
    ) -> Metric:
        """A regex metric: ``pattern`` must (or, with ``present=False``, must not) occur."""
        match = re.search(pattern, text, flags)
        passed = (match is not None) == present
        if present:
            detail = "found" if match else f"no match for /{pattern}/ in: {text[:160]!r}"
        else:
            detail = f"unexpected {match.group(0)!r} for /{pattern}/" if match else "absent"
        score = 1.0 if passed else 0.0
        return self._record(
            Metric(name, "regex", score, 1.0, "passed" if passed else "failed", _bound(detail))
        )

    def judged(
        self,
        name: str,
        *,
        input: str,
        output: str,
        criteria: Sequence[str],
        evaluation_steps: Sequence[str],
        threshold: float,
    ) -> Metric:
        """A G-Eval style metric: the judge scores ``output`` 0–1 against ``criteria``."""
        if not JUDGED_MIN_THRESHOLD <= threshold <= 1.0:
            raise InvalidArgumentError(
                f"a judged threshold must be between {JUDGED_MIN_THRESHOLD} and 1.0, got "
                f"{threshold}: below that a judge's noise passes as agreement"
            )
        if not criteria or not evaluation_steps:
            raise InvalidArgumentError("a judged metric needs criteria and evaluation steps")
        judge = self._judge_loader()
        if judge is None or isinstance(judge, str):
            reason = judge or "no judge configured (set VITRINE_JUDGE_PROVIDER)"
            return self._record(Metric(name, "judged", None, threshold, "skipped", reason))
        return self._record(
            _judge_metric(
                judge, name, input, output, criteria, evaluation_steps, threshold, self._run
            )
        )


def _judge_metric(
    judge: Judge,
    name: str,
    input: str,
    output: str,
    criteria: Sequence[str],
    steps: Sequence[str],
    threshold: float,
    run: Runner | None,
) -> Metric:
    import asyncio

    from vitrine.judge._base import Criterion, JudgeResult

    rubric = [Criterion(f"criterion-{i + 1}", text) for i, text in enumerate(criteria)]
    task = (
        input + "\n\nEvaluation steps:\n" + "\n".join(f"{i + 1}. {s}" for i, s in enumerate(steps))
    )
    result: JudgeResult = (run or asyncio.run)(judge.evaluate(task, output, rubric))
    if not result.usable or result.score is None:
        # Not measured is not a pass: a configured judge that cannot judge fails loudly.
        return Metric(name, "judged", None, threshold, "failed", _bound(result.summary))
    score = round(result.score / 100.0, 4)
    state = "passed" if score >= threshold else "failed"
    return Metric(name, "judged", score, threshold, state, _bound(result.summary))


JUDGE_PROVIDER_ENV = "VITRINE_JUDGE_PROVIDER"
# The pipelines specification's name for the grading provider: read when vitrine's is unset.
GRADING_PROVIDER_ALIAS = "PROMPTFOO_GRADING_PROVIDER"
# promptfoo's provider prefixes (``openai:gpt-4o-mini``, ``azureopenai:chat:DEPLOYMENT``,
# ``anthropic:messages:MODEL``) and the vitrine provider each one names.
_PROMPTFOO_PROVIDERS: dict[str, ProviderName] = {
    "openai": "openai",
    "azureopenai": "azure",
    "anthropic": "anthropic",
}
_PROMPTFOO_API_KINDS = ("chat", "messages", "completion")


def judge_provider_setting() -> tuple[str, ProviderName, str | None] | str | None:
    """(variable, provider, model) of the configured judge provider, a reason it cannot be
    used, or None when neither ``VITRINE_JUDGE_PROVIDER`` nor its alias is set."""
    from vitrine._plans.base import PROVIDERS

    variable = JUDGE_PROVIDER_ENV
    value = os.environ.get(variable, "").strip()
    if not value:
        variable, value = GRADING_PROVIDER_ALIAS, os.environ.get(GRADING_PROVIDER_ALIAS, "").strip()
    if not value:
        return None
    named = next((known for known in PROVIDERS if known == value), None)
    if named is not None:
        return variable, named, None
    prefix, _, rest = value.partition(":")
    kind, _, model = rest.partition(":")
    if kind not in _PROMPTFOO_API_KINDS:
        model = rest
    if prefix in _PROMPTFOO_PROVIDERS and model:
        return variable, _PROMPTFOO_PROVIDERS[prefix], model
    return (
        f"{variable}={value[:80]!r} is not one of {', '.join(PROVIDERS)}, nor a promptfoo "
        f"provider id of {', '.join(sorted(_PROMPTFOO_PROVIDERS))} with a model "
        "(openai:gpt-4o-mini)"
    )


def load_judge() -> Judge | str | None:
    """The configured judge; None when none is configured; a reason when one cannot be built."""
    factory = os.environ.get("VITRINE_JUDGE_FACTORY", "").strip()
    if factory:
        import importlib

        module_name, _, attr = factory.partition(":")
        built: Judge = getattr(importlib.import_module(module_name), attr or "judge")()
        return built
    setting = judge_provider_setting()
    if setting is None or isinstance(setting, str):
        return setting
    _, name, model = setting
    import dataclasses

    from vitrine.errors import UsageError
    from vitrine.judge._llm import LLMJudge
    from vitrine.providers._config import ProviderConfig, create_chat_model, readiness

    try:
        config = ProviderConfig.from_env(name)
    except UsageError as exc:  # a service URL holding credentials: refused, nothing called
        return f"the judge is not configured: {exc}"
    if model is not None:
        # The model named with the provider is the judge's (a deployment, for Azure).
        config = dataclasses.replace(config, judge_model=model)
    state = readiness(config)
    if not state.ready:
        return f"the judge is not ready: {state.reason}"
    return LLMJudge(create_chat_model(config, role="judge"))


def failure_message(metric: Metric) -> str:
    """What a failed metric says in a test failure and in the report."""
    return f"metric {metric.name!r} failed: {metric.detail}"


def _bound(text: str) -> str:
    return text if len(text) <= _DETAIL_LIMIT else text[: _DETAIL_LIMIT - 1] + "…"


# --- pytest hooks and fixtures -----------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vitrine", "vitrine behaviour tests")
    group.addoption(
        "--vitrine-report",
        metavar="DIR",
        default=None,
        help="write behaviour-report.json and .html with every test's metrics into DIR",
    )
    group.addoption(
        "--vitrine-unmeasured",
        choices=UNMEASURED_CHOICES,
        default=None,
        help="what a test with a judged metric that could not be measured becomes: skip "
        f"(default) or fail; also {_UNMEASURED_ENV}",
    )
    group.addoption(
        "--vitrine-url",
        metavar="URL",
        default=None,
        help="the chat endpoint vitrine_chat talks to (also the vitrine_url ini value, "
        f"EVAL_API_URL; default {DEFAULT_API_URL})",
    )
    group.addoption(
        "--vitrine-adapter",
        metavar="MODULE:ATTR",
        default=None,
        help="how the endpoint is spoken to: a ChatAdapter, or a function returning one "
        "(also the vitrine_adapter ini value; default: the vitrine serve protocol)",
    )
    group.addoption(
        "--vitrine-trace-to",
        metavar="URL",
        default=None,
        help=f"{TRACE_TO_HELP}: one span per test, its outcome and metrics as scores (the "
        "OpenTelemetry and Langfuse variables name a destination too)",
    )
    group.addoption(
        "--vitrine-trace-content", action="store_true", default=False, help=TRACE_CONTENT_HELP
    )
    group.addoption(
        "--vitrine-retries",
        metavar="N",
        default=None,
        help="retries of an ask of the subject that failed with a transient error (also the "
        f"vitrine_retries ini value; default {DEFAULT_RETRIES})",
    )
    parser.addini("vitrine_url", "the chat endpoint vitrine_chat talks to", default="")
    parser.addini(
        "vitrine_retries",
        "retries of an ask of the subject that failed with a transient error",
        default=str(DEFAULT_RETRIES),
    )
    parser.addini(
        "vitrine_trial_timeout_s",
        "seconds one try of the subject may take before it counts as a transient failure",
        default=f"{DEFAULT_TRIAL_TIMEOUT_S:g}",
    )
    parser.addini("vitrine_adapter", "MODULE:ATTR of the endpoint's ChatAdapter", default="")
    parser.addini(
        "vitrine_subject",
        "MODULE:ATTR of the in-process subject vitrine_ask calls (subject(case) -> "
        "SubjectResponse)",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "case(id): the test's case id, e.g. TC-P1-003")
    config.addinivalue_line(
        "markers", "adversarial: an adversarial probe, kept out of the CI behaviour count"
    )
    # A setting that cannot be read stops the session before any test runs on it.
    _retries(config)
    _trial_timeout_s(config)
    # Per config, not per module: a pytest run inside a test (pytester) has its own recorder.
    recorder = _Recorder(config)
    config.pluginmanager.register(recorder, f"vitrine-recorder-{id(config)}")
    # Traced only when a destination is configured; OpenTelemetry loads only then.
    from vitrine._pytest_tracing import SessionTracer

    tracer = SessionTracer.start(config, recorder.results)
    if tracer is not None:
        config.pluginmanager.register(tracer, f"vitrine-tracer-{id(config)}")


def pytest_unconfigure(config: pytest.Config) -> None:
    # After every session fixture's teardown, which may still have closed a client on the loop.
    loop = config.stash.get(_loop_key, None)
    if loop is not None:
        loop.close()


def session_loop(config: pytest.Config) -> SessionLoop:
    """The session's event loop for ``config``, made on first use (its thread starts on the
    first coroutine); the plugin closes it when the session ends."""
    loop = config.stash.get(_loop_key, None)
    if loop is None:
        from vitrine._pytest_loop import SessionLoop

        loop = config.stash[_loop_key] = SessionLoop()
    return loop


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seen: dict[str, str] = {}
    for item in items:
        marker = item.get_closest_marker("case")
        if marker is None:
            continue
        case_id = str(marker.args[0]) if marker.args else ""
        if not CASE_ID.fullmatch(case_id):
            raise pytest.UsageError(
                f"{item.nodeid}: case id {case_id!r} is not of the form TC-P1-003"
            )
        if case_id in seen:
            raise pytest.UsageError(
                f"case id {case_id} is used twice ({seen[case_id]} and {item.nodeid}): "
                "-k would select both"
            )
        seen[case_id] = item.nodeid
        item.extra_keyword_matches.add(case_id)
        item.user_properties.append(("case", case_id))


@pytest.fixture(scope="session")
def vitrine_api_url(pytestconfig: pytest.Config) -> str:
    """The chat endpoint's URL: --vitrine-url, the vitrine_url ini value, EVAL_API_URL."""
    given = pytestconfig.getoption("--vitrine-url", None) or pytestconfig.getini("vitrine_url")
    return str(given or "").strip() or _env_url() or DEFAULT_API_URL


def _env_url() -> str:
    return os.environ.get("EVAL_API_URL", "").strip()


@pytest.fixture(scope="session")
def vitrine_adapter(pytestconfig: pytest.Config) -> ChatAdapter:
    """How the endpoint is spoken to; override this fixture or name one with --vitrine-adapter."""
    spec = pytestconfig.getoption("--vitrine-adapter", None) or pytestconfig.getini(
        "vitrine_adapter"
    )
    if not spec:
        return ServiceChatAdapter()
    value = _load_object(str(spec), "--vitrine-adapter / vitrine_adapter")
    if isinstance(value, type) or (not isinstance(value, ChatAdapter) and callable(value)):
        value = value()  # a class or a factory
    if not isinstance(value, ChatAdapter):
        raise pytest.UsageError(
            f"vitrine_adapter {spec} is a {type(value).__name__}, not a ChatAdapter (path, "
            "health_path, request_body, json_events)"
        )
    return value


@pytest.fixture(scope="session")
def vitrine_service(
    pytestconfig: pytest.Config, vitrine_api_url: str, vitrine_adapter: ChatAdapter
) -> Iterator[ChatClient]:
    """A client for a service known to be up; skips (or, when required, fails) otherwise."""
    pytestconfig.stash[_api_url_key] = vitrine_api_url
    client = ChatClient(vitrine_api_url, adapter=vitrine_adapter)
    required = os.environ.get("VITRINE_REQUIRE_SERVICE", "").strip() not in ("", "0")
    try:
        status, body = _wait_until_ready(client)
    except ServiceUnavailable as exc:
        client.close()
        reason = f"the service at {vitrine_api_url} is unreachable ({exc})"
        if required:
            pytest.fail(f"{reason}; VITRINE_REQUIRE_SERVICE is set, so this is a failure")
        pytest.skip(f"{reason}; start it (`vitrine serve`) or set --vitrine-url / EVAL_API_URL")
    if status != 200:
        client.close()
        pytest.fail(
            f"the service at {vitrine_api_url} is up but not ready: {body.get('reason', status)}"
        )
    yield client
    client.close()


def _wait_until_ready(client: ChatClient, timeout_s: float = 60.0) -> tuple[int, dict[str, Any]]:
    """Wait out a warming service; an unreachable one is reported at once."""
    deadline = time.monotonic() + timeout_s
    status, body = client.health()
    while status == 503 and time.monotonic() < deadline:
        time.sleep(0.5)
        status, body = client.health()
    return status, body


@pytest.fixture
def vitrine_chat(
    request: pytest.FixtureRequest, vitrine_service: ChatClient
) -> Iterator[ChatClient]:
    """The service client; the turns a test sends are kept for its report entry."""
    turns: list[Turn] = []
    request.node.stash[_turns_key] = turns
    vitrine_service.record_into(turns)
    yield vitrine_service
    vitrine_service.record_into(None)


@pytest.fixture(scope="session")
def vitrine_subject(pytestconfig: pytest.Config) -> Callable[..., Any]:
    """The in-process subject named by the vitrine_subject ini value; override to supply one."""
    spec = str(pytestconfig.getini("vitrine_subject") or "").strip()
    if not spec:
        raise pytest.UsageError(
            "vitrine_ask needs a subject: set vitrine_subject = module:attr in the ini file, or "
            "define a vitrine_subject fixture in conftest.py returning subject(case)"
        )
    value = _load_object(spec, "vitrine_subject")
    if not callable(value):
        raise pytest.UsageError(f"vitrine_subject {spec} is a {type(value).__name__}, not callable")
    return value  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def vitrine_loop(pytestconfig: pytest.Config) -> SessionLoop:
    """The session's one event loop, on which every subject and judge coroutine runs.

    A session fixture may use it to set up or close what the subject keeps on that loop:
    ``vitrine_loop.run(client.close())``. It is closed when the session ends.
    """
    return session_loop(pytestconfig)


@pytest.fixture(scope="session")
def vitrine_retry_policy(pytestconfig: pytest.Config) -> RetryPolicy:
    """How an ask of the subject is retried: a ``vitrine.RetryPolicy`` with the
    ``--vitrine-retries`` / ``vitrine_retries`` count and the policy's own backoff and
    transient errors; override this fixture to give a whole policy."""
    from vitrine._bench.retry import RetryPolicy

    return RetryPolicy(retries=_retries(pytestconfig))


def _retries(config: pytest.Config) -> int:
    given = config.getoption("--vitrine-retries", None)
    where = "--vitrine-retries" if given is not None else "vitrine_retries"
    text = str(config.getini("vitrine_retries") if given is None else given).strip()
    if not re.fullmatch(r"\d+", text):
        raise pytest.UsageError(
            f"{where} = {text!r}: expected a whole number of retries, 0 or more"
        )
    return int(text)


def _trial_timeout_s(config: pytest.Config) -> float:
    text = str(config.getini("vitrine_trial_timeout_s")).strip()
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise pytest.UsageError(
            f"vitrine_trial_timeout_s = {text!r}: expected a number of seconds above 0"
        )
    return value


class SubjectProbe:
    """Asks the in-process subject one case at a time: ``vitrine_ask("Say hello")``.

    The subject runs on the session's one event loop whoever asks: ``vitrine_ask(input)``
    blocks until it answered (in a plain test, and also in an ``async def`` test, whose own
    loop it does not touch), ``await vitrine_ask.respond(input)`` awaits it without blocking
    the test's loop. The subject is called exactly as an ``Arm`` calls it, each try with the
    trial timeout, and a transient failure is retried by the session's retry policy.

    A subject that still fails after its retries, or raises an error that is not transient (a
    4xx, a bug), was not measured: the ask skips the test with the reason (or fails it, with
    ``--vitrine-unmeasured=fail``), never a traceback and never a pass. A subject that returns
    anything but a SubjectResponse fails the test: that is the suite's wiring, not the
    subject's behaviour. Every ask, with its failed tries, is in :attr:`asks`.
    """

    def __init__(
        self,
        subject: Callable[..., Any],
        case_id: str,
        *,
        loop: SessionLoop | None = None,
        retry: RetryPolicy | None = None,
        trial_timeout_s: float = DEFAULT_TRIAL_TIMEOUT_S,
        unmeasured: str = "skip",
        asks: list[Ask] | None = None,
    ) -> None:
        from vitrine._bench.model import Arm
        from vitrine._bench.retry import RetryPolicy
        from vitrine._pytest_loop import SessionLoop

        self._arm = Arm("pytest", subject)
        self._case_id = case_id
        # A probe made outside the plugin (in a test of a subject) gets a loop of its own.
        self._loop = loop or SessionLoop()
        self._retry = retry or RetryPolicy(retries=DEFAULT_RETRIES)
        self._trial_timeout_s = trial_timeout_s
        self._unmeasured = unmeasured
        self.responses: list[SubjectResponse] = []
        self.asks: list[Ask] = [] if asks is None else asks

    def __call__(
        self, input: Any, *, case_id: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> SubjectResponse:
        return self._settle(self._loop.run(self._ask(input, case_id, metadata)))

    async def respond(
        self, input: Any, *, case_id: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> SubjectResponse:
        """The awaitable form of calling the probe, for ``async def`` tests."""
        return self._settle(await self._loop.run_async(self._ask(input, case_id, metadata)))

    async def _ask(
        self, input: Any, case_id: str | None, metadata: Mapping[str, Any] | None
    ) -> Ask:
        from types import MappingProxyType

        from vitrine._bench.model import Case
        from vitrine._pytest_loop import ask

        case = Case(case_id or self._case_id, input, MappingProxyType(dict(metadata or {})))
        return await ask(self._arm, case, self._retry, trial_timeout_s=self._trial_timeout_s)

    def _settle(self, asked: Ask) -> SubjectResponse:
        # Raised here, in the test's thread, not on the loop: a skip is the test's outcome.
        self.asks.append(asked)
        if asked.response is not None:
            self.responses.append(asked.response)
            return asked.response
        if asked.contract:
            pytest.fail(str(asked.error), pytrace=False)
        if self._unmeasured == "fail":
            pytest.fail(f"{asked.reason} (--vitrine-unmeasured=fail)", pytrace=False)
        pytest.skip(asked.reason)


@pytest.fixture
def vitrine_ask(
    request: pytest.FixtureRequest,
    vitrine_subject: Callable[..., Any],
    vitrine_retry_policy: RetryPolicy,
) -> SubjectProbe:
    """Ask the in-process subject; the case id is the test's (its case marker, else its name)."""
    marker = request.node.get_closest_marker("case")
    case_id = str(marker.args[0]) if marker is not None and marker.args else request.node.name
    from vitrine._bench.retry import RetryPolicy

    if not isinstance(vitrine_retry_policy, RetryPolicy):
        raise pytest.UsageError(
            f"the vitrine_retry_policy fixture returned {type(vitrine_retry_policy).__name__}, "
            "not a vitrine.RetryPolicy"
        )
    asks: list[Ask] = []
    request.node.stash[_asks_key] = asks
    return SubjectProbe(
        vitrine_subject,
        case_id,
        loop=session_loop(request.config),
        retry=vitrine_retry_policy,
        trial_timeout_s=_trial_timeout_s(request.config),
        unmeasured=_unmeasured_choice(request.config),
        asks=asks,
    )


def _load_object(spec: str, where: str) -> Any:
    """Import ``module:attr``; anything wrong is a usage error that names the setting."""
    import importlib

    module_name, _, attr = spec.strip().partition(":")
    if not module_name or not attr:
        raise pytest.UsageError(f"{where} expects module:attr, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise pytest.UsageError(f"{where} {spec}: cannot import {module_name!r} ({exc})") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise pytest.UsageError(f"{where} {spec}: {module_name!r} has no {attr!r}") from None


def metrics_of(item: pytest.Item) -> list[Metric]:
    """The metrics ``item`` recorded through ``vitrine_metrics`` (none if it did not use it)."""
    metrics = item.stash.get(_metrics_key, None)
    return [] if metrics is None else list(metrics.recorded)


@pytest.fixture
def vitrine_metrics(request: pytest.FixtureRequest) -> Metrics:
    """The test's metrics; a judged one runs its judge on the session's event loop."""
    config = request.config
    metrics = Metrics(load_judge, run=lambda coroutine: session_loop(config).run(coroutine))
    request.node.stash[_metrics_key] = metrics
    return metrics


class _Recorder:
    """Collects outcomes and metrics of the tests that use vitrine, and writes the report."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: dict[str, dict[str, Any]] = {}
        self.unmeasured = _unmeasured_choice(config)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        metrics = item.stash.get(_metrics_key, None)
        asks = item.stash.get(_asks_key, [])
        try:
            result = yield
        except (pytest.skip.Exception, pytest.fail.Exception):
            # An ask that was not measured stops the test; a metric it had failed still fails.
            unmeasured = [a.reason for a in asks if a.reason]
            if metrics is None or not metrics.failures or not unmeasured:
                raise
            message = "\n".join([*metrics.failures, f"then {unmeasured[0]}"])
            raise pytest.fail.Exception(message, pytrace=False) from None
        except Exception as exc:
            # The test stopped on its own error; the metrics it had recorded still speak.
            if metrics is None or not metrics.failures:
                raise
            pytest.fail("\n".join([*metrics.failures, f"then the test stopped: {exc!r}"]))
        if metrics is not None:
            try:
                metrics.settle(self.unmeasured)
            except AssertionError as failed:
                # The metrics' messages are the whole story; the plugin's frames are noise.
                pytest.fail(str(failed), pytrace=False)
        unmeasured = [a.reason for a in asks if a.reason]
        if unmeasured:
            # The test caught the ask's skip and carried on: what it asked was still not seen.
            reason = "; ".join(unmeasured)
            if self.unmeasured == "fail":
                pytest.fail(f"{reason} (--vitrine-unmeasured=fail)", pytrace=False)
            pytest.skip(reason)
        return result

    def _entry(self, nodeid: str) -> dict[str, Any]:
        return self.results.setdefault(
            nodeid, {"nodeid": nodeid, "outcome": "passed", "duration_s": 0.0}
        )

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self._entry(report.nodeid)
        entry["duration_s"] = round(entry["duration_s"] + report.duration, 4)
        if report.failed:
            entry["outcome"] = "failed"
            lines = str(report.longreprtext).strip().splitlines()
            entry.setdefault("detail", _bound(lines[-1] if lines else f"failed in {report.when}"))
        elif report.skipped and entry["outcome"] != "failed":
            entry["outcome"] = "skipped"
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            entry["detail"] = _bound(str(reason))
        for key, value in report.user_properties:
            if key == "case":
                entry["case"] = value

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Iterator[None]:
        yield
        if call.when != "teardown":
            return
        entry = self._entry(item.nodeid)
        metrics = item.stash.get(_metrics_key, None)
        if metrics is not None:
            entry["metrics"] = [m.to_dict() for m in metrics.recorded]
            if metrics.failures:
                # The metrics' own words, not the last line of a traceback.
                entry["detail"] = _bound("; ".join(metrics.failures))
        turns = item.stash.get(_turns_key, None)
        if turns:
            entry["layers"] = [turn.layer for turn in turns]
        asks = item.stash.get(_asks_key, None)
        if asks:
            entry["asks"] = [asked.to_dict() for asked in asks]
            entry["retries"] = sum(asked.tries - 1 for asked in asks)
            not_measured = [asked.reason for asked in asks if asked.reason]
            if not_measured:
                entry["not_measured"] = _bound("; ".join(not_measured))
        entry["markers"] = sorted({m.name for m in item.iter_markers()} - _PLUMBING_MARKERS)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        directory = self.config.getoption("--vitrine-report", None)
        if not directory:
            return
        tests = [e for e in self.results.values() if {"metrics", "case", "asks"} & e.keys()]
        tests.sort(key=lambda e: (str(e.get("case", "~")), str(e["nodeid"])))
        totals = {
            state: sum(1 for t in tests if t.get("outcome") == state)
            for state in ("passed", "failed", "skipped")
        }
        document: dict[str, Any] = {
            "schema": REPORT_SCHEMA,
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "exit_status": int(exitstatus),
            "totals": totals,
            # Tries of the subject beyond the first: a suite that passed only on retries says so.
            "retries": sum(int(t.get("retries", 0)) for t in tests),
            "tests": tests,
        }
        # Only an endpoint that was used is named: tests of an in-process subject have none.
        api_url = self.config.stash.get(_api_url_key, None)
        if api_url is not None:
            document["api_url"] = api_url
        from vitrine.store._files import atomic_write_bytes
        from vitrine.store._seal import sealed

        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        # Sealed, so a verdict edited afterwards is shown unverified by the board, not as passed.
        text = json.dumps(sealed(document), indent=2) + "\n"
        atomic_write_bytes(root / "behaviour-report.json", text.encode())
        atomic_write_bytes(root / "behaviour-report.html", render_html(document).encode())


_PLUMBING_MARKERS = frozenset({"case", "parametrize", "usefixtures", "filterwarnings"})


def _unmeasured_choice(config: pytest.Config) -> str:
    chosen = config.getoption("--vitrine-unmeasured", None)
    if chosen:
        return str(chosen)
    from_env = os.environ.get(_UNMEASURED_ENV, "").strip().lower() or "skip"
    if from_env not in UNMEASURED_CHOICES:
        raise pytest.UsageError(
            f"{_UNMEASURED_ENV}={from_env!r} is not one of {', '.join(UNMEASURED_CHOICES)}"
        )
    return from_env


_STYLE = (
    "body{font:14px system-ui,sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:4px 8px;"
    "text-align:left;vertical-align:top}th{background:#f4f4f4}.passed{color:#0a6b2d}"
    ".failed{color:#b00020;font-weight:bold}.skipped,.not_measured{color:#8a6d00}"
    ".not_applicable{color:#555}"
    "code{font-size:12px}"
)


def render_html(document: dict[str, Any]) -> str:
    """The report as one self-contained page; every value from a test is escaped."""
    e = html.escape
    rows: list[str] = []
    for test in document["tests"]:
        metrics = test.get("metrics") or []
        cells = "<br>".join(
            f'<span class="{e(str(m["state"]))}">{e(str(m["name"]))} ({e(str(m["kind"]))}): '
            f"{e(_score(m['score'], m['state']))} / {e(str(m['threshold']))} "
            f"{e(str(m['state']))}</span>"
            + (f" <code>{e(str(m['detail']))}</code>" if m.get("detail") else "")
            for m in metrics
        )
        asked = "<br>".join(
            f'<span class="{e(str(a.get("state")))}">subject on {e(str(a.get("case")))}: '
            f"{e(str(a.get('tries')))} {'try' if a.get('tries') == 1 else 'tries'}</span>"
            + "".join(
                f" <code>try {e(str(f.get('attempt')))}: {e(str(f.get('error')))}</code>"
                for f in a.get("failed_attempts", [])
            )
            for a in test.get("asks") or []
        )
        if asked:
            cells = f"{cells}<br>{asked}" if cells else asked
        outcome = str(test.get("outcome", "unknown"))
        layers = " → ".join(str(layer) for layer in test.get("layers", []))
        rows.append(
            f"<tr><td>{e(str(test.get('case', '')))}</td><td><code>{e(str(test['nodeid']))}"
            f"</code></td><td>{e(', '.join(test.get('markers', [])))}</td>"
            f'<td class="{e(outcome)}">{e(outcome)}</td><td>{e(layers)}</td><td>{cells}'
            + (f"<br><code>{e(str(test['detail']))}</code>" if test.get("detail") else "")
            + "</td></tr>"
        )
    totals = document["totals"]
    summary = ", ".join(f"{e(str(v))} {e(k)}" for k, v in totals.items())
    if document.get("retries"):
        summary += f"; {e(str(document['retries']))} retried asks of the subject"
    service = f"service {e(str(document['api_url']))}; " if document.get("api_url") else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>vitrine behaviour report</title>"
        f"<style>{_STYLE}</style></head><body><h1>Behaviour report</h1>"
        f"<p>{summary}; {service}{e(str(document['created']))}</p>"
        "<table><thead><tr><th>case</th><th>test</th><th>markers</th><th>outcome</th>"
        "<th>answered by</th><th>metrics (score / threshold)</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></body></html>\n"
    )


def _score(value: object, state: object = None) -> str:
    if value is None:
        return "not applicable" if state == "not_applicable" else "not measured"
    return f"{float(str(value)):.2f}"
