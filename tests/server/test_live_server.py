"""Against a real uvicorn server and real sockets: a client that stops reading loses
frames (it later sees gaps in the sequence numbers) while the simulation and a second,
healthy client carry on at full rate."""
from __future__ import annotations

import threading
import time

import pytest
from websockets.sync.client import connect

from starling.server import BackgroundServer, create_app
from starling import frames as F
from starling.server import protocol as P
from starling.server.scenes import scenario_loader

from .helpers import SCENARIO, wait_for

STALL_SECONDS = 3.5


@pytest.mark.quiet_machine  # step and frame rates with and without the stall, a few seconds each
def test_a_stalled_client_drops_frames_and_slows_nobody(tmp_path):
    # 3,000 birds at 3x real time: 48 KB frames about 50 times a second, enough to fill
    # the kernel's socket buffers (about 4 MB on Linux) well within the stall.
    # (A short neighbour reach keeps the step cheap on a loaded machine: what is tested is the
    # server's back-pressure, which needs large frames published fast, not the flocking.)
    birds = ("species.bird.count=3000", "species.bird.groups.flocking.query.max_distance=2.5")
    app = create_app(SCENARIO, seed=1, loader=scenario_loader(birds, SCENARIO), static_dir=tmp_path)
    with BackgroundServer(app) as server:
        runner = app.state.runner
        runner.submit(None, P.Speed(type="speed", multiplier=3.0))
        # Past the first steps, which may compile the parallel kernels for this size.
        wait_for(lambda: runner.sim is not None and runner.sim.step_count > 60, timeout=60, what="steady stepping")
        url = f"ws://127.0.0.1:{server.port}/ws"

        healthy_frames: list[tuple[float, int]] = []
        stop = threading.Event()

        def healthy_reader() -> None:
            with connect(url, max_size=None) as ws:
                while not stop.is_set():
                    try:
                        message = ws.recv(timeout=0.5)
                    except TimeoutError:
                        continue
                    if isinstance(message, bytes):
                        # only the header's sequence number: this reader shares the GIL with the
                        # server and the simulation, so it must cost next to nothing per frame
                        healthy_frames.append((time.monotonic(), F.frame_sequence(message)))

        reader = threading.Thread(target=healthy_reader, daemon=True)
        reader.start()
        try:
            wait_for(lambda: len(healthy_frames) > 10, what="the healthy client streaming")

            def rate(seconds: float) -> tuple[float, float, int]:
                """Steps and published frames per second over a window, and frames the healthy client got."""
                steps0, published0, t0 = runner.sim.step_count, runner.frames_published, time.monotonic()
                time.sleep(seconds)
                span = time.monotonic() - t0
                got = sum(1 for t, _ in healthy_frames if t0 <= t <= t0 + span)
                return (runner.sim.step_count - steps0) / span, (runner.frames_published - published0) / span, got

            # The same measures without a stalled client: what the stall must not degrade. (The
            # healthy reader shares this process's GIL with the server and a simulation that
            # uses the whole machine, so even unstalled it does not get every published frame.)
            baseline_span = 2.0
            baseline_steps, _, baseline_got = rate(baseline_span)
            # max_queue=1: the client library itself stops reading once one message is waiting.
            with connect(url, max_size=None, max_queue=1) as stalled:
                assert '"scene"' in stalled.recv(timeout=5)
                wait_for(lambda: len(app.state.hub.clients) == 2, what="both clients")
                stalled_steps, published, healthy_got = rate(STALL_SECONDS)

                # The simulation did not slow down, and the healthy client got its frames as before.
                assert stalled_steps >= 0.8 * baseline_steps, (stalled_steps, baseline_steps)
                assert healthy_got / STALL_SECONDS >= 0.8 * baseline_got / baseline_span, (healthy_got, baseline_got)

                # Once the kernel's buffers were full, newer frames replaced the unsent one.
                stalled_client = min(app.state.hub.clients.values(), key=lambda c: c.frames_sent)
                assert stalled_client.frames_sent < published * STALL_SECONDS
                assert stalled_client.frames_dropped >= 5, (stalled_client.frames_dropped, stalled_client.frames_sent, published)

                # Reading again: the backlog the kernel buffered, then a jump to live frames.
                # (The lag is taken when each frame arrives: the server keeps publishing meanwhile,
                # so a second look at its newest frame would race it.)
                sequences, lag = [], None
                deadline = time.monotonic() + 5.0
                while time.monotonic() < deadline:
                    message = stalled.recv(timeout=2.0)
                    if isinstance(message, bytes):
                        sequences.append(F.frame_sequence(message))
                        lag = F.frame_sequence(app.state.hub.frame) - sequences[-1]
                        if lag < 5:
                            break
                assert sequences[-1] - sequences[0] > len(sequences) - 1, "the stalled client should see gaps"
                assert lag is not None and lag < 5, ("it catches up to live frames", lag)
        finally:
            # stopped before the server shuts down, so a failure above is not buried under
            # the reader's "connection closed"
            stop.set()
            reader.join(5)
        assert runner.alive


def test_serve_prints_its_address_and_serves_until_interrupted(tmp_path):
    """``serve`` is what ``starling serve`` runs: it must announce a reachable URL."""
    import signal
    import subprocess
    import sys

    import httpx

    code = (
        "from starling.server import serve; "
        "serve('flock', host='127.0.0.1', port=0, open_browser=False)"
    )
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = process.stdout.readline()
        assert "Starling is serving 'flock' at http://127.0.0.1:" in line, line
        url = line.split(" at ")[1].split()[0]
        assert httpx.get(url + "api/scenarios", timeout=10).json()["current"] == "flock"
        assert httpx.get(url, timeout=10).status_code in (200, 503)
    finally:
        process.send_signal(signal.SIGINT)
        rest = process.communicate(timeout=20)[0]
    assert process.returncode == 0 and "Starling stopped." in rest and "Traceback" not in rest, rest
