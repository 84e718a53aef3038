"""Everything a decision is read from is sealed: an edit after the fact is refused or flagged.

Each test writes the artifact the ordinary way, edits it as a hostile user would (rewriting
the file), and checks that the reader refuses it or shows it as unverified, never as its claim.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from store_toys import toy_definition

from vitrine import (
    Arm,
    SubjectResponse,
    evaluate,
)
from vitrine._board.catalog import Catalog
from vitrine.reports._model import SuiteReport
from vitrine.reports._writer import ReportSchemaError, load_report, write_reports
from vitrine.store._command import main as runs_main
from vitrine.store._errors import TamperedRunError
from vitrine.store._index import index_path
from vitrine.store._receipts import ReceiptStore, new_session_id

DEFINITION = toy_definition("tamper-toy")


async def _silent(case):
    return SubjectResponse(answer="")


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def _verdicts(root: Path) -> dict[str, str]:
    return {h.kind: h.verdict for h in Catalog(root, persist=False).headers()}


# --- index verdicts --------------------------------------------------------------------------


def test_an_index_verdict_edited_fail_to_pass_is_not_listed_as_pass(tmp_path, capsys):
    (run,) = evaluate(DEFINITION, Arm("agent", _silent), store=tmp_path).runs
    assert run.verdict.value == "FAIL"
    _edit(index_path(tmp_path), '"verdict":"FAIL"', '"verdict":"PASS"')
    assert runs_main(["list", "--verdict", "PASS", "--output", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert run.run_id not in out and "no sealed runs match" in out
    assert f"run {run.run_id}: the index says 'PASS' but the sealed run says 'FAIL'" in err
    assert runs_main(["list", "--json", "--output", str(tmp_path)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["verdict"] == "UNVERIFIED"


def test_an_untouched_index_lists_its_verdicts_unflagged(tmp_path, capsys):
    (run,) = evaluate(DEFINITION, Arm("agent", _silent), store=tmp_path).runs
    assert runs_main(["list", "--verdict", "FAIL", "--output", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert run.run_id in out and err == ""


# --- suite reports ---------------------------------------------------------------------------


def _report(exit_code: int) -> SuiteReport:
    return SuiteReport(
        suite="s",
        plan="p",
        mode="all",
        provenance="offline-deterministic",
        started_at="2025-01-01T00:00:00+00:00",
        duration_s=1.0,
        exit_code=exit_code,
        exit_meaning="measured failure",
        exit_reason="a gate failed",
        gates=[],
        benchmarks=[],
    )


def test_a_forged_report_exit_code_is_refused_and_the_board_does_not_show_pass(tmp_path):
    directory = tmp_path / "reports" / "offline-20250101T000000Z"
    directory.mkdir(parents=True)
    path = write_reports(_report(1), directory)["json"]
    assert load_report(path).exit_code == 1
    assert _verdicts(tmp_path)["offline"] == "fail"
    _edit(path, '"exit_code": 1', '"exit_code": 0')
    with pytest.raises(ReportSchemaError, match="does not match its seal"):
        load_report(path)
    assert _verdicts(tmp_path)["offline"] == "unverified"


def test_a_report_with_its_seal_removed_is_refused(tmp_path):
    path = write_reports(_report(1), tmp_path)["json"]
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["content_hash"]
    data["exit_code"] = 0
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ReportSchemaError, match="carries no seal"):
        load_report(path)


# --- live receipts ---------------------------------------------------------------------------


def test_an_edited_live_receipt_is_refused_and_the_board_does_not_show_pass(tmp_path):
    receipts = ReceiptStore(tmp_path / "live")
    session = new_session_id()
    path = receipts.write(session, {"plan": "eval01", "exit_code": 3, "exit_reason": "unjudged"})
    assert receipts.read(session)["exit_code"] == 3
    assert _verdicts(tmp_path)["live"] == "not measured"
    _edit(path, '"exit_code": 3', '"exit_code": 0')
    with pytest.raises(TamperedRunError, match="does not match its seal"):
        receipts.read(session)
    assert _verdicts(tmp_path)["live"] == "unverified"
    from vitrine._board.app import Board

    reply = Board(tmp_path, persist_cache=False).get(f"/run/live/{session}", {})
    assert reply.status == 409 and "does not match its seal" in reply.body.decode()


def test_the_board_index_shows_an_edited_index_verdict_as_unverified(tmp_path):
    from vitrine._board.app import Board

    (run,) = evaluate(DEFINITION, Arm("agent", _silent), store=tmp_path).runs
    badge = '<span class="badge {}">{}</span>'
    page = Board(tmp_path, persist_cache=False).get("/", {}).body.decode()
    assert badge.format("fail", "fail") in page
    _edit(index_path(tmp_path), '"verdict":"FAIL"', '"verdict":"PASS"')
    page = Board(tmp_path, persist_cache=False).get("/", {}).body.decode()
    assert run.run_id in page
    assert badge.format("other", "unverified") in page
    assert badge.format("pass", "pass") not in page
