"""The board's pages, independent of the HTTP server that carries them.

:class:`Board` turns a request (method, path, query, form) into a :class:`Reply`; the server
in :mod:`vitrine._board.server` only moves bytes, and ``vitrine board export`` calls the same
page functions to write a static copy.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from vitrine._bench.results import RunResult
from vitrine._board.catalog import DOCUMENTS, KINDS, SEALED, VERDICTS, Catalog, RunHeader
from vitrine._board.compare import BUCKETS, compare_sides
from vitrine._board.live import live_view, trial_counts
from vitrine._board.matrix import kill_map
from vitrine._board.query import IndexQuery, Page, QueryError
from vitrine._board.render import FAVICON, render, static_file
from vitrine._board.runs import (
    BoardError,
    check_views,
    checks_chart,
    load_benchmark_run,
    read_document,
    trial_view,
)
from vitrine._board.setup import BOARD_MAX_REPETITIONS, JobRunner, SetupRequest, plan_choices
from vitrine._board.trends import MAX_POINTS, trends_for
from vitrine._redact import describe_exception
from vitrine._suite import SuiteLoadError, load_suite
from vitrine.redteam._report import write_run_html
from vitrine.redteam._runs import (
    RunIntegrityError,
    RunNotFoundError,
    finding_states,
    load_run,
    read_signoffs,
    sign_off,
)
from vitrine.reports._writer import ReportSchemaError, load_report
from vitrine.store._errors import TamperedRunError
from vitrine.store._naming import sanitize_file_name
from vitrine.store._seal import seal_problem

__all__ = ["ROUTES", "Board", "Reply", "Route", "static_name"]

_HTML = "text/html; charset=utf-8"
_SIBLINGS = 30
_OLD_MUTANTS_KEY = "mutants"  # the one key every mutant session had before sessions had theirs
_Params = Mapping[str, Sequence[str]]


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    content_type: str = _HTML
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def html(cls, text: str, status: int = 200) -> Reply:
        return cls(status, text.encode())

    @classmethod
    def redirect(cls, location: str) -> Reply:
        return cls(303, b"", headers={"Location": location})


@dataclass(frozen=True, slots=True)
class Route:
    """One address the board answers: a method and a path whose ``{name}`` segments are
    parameters (``{number}`` only digits). Every page, file and action is one of :data:`ROUTES`,
    so what guards the board (its access token) can be checked against each of them."""

    method: str
    path: str

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(part for part in self.path.split("/") if part)

    def match(self, parts: Sequence[str]) -> list[str] | None:
        """The parameters' values when ``parts`` is this route's path, else None."""
        pattern = self.segments
        if len(parts) != len(pattern):
            return None
        values = []
        for part, expected in zip(parts, pattern, strict=True):
            if expected == "{number}":
                if not part.isdigit():
                    return None
                values.append(part)
            elif expected.startswith("{"):
                values.append(part)
            elif part != expected:
                return None
        return values


ROUTES: tuple[Route, ...] = (
    Route("GET", ""),
    Route("GET", "compare"),
    Route("GET", "trends"),
    Route("GET", "controls"),
    Route("GET", "redteam"),
    Route("GET", "setup"),
    Route("GET", "run/{kind}/{key}"),
    Route("GET", "trial/{run}/{case}"),
    Route("GET", "job/{number}"),
    Route("GET", "api/job/{number}"),
    Route("GET", "api/preview"),
    Route("GET", "static/{file}"),
    Route("GET", "favicon.ico"),
    Route("POST", "redteam/{run}/sign-off"),
    Route("POST", "setup/start"),
)


class Board:
    """One store's board: its header index, its panel runs and its anti-forgery token."""

    def __init__(
        self,
        root: Path,
        *,
        suite: str | None = None,
        persist_cache: bool = True,
        static: bool = False,
    ) -> None:
        self.root = root
        self.suite_spec = suite
        self.catalog = Catalog(root, persist=persist_cache)
        self.jobs = JobRunner()
        self.csrf_token = secrets.token_urlsafe(32)
        self.static = static  # an exported copy: no forms, links to files
        self._handlers = self._route_handlers()

    # -- routing ----------------------------------------------------------------------------

    def get(self, path: str, params: Mapping[str, Sequence[str]]) -> Reply:
        return self._dispatch("GET", path, params)

    def post(self, path: str, form: Mapping[str, str]) -> Reply:
        if not hmac.compare_digest(form.get("csrf", ""), self.csrf_token):
            return self._refusal(
                "this form did not come from this board (its anti-forgery token is missing or "
                "stale): reload the page and submit it again",
                403,
            )
        return self._dispatch("POST", path, {k: [v] for k, v in form.items()})

    def _dispatch(self, method: str, path: str, params: Mapping[str, Sequence[str]]) -> Reply:
        parts = _segments(path)
        try:
            for route in ROUTES:
                if route.method == method and (args := route.match(parts)) is not None:
                    return self._handlers[route.path](args, params)
            if method == "POST":
                raise BoardError(f"nothing accepts a form at {path}", 404)
            raise BoardError(f"the board has no page at /{'/'.join(parts)}")
        except (BoardError, QueryError) as exc:
            status = exc.status if isinstance(exc, BoardError) else 400
            return self._refusal(str(exc), status)
        except (RunIntegrityError, TamperedRunError) as exc:  # evidence that fails its check
            return self._refusal(str(exc), 409)

    def _route_handlers(self) -> dict[str, Callable[[list[str], _Params], Reply]]:
        """What answers each of :data:`ROUTES`, by its path (the two must name the same)."""

        def one(params: _Params, name: str) -> str:
            values = params.get(name) or [""]
            return values[-1].strip()

        def form(params: _Params) -> dict[str, str]:
            return {k: v[-1] for k, v in params.items() if v}

        handlers: dict[str, Callable[[list[str], _Params], Reply]] = {
            "": lambda _, p: self.index(IndexQuery.parse(p)),
            "compare": lambda _, p: self.compare(one(p, "a"), one(p, "b")),
            "trends": lambda _, p: self.trends(one(p, "hash")),
            "controls": lambda _, p: self.controls(),
            "redteam": lambda _, p: self.redteam(),
            "setup": lambda _, p: self.setup_page(),
            "run/{kind}/{key}": lambda a, _: self.run(a[0], a[1]),
            "trial/{run}/{case}": lambda a, _: self.trial(a[0], a[1]),
            "job/{number}": lambda a, _: self.job(int(a[0])),
            "api/job/{number}": lambda a, _: self.job_json(int(a[0])),
            "api/preview": lambda _, p: self.preview_json(form(p)),
            "static/{file}": lambda a, _: _static(a[0]),
            "favicon.ico": lambda a, _: _static(FAVICON),
            "redteam/{run}/sign-off": lambda a, p: self._sign_off(a[0], form(p)),
            "setup/start": lambda _, p: self._start(form(p)),
        }
        unanswered = {route.path for route in ROUTES} ^ set(handlers)
        assert not unanswered, f"board routes without a handler (or the reverse): {unanswered}"
        return handlers

    # -- pages ------------------------------------------------------------------------------

    def href(self, path: str) -> str:
        """A link to a board page: its URL, or in an exported copy the file that holds it."""
        return static_name(path) if self.static else path

    def _page(self, template: str, status: int = 200, **context: Any) -> Reply:
        return Reply.html(
            render(template, csrf=self.csrf_token, static=self.static, href=self.href, **context),
            status,
        )

    def _refusal(self, message: str, status: int) -> Reply:
        return self._page("refusal.html.j2", status, message=message)

    def index(self, query: IndexQuery) -> Reply:
        headers = self.catalog.headers()
        page = Page.of(headers, query)
        page.rows[:] = self.catalog.verified(page.rows)
        return self._page(
            "index.html.j2",
            page=page,
            query=query,
            facets=_facets(headers),
            kinds=KINDS,
            verdicts=VERDICTS,
            total_runs=len(headers),
        )

    def _header(self, kind: str, key: str) -> RunHeader:
        header = self.catalog.find(kind, key)
        if header is None:
            raise BoardError(f"no {KINDS.get(kind, kind)} {key!r} in this store")
        return header

    def run(self, kind: str, key: str) -> Reply:
        if kind == "mutants" and key == _OLD_MUTANTS_KEY and self.catalog.find(kind, key) is None:
            # Every session once had this one address; it now leads to the newest session.
            newest = next((h for h in self.catalog.headers() if h.kind == "mutants"), None)
            if newest is not None:
                return Reply.redirect(f"/run/{quote(newest.kind)}/{quote(newest.key, safe='')}")
        header = self._header(kind, key)
        if kind == "benchmark":
            return self._benchmark_page(header)
        if kind == "offline":
            return self._offline_page(header)
        if kind == "redteam":
            return self._redteam_page(header)
        if kind == "mutants":
            return self._mutants_page(header)
        document = read_document(self.root, f"{header.location}/{DOCUMENTS[kind]}")
        _refuse_unsealed(kind, header.location, document)
        view = live_view(document, self._trial_href) if kind == "live" else None
        return self._page(
            "document.html.j2",
            header=header,
            doc=document,
            live=view,
            counts=trial_counts(view.trials) if view is not None else {},
        )

    def _trial_href(self, run_id: str, case: str) -> str | None:
        if self.catalog.find("benchmark", run_id) is None:
            return None  # a session's run kept in another store: its row says what it was
        return self.href(f"/trial/{quote(run_id, safe='')}/{quote(case, safe='')}")

    def _benchmark_page(self, header: RunHeader) -> Reply:
        run = load_benchmark_run(self.root, header.location)
        siblings = [
            h
            for h in self.catalog.headers()
            if h.kind == "benchmark"
            and h.definition_hash == header.definition_hash
            and h.key != header.key
        ][:_SIBLINGS]
        return self._page(
            "benchmark.html.j2",
            header=header,
            run=run,
            checks=(views := check_views(run)),
            checks_chart=checks_chart(views),
            siblings=siblings,
            trace_ids=self._trace_ids(header),
        )

    def _offline_page(self, header: RunHeader) -> Reply:

        try:
            report = load_report(self.root / header.location / DOCUMENTS["offline"])
        except (ReportSchemaError, OSError, ValueError) as exc:
            raise BoardError(f"{header.location}: {exc}", 409) from exc
        runs = {h.key: h for h in self.catalog.headers() if h.kind == "benchmark"}
        return self._page("offline.html.j2", header=header, report=report, known_runs=runs)

    def trial(self, run_id: str, case_id: str) -> Reply:
        header = self._header("benchmark", run_id)
        run = load_benchmark_run(self.root, header.location)
        return self._page(
            "trial.html.j2",
            header=header,
            run=run,
            trial=trial_view(run, case_id),
            trace_ids=self._trace_ids(header),
        )

    def _trace_ids(self, header: RunHeader) -> list[str]:
        """The run's OpenTelemetry trace ids, as its manifest records them (none untraced)."""
        manifest = read_document(self.root, f"{header.location}/manifest.json")
        return [str(t) for t in manifest.get("run", {}).get("trace_ids", [])]

    def compare(self, a: str, b: str) -> Reply:

        if not a or not b:
            raise BoardError("choose two runs or sessions to compare: /compare?a=ID&b=ID", 400)
        (left, left_runs), (right, right_runs) = self._side(a), self._side(b)
        views = compare_sides(left_runs, right_runs)
        return self._page("compare.html.j2", views=views, buckets=BUCKETS, left=left, right=right)

    def _side(self, key: str) -> tuple[RunHeader, dict[str, list[RunResult]]]:
        """One side of a comparison: a benchmark run, or a live session's runs by arm."""
        run = self.catalog.find("benchmark", key)
        if run is not None:
            loaded = load_benchmark_run(self.root, run.location)
            return run, {loaded.arm_id: [loaded]}
        session = self.catalog.find("live", key)
        if session is None:
            raise BoardError(f"no benchmark run or live session {key!r} in this store")
        receipt = read_document(self.root, f"{session.location}/{DOCUMENTS['live']}")
        _refuse_unsealed("live", session.location, receipt)
        by_arm: dict[str, list[RunResult]] = {}
        for ref in receipt.get("runs") or ():
            header = self.catalog.find("benchmark", str(ref.get("run_id")))
            if header is None:
                raise BoardError(
                    f"session {key} names run {ref.get('run_id')!r}, which is not in this "
                    "store: a session is compared only with all of its runs",
                    409,
                )
            loaded = load_benchmark_run(self.root, header.location)
            by_arm.setdefault(loaded.arm_id, []).append(loaded)
        if not by_arm:
            raise BoardError(f"session {key} recorded no run: there is nothing to compare", 409)
        return session, by_arm

    def trends(self, definition_hash: str) -> Reply:

        headers = self.catalog.headers()
        if not definition_hash:
            definitions: dict[str, tuple[str, int]] = {}
            for h in headers:
                if h.kind == "benchmark":
                    title, count = definitions.get(h.definition_hash, (h.title, 0))
                    definitions[h.definition_hash] = (title, count + 1)
            return self._page("trends_index.html.j2", definitions=definitions)
        series = trends_for(self.root, headers, definition_hash)
        if not series:
            raise BoardError(f"no sealed run of definition {definition_hash!r} in this store")
        return self._page(
            "trends.html.j2",
            definition_hash=definition_hash,
            series=series,
            max_points=MAX_POINTS,
        )

    def controls(self) -> Reply:
        offline = [h for h in self.catalog.headers() if h.kind == "offline"]
        newest = offline[0] if offline else None
        # An ablation or a plain evaluation runs no controls: the page shows the newest report
        # that did, and says when a newer one ran none.
        latest = next((h for h in offline if h.ran_controls), newest)
        report = None
        problem = None
        if latest is not None:
            try:
                report = load_report(self.root / latest.location / DOCUMENTS["offline"])
            except (ReportSchemaError, OSError, ValueError) as exc:
                problem = str(exc)
        matrix_header = next((h for h in self.catalog.headers() if h.kind == "mutants"), None)
        matrix, matrix_problem = (
            _load_matrix(self.root / matrix_header.location / DOCUMENTS["mutants"])
            if matrix_header is not None
            else (None, None)
        )
        return self._page(
            "controls.html.j2",
            newest=newest,
            source=latest,
            report=report,
            problem=problem,
            matrix_header=matrix_header,
            matrix=matrix,
            kill=None if matrix is None else kill_map(matrix),
            matrix_problem=matrix_problem,
            sessions=[h for h in self.catalog.headers() if h.kind == "mutants"],
        )

    def _mutants_page(self, header: RunHeader) -> Reply:
        matrix, problem = _load_matrix(self.root / header.location / DOCUMENTS["mutants"])
        status = 200 if problem is None else 409  # refused, as any evidence that fails its check
        return self._page(
            "mutants.html.j2",
            status,
            header=header,
            matrix=matrix,
            kill=None if matrix is None else kill_map(matrix),
            problem=problem,
        )

    # -- red team ---------------------------------------------------------------------------

    def redteam(self) -> Reply:
        runs = [h for h in self.catalog.headers() if h.kind == "redteam"]
        return self._page("redteam_index.html.j2", runs=runs)

    def _redteam_page(self, header: RunHeader, notice: str = "") -> Reply:

        run_dir = self.root / header.location
        try:
            document = load_run(run_dir)
        except RunNotFoundError as exc:
            raise BoardError(str(exc), 409) from exc
        findings = finding_states(document, read_signoffs(run_dir))
        return self._page(
            "redteam.html.j2", header=header, doc=document, findings=findings, notice=notice
        )

    def _sign_off(self, run_key: str, form: Mapping[str, str]) -> Reply:

        if self.static:
            raise BoardError("an exported board is read-only", 405)
        header = self._header("redteam", run_key)
        run_dir = self.root / header.location
        by, reason = form.get("by", ""), form.get("reason", "")
        if not by.strip() or not reason.strip():
            raise BoardError(
                "a sign-off needs your name and a reason: it is a record of who accepted the "
                "finding and why",
                400,
            )
        document = load_run(run_dir)
        try:
            # The run's own report page is re-rendered, exactly as after `vitrine redteam
            # sign-off`, before the sign-off is confirmed: if either fails, neither is recorded.
            sign_off(
                run_dir,
                form.get("finding", ""),
                by=by,
                reason=reason,
                then=lambda signoffs: write_run_html(run_dir, document, signoffs),
            )
        except OSError as exc:
            raise BoardError(
                f"the sign-off could not be recorded ({exc.strerror or exc}); nothing was kept",
                500,
            ) from exc
        except (LookupError, ValueError) as exc:
            raise BoardError(str(exc), 400) from exc
        return Reply.redirect(f"/run/redteam/{quote(run_key)}")

    # -- setup ------------------------------------------------------------------------------

    def _suite(self) -> Any:

        try:
            return load_suite(self.suite_spec or None)
        except SuiteLoadError as exc:
            raise BoardError(str(exc), 500) from exc

    def setup_page(self) -> Reply:
        suite = self._suite()
        try:
            scenarios = [suite.scenarios[key] for key in suite.scenarios]
            scenario_problem = None
        except Exception as exc:
            scenarios, scenario_problem = [], describe_exception(exc)
        return self._page(
            "setup.html.j2",
            suite=suite,
            plans=plan_choices(suite),
            scenarios=scenarios,
            scenario_problem=scenario_problem,
            board_max=BOARD_MAX_REPETITIONS,
        )

    def _start(self, form: Mapping[str, str]) -> Reply:
        if self.static:
            raise BoardError("an exported board is read-only", 405)
        request = SetupRequest.from_form(dict(form))
        argv = request.argv(self._suite(), self.suite_spec, self.root)
        job = self.jobs.start(request.plan, argv)
        return Reply.redirect(f"/job/{job.id}")

    def job(self, job_id: int) -> Reply:
        return self._page("job.html.j2", job=self.jobs.get(job_id))

    def preview_json(self, form: Mapping[str, str]) -> Reply:
        """The plan's own preview of what the panel's choice would run (workload, power)."""
        try:
            lines = SetupRequest.from_form(dict(form)).preview(self._suite(), self.root)
        except BoardError as exc:
            return Reply(exc.status, json.dumps({"error": str(exc)}).encode(), "application/json")
        return Reply(200, json.dumps({"lines": lines}).encode(), "application/json")

    def job_json(self, job_id: int) -> Reply:

        try:
            body = json.dumps(self.jobs.get(job_id).to_dict())
        except BoardError as exc:
            return Reply(404, json.dumps({"error": str(exc)}).encode(), "application/json")
        return Reply(200, body.encode(), "application/json")


