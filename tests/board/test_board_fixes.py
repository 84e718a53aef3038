"""The board's addresses and sources: one page per mutant session, the controls of the latest
report that ran them, an icon at /favicon.ico, and the kill matrix as a heat map."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from vitrine._board.app import Board
from vitrine._board.matrix import kill_map
from vitrine.mutants._report import Baseline, KillerChange, MutantMatrix, MutantRow, matrix_json
from vitrine.reports._writer import write_reports


def report_fixtures() -> ModuleType:
    # The report fixture lives with the unit tests; load it by path so this file runs alone.
    path = Path(__file__).resolve().parents[1] / "unit" / "test_reports.py"
    spec = importlib.util.spec_from_file_location("report_fixtures_for_board", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_session(
    root: Path,
    name: str,
    mutants: int,
    killers: int,
    *,
    survivors_every: int = 9,
    started_at: str = "2026-03-01T10:00:00+00:00",
) -> MutantMatrix:
    """A sealed mutant session of ``mutants`` rows over ``killers`` columns."""
    names = [f"{('gate', 'check', 'control', 'test')[i % 4]}:killer-{i}" for i in range(killers)]
    rows = []
    for m in range(mutants):
        survived = m % survivors_every == survivors_every - 1
        hit = [] if survived else list(dict.fromkeys(names[(m * 7 + j) % killers] for j in (0, 3)))
        rows.append(
            MutantRow(
                id=f"mutant-{m:02d}",
                component=f"tools.part_{m % 5}",
                description=f"planted defect {m}: drops the guard of part {m % 5}",
                must_kill=m % 4 == 0,
                outcome="survived" if survived else "killed",
                exit_code=0 if survived else 1,
                duration_s=1.0,
                reason="no check changed" if survived else "a gate turned red",
                killers=[KillerChange(killer=k, healthy="PASS", mutant="FAIL") for k in hit],
                store_dir=f"m{m}",
            )
        )
    killed = sum(r.outcome == "killed" for r in rows)
    matrix = MutantMatrix(
        suite="shop",
        plan="offline-suite",
        session_id=name,
        started_at=started_at,
        duration_s=2.0,
        baseline=Baseline(exit_code=0, duration_s=1.0, store_dir="healthy"),
        killers=names,
        mutants=rows,
        killed=killed,
        total=mutants,
        score=killed / mutants,
        minimum_score=0.5,
        must_kill_survivors=[],
        exit_code=0,
        exit_reason="the score is above its minimum",
    )
    folder = root / "mutants" / name
    folder.mkdir(parents=True)
    (folder / "matrix.json").write_text(matrix_json(matrix))
    return matrix


def test_every_mutant_session_has_its_own_page_and_the_old_address_leads_to_the_newest(
    tmp_path: Path,
) -> None:
    write_session(tmp_path, "2026-03-01_10-00-00_00000001", 37, 80)
    # A later --only session: it used to share the full session's address.
    write_session(
        tmp_path, "2026-03-02_10-00-00_00000002", 2, 3, started_at="2026-03-02T10:00:00+00:00"
    )
    board = Board(tmp_path, persist_cache=False)
    sessions = [h for h in board.catalog.headers() if h.kind == "mutants"]
    assert [h.key for h in sessions] == [
        "2026-03-02_10-00-00_00000002",
        "2026-03-01_10-00-00_00000001",
    ]
    full = board.get("/run/mutants/2026-03-01_10-00-00_00000001", {})
    assert full.status == 200
    assert full.body.decode().count('<tr class="hm-') == 37  # the full matrix stays reachable
    old = board.get("/run/mutants/mutants", {})
    assert (old.status, old.headers["Location"]) == (
        303,
        "/run/mutants/2026-03-02_10-00-00_00000002",
    )


def test_controls_come_from_the_latest_report_that_ran_them(tmp_path: Path) -> None:
    sample = report_fixtures().sample_report()
    assert sample.controls is not None
    older = sample.model_copy(update={"started_at": "2026-03-01T10:00:00+00:00", "mode": "suite"})
    newer = sample.model_copy(
        update={
            "started_at": "2026-03-02T10:00:00+00:00",
            "mode": "ablate-catalogue",
            "controls": None,
        }
    )
    write_reports(older, tmp_path / "reports" / "offline-1")
    write_reports(newer, tmp_path / "reports" / "offline-2")
    html = Board(tmp_path, persist_cache=False).get("/controls", {}).body.decode()
    caught = f"{sample.controls.caught} of {sample.controls.total} caught"
    assert caught in html
    assert "ran no controls; this is the latest that did" in html
    assert "offline-2" in html and "ablate-catalogue" in html


def test_the_board_has_an_icon_at_favicon_ico(tmp_path: Path) -> None:
    reply = Board(tmp_path, persist_cache=False).get("/favicon.ico", {})
    assert reply.status == 200
    assert reply.content_type == "image/svg+xml"
    assert reply.body.startswith(b"<svg")


def test_the_heat_map_puts_survivors_first_and_marks_each_kill_in_its_column(
    tmp_path: Path,
) -> None:
    matrix = write_session(tmp_path, "s", 12, 6, survivors_every=4)
    view = kill_map(matrix)
    outcomes = [row.outcome for row in view.rows]
    assert outcomes == sorted(outcomes, key=lambda o: o != "survived")
    assert view.count("survived") == 3
    for row in view.rows:
        source = next(m for m in matrix.mutants if m.id == row.id)
        marked = {k.name for k, cell in zip(view.killers, row.cells, strict=True) if cell}
        assert marked == set(source.killer_names)
    assert sum(k.kills for k in view.killers) == sum(len(m.killers) for m in matrix.mutants)
