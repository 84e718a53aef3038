"""vitrine's pytest plugin: behaviour tests over a real assistant service.

Loaded in every pytest session through the ``pytest11`` entry point, so importing it costs
only pytest and the standard library; httpx, the judge and the providers load on first use.

- ``vitrine_chat``: a client that opens real server-sent-event sessions against
  ``EVAL_API_URL`` (default http://localhost:8000) and returns what it captured. When the
  service is unreachable the test is skipped with the reason, unless
  ``VITRINE_REQUIRE_SERVICE`` is set, in which case it fails: CI must not pass by skipping.
- ``vitrine_metrics``: metrics recorded per test. Deterministic ones (regex and structural)
  have threshold 1.0 and always run. Judged ones (G-Eval style: criteria, evaluation steps, a
  0–1 score, a threshold between 0.65 and 1.0) run only when a judge is configured
  (``VITRINE_JUDGE_PROVIDER`` = openai, azure or local; or ``VITRINE_JUDGE_FACTORY`` =
  ``module:attr`` returning a judge). Every metric of a test is recorded, even after one
  failed; when the test body ends, a test with failed metrics fails with all their messages.
  A test with a judged metric that could not be measured is never reported as passed: it is
  skipped with the reason, or fails with ``--vitrine-unmeasured=fail`` (or
  ``VITRINE_UNMEASURED=fail``).
- ``@pytest.mark.case("TC-P1-003")`` gives a test its id, selectable with ``-k TC-P1-003``;
  ``adversarial`` marks tests kept out of the CI count.
- ``--vitrine-report DIR`` writes ``behaviour-report.json`` and ``behaviour-report.html``
  (self-contained, escaped) with every test's metrics and, per turn, the ``layer`` of the
  service that produced the answer, at the end of the session.
"""

from __future__ import annotations

import dataclasses
import datetime
import html
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import httpx

    from vitrine.judge.base import Judge

__all__ = [
    "DEFAULT_API_URL",
    "ChatClient",
    "ChatSession",
    "Metric",
    "Metrics",
    "ServiceUnavailable",
    "Transcript",
    "Turn",
]

DEFAULT_API_URL = "http://localhost:8000"
JUDGED_MIN_THRESHOLD = 0.65
CASE_ID = re.compile(r"^TC-[A-Z0-9]+-\d{3}$")
REPORT_SCHEMA = "vitrine.behaviour-report/1"
_TIMEOUT_S = 60.0
_MAX_RATE_RETRIES = 3
_MAX_RETRY_WAIT_S = 5.0
_DETAIL_LIMIT = 400

UNMEASURED_CHOICES = ("skip", "fail")
_UNMEASURED_ENV = "VITRINE_UNMEASURED"

_metrics_key = pytest.StashKey["Metrics"]()
_turns_key = pytest.StashKey[list["Turn"]]()


# --- captured conversations --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Event:
    type: str
    data: dict[str, Any]


@dataclass(slots=True)
class Turn:
    """One request and what came back: the events of a stream, or a problem document."""

    message: str
    status_code: int
    request_id: str | None
    events: list[Event] = field(default_factory=list)
    problem: dict[str, Any] | None = None

    @property
    def final(self) -> dict[str, Any] | None:
        finals = [e.data for e in self.events if e.type == "message.final"]
        return finals[-1] if finals else None

    @property
    def answer(self) -> str:
        return str((self.final or {}).get("answer", ""))

    @property
    def skus(self) -> list[str]:
        return [str(s) for s in (self.final or {}).get("skus", [])]

    @property
    def abstained(self) -> bool:
        return bool((self.final or {}).get("abstained", False))

    @property
    def layer(self) -> str | None:
        """Which layer of the service produced the answer (``front-desk``, ``agent``...)."""
        value = (self.final or {}).get("layer")
        return None if value is None else str(value)

    @property
    def session_id(self) -> str | None:
        final = self.final or next((e.data for e in self.events if e.type == "error"), {})
        value = final.get("session_id")
        return None if value is None else str(value)

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.type == "tool.call"]

    @property
    def deltas(self) -> str:
        return "".join(
            str(e.data.get("text", "")) for e in self.events if e.type == "message.delta"
        )

    @property
    def errors(self) -> list[str]:
        return [str(e.data.get("message", "")) for e in self.events if e.type == "error"]