def _static(name: str) -> Reply:
    found = static_file(name)
    if found is None:
        raise BoardError(f"the board has no file {name!r}")
    return Reply(200, found[0], found[1])


def _segments(path: str) -> list[str]:
    # Split before decoding, so an encoded "/" inside a case id stays part of that id.
    return [unquote(part) for part in path.split("/") if part]


def static_name(path: str) -> str:
    """The file name an exported page is written under (flat, so relative links just work)."""

    route, _, query = path.partition("?")
    parts = [p for p in route.split("/") if p]
    if not parts:
        return "index.html"
    if parts[0] == "static":
        return "/".join(parts)
    if parts[0] == "trends" and query.startswith("hash="):
        parts.append(query.removeprefix("hash="))
    return sanitize_file_name("-".join(parts)) + ".html"


def _facets(headers: Sequence[RunHeader]) -> dict[str, list[str]]:
    """The distinct values each filter can take, for its drop-down."""
    values: dict[str, set[str]] = {"suite": set(), "plan": set(), "arm": set()}
    for h in headers:
        values["suite"].add(h.suite)
        values["plan"].add(h.plan)
        values["arm"].add(h.arm)
    return {k: sorted(v - {""}) for k, v in values.items()}


def _load_matrix(path: Path) -> tuple[Any, str | None]:
    """The kill matrix through its own reader, or the sentence saying why it cannot be shown."""
    try:
        # Guarded: a board reading a newer store may meet matrices this version cannot read.
        from vitrine.mutants._report import MatrixSchemaError, load_matrix  # noqa: PLC0415
    except ImportError:
        return None, "this version of vitrine cannot read mutant matrices"
    try:
        return load_matrix(path), None
    except MatrixSchemaError as exc:
        return None, str(exc)


def _refuse_unsealed(kind: str, location: str, document: Mapping[str, Any]) -> None:
    """A sealed kind's document (a live receipt, a RAG or behaviour report) is shown, or
    compared, only while its seal matches."""
    field = SEALED.get(kind)
    problem = seal_problem(document, field) if field is not None else None
    if problem is not None:
        what = "the receipt" if kind == "live" else f"the {KINDS[kind]}"
        raise BoardError(f"{location}: {what} cannot be trusted: {problem}", 409)
