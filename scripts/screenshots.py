"""Take a screenshot of the live app for every built-in scenario (docs/screenshots/NAME.png).

Usage: .venv/bin/python scripts/screenshots.py [NAME ...] [--seconds S]

Runs the real server in this process and Debian's Chromium (software WebGL), waits
until frames arrive, lets the scene play for a few seconds and saves the page.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]


def shoot(names: list[str], seconds: float) -> None:
    from playwright.sync_api import sync_playwright

    from starling.server import BackgroundServer, create_app

    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for name in names:
            app = create_app(name, seed=1)
            with BackgroundServer(app, startup_timeout=300) as server:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(server.url)
                page.wait_for_function("() => window.__starling && window.__starling.state().framesApplied > 2",
                                       timeout=300_000)
                page.wait_for_timeout(int(seconds * 1000))
                path = OUT / f"{name}.png"
                page.screenshot(path=str(path))
                print(f"{name}: {path.relative_to(ROOT)}", flush=True)
                page.close()
        browser.close()


def main() -> None:
    from starling.config import scenario_names

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="scenarios (default: every built-in)")
    parser.add_argument("--seconds", type=float, default=6.0, help="how long the scene plays before the shot")
    args = parser.parse_args()
    names = args.names or scenario_names()
    unknown = sorted(set(names) - set(scenario_names()))
    if unknown:
        sys.exit(f"unknown scenario(s): {', '.join(unknown)}")
    shoot(names, args.seconds)


if __name__ == "__main__":
    main()
