"""The HTML report in a real browser: renders offline, shows hostile text as text, runs nothing."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from vitrine.reports._html import render_html

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian chromium is not installed at /usr/bin/chromium (apt-get install chromium)",
)


def _fixtures(module_name: str = "test_reports") -> ModuleType:
    # The report fixture lives with the unit tests; load it by path so this file runs alone too.
    path = Path(__file__).resolve().parents[1] / "unit" / f"{module_name}.py"
    spec = importlib.util.spec_from_file_location(f"browser_{module_name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_report_page_renders_offline_and_runs_no_injected_script(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(_fixtures().sample_report()), encoding="utf-8")

    dialogs: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.on("request", lambda request: requests.append(request.url))
            page.goto(page_file.as_uri())
            page.wait_for_load_state("load")

            gates = page.locator("table", has=page.locator("caption", has_text="Gates"))
            comparisons = page.locator(
                "table", has=page.locator("caption", has_text="Reference comparisons")
            )
            controls = page.locator(
                "table", has=page.locator("caption", has_text="Registered control mutations")
            )
            assert gates.first.is_visible()
            assert comparisons.first.is_visible()
            assert controls.first.is_visible()
            assert page.get_by_text("<script>alert(1)</script>", exact=False).first.is_visible()
            assert page.get_by_text("[red]markup[/red]", exact=False).first.is_visible()
            assert page.locator("body script").count() == 0
            assert page.locator("text=NOT DERIVABLE").first.is_visible()
            assert page.locator(".banner").inner_text().lower().count("not measured") >= 1

            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()

    assert dialogs == []
    assert [url for url in requests if not url.startswith("file:")] == []
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_a_passing_report_fits_a_few_screens_and_unfolds_to_its_charts(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    report = _fixtures().sample_report()
    assert report.controls is not None
    caught = [row.model_copy(update={"caught": True}) for row in report.controls.rows]
    controls = report.controls.model_copy(update={"caught": len(caught), "rows": caught})
    passing = report.model_copy(update={"exit_code": 0, "controls": controls})
    page_file = tmp_path / "passing.html"
    page_file.write_text(render_html(passing), encoding="utf-8")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_file.as_uri())
            height = page.evaluate("document.body.scrollHeight")
            assert height <= 4 * 900, f"a passing report is {height} px tall"
            chart = page.locator("article.bench svg.chart").first
            sync_api.expect(chart).to_be_hidden()
            page.locator("details.bench-detail > summary").first.click()
            sync_api.expect(chart).to_be_visible()
            page.locator("#controls ~ details > summary").click()
            sync_api.expect(page.locator("table.controls")).to_be_visible()
        finally:
            browser.close()


def test_a_failing_gates_first_problem_is_on_the_report_and_the_board_run_page(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    from vitrine import Case, Evaluation
    from vitrine._board.app import Board
    from vitrine._board.server import serve

    odd = _fixtures("test_gate_problems")
    evaluation = Evaluation(
        "odd",
        cases=[Case(f"c{i}", i) for i in range(4)],
        checks=[odd.says_its_number],
        arms={"echo": odd.echo},
    )
    evaluation.run(store=tmp_path).write_reports(tmp_path / "reports" / "odd")
    (report,) = (tmp_path / "reports" / "odd").glob("*.html")
    problem = "case c0, repetition 1: failed"
    with serve(Board(tmp_path, persist_cache=False)) as server, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(report.as_uri())
            gates = page.locator("table", has=page.locator("caption", has_text="Gates"))
            # Beside the verdict, in the first screen: the reader need not open anything.
            sync_api.expect(gates.get_by_text(problem)).to_be_visible()
            assert gates.get_by_text(problem).bounding_box()["y"] < 900
            page.goto(server.login_url)
            page.goto(server.url + "?kind=offline")  # the evaluation's report, not its runs
            page.locator("#runs tbody tr a").first.click()
            sync_api.expect(page.get_by_text(problem).first).to_be_visible()
        finally:
            browser.close()
