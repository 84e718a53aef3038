"""Write the screenshots in docs/images/: the HTML report and the board's main pages.

Run ``python docs/screenshots.py`` after changing a page's look. It runs the shop's offline
suite (``vitrine --all``) into a temporary store, serves the board over that store on a free
loopback port, and photographs each page in headless Chromium (Debian's, at
``/usr/bin/chromium``; ``--chromium PATH`` for another) at 1280 x 900, so every image shows
what a fresh checkout produces, nothing arranged by hand. The store is removed afterwards.

It reads the board through its implementation modules: a documentation tool of this
repository, not an example of the public API.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from vitrine._board.app import Board
from vitrine._board.server import serve

IMAGES = Path(__file__).resolve().parent / "images"
VIEWPORT = {"width": 1280, "height": 900}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu"]


def _run_suite(root: Path) -> Path:
    """The HTML report of one ``vitrine --all`` written into ``root``."""
    env = {**os.environ, "VITRINE_HOME": str(root)}
    done = subprocess.run(
        [sys.executable, "-m", "vitrine", "--all"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"vitrine --all exited {done.returncode}:\n{done.stdout}{done.stderr}")
    (report,) = sorted(root.glob("reports/offline-*/report.html"))
    return report


def _pages(tab: Any, base: str) -> list[tuple[str, Callable[[], None]]]:
    """(image name, how to reach the page) in the order a reader meets them."""

    def index() -> None:
        tab.goto(base)

    def run() -> None:
        tab.goto(base + "?kind=benchmark")
        tab.locator("#runs tbody tr a").first.click()
        tab.locator("caption", has_text="Checks").wait_for()

    def trial() -> None:
        run()
        tab.locator("table.trials a").first.click()
        tab.locator("#transcript").wait_for()

    def trend() -> None:
        tab.goto(base + "?kind=benchmark")
        tab.locator("#runs tbody tr td a[title='trend of this definition']").first.click()
        tab.locator("svg.chart").first.wait_for()

    def controls() -> None:
        tab.goto(base + "controls")

    return [
        ("board-index", index),
        ("board-run", run),
        ("board-trial", trial),
        ("board-trend", trend),
        ("board-controls", controls),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chromium", type=Path, default=Path("/usr/bin/chromium"))
    parser.add_argument("--out", type=Path, default=IMAGES, help="where the images go")
    args = parser.parse_args(argv)
    if not args.chromium.exists():
        parser.error(f"no Chromium at {args.chromium} (apt-get install chromium)")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vitrine-screens-") as scratch:
        root = Path(scratch)
        report = _run_suite(root)
        with serve(Board(root)) as server, sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=str(args.chromium), headless=True, args=CHROMIUM_ARGS
            )
            try:
                tab = browser.new_page(viewport=VIEWPORT)
                tab.set_default_timeout(30_000)
                tab.goto(report.as_uri())
                tab.screenshot(path=str(args.out / "report.png"))
                tab.goto(server.login_url)
                for name, reach in _pages(tab, server.url):
                    reach()
                    tab.screenshot(path=str(args.out / f"{name}.png"))
                    print(f"wrote {args.out / name}.png")
            finally:
                browser.close()
    print(f"wrote {args.out / 'report.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
