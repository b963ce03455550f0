"""Against a real uvicorn server and real sockets: a client that stops reading loses
frames (it later sees gaps in the sequence numbers) while the simulation and a second,
healthy client carry on at full rate."""
from __future__ import annotations

import socket
import threading
import time

from websockets.sync.client import connect

from starling.server import BackgroundServer, create_app
from starling.server import protocol as P
from starling.server.runner import scenario_loader

from .helpers import SCENARIO, wait_for

STALL_SECONDS = 2.5


def _stalling_socket(port: int) -> socket.socket:
    """A TCP connection with a tiny receive window, so a client that stops reading
    pushes back on the server within a few frames instead of after megabytes."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    return sock


def test_a_stalled_client_drops_frames_and_slows_nobody(tmp_path):
    app = create_app(SCENARIO, seed=1, loader=scenario_loader(("species.bird.count=2000",), SCENARIO), static_dir=tmp_path)
    with BackgroundServer(app) as server:
        runner = app.state.runner
        wait_for(lambda: runner.sim is not None and runner.frames_published > 0, timeout=30, what="the first frame")
        url = f"ws://127.0.0.1:{server.port}/ws"

        healthy_frames: list[tuple[float, int]] = []
        stop = threading.Event()

        def healthy_reader() -> None:
            with connect(url, max_size=None) as ws:
                while not stop.is_set():
                    try:
                        message = ws.recv(timeout=1.0)
                    except TimeoutError:
                        continue
                    if isinstance(message, bytes):
                        healthy_frames.append((time.monotonic(), P.decode_frame(message).step))

        reader = threading.Thread(target=healthy_reader, daemon=True)
        reader.start()
        # max_queue=1: the client library itself stops reading when one message is waiting.
        with connect(url, sock=_stalling_socket(server.port), max_size=None, max_queue=1) as stalled:
            assert '"scene"' in stalled.recv(timeout=5)
            wait_for(lambda: len(app.state.hub.clients) == 2 and healthy_frames, what="both clients")
            steps_before, start = runner.sim.step_count, time.monotonic()
            time.sleep(STALL_SECONDS)
            steps_during = runner.sim.step_count - steps_before
            window = [s for t, s in healthy_frames if start <= t <= start + STALL_SECONDS]

            # The simulation kept real time (30 steps/s) and the healthy client saw it all.
            expected = STALL_SECONDS / runner.sim.dt
            assert steps_during >= 0.8 * expected, (steps_during, expected)
            assert len(window) >= 0.7 * expected, (len(window), expected)

            print([(c.frames_sent, c.frames_dropped) for c in app.state.hub.clients.values()], steps_during, len(window))
            stalled_client = next(c for c in app.state.hub.clients.values() if c.frames_sent < 0.5 * expected)
            assert stalled_client.frames_dropped > 0.5 * expected

            # Reading again: only recent frames arrive, the skipped ones are simply gone.
            sequences = []
            deadline = time.monotonic() + 3.0
            while len(sequences) < 20 and time.monotonic() < deadline:
                message = stalled.recv(timeout=2.0)
                if isinstance(message, bytes):
                    sequences.append(P.decode_frame(message).sequence)
            assert len(sequences) >= 5
            assert sequences[-1] - sequences[0] > len(sequences) - 1, "the stalled client should see gaps"
            latest = P.decode_frame(app.state.hub.frame).sequence
            assert latest - sequences[-1] < 0.5 * expected, "after catching up it receives current frames"
        stop.set()
        reader.join(5)
        assert runner.alive
