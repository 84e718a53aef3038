"""The board and the HTML report for readers without a wide light screen and a mouse.

In a real browser: an 800 px window scrolls only up and down and keeps the index's verdicts;
every text meets WCAG AA contrast in light and in dark mode; the keyboard reaches the content
first, every fold and every tooltip; and the icon the pages name is served as an image.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urljoin

import pytest
from browser_support import board_browser, chromium, needs_chromium
from trial_fixtures import build_trial_store

pytestmark = needs_chromium

NARROW = {"width": 800, "height": 900}
SCHEMES = ("light", "dark")

# Whether an element is drawn: it has boxes, or (under display: contents) its contents do.
_SHOWN_JS = """
  const shown = (el) => {
    if (el.getClientRects().length > 0) return true;
    const range = document.createRange();
    range.selectNodeContents(el);
    return range.getClientRects().length > 0;
  };
"""

# Every visible element that holds text of its own, with its colour, its effective background
# (its own and its ancestors' background colours composited over the page's), and the WCAG 2
# ratio between them. SVG text is painted with its fill, a form control with its own colour, an
# empty field with its placeholder's.
_CONTRAST_JS = (
    """
(pageBackground) => {
"""
    + _SHOWN_JS
    + """
  const parse = (value) => {
    const m = /^rgba?\\(([^)]*)\\)$/.exec((value || "").trim());
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(parseFloat);
    if (p.length < 3 || p.some(Number.isNaN)) return null;
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const over = (top, bottom) => ({
    r: top.r * top.a + bottom.r * (1 - top.a),
    g: top.g * top.a + bottom.g * (1 - top.a),
    b: top.b * top.a + bottom.b * (1 - top.a),
    a: 1,
  });
  const channel = (c) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
  };
  const luminance = (c) =>
    0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
  const hex = (c) =>
    "#" + [c.r, c.g, c.b].map((v) => Math.round(v).toString(16).padStart(2, "0")).join("");
  const describe = (el) => {
    const parts = [];
    for (let n = el; n && n.nodeType === 1 && parts.length < 4; n = n.parentElement) {
      let part = n.tagName.toLowerCase();
      if (n.id) { parts.unshift(part + "#" + n.id); break; }
      if (n.classList.length) part += "." + Array.from(n.classList).join(".");
      parts.unshift(part);
    }
    return parts.join(" > ");
  };
  const background = (el) => {
    const layers = [];
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c.a > 0) layers.push(c);
      if (c && c.a >= 1) break;
    }
    let result = parse(pageBackground);
    for (const layer of layers.reverse()) result = over(layer, result);
    return result;
  };
  const opacity = (el) => {
    let o = 1;
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      o *= parseFloat(getComputedStyle(n).opacity);
    }
    return o;
  };
  const ownText = (el) => {
    if (["SCRIPT", "STYLE", "TITLE", "OPTION", "NOSCRIPT"].includes(el.tagName)) return "";
    if (el.tagName === "SELECT") return el.selectedOptions[0]?.textContent.trim() || "";
    if (el.tagName === "INPUT") {
      if (["hidden", "checkbox", "radio"].includes(el.type)) return "";
      return el.value.trim() || el.placeholder.trim();
    }
    return Array.from(el.childNodes)
      .filter((n) => n.nodeType === Node.TEXT_NODE)
      .map((n) => n.textContent)
      .join("")
      .trim();
  };
  const offences = [];
  let checked = 0;
  for (const el of document.body.querySelectorAll("*")) {
    const text = ownText(el);
    if (!text || el.disabled || el.closest("svg title")) continue;
    const style = getComputedStyle(el);
    if (style.visibility !== "visible" || !shown(el)) continue;
    const svg = el instanceof SVGElement;
    const placeholder = el.tagName === "INPUT" && !el.value.trim();
    const painted = svg ? style.fill
      : placeholder ? getComputedStyle(el, "::placeholder").color : style.color;
    const paint = parse(painted);
    const behind = background(el);
    const selector = describe(el);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && parseInt(style.fontWeight, 10) >= 700);
    const need = large ? 3 : 4.5;
    checked += 1;
    if (!paint || !behind) {
      offences.push({ selector, text: text.slice(0, 40), fg: painted, bg: "?", ratio: 0, need });
      continue;
    }
    const fg = over({ ...paint, a: paint.a * opacity(el) }, behind);
    const [hi, lo] = [luminance(fg), luminance(behind)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    if (ratio + 1e-9 < need) {
      offences.push({ selector, text: text.slice(0, 40), fg: hex(fg), bg: hex(behind),
                      ratio: Math.round(ratio * 100) / 100, need });
    }
  }
  return { checked, offences };
}
"""
)

# What the browser paints under a page that sets no background of its own.
_CANVAS = {"light": "rgb(255, 255, 255)", "dark": "rgb(18, 18, 18)"}

_OPEN_FOLDS_JS = "document.querySelectorAll('details').forEach((d) => { d.open = true; })"

_WIDTH_JS = "[document.documentElement.scrollWidth, window.innerWidth]"

# The index at 800 px: its verdict column (heading and every cell) shown inside the viewport,
# and no cell whose text spills over its neighbours.
_INDEX_AT_800_JS = """
() => {
  const heads = Array.from(document.querySelectorAll("#runs thead th"));
  const at = heads.findIndex((h) => h.textContent.trim() === "verdict");
  if (at < 0) return ["the index has no verdict column"];
  const rows = Array.from(document.querySelectorAll("#runs tbody tr"));
  if (rows.length === 0) return ["the index lists no run"];
  const problems = [];
  for (const cell of [heads[at], ...rows.map((r) => r.cells[at])]) {
    const rect = cell.getBoundingClientRect();
    const text = cell.textContent.trim();
    if (getComputedStyle(cell).display === "none" || rect.width === 0) {
      problems.push(`verdict "${text}" is not displayed`);
    } else if (rect.left < 0 || rect.right > window.innerWidth + 0.5) {
      problems.push(`verdict "${text}" spans x ${rect.left.toFixed(0)}-${rect.right.toFixed(0)}`);
    }
  }
  for (const cell of document.querySelectorAll("#runs th, #runs td")) {
    if (cell.getClientRects().length && cell.scrollWidth > cell.clientWidth + 1) {
      problems.push(
        `"${cell.textContent.trim()}" needs ${cell.scrollWidth} px in a ${cell.clientWidth} px cell`
      );
    }
  }
  return problems;
}
"""

_FOCUSED_JS = """
() => {
  const el = document.activeElement;
  const rect = el.getBoundingClientRect();
  const main = document.querySelector("main");
  return {
    tag: el.tagName.toLowerCase(),
    href: el.getAttribute("href"),
    text: el.textContent.trim(),
    main: main ? main.id : null,
    inMain: Boolean(main && main.contains(el)),
    onScreen: rect.width > 0 && rect.left >= 0 && rect.top >= 0
      && rect.right <= innerWidth && rect.bottom <= innerHeight,
  };
}
"""

# Marks the focused element in the order reached; "round" once focus is back on the first one
# (a date field keeps focus over several stops, so a repeat alone does not end the walk).
_MARK_FOCUS_JS = """
() => {
  const el = document.activeElement;
  if (!el || el === document.body) return "body";
  const order = el.getAttribute("data-tab-reached");
  if (order === "1") return "round";
  if (order !== null) return "again";
  const count = document.querySelectorAll("[data-tab-reached]").length;
  el.setAttribute("data-tab-reached", String(count + 1));
  return "new";
}
"""

# Visible summaries and tooltips (a title attribute, or an SVG <title>) that the keyboard did
# not reach and whose words are not all on the page outside the tooltip.
_UNREACHED_JS = (
    """
