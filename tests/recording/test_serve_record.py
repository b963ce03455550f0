"""Recording a live session: the server's runner records each scenario it loads, edits included."""
import json
import threading
import time

import numpy as np

from starling.cli import _session_recorder
from starling.recording import open_recording
from starling.server import protocol as P
from starling.server.runner import SimulationRunner
from starling.server.scenes import scenario_loader



class Sink:
    """What the runner posts; only errors matter here."""

    def __init__(self):
        self.lock = threading.Lock()
        self.events = []

    def post_frame(self, frame):
        pass

    def post_status(self, text):
        pass

    def post_scene(self, text):
        pass

    def post_inspect(self, client_id, text):
        pass

    def post_event(self, text, client_id=None):
        with self.lock:
            self.events.append(json.loads(text))

    def errors(self):
        with self.lock:
            return [e["message"] for e in self.events if e.get("type") == "error"]


def wait_for(condition, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")

SMALL = ("species.bird.count=60",)


def test_a_live_session_is_recorded_and_a_switched_scenario_goes_to_the_next_file(tmp_path):
    path = tmp_path / "live.zarr"
    runner = SimulationRunner("flock", realtime=False, seed=1, loader=scenario_loader(SMALL, "flock"),
                              recorder=_session_recorder(path, every=2, precision="float16"))
    sink = Sink()
    runner.start(sink)
    try:
        wait_for(lambda: runner.sim is not None and runner.sim.step_count >= 40, timeout=60, what="40 steps")
        runner.submit(None, P.Pause(type="pause"))
        wait_for(lambda: runner.paused, what="the pause")
        first = runner.sim
        first.queue_set("species.bird.count", 70)  # an edit, as the editor makes them
        runner.submit(None, P.Step(type="step", n=4))  # the edit lands after the first; frames of 70 follow
        wait_for(lambda: first.population("bird").n == 70 and not runner.pacer.pending, timeout=60,
                 what="the edit and the steps after it")
        runner.submit(None, P.SwitchScenario(type="scenario", name="flock", seed=2))
        wait_for(lambda: runner.sim is not first and runner.sim is not None, timeout=60, what="the switch")
        wait_for(lambda: runner.sim.step_count >= 10, timeout=60, what="steps of the second scenario")
    finally:
        runner.stop()
    assert not sink.errors()
    rec = open_recording(path)
    assert rec.complete and rec.seed == 1 and rec.precision == "float16"
    assert rec.steps[-1] == first.step_count - first.step_count % 2
    assert np.all(np.diff(rec.steps) == 2)
    np.testing.assert_array_equal(np.sort(rec.frame(-1)["bird"].uid), np.sort(first.population("bird").uid))
    edits = [e for e in rec.events if e["kind"] == "edit"]
    assert edits and edits[0]["detail"]["changes"] == {"species.bird.count": [60, 70]}
    second = open_recording(tmp_path / "live-2.zarr")
    assert second.complete and second.seed == 2 and second.steps[0] == 0 and second.n_frames >= 5
