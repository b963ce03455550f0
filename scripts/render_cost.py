"""What each part of a scene costs the browser a frame, on this machine's renderer.

Usage::

    PYTHONPATH=src .venv/bin/python scripts/render_cost.py SCENE [--part terrain --part water ...]
        [--scale 0.5] [--rounds 6] [--seconds 3]

The scene is served paused (after ``--steps``, 120 by default, from ``--seed``) to a headless Chromium (Debian's, software WebGL
as in the browser tests, 1280 × 800) with the camera held on its framed view. For each part
(``terrain``, ``water``, ``obstacles``, ``animals`` or a species name; ``window.__starling.show``)
the page alternates between drawing everything and drawing without that part, ``--rounds``
times, and reads the CPU time Chromium's GPU process (where a software rasteriser draws) and
renderer (the page's script) spent per drawn frame in each window. A part's cost is the median
over rounds of the GPU process's difference: steadier on a shared machine than frame rates,
which move with whatever else runs. Prints JSON. A tool for drawing work, not part of the tests.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(kind: str) -> float:
    """CPU time (user + system) of every Chromium process of ``--type=kind`` so far."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline") as f:
                cmd = f.read()
            if "chromium" not in cmd or f"--type={kind}" not in cmd:
                continue
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:  # the process ended meanwhile
            continue
    return total / CLOCK_TICKS


def _window(page, seconds: float) -> dict:
    """GPU-process and renderer CPU ms per drawn frame, and frames per second, over ``seconds``."""
    read = "() => window.__starling.state().framesRendered"
    f0, g0, r0, t0 = page.evaluate(read), _cpu_seconds("gpu-process"), _cpu_seconds("renderer"), time.monotonic()
    time.sleep(seconds)
    f1, g1, r1, t1 = page.evaluate(read), _cpu_seconds("gpu-process"), _cpu_seconds("renderer"), time.monotonic()
    frames = max(f1 - f0, 1)
    return {"gpu_ms": (g1 - g0) / frames * 1e3, "renderer_ms": (r1 - r0) / frames * 1e3, "fps": frames / (t1 - t0)}


def _medians(windows: list[dict]) -> dict:
    """Each figure of :func:`_window`, the median over ``windows``."""
    return {key: round(statistics.median(w[key] for w in windows), 2) for key in windows[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scene", help="a built-in scenario or a scenario file")
    parser.add_argument("--part", action="append", help="terrain, water, obstacles, animals or a species (repeatable; default: the first four)")
    parser.add_argument("--scale", type=float, default=0.5, help="the drawing buffer's scale (?scale=)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each measured window")
    parser.add_argument("--seed", type=int, default=0, help="the scenario's seed (the live measurement's is 1)")
    parser.add_argument("--steps", type=int, default=120, help="steps taken before the scene is served paused")
    args = parser.parse_args()
    parts = args.part or ["terrain", "water", "obstacles", "animals"]

    from playwright.sync_api import sync_playwright

    from starling.server import protocol as P
    from starling.server.app import BackgroundServer, create_app
    from starling.server.measure import CHROMIUM, CHROMIUM_ARGS
    from starling.simulation import load_scenario

    sim = load_scenario(args.scene, seed=args.seed)
    sim.step(args.steps)
    app = create_app(args.scene, loader=lambda name, seed: sim, scenario_names=lambda: [args.scene])
    app.state.runner.submit(None, P.Pause(type="pause"))
    report: dict = {"scene": args.scene, "scale": args.scale, "parts": {}}
    with BackgroundServer(app) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"{server.url}?scale={args.scale}")
            page.wait_for_function("() => window.__starling && window.__starling.state().framed !== null", timeout=300_000)
            page.evaluate("() => window.__starling.hold()")
            # the first frames compile the rasteriser's shaders and fill its caches: not measured
            time.sleep(4)
            _window(page, args.seconds)
            for part in parts:
                if not page.evaluate(f"() => window.__starling.show({json.dumps(part)}, true)"):
                    report["parts"][part] = None
                    continue
                shown, hidden = [], []
                for _ in range(args.rounds):
                    for visible, out in ((True, shown), (False, hidden)):
                        page.evaluate(f"() => window.__starling.show({json.dumps(part)}, {json.dumps(visible)})")
                        time.sleep(0.5)
                        out.append(_window(page, args.seconds))
                page.evaluate(f"() => window.__starling.show({json.dumps(part)}, true)")
                report["parts"][part] = {
                    "gpu_ms_per_frame": round(statistics.median(a["gpu_ms"] - b["gpu_ms"] for a, b in zip(shown, hidden)), 2),
                    "with": _medians(shown),
                    "without": _medians(hidden),
                }
        finally:
            browser.close()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