@dataclass(slots=True)
class Transcript:
    persona_id: str | None
    turns: list[Turn] = field(default_factory=list)

    @property
    def last(self) -> Turn:
        if not self.turns:
            raise LookupError("the transcript has no turns: nothing was sent")
        return self.turns[-1]

    @property
    def answer(self) -> str:
        return self.last.answer

    @property
    def skus(self) -> list[str]:
        return self.last.skus

    @property
    def all_skus(self) -> list[str]:
        return list(dict.fromkeys(s for turn in self.turns for s in turn.skus))

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [call for turn in self.turns for call in turn.tool_calls]


class ServiceUnavailable(Exception):
    """The service could not be reached at all (connection refused, DNS, timeout)."""


def parse_sse(lines: Iterator[str]) -> Iterator[Event]:
    """Events from server-sent-event lines; an event without JSON data keeps its raw text."""
    name = "message"
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                raw = "\n".join(data)
                try:
                    payload = json.loads(raw)
                except json.JSONDecodeError:
                    payload = {"raw": raw}
                yield Event(name, payload if isinstance(payload, dict) else {"value": payload})
            name, data = "message", []
        elif line.startswith(":"):
            continue  # a comment line (keep-alive)
        else:
            key, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
    if data:
        yield Event(name, {"raw": "\n".join(data), "incomplete": True})


class ChatSession:
    """A conversation with the service; the first send opens it, later sends continue it."""

    def __init__(self, client: ChatClient, persona_id: str | None) -> None:
        self._client = client
        self.transcript = Transcript(persona_id)
        self.session_id: str | None = None

    def send(self, message: str) -> Turn:
        body: dict[str, Any] = {"message": message}
        if self.session_id is None:
            if self.transcript.persona_id is not None:
                body["persona_id"] = self.transcript.persona_id
        else:
            body["session_id"] = self.session_id
        turn = self._client.post_chat(body)
        self.transcript.turns.append(turn)
        if self.session_id is None:
            self.session_id = turn.session_id
        return turn


