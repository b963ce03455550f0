"""A real server and a real Chromium for the browser tests.

The server runs the built front-end from the package's static folder on a free
localhost port (in a background thread of this process); Chromium is Debian's
package driven by Playwright, with software WebGL (SwiftShader) so it works on
machines without a GPU or display.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
STATIC = Path(__file__).resolve().parents[2] / "src" / "starling" / "server" / "static"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
]


@pytest.fixture(scope="package")
def live_server(tmp_path_factory):
    """The app on a free port, streaming the built-in flock (1,000 birds) in real time.

    Package-scoped: it steps and encodes frames whether or not a page watches (a quarter of
    a core, and the GIL), so it stops with the last browser test, not with the whole suite."""
    if not (STATIC / "index.html").is_file():
        pytest.fail(f"the front-end is not built in {STATIC}: run `make setup` (npm ci && npm run build in web/)")
    import time

    import starling
    from starling.server import BackgroundServer, create_app

    # Warm the kernel cache first, headless: Numba compiles holding the GIL, so a server
    # whose thread is compiling answers no page meanwhile. Every scene the tests load is
    # stepped here once (a no-op when the cache is warm, minutes on a cold one).
    for name in ("flock", "lagoon", "pond"):
        starling.load_scenario(name, seed=1).step(3)
    app = create_app("flock", seed=1, workspace=tmp_path_factory.mktemp("workspace"))
    with BackgroundServer(app, startup_timeout=60) as server:
        runner = app.state.runner
        deadline = time.monotonic() + 600
        while runner.frames_published < 3:  # the frame encoder compiles on the first frame
            if time.monotonic() > deadline:
                pytest.fail("the live server published no frames within 10 minutes")
            time.sleep(0.1)
        yield server


@pytest.fixture(scope="package")
def browser():
    """Debian's Chromium, headless. Without it the browser tests fail saying how to install it
    (`make test` installs it first); `make test-fast` or `-m "not browser"` leaves them out."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is absent: install Debian's chromium package (make system-deps), "
                    "or leave the browser tests out with -m 'not browser'", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, live_server):
    """A fresh tab on the viewer, already showing frames; console errors fail the test."""
    context = browser.new_context(viewport={"width": 960, "height": 640})
    tab = context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda exc: problems.append(f"page error: {exc}\n{getattr(exc, 'stack', '')}"))
    tab.on("console", lambda msg: problems.append(f"console error: {msg.text}") if msg.type == "error" else None)
    tab.goto(live_server.url)
    tab.wait_for_function("() => window.__starling && window.__starling.state().framesApplied > 2", timeout=60_000)
    try:
        yield tab
    finally:
        # Leave the shared server as the next test expects it (the running flock), even when
        # this test failed half-way through another scene: one failure must not cascade.
        state = tab.evaluate("() => window.__starling.state()")
        if state["scenario"] != "flock" or state["paused"]:
            tab.evaluate("() => window.__starling.send({type: 'scenario', name: 'flock', seed: 1})")
            tab.wait_for_function(
                "() => { const s = window.__starling.state(); return s.scenario === 'flock' && s.paused === false; }",
                timeout=60_000)
        context.close()
    assert not problems, problems
