"""The board in a real browser: every page driven the way a person would use it.

Chromium is Debian's (/usr/bin/chromium); without it these tests are skipped with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from board_fixtures import HOSTILE
from browser_support import board_browser, needs_chromium

pytestmark = needs_chromium


def _expect(locator: Any) -> Any:
    # Playwright's expect retries until its timeout; a bare is_visible() reads the page once.
    return pytest.importorskip("playwright.sync_api").expect(locator)


@pytest.fixture
def empty_board_page(tmp_path: Path) -> Iterator[tuple[Any, str, list[str], list[str]]]:
    # Its own store: the run it starts must not change what the other tests count.
    from vitrine._board.app import Board
    from vitrine._board.server import serve

    with serve(Board(tmp_path)) as server, board_browser(server) as opened:
        yield opened


def test_filter_the_index_and_link_the_view(page):
    tab, url, _, _ = page
    tab.goto(url + "?suite=board-demo")
    assert tab.locator("#runs tbody tr").count() == 3
    tab.select_option("select[name=arm]", "forgetful")
    tab.click("form#filters button[type=submit]")
    tab.wait_for_url(re.compile(r"arm=forgetful"))
    assert tab.locator("#runs tbody tr").count() == 1
    linked = tab.url
    tab.goto(url + "?suite=board-demo")
    tab.goto(linked)  # the URL alone restores the view
    assert tab.locator("#runs tbody tr").count() == 1
    assert "forgetful" in tab.locator("#runs tbody tr").inner_text()


def test_open_a_run_then_a_trial_whose_answer_stays_text(page):
    tab, url, _, _ = page
    tab.goto(url + "?arm=good")
    tab.locator("#runs tbody tr", has_text="board-demo@1.0.0").locator("a").first.click()
    # The click navigates: assertions that wait, never a race with the page's load.
    _expect(tab.get_by_text("NOT DERIVABLE").first).to_be_visible()
    _expect(tab.locator("caption", has_text="Checks")).to_be_visible()
    tab.get_by_role("link", name="xss").click()
    answer = tab.locator("#answer")
    assert HOSTILE in answer.inner_text()
    assert tab.locator("main script").count() == 0


def test_compare_two_runs_from_the_index(page):
    tab, url, _, _ = page
    tab.goto(url + "?suite=board-demo")
    rows = tab.locator("#runs tbody tr", has_text="board-demo@1.0.0")
    rows.filter(has_text="good").locator("input.pick").check()
    rows.filter(has_text="forgetful").locator("input.pick").check()
    tab.click("#compare-button")
    tab.wait_for_url(re.compile(r"/compare\?a=.+&b=.+"))
    assert tab.locator('td[data-bucket="regressed"]').inner_text() == "2"
    assert tab.locator('td[data-bucket="unchanged"]').inner_text() == "1"
    _expect(tab.get_by_text("sign test p 0.5")).to_be_visible()


def test_follow_a_definition_to_its_trend(page):
    tab, url, _, _ = page
    tab.goto(url + "?suite=board-demo&arm=forgetful")
    tab.locator("#runs tbody tr td a[title='trend of this definition']").first.click()
    tab.wait_for_url(re.compile(r"/trends\?hash=sha256"))
    assert tab.locator("svg.chart polyline").count() == 2  # one per arm, never pooled
    _expect(tab.locator("table.points").get_by_text("[0.061, 0.792]").first).to_be_visible()
    chart = tab.locator("svg.chart").first
    assert chart.locator("line.axis").count() == 2  # a y axis with ticks and an x axis
    assert chart.locator("text", has_text="0.50").count() == 1
    point = chart.locator("a").first  # every point links to its run
    assert "/run/benchmark/" in (point.get_attribute("href") or "")
    assert "[0.061, 0.792]" in " ".join(chart.locator("title").all_text_contents())


def test_sign_off_a_finding_from_the_board(page, board_store: Path):
    from vitrine.redteam._runs import read_signoffs

    tab, url, _, _ = page
    tab.goto(url + "redteam")
    tab.locator("table a").first.click()
    finding = tab.locator("section.finding", has=tab.locator("form.signoff")).first
    finding_id = finding.locator("input[name=finding]").get_attribute("value")
    finding.locator("input[name=by]").fill("Board Tester")
    finding.locator("input[name=reason]").fill("accepted: <b>calibration</b> target")
    finding.locator("button").click()
    signed = tab.locator(f"section#finding-{finding_id} .signed")
    assert "Board Tester" in signed.inner_text()
    assert "<b>calibration</b>" in signed.inner_text()  # the reason stays text
    run_dir = next((board_store / "reports").glob("redteam-*"))
    assert [s.finding_id for s in read_signoffs(run_dir)] == [finding_id]


def test_setup_panel_previews_then_runs_the_offline_suite_to_the_end(empty_board_page):
    tab, url, _, _ = empty_board_page
    tab.goto(url + "setup")
    assert tab.locator("#scenarios tbody tr").count() >= 1
    assert tab.locator("#scenarios tbody tr").first.locator("td").nth(3).inner_text().strip()
    paid = tab.locator("#plans tr[data-paid=yes]").first
    tab.select_option("#plan", paid.get_attribute("data-plan"))
    _expect(tab.locator("#paid-confirm")).to_be_visible()
    # The plan's own preview replaces the local line: its workload and its power.
    _expect(tab.locator("#workload")).to_contain_text("power")
    assert "paid" in tab.locator("#workload").inner_text()
    tab.select_option(
        "#plan", tab.locator("#plans tr[data-paid=no]").first.get_attribute("data-plan")
    )
    _expect(tab.locator("#paid-confirm")).to_be_hidden()
    tab.click("#start")
    tab.wait_for_url(re.compile(r"/job/\d+"))
    status = tab.locator("#job-status")
    status.filter(has_text="finished").wait_for(timeout=240_000)
    assert re.search(r"exit [0-9]", status.inner_text())
    assert "artifact:" in tab.locator("#job-log").inner_text()
    tab.goto(url + "?kind=offline")
    assert tab.locator("#runs tbody tr").count() == 1  # the finished run is on the index
    tab.locator("#runs tbody tr a").first.click()
    _expect(tab.locator("caption", has_text="Gates")).to_be_visible()
    _expect(tab.locator("caption", has_text="Reference comparisons").first).to_be_visible()
    tab.goto(url + "controls")
    _expect(tab.locator("#controls tbody tr")).to_have_count(43)
    scope = tab.locator("#controls thead th").nth(1).inner_text()
    target = tab.locator("#controls thead th").nth(2).inner_text()
    assert (scope, target) == ("scope", "target")