class ChatClient:
    """Real HTTP to the service, through httpx; ``chat(persona, *messages)`` runs a session."""

    def __init__(self, base_url: str, *, timeout_s: float = _TIMEOUT_S) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout_s)
        self._log: list[Turn] | None = None

    def record_into(self, log: list[Turn] | None) -> None:
        """Append every turn sent from now on to ``log`` (None: stop recording)."""
        self._log = log

    def close(self) -> None:
        self._http.close()

    def __call__(self, persona_id: str | None, *messages: str) -> Transcript:
        if not messages:
            raise ValueError("send at least one message: an empty conversation tests nothing")
        session = self.session(persona_id)
        for message in messages:
            session.send(message)
        return session.transcript

    def session(self, persona_id: str | None) -> ChatSession:
        return ChatSession(self, persona_id)

    def health(self) -> tuple[int, dict[str, Any]]:
        import httpx

        try:
            response = self._http.get("/health", timeout=5.0)
        except httpx.HTTPError as exc:
            raise ServiceUnavailable(f"{type(exc).__name__}") from exc
        try:
            body = response.json()
        except ValueError:
            body = {}
        return response.status_code, body if isinstance(body, dict) else {}

    def post_chat(self, body: dict[str, Any] | str) -> Turn:
        """POST /v1/chat and capture the stream; a raw string body is sent as given."""
        for attempt in range(_MAX_RATE_RETRIES + 1):
            turn, retry_after = self._post_once(body)
            if turn.status_code != 429 or attempt == _MAX_RATE_RETRIES:
                if self._log is not None:
                    self._log.append(turn)
                return turn
            # A polite client waits as told; the limit protects the service, not the test.
            time.sleep(min(_MAX_RETRY_WAIT_S, retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def _post_once(self, body: dict[str, Any] | str) -> tuple[Turn, float]:
        message = str(body.get("message", "")) if isinstance(body, dict) else body
        kwargs: dict[str, Any] = (
            {"json": body}
            if isinstance(body, dict)
            else {"content": body, "headers": {"content-type": "application/json"}}
        )
        with self._http.stream("POST", "/v1/chat", **kwargs) as response:
            turn = Turn(message, response.status_code, response.headers.get("x-request-id"))
            if response.status_code == 200 and response.headers.get("content-type", "").startswith(
                "text/event-stream"
            ):
                turn.events.extend(parse_sse(response.iter_lines()))
            else:
                response.read()
                turn.problem = _json_or_text(response)
            retry = _retry_after(response)
        return turn, retry


def _json_or_text(response: httpx.Response) -> dict[str, Any]:
    try:
        value = response.json()
    except ValueError:
        return {"text": response.text[:_DETAIL_LIMIT]}
    return value if isinstance(value, dict) else {"value": value}


def _retry_after(response: httpx.Response) -> float:
    try:
        return max(0.0, float(response.headers.get("retry-after", "1")))
    except ValueError:
        return 1.0


# --- metrics -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    kind: str  # "regex", "structural" or "judged"
    score: float | None
    threshold: float
    state: str  # "passed", "failed" or "skipped"
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Metrics:
    """The metrics of one test. Each is recorded, never raised at once: :meth:`settle` (which
    the plugin calls when the test body ends) turns them into the test's verdict."""

    def __init__(self, judge_loader: Callable[[], Judge | str | None]) -> None:
        self.recorded: list[Metric] = []
        self._judge_loader = judge_loader

    def _record(self, metric: Metric) -> Metric:
        self.recorded.append(metric)
        return metric

    @property
    def failures(self) -> list[str]:
        """One message per failed metric, in the order they were recorded."""
        return [failure_message(m) for m in self.recorded if m.state == "failed"]

    @property
    def unmeasured(self) -> list[str]:
        return [
            f"judged metric {m.name!r} not measured: {m.detail}"
            for m in self.recorded
            if m.state == "skipped"
        ]

    def settle(self, unmeasured: str = "skip") -> None:
        """Fail with every failed metric's message; else skip (or, with ``unmeasured="fail"``,
        fail) when a judged metric could not be measured; else return: the test passed."""
        if unmeasured not in UNMEASURED_CHOICES:
            raise ValueError(f"unmeasured must be one of {UNMEASURED_CHOICES}, got {unmeasured!r}")
        if self.failures:
            raise AssertionError("\n".join(self.failures))
        if self.unmeasured:
            reason = "; ".join(self.unmeasured)
            if unmeasured == "fail":
                pytest.fail(f"{reason} (--vitrine-unmeasured=fail)", pytrace=False)
            pytest.skip(reason)

    def check(self, name: str, passed: bool, detail: str = "") -> Metric:
        """A structural metric: a fact about the captured response, threshold 1.0."""
        score = 1.0 if passed else 0.0
        return self._record(
            Metric(name, "structural", score, 1.0, "passed" if passed else "failed", _bound(detail))
        )

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
            raise ValueError(
                f"a judged threshold must be between {JUDGED_MIN_THRESHOLD} and 1.0, got "
                f"{threshold}: below that a judge's noise passes as agreement"
            )
        if not criteria or not evaluation_steps:
            raise ValueError("a judged metric needs criteria and evaluation steps")
        judge = self._judge_loader()
        if judge is None or isinstance(judge, str):
            reason = judge or "no judge configured (set VITRINE_JUDGE_PROVIDER)"
            return self._record(Metric(name, "judged", None, threshold, "skipped", reason))
        return self._record(
            _judge_metric(judge, name, input, output, criteria, evaluation_steps, threshold)
        )


def _judge_metric(
    judge: Judge,
    name: str,
    input: str,
    output: str,
    criteria: Sequence[str],
    steps: Sequence[str],
    threshold: float,
) -> Metric:
    import asyncio

    from vitrine.judge.base import Criterion

    rubric = [Criterion(f"criterion-{i + 1}", text) for i, text in enumerate(criteria)]
    task = (
        input + "\n\nEvaluation steps:\n" + "\n".join(f"{i + 1}. {s}" for i, s in enumerate(steps))
    )
    result = asyncio.run(judge.evaluate(task, output, rubric))
    if not result.usable or result.score is None:
        # Not measured is not a pass: a configured judge that cannot judge fails loudly.
        return Metric(name, "judged", None, threshold, "failed", _bound(result.summary))
    score = round(result.score / 100.0, 4)
    state = "passed" if score >= threshold else "failed"
    return Metric(name, "judged", score, threshold, state, _bound(result.summary))


def load_judge() -> Judge | str | None:
    """The configured judge; None when none is configured; a reason when one cannot be built."""
    factory = os.environ.get("VITRINE_JUDGE_FACTORY", "").strip()
    provider = os.environ.get("VITRINE_JUDGE_PROVIDER", "").strip()
    if factory:
        import importlib

        module_name, _, attr = factory.partition(":")
        built: Judge = getattr(importlib.import_module(module_name), attr or "judge")()
        return built
    if not provider:
        return None
    from vitrine.plans.base import PROVIDERS

    name = next((known for known in PROVIDERS if known == provider), None)
    if name is None:
        return f"VITRINE_JUDGE_PROVIDER={provider!r} is not one of {', '.join(PROVIDERS)}"
    from vitrine.judge.llm import LLMJudge
    from vitrine.providers.config import ProviderConfig, create_chat_model, readiness

    config = ProviderConfig.from_env(name)
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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "case(id): the test's case id, e.g. TC-P1-003")
    config.addinivalue_line(
        "markers", "adversarial: an adversarial probe, kept out of the CI behaviour count"
    )
    # Per config, not per module: a pytest run inside a test (pytester) has its own recorder.
    config.pluginmanager.register(_Recorder(config), f"vitrine-recorder-{id(config)}")


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
def vitrine_api_url() -> str:
    return os.environ.get("EVAL_API_URL", "").strip() or DEFAULT_API_URL


@pytest.fixture(scope="session")
def vitrine_service(vitrine_api_url: str) -> Iterator[ChatClient]:
    """A client for a service known to be up; skips (or, when required, fails) otherwise."""
    client = ChatClient(vitrine_api_url)
    required = os.environ.get("VITRINE_REQUIRE_SERVICE", "").strip() not in ("", "0")
    try:
        status, body = _wait_until_ready(client)
    except ServiceUnavailable as exc:
        client.close()
        reason = f"the service at EVAL_API_URL={vitrine_api_url} is unreachable ({exc})"
        if required:
            pytest.fail(f"{reason}; VITRINE_REQUIRE_SERVICE is set, so this is a failure")
        pytest.skip(f"{reason}; start it with `vitrine serve` or set EVAL_API_URL")
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


@pytest.fixture
def vitrine_metrics(request: pytest.FixtureRequest) -> Metrics:
    metrics = Metrics(load_judge)
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
        try:
            result = yield
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
        entry["markers"] = sorted({m.name for m in item.iter_markers()} - _PLUMBING_MARKERS)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        directory = self.config.getoption("--vitrine-report", None)
        if not directory:
            return
        tests = [e for e in self.results.values() if "metrics" in e or "case" in e]
        tests.sort(key=lambda e: (str(e.get("case", "~")), str(e["nodeid"])))
        totals = {
            state: sum(1 for t in tests if t.get("outcome") == state)
            for state in ("passed", "failed", "skipped")
        }
        document = {
            "schema": REPORT_SCHEMA,
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "api_url": os.environ.get("EVAL_API_URL", "").strip() or DEFAULT_API_URL,
            "exit_status": int(exitstatus),
            "totals": totals,
            "tests": tests,
        }
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        _write_atomic(root / "behaviour-report.json", json.dumps(document, indent=2) + "\n")
        _write_atomic(root / "behaviour-report.html", render_html(document))


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


def _write_atomic(path: Path, text: str) -> None:
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        Path(temp).replace(path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


_STYLE = (
    "body{font:14px system-ui,sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:4px 8px;"
    "text-align:left;vertical-align:top}th{background:#f4f4f4}.passed{color:#0a6b2d}"
    ".failed{color:#b00020;font-weight:bold}.skipped{color:#8a6d00}code{font-size:12px}"
)


def render_html(document: dict[str, Any]) -> str:
    """The report as one self-contained page; every value from a test is escaped."""
    e = html.escape
    rows: list[str] = []
    for test in document["tests"]:
        metrics = test.get("metrics") or []
        cells = "<br>".join(
            f'<span class="{e(str(m["state"]))}">{e(str(m["name"]))} ({e(str(m["kind"]))}): '
            f"{e(_score(m['score']))} / {e(str(m['threshold']))} {e(str(m['state']))}</span>"
            + (f" <code>{e(str(m['detail']))}</code>" if m.get("detail") else "")
            for m in metrics
        )
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
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>vitrine behaviour report</title>"
        f"<style>{_STYLE}</style></head><body><h1>Behaviour report</h1>"
        f"<p>{summary}; service {e(str(document['api_url']))}; {e(str(document['created']))}</p>"
        "<table><thead><tr><th>case</th><th>test</th><th>markers</th><th>outcome</th>"
        "<th>answered by</th><th>metrics (score / threshold)</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></body></html>\n"
    )


def _score(value: object) -> str:
    return "not measured" if value is None else f"{float(str(value)):.2f}"
