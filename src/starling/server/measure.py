"""Measure the viewer's streaming path at scale: encode, send, decode, draw.

Run ``python -m starling.server.measure --count 100000`` (``--help`` for options).
It reports, as JSON:

* ``encode``: time to build one frame from a real simulation's arrays, and its size;
* ``replay``: frames captured from that simulation streamed through the real server
  to a headless Chromium at a fixed rate (default 60/s), which isolates what the
  transport, the browser's decoder and the renderer sustain from how fast the
  simulation itself can step;
* ``live``: the simulation stepping and streaming on its own, as ``starling serve``
  runs it (bounded by the step time at that size).

The browser numbers come from the page's own counters (``window.__starling``):
frames received per second, frames drawn per second and the decode time per frame.
Chromium is Debian's package driven by Playwright (``pip install '.[test]'``) with
software WebGL, so ``render_fps`` on a machine without a GPU is a floor, not what a
desktop browser draws.
"""
from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from typing import Any, Optional

from . import protocol as P
from .. import frames as F

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
]


def _frames(sim: Any, count: int) -> tuple[list[bytes], list[float], list[float]]:
    """Step ``sim`` ``count`` times, encoding a frame after each; returns frames and timings (ms)."""
    encoder = F.FrameEncoder()
    frames, encode_ms, step_ms = [], [], []
    for i in range(count):
        t0 = time.perf_counter()
        sim.step(1)
        step_ms.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        states = [
            F.SpeciesState(p.position, p.velocity, p.forward, p.up, p.uid)
            for p in (sim.population(name) for name in sim.species)
        ]
        frames.append(encoder.encode(states, step=sim.step_count, time=sim.time, dt=sim.dt, sequence=i))
        encode_ms.append((time.perf_counter() - t0) * 1e3)
    return frames, encode_ms, step_ms


def _browser_window(page: Any, seconds: float) -> dict[str, float]:
    """Counters of the viewer over a window: frames/s received and drawn, decode ms."""
    read = "() => { const s = window.__starling.state(); return [s.framesReceived, s.decodeMs, s.renderFps]; }"
    received0, _, _ = page.evaluate(read)
    fps, decode = [], []
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        time.sleep(0.5)
        _, d, f = page.evaluate(read)
        fps.append(f)
        decode.append(d)
    received1, _, _ = page.evaluate(read)
    span = time.monotonic() - t0
    return {
        "frames_received_per_s": round((received1 - received0) / span, 1),
        "render_fps": round(statistics.median(fps), 1),
        "decode_ms": round(statistics.median(decode), 3),
    }


def measure(
    scenario: str = "flock",
    count: Optional[int] = 100_000,
    species: str = "bird",
    spread: Optional[float] = None,
    seconds: float = 8.0,
    rate: float = 60.0,
    browser: bool = True,
    viewport: tuple[int, int] = (1280, 800),
    speed: float = 1.0,
) -> dict[str, Any]:
    """Run the measurements described in the module docstring; returns a JSON-able dict."""
    import starling

    overrides = []
    if count is not None:
        overrides.append(f"species.{species}.count={count}")
    if spread is not None:
        overrides.append(f"species.{species}.spawn.radius={spread}")
    t0 = time.perf_counter()
    sim = starling.load_scenario(scenario, seed=1, overrides=overrides)
    sim.step(2)  # compile / load kernels outside the timings
    setup_s = time.perf_counter() - t0
    frames, encode_ms, step_ms = _frames(sim, 12)
    animals = sum(sim.population(n).n for n in sim.species)
    result: dict[str, Any] = {
        "scenario": scenario,
        "animals": int(animals),
        "setup_s": round(setup_s, 1),
        "step_ms_median": round(statistics.median(step_ms), 2),
        "encode": {
            "ms_median": round(statistics.median(encode_ms), 3),
            "ms_min": round(min(encode_ms), 3),
            "frame_bytes": len(frames[-1]),
            "bytes_per_animal": round(len(frames[-1]) / max(animals, 1), 2),
            "max_frames_per_s_one_core": round(1e3 / statistics.median(encode_ms), 1),
        },
    }
    if browser:
        result.update(_measure_browser(scenario, sim, frames, seconds, rate, viewport, speed))
    return result


def _measure_browser(scenario: str, sim: Any, frames: list[bytes], seconds: float, rate: float,
                     viewport: tuple[int, int], speed: float = 1.0) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from .app import BackgroundServer, create_app

    # The server shows the very simulation the frames came from (its scene message
    # must match), paused so that only the replayed frames reach the page at first.
    app = create_app(scenario, loader=lambda name, seed: sim, scenario_names=lambda: [scenario])
    runner = app.state.runner
    runner.submit(None, P.Pause(type="pause"))
    out: dict[str, Any] = {}
    with BackgroundServer(app) as server, sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = chromium.new_page(viewport={"width": viewport[0], "height": viewport[1]})
            page.goto(server.url)
            page.wait_for_function("() => window.__starling && window.__starling.state().framesApplied > 0", timeout=120_000)
            hub = app.state.hub
            stop = threading.Event()

            def replay() -> None:
                period, i, next_at = 1.0 / rate, 0, time.perf_counter()
                while not stop.is_set():
                    hub.post_frame(frames[i % len(frames)])
                    i += 1
                    next_at += period
                    time.sleep(max(0.0, next_at - time.perf_counter()))

            player = threading.Thread(target=replay, daemon=True)
            player.start()
            time.sleep(2.0)
            replayed = _browser_window(page, seconds)
            stop.set()
            player.join()
            out["replay"] = {"offered_frames_per_s": rate, **replayed}

            runner.submit(None, P.Resume(type="resume"))
            if speed != 1.0:  # more steps a second than the scene's dt asks (the app's speed control)
                runner.submit(None, P.Speed(type="speed", multiplier=speed))
            time.sleep(2.0)
            steps0, t0 = sim.step_count, time.monotonic()
            live = _browser_window(page, seconds)
            out["live"] = {"speed": speed, "steps_per_s": round((sim.step_count - steps0) / (time.monotonic() - t0), 1),
                           **live}
        finally:
            chromium.close()
    return out


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="flock")
    parser.add_argument("--count", type=int, default=100_000, help="animals of --species (override of the scenario)")
    parser.add_argument("--species", default="bird")
    parser.add_argument("--spread", type=float, default=None, help="spawn radius override (m), to keep a big flock's density sane")
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each browser window")
    parser.add_argument("--rate", type=float, default=60.0, help="frames per second offered in the replay")
    parser.add_argument("--no-browser", action="store_true", help="only the server-side encode numbers")
    parser.add_argument("--speed", type=float, default=1.0,
                        help="the live phase's speed (steps a second = speed / dt), as the app's speed control sets it")
    args = parser.parse_args(argv)
    result = measure(args.scenario, args.count, args.species, args.spread, args.seconds, args.rate, not args.no_browser,
                     speed=args.speed)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
