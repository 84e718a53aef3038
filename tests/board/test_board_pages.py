"""The board without a browser: the header index, filters, pages, comparisons and guards."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from board_fixtures import HOSTILE, build_store

from vitrine._board.app import Board
from vitrine._board.catalog import Catalog
from vitrine._board.command import main as board_main
from vitrine._board.query import IndexQuery, QueryError
from vitrine.store._index import index_path
from vitrine.store._seal import sealed


def _benchmarks(board: Board) -> list:
    return [h for h in board.catalog.headers() if h.kind == "benchmark"]


def test_index_lists_every_sealed_run_and_the_red_team_run(board_store: Path):
    headers = Catalog(board_store, persist=False).headers()
    kinds = [h.kind for h in headers]
    assert kinds.count("benchmark") == 3
    assert kinds.count("redteam") == 1
    assert [h.timestamp for h in headers] == sorted((h.timestamp for h in headers), reverse=True)


def test_catalog_reads_only_appended_lines_and_waits_for_a_torn_one(tmp_path: Path):
    build_store(tmp_path)
    catalog = Catalog(tmp_path, persist=False)
    assert len(catalog.headers()) == 3
    path = index_path(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[0])
    record["run_id"] = "2099-01-01_00-00-00_00000001"
    record["timestamp"] = "2099-01-01T00:00:00+00:00"
    line = json.dumps(record).encode()
    with path.open("ab") as handle:
        handle.write(line[:20])  # a torn write: not committed, not listed
    assert len(catalog.headers()) == 3
    with path.open("ab") as handle:
        handle.write(line[20:] + b"\n")
    headers = catalog.headers()
    assert len(headers) == 4
    assert headers[0].key == "2099-01-01_00-00-00_00000001"


def test_an_index_read_in_small_slices_lists_every_run_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from vitrine._board import catalog as catalog_module

    build_store(tmp_path)
    whole = [(h.key, h.verdict, h.location) for h in Catalog(tmp_path, persist=False).headers()]
    # Slices shorter than one line: every line spans a slice boundary.
    monkeypatch.setattr(catalog_module, "_READ_CHUNK", 37)
    sliced = [(h.key, h.verdict, h.location) for h in Catalog(tmp_path, persist=False).headers()]
    assert sliced == whole and len(whole) == 3


@pytest.mark.parametrize(
    "edit",
    [
        lambda record: record.update(verdict="PASS" if record["verdict"] == "FAIL" else "FAIL"),
        lambda record: record.update(content_hash="sha256:" + "0" * 64),
        lambda record: record.update(content_hash="SHA256:not-hex"),
    ],
    ids=["verdict", "another-seal", "not-a-seal"],
)
def test_an_edited_index_line_shows_its_run_unverified_and_leaves_the_others(tmp_path: Path, edit):
    build_store(tmp_path)
    catalog = Catalog(tmp_path, persist=False)
    before = {h.key: h.verdict for h in catalog.verified(catalog.headers())}
    assert "unverified" not in before.values()
    path = index_path(tmp_path)
    records = [json.loads(line) for line in path.read_bytes().splitlines()]
    edit(records[0])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    catalog = Catalog(tmp_path, persist=False)
    after = {h.key: h.verdict for h in catalog.verified(catalog.headers())}
    edited = records[0]["run_id"]
    assert after[edited] == "unverified"
    assert {k: v for k, v in after.items() if k != edited} == {
        k: v for k, v in before.items() if k != edited
    }


def test_an_index_line_edited_in_place_after_it_was_listed_is_caught_when_shown(tmp_path: Path):
    build_store(tmp_path)
    catalog = Catalog(tmp_path, persist=False)
    listed = catalog.headers()
    path = index_path(tmp_path)
    data = path.read_bytes()
    failed = next(h for h in listed if h.verdict == "fail")
    start = data.index(failed.key.encode())
    # Same length, same file: nothing tells the catalog to read the index again.
    edited = data[:start] + data[start:].replace(b'"FAIL"', b'"PASS"', 1)
    with path.open("r+b") as handle:
        handle.write(edited)
    shown = {h.key: h.verdict for h in catalog.verified(catalog.headers())}
    assert shown[failed.key] == "unverified"
    assert "unverified" not in {v for k, v in shown.items() if k != failed.key}


def test_header_cache_survives_a_restart_and_follows_a_changed_file(board_store: Path):
    first = Catalog(board_store)
    first.headers()
    assert first.cache_path.is_file()
    cached = json.loads(first.cache_path.read_text())["files"]
    assert any(key.endswith("redteam.json") for key in cached)
    second = Catalog(board_store)
    assert [h.key for h in second.headers()] == [h.key for h in first.headers()]


@pytest.mark.parametrize(
    ("params", "sentence"),
    [
        ({"colour": ["red"]}, "unknown filter 'colour'"),
        ({"since": ["yesterday"]}, "since must be a date written YYYY-MM-DD"),
        ({"verdict": ["great"]}, "verdict 'great' is not one of"),
        ({"page": ["0"]}, "page must lie between 1"),
        ({"since": ["2026-02-01"], "until": ["2026-01-01"]}, "no run can match"),
    ],
)
def test_a_filter_the_board_cannot_use_is_refused_with_a_sentence(params, sentence):
    with pytest.raises(QueryError, match=sentence):
        IndexQuery.parse(params)


def test_index_filters_by_arm_and_keeps_its_state_in_the_url(board_store: Path):
    board = Board(board_store, persist_cache=False)
    query = IndexQuery.parse({"arm": ["forgetful"], "per": ["1"]})
    html = board.index(query).body.decode()
    assert "1–1 of 1" in html
    assert query.url(page=2) == "/?arm=forgetful&page=2&per=1"
    refused = board.get("/", {"verdict": ["great"]})
    assert refused.status == 400
    assert "verdict &#39;great&#39; is not one of" in refused.body.decode()


def test_run_page_shows_census_wilson_and_a_not_derivable_floor(board_store: Path):
    board = Board(board_store, persist_cache=False)
    forgetful = next(h for h in _benchmarks(board) if h.arm == "forgetful")
    html = board.get(f"/run/{forgetful.ref}", {}).body.decode()
    assert "NOT DERIVABLE" in html
    assert "1/3" in html  # one success over three measured cases
    assert "[0.061, 0.792]" in html  # Wilson 95% of 1/3, from vitrine._stats
    assert "underpowered" in html


def test_trial_page_escapes_a_hostile_answer(board_store: Path):
    board = Board(board_store, persist_cache=False)
    good = next(h for h in _benchmarks(board) if h.arm == "good" and "1.0.0" in h.title)
    html = board.get(f"/trial/{good.key}/xss", {}).body.decode()
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(&#39;board&#39;)&lt;/script&gt;" in html


def test_compare_buckets_pairs_and_reports_the_sign_test(board_store: Path):
    board = Board(board_store, persist_cache=False)
    runs = {h.arm: h for h in _benchmarks(board) if "1.0.0" in h.title}
    html = board.compare(runs["good"].key, runs["forgetful"].key).body.decode()
    assert 'data-bucket="regressed">2<' in html
    assert 'data-bucket="unchanged">1<' in html
    assert "W/L/T 0/2/1" in html
    assert "sign test p 0.5" in html


def test_compare_refuses_runs_of_different_definitions(board_store: Path):
    board = Board(board_store, persist_cache=False)
    runs = _benchmarks(board)
    v1 = next(h for h in runs if "1.0.0" in h.title)
    v2 = next(h for h in runs if "2.0.0" in h.title)
    reply = board.get("/compare", {"a": [v1.key], "b": [v2.key]})
    assert reply.status == 409
    assert "these runs measure different definitions" in reply.body.decode()


def test_trends_show_one_point_per_run_with_its_wilson_band(board_store: Path):
    board = Board(board_store, persist_cache=False)
    run = next(h for h in _benchmarks(board) if "1.0.0" in h.title)
    html = board.trends(run.definition_hash).body.decode()
    assert html.count("<polyline") == 2  # one line per arm: arms are never pooled
    assert "[0.439, 1.000]" in html  # Wilson 95% of 3/3


def _post(url: str, body: str, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body.encode(), method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_cross_site_and_tokenless_posts_are_refused(served):
    board, server = served
    url = server.url
    run = next(h for h in board.catalog.headers() if h.kind == "redteam")
    target = f"{url}redteam/{run.key}/sign-off"
    form = f"finding=F-x&by=eve&reason=r&csrf={board.csrf_token}"
    origin = url.rstrip("/")
    owner = {"Authorization": f"Bearer {server.token}"}
    status, text = _post(target, form, {**owner, "Origin": "http://evil.example"})
    assert (status, "cross-site form posts are refused" in text) == (403, True)
    status, text = _post(target, form, {**owner, "Sec-Fetch-Site": "cross-site", "Origin": origin})
    assert status == 403
    status, text = _post(target, "finding=F-x&by=eve&reason=r", {**owner, "Origin": origin})
    assert (status, "anti-forgery token" in text) == (403, True)
    status, text = _post(
        url + "setup/start", form, {**owner, "Origin": origin, "Host": "evil.example"}
    )
    assert status == 403


def test_board_binds_loopback_and_answers_with_a_content_security_policy(served):
    _, server = served
    url = server.url
    assert url.startswith("http://127.0.0.1:")
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {server.token}"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        policy = reply.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "default-src 'none'" in policy


def test_board_command_refuses_a_missing_store(tmp_path: Path, capsys):
    assert board_main(["--store", str(tmp_path / "nowhere")]) == 2
    assert "no run store at" in capsys.readouterr().err


def test_export_writes_a_static_copy_whose_links_resolve(board_store: Path, tmp_path: Path):
    out = tmp_path / "export"
    assert board_main(["export", str(out), "--store", str(board_store)]) == 0
    index = (out / "index.html").read_text()
    assert "<form" not in index
    import re

    for link in set(re.findall(r'href="([^"#?]+)"', index)):
        assert (out / link).is_file(), link


def _every_kind_store(root: Path) -> None:
    from vitrine.mutants._report import Baseline, KillerChange, MutantMatrix, MutantRow, matrix_json
    from vitrine.store._receipts import ReceiptStore, new_session_id

    build_store(root)
    ReceiptStore(root / "live").write(
        new_session_id(),
        {
            "plan": "eval01-agent",
            "started_at": "2026-03-01T10:00:00+00:00",
            "exit_code": 4,
            "exit_reason": "provider not ready: nothing was called",
            "definition": {"identity": "vitrine-live-use-cases@1.1.0", "content_hash": "sha256:ab"},
            "trials": [{"answer_preview": HOSTILE}],
        },
    )
    behaviour = root / "reports" / "behaviour-1"
    behaviour.mkdir(parents=True)
    (behaviour / "behaviour-report.json").write_text(
        json.dumps(
            sealed(
                {
                    "schema": "vitrine.behaviour-report/1",
                    "created": "2026-03-02T10:00:00+00:00",
                    "exit_status": 1,
                    "totals": {"passed": 59, "failed": 1, "skipped": 0},
                    "tests": [{"nodeid": "tests/behaviour/test_x.py::t", "outcome": "failed"}],
                }
            )
        )
    )
    session = root / "mutants" / "2026-03-03_10-00-00_00000001"
    session.mkdir(parents=True)
    row = MutantRow(
        id="skip-approval",
        component="tools.place_order",
        description="places an order without the approval check",
        must_kill=True,
        outcome="killed",
        exit_code=1,
        duration_s=1.0,
        reason="a gate turned red",
        killers=[KillerChange(killer="gate:injection", healthy="PASS", mutant="FAIL")],
        store_dir="skip-approval",
    )
    matrix = MutantMatrix(
        suite="shop",
        plan="offline-suite",
        session_id=session.name,
        started_at="2026-03-03T10:00:00+00:00",
        duration_s=2.0,
        baseline=Baseline(exit_code=0, duration_s=1.0, store_dir="healthy"),
        killers=["gate:injection"],
        mutants=[row],
        killed=1,
        total=1,
        score=1.0,
        minimum_score=0.9,
        must_kill_survivors=[],
        exit_code=0,
        exit_reason="every mutant was killed",
    )
    (session / "matrix.json").write_text(matrix_json(matrix))


def test_every_kind_in_the_store_is_listed_and_opens(tmp_path: Path):
    _every_kind_store(tmp_path)
    board = Board(tmp_path, persist_cache=False)
    kinds = {h.kind: h for h in board.catalog.headers()}
    assert set(kinds) == {"benchmark", "live", "behaviour", "mutants"}
    assert kinds["live"].verdict == "infrastructure"
    assert kinds["live"].suite == "vitrine-live-use-cases"
    assert kinds["behaviour"].verdict == "fail"
    for header in kinds.values():
        reply = board.get(f"/run/{header.ref}", {})
        assert reply.status == 200, reply.body.decode()[-600:]
        assert HOSTILE not in reply.body.decode()
    matrix = board.get("/controls", {}).body.decode()
    assert "1/1 killed (100.0%), minimum 90%" in matrix
    assert "gate:injection" in matrix
    assert "No offline suite report in this store yet" in matrix


@pytest.mark.parametrize(
    ("kind", "document", "claim"),
    [
        ("live", "outcome.json", "exit_code"),
        ("behaviour", "behaviour-report.json", "exit_status"),
        ("mutants", "matrix.json", "exit_code"),
    ],
)
def test_an_edited_document_of_each_kind_is_listed_unverified_and_its_page_refused(
    tmp_path: Path, kind: str, document: str, claim: str
):
    _every_kind_store(tmp_path)
    header = next(h for h in Catalog(tmp_path, persist=False).headers() if h.kind == kind)
    path = tmp_path / header.location / document
    data = json.loads(path.read_text())
    data[claim] = 0 if data[claim] else 1  # a hand edit of the verdict the document states
    path.write_text(json.dumps(data))
    board = Board(tmp_path, persist_cache=False)
    assert {h.kind: h.verdict for h in board.catalog.headers()}[kind] == "unverified"
    reply = board.get(f"/run/{header.ref}", {})
    assert reply.status == 409
    assert "cannot be trusted: it does not match its seal" in reply.body.decode()


def test_a_rag_report_is_sealed_so_an_edited_exit_code_is_unverified_and_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from vitrine.rag import _report

    monkeypatch.setattr(_report, "render_html", lambda report: "<html></html>")  # JSON only
    directory = tmp_path / "reports" / "rag-1"
    document = {"schema_version": _report.RAG_REPORT_SCHEMA, "exit_code": 1, "items": []}
    (path, _) = _report.write_report(document, directory)
    assert [h.verdict for h in Catalog(tmp_path, persist=False).headers()] == ["fail"]
    path.write_text(path.read_text().replace('"exit_code": 1', '"exit_code": 0'))
    board = Board(tmp_path, persist_cache=False)
    assert [h.verdict for h in board.catalog.headers()] == ["unverified"]
    reply = board.get("/run/rag/rag-1", {})
    assert reply.status == 409
    assert "the RAG evaluation cannot be trusted: it does not match its seal" in reply.body.decode()


def test_a_tampered_run_is_refused_with_the_stores_sentence(tmp_path: Path):
    build_store(tmp_path)
    board = Board(tmp_path, persist_cache=False)
    header = _benchmarks(board)[0]
    rows = tmp_path / header.location / "rows.jsonl"
    rows.write_bytes(rows.read_bytes().replace(b'"passed":true', b'"passed":false', 1))
    reply = board.get(f"/run/{header.ref}", {})
    assert reply.status == 409
    assert "does not match its seal" in reply.body.decode()


@pytest.mark.parametrize(
    ("form", "sentence"),
    [
        ({"plan": "eval01-agent"}, "--confirm-paid"),
        (
            {"plan": "eval04-stochastic-agent", "repetitions": "3", "confirm_paid": "yes"},
            "accepts --repetitions 4 to 100, got 3",
        ),
        (
            {"plan": "eval03-compare", "repetitions": "31", "confirm_paid": "yes"},
            "the board starts 1 to 30 repetitions, got 31",
        ),
        ({"plan": "offline-suite", "scenario": "nadia-cross-category"}, "does not accept"),
        ({"plan": ""}, "choose a plan: nothing runs implicitly"),
    ],
)
def test_setup_refuses_what_the_command_line_would_refuse(tmp_path: Path, form, sentence):
    board = Board(tmp_path, persist_cache=False)
    reply = board.post("/setup/start", {**form, "csrf": board.csrf_token})
    assert reply.status == 400
    assert sentence.replace("'", "&#39;") in reply.body.decode()
    assert board.jobs.started == 0


def test_two_live_sessions_are_compared_arm_by_arm(tmp_path: Path):
    from board_fixtures import definition, forgetful, good

    import vitrine
    from vitrine import Arm
    from vitrine.store._receipts import ReceiptStore, new_session_id

    sessions = []
    for arms in (
        [Arm("agent", good), Arm("workflow", forgetful)],
        [Arm("agent", forgetful), Arm("workflow", good)],
    ):
        result = vitrine.evaluate(definition(), arms, repetitions=2, store=tmp_path / "live")
        session_id = new_session_id()
        ReceiptStore(tmp_path / "live").write(
            session_id,
            {
                "plan": "eval03-compare",
                "exit_code": 1,
                "runs": [{"run_id": r.run_id, "arm_id": r.arm_id} for r in result.runs],
            },
        )
        sessions.append(session_id)
    board = Board(tmp_path, persist_cache=False)
    html = board.compare(*sessions).body.decode()
    agent, workflow = html.split('<section class="comparison">')[1:]
    assert "2 vs 2 run(s)" in agent
    assert 'data-bucket="regressed">2<' in agent
    assert 'data-bucket="fixed">2<' in workflow
    assert "W/L/T 2/0/1" in workflow


def test_the_setup_preview_is_the_plans_own_with_its_power_and_calls_nothing(tmp_path: Path):
    import json

    board = Board(tmp_path, persist_cache=False)
    reply = board.get("/api/preview", {"plan": ["eval03-compare"]})
    assert reply.status == 200 and reply.content_type == "application/json"
    lines = json.loads(reply.body)["lines"]
    assert lines[0] == "eval03-compare: planned workload on paid model services"
    assert any("CANNOT REACH SIGNIFICANCE" in line for line in lines)  # 4 cases: min p 0.125
    stochastic = board.get(
        "/api/preview", {"plan": ["eval04-stochastic-agent"], "repetitions": ["8"]}
    )
    assert any(
        "8 repetition(s) per scenario" in line for line in json.loads(stochastic.body)["lines"]
    )
    refused = board.get("/api/preview", {"plan": ["eval04-stochastic-agent"], "repetitions": ["3"]})
    assert refused.status == 400
    assert "accepts --repetitions 4 to 100, got 3" in json.loads(refused.body)["error"]
    assert board.jobs.started == 0