() => {
"""
    + _SHOWN_JS
    + """
  const reached = (el) => el.hasAttribute("data-tab-reached");
  // A tooltip's words, lower-cased, without the punctuation around them or a possessive 's.
  const words = (s) =>
    s.toLowerCase().split(/\\s+/)
      .map((w) => w.replace(/^[(\\[:;,"]+|[)\\]:;,."]+$/g, "").replace(/['\\u2019]s$/, ""))
      .filter(Boolean);
  const page = document.body.innerText.toLowerCase();
  const name = (el) => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += "#" + el.id;
    if (el.classList.length) s += "." + Array.from(el.classList).join(".");
    return s;
  };
  const problems = [];
  let checked = 0;
  for (const summary of document.querySelectorAll("details > summary")) {
    if (!shown(summary)) continue;
    checked += 1;
    if (!reached(summary)) {
      problems.push(`summary "${summary.textContent.trim()}" is not reachable by Tab`);
    }
  }
  const tips = [];
  for (const el of document.querySelectorAll("[title]")) tips.push([el, el.title]);
  for (const title of document.querySelectorAll("svg title")) {
    tips.push([title.parentElement, title.textContent]);
  }
  for (const [el, tip] of tips) {
    if (!tip.trim() || !shown(el)) continue;
    checked += 1;
    if (reached(el) || (el.closest("a[href]") && reached(el.closest("a[href]")))) continue;
    const missing = words(tip).filter((w) => !page.includes(w));
    if (missing.length) {
      problems.push(
        `${name(el)} tooltip "${tip.trim()}" is neither reachable by Tab nor on the page ` +
        `(missing: ${missing.join(" ")})`
      );
    }
  }
  return { checked, problems };
}
"""
)


def _board_pages(tab: Any, url: str) -> dict[str, str]:
    """On the shared store: the index, a benchmark run, one of its trials, the trend of its
    definition and a red-team run."""
    tab.goto(url)
    row = tab.locator("#runs tbody tr[data-kind=benchmark]", has_text="forgetful").first
    run = urljoin(url, row.locator("a").first.get_attribute("href") or "")
    trend = urljoin(url, row.locator("a[href*=trends]").get_attribute("href") or "")
    tab.goto(url + "redteam")
    redteam = urljoin(url, tab.locator("main table a").first.get_attribute("href") or "")
    tab.goto(run)
    trial = urljoin(url, tab.locator("a.trial-link").first.get_attribute("href") or "")
    return {
        "index": url,
        "benchmark run": run,
        "trial": trial,
        "trend": trend,
        "red-team run": redteam,
    }


def _fold_pages(tab: Any, url: str) -> dict[str, str]:
    """On the store with folds: its index, the live session and the trial it links to."""
    tab.goto(url)
    live = tab.locator("#runs tbody tr[data-kind=live] a").first.get_attribute("href") or ""
    tab.goto(urljoin(url, live))
    trial = tab.locator("#live-trials a").first.get_attribute("href") or ""
    return {
        "index": url,
        "live session": urljoin(url, live),
        "trial with tools": urljoin(url, trial),
    }


def _live_receipt(run_id: str) -> dict[str, Any]:
    """A live session's receipt with every section its page shows, its trial in ``run_id``."""
    interval = {"lower": 0.206, "upper": 1.0}
    return {
        "plan": "eval03-compare",
        "started_at": "2026-03-01T10:00:00+00:00",
        "exit_code": 1,
        "exit_reason": "the challenger regressed on one scenario",
        "definition": {"identity": "board-trial@1.0.0", "content_hash": "sha256:ab"},
        "check_facts": [
            {
                "arm_id": "assistant",
                "check_key": "short-answer",
                "census_text": "1 measured",
                "successes": 1,
                "measured": 1,
                "wilson_lower": 0.206,
                "wilson_upper": 1.0,
                "floor": {"display": "NOT DERIVABLE"},
                "min_attainable_p": 0.5,
                "underpowered": True,
            }
        ],
        "comparisons": [
            {
                "check": "short-answer",
                "challenger_arm": "workflow",
                "reference_arm": "assistant",
                "wins": 0,
                "losses": 1,
                "ties": 0,
                "excluded_pairs": 0,
                "effective_n": 1,
                "cases": 1,
                "total_repetitions": 2,
                "collapse": "all",
                "p_value": 1.0,
                "p_holm": 1.0,
                "min_attainable_p": 1.0,
                "effect": {"estimate": -1.0, "lower": -1.0, "upper": 0.5},
                "underpowered_by_construction": True,
                "undecidable": False,
            }
        ],
        "whole_trial": [
            {
                "arm": "assistant",
                "scenario": "hut",
                "trials": 1,
                "planned": 3,
                "successes": 1,
                "measured": 1,
                "estimate": 1.0,
                "wilson_95": interval,
                "floor": 0.5,
                "decision": "not_decided",
                "curtailed": 2,
                "curtailment_reason": "the bound can no longer be reached",
            }
        ],
        "sequential": {
            "summary": "stopped after 1 of 2 scenarios",
            "cases_run": 1,
            "planned_cases": 2,
            "check": "short-answer",
            "earliest_rejection_case": None,
            "pairs": [{"case_id": "hut", "outcome": "loss"}],
            "cases_not_run": ["ridge"],
            "design": {"alpha": 0.05, "looks": 2},
        },
        "workload": {"scenarios": 2, "repetitions": 2},
        "readiness": {"provider": "ready"},
        "curtailment": {"stopped": 2, "reason": "the bound can no longer be reached"},
        "trials": [
            {
                "arm": "assistant",
                "scenario": "hut",
                "repetition": 1,
                "run_id": run_id,
                "trial": {"measured": True, "passed": False, "missing_checks": []},
                "answer_preview": "line 0: a suggestion with its reason",
            },
            {
                "arm": "workflow",
                "scenario": "hut",
                "repetition": 1,
                "trial": {"measured": False, "passed": None, "missing_checks": ["short-answer"]},
                "subject_error": "the provider timed out",
            },
        ],
    }


@pytest.fixture(scope="module")
def folds_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store whose pages fold things away: a trial's tool data and long answer, a live
    session's design, workload and readiness."""
    from vitrine.store._receipts import ReceiptStore, new_session_id

    root = tmp_path_factory.mktemp("a11y-folds")
    run_id = build_trial_store(root)
    ReceiptStore(root / "live").write(new_session_id(), _live_receipt(run_id))
    return root


@pytest.fixture(params=["runs", "folds"])
def board(request: pytest.FixtureRequest) -> Iterator[tuple[Any, dict[str, str]]]:
    """A logged-in tab and the pages to check: on the shared store, or the store with folds."""
    if request.param == "runs":
        tab, url, _, _ = request.getfixturevalue("page")
        yield tab, _board_pages(tab, url)
        return
    from vitrine._board.app import Board
    from vitrine._board.server import serve

    store = request.getfixturevalue("folds_store")
    with serve(Board(store)) as server, board_browser(server) as (tab, url, _, _):
        yield tab, _fold_pages(tab, url)


def _contrast_failures(tab: Any, scheme: str) -> tuple[int, list[str]]:
    """How many texts were checked on the open page, and one line per failing one."""
    tab.evaluate(_OPEN_FOLDS_JS)
    found = tab.evaluate(_CONTRAST_JS, _CANVAS[scheme])
    lines = sorted(
        {
            f"{o['selector']} ({o['text']!r}): {o['fg']} on {o['bg']} is {o['ratio']}:1,"
            f" needs {o['need']}:1"
            for o in found["offences"]
        }
    )
    return found["checked"], lines


def _width_failures(tab: Any, where: str) -> list[str]:
    tab.evaluate(_OPEN_FOLDS_JS)
    scroll_width, inner_width = tab.evaluate(_WIDTH_JS)
    if scroll_width > inner_width:
        return [f"{where}: {scroll_width} px wide in a {inner_width} px window"]
    return []


def _report_fixtures() -> ModuleType:
    # The sample report is built by the report's unit tests; load that module by its path.
    path = Path(__file__).resolve().parents[1] / "unit" / "test_reports.py"
    spec = importlib.util.spec_from_file_location("a11y_test_reports", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from vitrine.reports._html import render_html

    path = tmp_path_factory.mktemp("a11y-report") / "report.html"
    path.write_text(render_html(_report_fixtures().sample_report()), encoding="utf-8")
    return path


def test_at_800px_no_board_page_scrolls_sideways_and_the_index_keeps_its_verdicts(board):
    tab, pages = board
    tab.set_viewport_size(NARROW)
    problems: list[str] = []
    for name, address in pages.items():
        tab.goto(address)
        problems += _width_failures(tab, name)
    tab.goto(pages["index"])
    problems += [f"index: {p}" for p in tab.evaluate(_INDEX_AT_800_JS)]
    assert problems == [], "at 800 px:\n" + "\n".join(problems)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_text_on_the_board_meets_wcag_aa_contrast(board, scheme: str):
    tab, pages = board
    tab.emulate_media(color_scheme=scheme)
    problems: list[str] = []
    for name, address in pages.items():
        tab.goto(address)
        checked, lines = _contrast_failures(tab, scheme)
        assert checked > 20, f"{name}: only {checked} texts found to check"
        problems += [f"{name}: {line}" for line in lines]
    assert problems == [], f"{scheme} mode, below WCAG AA:\n" + "\n".join(problems)


def test_the_first_tab_stop_skips_to_the_content(board):
    tab, pages = board
    problems = _skip_link_problems(tab, pages)
    assert problems == [], "\n".join(problems)


def _skip_link_problems(tab: Any, pages: dict[str, str]) -> list[str]:
    problems: list[str] = []
    for name, address in pages.items():
        tab.goto(address)
        tab.keyboard.press("Tab")
        first = tab.evaluate(_FOCUSED_JS)
        if not (first["tag"] == "a" and first["main"] and first["href"] == "#" + first["main"]):
            problems.append(f"{name}: the first Tab stop is {first}, not a link to #main")
            continue
        if not first["onScreen"]:
            problems.append(f"{name}: the skip link is focused but not shown")
        tab.keyboard.press("Enter")
        if not tab.evaluate(_FOCUSED_JS)["inMain"]:
            problems.append(f"{name}: following the skip link leaves focus outside main")
    return problems


def test_every_fold_and_tooltip_is_reachable_by_keyboard(board):
    tab, pages = board
    checked, problems = _unreached(tab, pages)
    assert checked > 0, "no fold and no tooltip found to check"
    assert problems == [], "\n".join(problems)


def _unreached(tab: Any, pages: dict[str, str]) -> tuple[int, list[str]]:
    """How many folds and tooltips were checked, and which Tab never reached."""
    problems: list[str] = []
    checked = 0
    for name, address in pages.items():
        tab.goto(address)
        tab.evaluate(_OPEN_FOLDS_JS)  # folds inside folds count too
        reached = 0
        for _ in range(600):
            tab.keyboard.press("Tab")
            state = tab.evaluate(_MARK_FOCUS_JS)
            if state == "round":
                break
            reached += state == "new"
        else:
            problems.append(f"{name}: focus never came round in 600 Tab presses")
        assert reached > 5, f"{name}: Tab reached only {reached} elements"
        found = tab.evaluate(_UNREACHED_JS)
        checked += found["checked"]
        problems += [f"{name}: {p}" for p in found["problems"]]
    return checked, problems


def test_the_icon_is_served_as_an_image(page):
    tab, url, _, _ = page
    addresses = {urljoin(url, "favicon.ico")}
    for address in _board_pages(tab, url).values():
        tab.goto(address)
        icons = tab.locator("link[rel~=icon]")
        assert icons.count() >= 1, f"{address} declares no icon"
        addresses |= {urljoin(address, h) for h in icons.evaluate_all("l => l.map(e => e.href)")}
    for address in sorted(addresses):
        reply = tab.request.get(address)
        kind = reply.headers.get("content-type", "")
        assert reply.status == 200, f"{address} answers {reply.status}"
        assert kind.startswith("image/"), f"{address} is served as {kind!r}"
        # The browser decodes it: an icon that is not an image would fail to load here.
        width = tab.evaluate(
            """(src) => new Promise((done) => {
                 const img = new Image();
                 img.onload = () => done(img.naturalWidth);
                 img.onerror = () => done(0);
                 img.src = src;
               })""",
            address,
        )
        assert width > 0, f"{address} does not decode as an image"


def test_at_800px_the_html_report_does_not_scroll_sideways(report_file: Path):
    with chromium() as browser:
        tab = browser.new_page(viewport=NARROW)
        tab.goto(report_file.as_uri())
        problems = _width_failures(tab, "report")
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_text_of_the_html_report_meets_wcag_aa_contrast(report_file: Path, scheme: str):
    with chromium() as browser:
        tab = browser.new_page(color_scheme=scheme)
        tab.goto(report_file.as_uri())
        checked, lines = _contrast_failures(tab, scheme)
        tab.hover("main tbody tr >> nth=0")  # a row under the pointer is highlighted
        lines += [f"hovered: {line}" for line in _contrast_failures(tab, scheme)[1]]
    assert checked > 50, f"only {checked} texts found to check"
    assert lines == [], f"{scheme} mode, below WCAG AA:\n" + "\n".join(lines)


def test_the_contrast_walker_sees_a_failure(page):
    # The checker itself: grey on white (2.85:1), a translucent black and a faint SVG fill
    # fail; large text needs only 3:1.
    tab, url, _, _ = page
    tab.goto(url)
    tab.evaluate(
        """() => {
             // Styled through the CSSOM: the board's policy forbids style attributes.
             const add = (id, style) => {
               const p = document.createElement("p");
               p.id = id;
               p.textContent = id;
               Object.assign(p.style, style);
               document.querySelector("main").append(p);
             };
             add("grey", { color: "#999", background: "#fff" });
             add("big", { color: "#949494", fontSize: "24px" });
             add("ghost", { color: "rgba(0, 0, 0, 0.2)" });
             const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
             const text = document.createElementNS("http://www.w3.org/2000/svg", "text");
             text.id = "faint";
             text.setAttribute("y", "12");
             text.setAttribute("fill", "#bbbbbb");
             text.textContent = "faint";
             svg.append(text);
             document.querySelector("main").append(svg);
           }"""
    )
    _, lines = _contrast_failures(tab, "light")
    flagged = " ".join(lines)
    assert re.search(r"p#grey .* #999999 on #ffffff is 2\.85:1, needs 4\.5:1", flagged), flagged
    assert "p#ghost" in flagged
    assert "text#faint ('faint'): #bbbbbb on #ffffff" in flagged, "SVG text is painted by its fill"
    assert "p#big" not in flagged, "24 px text needs only 3:1"


def test_the_html_report_skips_to_its_content_and_every_fold_and_tooltip_is_reachable(
    report_file: Path,
):
    with chromium() as browser:
        tab = browser.new_page()
        pages = {"report": report_file.as_uri()}
        problems = _skip_link_problems(tab, pages)
        checked, unreached = _unreached(tab, pages)
    assert checked > 0, "no fold and no tooltip found to check on the report"
    assert problems + unreached == [], "\n".join(problems + unreached)
