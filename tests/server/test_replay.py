"""Replay mode of the server: a small real recording streamed by :class:`ReplayRunner`.

Every test checks what a client receives (decoded frames, status, inspect, errors)
against what the recording holds, so a frame off by one or a wrong position fails.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

from starling import frames as F
from starling.server import protocol as P
from starling.server.replay import ReplayRunner, due_frame, event_frames, metrics_at

from .helpers import RecordingSink, wait_for

STEPS = 60
EVERY = 2


def make_recording(path, birds: int = 40):
    """A real recording of the flock (every 2nd of 60 steps, metrics every 10) with three
    events: scripted notes at steps 14 and 30 and a live edit at step 44."""
    import starling
    from starling.recording import Recorder, open_recording

    sim = starling.load_scenario("flock", seed=3, overrides=(f"species.bird.count={birds}",))
    with Recorder(sim, path, every=EVERY, metrics_every=10):
        sim.step(14)
        sim.world.journal.log("scripted", note="gust")
        sim.step(16)
        sim.world.journal.log("scripted", note="calm")
        sim.step(14)
        sim.set("species.bird.mover.max_speed=9")
        sim.step(STEPS - 44)
    return open_recording(path)


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return make_recording(tmp_path_factory.mktemp("replay") / "small.zarr")


@pytest.fixture
def replay(recording):
    """A started replay runner (paused on frame 0) and the sink it posts to."""
    runner = ReplayRunner(recording, label="small.zarr")
    sink = RecordingSink()
    runner.start(sink)
    wait_for(lambda: sink.scenes and sink.frames and sink.status, timeout=120, what="the replay's first frame")
    yield runner, sink
    runner.stop()


def _next_frame(sink: RecordingSink, after: int, timeout: float = 10.0) -> F.DecodedFrame:
    wait_for(lambda: len(sink.frames) > after, timeout=timeout, what="a new frame")
    with sink.lock:
        return F.decode_frame(sink.frames[after])


def _last_status(sink: RecordingSink) -> dict:
    with sink.lock:
        return sink.status[-1]


def _seek(runner, sink, frame: int) -> F.DecodedFrame:
    before = len(sink.frames)
    runner.submit(1, P.Seek(type="seek", frame=frame))
    return _next_frame(sink, before)


# ---- pure pieces, by hand --------------------------------------------------------------


def test_event_frames_are_the_first_frame_at_or_after_the_event():
    steps = np.array([0, 2, 4, 6])
    # step 0 → frame 0; 3 → 4 (frame 2); 4 → frame 2; 5 → frame 3; 9 is past the end → last frame
    assert event_frames(steps, [0, 3, 4, 5, 9]).tolist() == [0, 2, 2, 3, 3]


def test_due_frame_follows_recorded_time_times_speed():
    times = np.array([0.0, 0.5, 1.0, 1.5])
    assert due_frame(times, 0.0, 0.49, 1.0, 0) == 0
    assert due_frame(times, 0.0, 0.5, 1.0, 0) == 1  # a frame is due exactly at its time
    assert due_frame(times, 0.0, 0.25, 4.0, 0) == 2  # 4×: a quarter second shows 1 s
    assert due_frame(times, 0.5, 0.3, 0.25, 1) == 1  # ¼×: 0.5 + 0.075 s, still frame 1
    assert due_frame(times, 0.0, 10.0, 1.0, 0) == 3  # never past the end
    assert due_frame(times, 0.0, 0.0, 1.0, 2) == 2  # never backwards while playing


def test_metrics_at_takes_the_last_sample_at_or_before_the_step():
    series = {"bird": {"step": np.array([0, 10, 20]), "time": np.array([0.0, 0.5, 1.0]),
                       "polarization": np.array([0.1, 0.4, np.nan])}}
    assert metrics_at(series, 15) == ({"bird": {"polarization": 0.4}}, 10, 0.5)
    assert metrics_at(series, 20) == ({"bird": {"polarization": None}}, 20, 1.0)  # NaN → None
    assert metrics_at(series, -1) == ({}, -1, 0.0)


# ---- the runner ------------------------------------------------------------------------


def test_the_scene_is_the_recorded_scenario_with_a_timeline(replay, recording):
    runner, sink = replay
    scene = sink.scenes[0]
    assert scene["scenario"] == "flock" and [s["name"] for s in scene["species"]] == ["bird"]
    assert scene["player"] and not any(scene["player"].values())
    timeline = scene["replay"]
    assert timeline["n_frames"] == recording.n_frames == STEPS // EVERY + 1
    assert timeline["steps"] == recording.steps.tolist()
    assert [(e["frame"], e["kind"]) for e in timeline["events"]] == [(7, "scripted"), (15, "scripted"), (22, "edit")]
    first = F.decode_frame(sink.frames[0])
    assert first.step == 0 and first.paused


def test_seek_shows_the_recorded_frame_within_the_codec_quantisation(replay, recording):
    runner, sink = replay
    for index in (20, 3, recording.n_frames - 1, 0):
        frame = _seek(runner, sink, index)
        assert frame.step == int(recording.steps[index])
        assert math.isclose(frame.time, float(recording.times[index]))
        block = frame.species[0]
        truth = recording.frame(index)["bird"]
        order = np.argsort(truth.uid)
        assert np.array_equal(np.sort(block.uid), truth.uid[order])
        quantum = (block.bounds_max - block.bounds_min) / 65535.0
        got = block.position[np.argsort(block.uid)]
        assert np.all(np.abs(got - truth.position[order]) <= quantum / 2 + 1e-4)
    wait_for(lambda: _last_status(sink)["replay"]["frame"] == 0, what="the status to show frame 0")


def test_play_advances_to_the_end_and_stops(replay, recording):
    runner, sink = replay
    runner.submit(1, P.Speed(type="speed", multiplier=8.0))
    before = len(sink.frames)
    runner.submit(1, P.Resume(type="resume"))
    wait_for(lambda: _last_status(sink)["replay"]["playing"], what="playback to start")
    last = recording.n_frames - 1
    end = int(recording.steps[last])

    def at_the_end() -> bool:
        with sink.lock:
            frame = F.decode_frame(sink.frames[-1])
        return frame.step == end and frame.paused

    wait_for(at_the_end, timeout=20, what="playback to reach the last frame and pause there")
    assert runner.frame_index == last and not runner.playing
    with sink.lock:
        steps = [F.decode_frame(f).step for f in sink.frames[before:]]
    assert steps == sorted(steps) and len(set(steps)) > 3  # forward, through several frames
    status = _last_status(sink)
    assert status["speed"] == 8.0 and status["paused"]


def test_play_at_the_end_starts_again_from_the_beginning(replay, recording):
    runner, sink = replay
    _seek(runner, sink, recording.n_frames - 1)
    runner.submit(1, P.Speed(type="speed", multiplier=0.25))
    before = len(sink.frames)
    runner.submit(1, P.Resume(type="resume"))
    assert _next_frame(sink, before).step == 0


def test_step_moves_whole_frames_and_pauses(replay, recording):
    runner, sink = replay
    _seek(runner, sink, 5)
    before = len(sink.frames)
    runner.submit(1, P.Step(type="step", n=3))
    assert _next_frame(sink, before).step == int(recording.steps[8])


def test_next_and_previous_event_land_on_the_events_frames(replay, recording):
    runner, sink = replay
    _seek(runner, sink, 0)
    landed = []
    for _ in range(4):
        before_events = len(sink.events)
        runner.submit(1, P.NextEvent(type="next_event"))
        wait_for(lambda: len(sink.events) > before_events, what="the jump's answer")
        ack = sink.events[-1][1]
        assert ack["type"] == "ack" and ack["action"] == "next_event"
        landed.append(None if ack["result"] is None else (ack["result"]["frame"], ack["result"]["event"]["step"]))
    assert landed == [(7, 14), (15, 30), (22, 44), None]  # nothing after the last event
    assert runner.frame_index == 22
    frame = F.decode_frame(sink.frames[-1])
    assert frame.step == int(recording.steps[22]) == 44
    before_events = len(sink.events)
    runner.submit(1, P.PrevEvent(type="prev_event", kind="scripted"))
    wait_for(lambda: len(sink.events) > before_events, what="the jump's answer")
    assert sink.events[-1][1]["result"]["frame"] == 15
    _seek(runner, sink, 14)
    before_events = len(sink.events)
    runner.submit(1, P.NextEvent(type="next_event", kind="edit"))
    wait_for(lambda: len(sink.events) > before_events, what="the jump's answer")
    assert sink.events[-1][1]["result"]["frame"] == 22  # skips the scripted note at frame 15
    assert runner.frame_index == 22


def test_bad_replay_messages_get_one_error_and_change_nothing(replay, recording):
    runner, sink = replay
    _seek(runner, sink, 7)
    frames_before, errors_before = len(sink.frames), len(sink.errors())
    bad = [
        P.Seek(type="seek", frame=recording.n_frames),
        P.NextEvent(type="next_event", kind="eclipse"),
        P.Fire(type="fire", origin=(0, 0, 0), direction=(1, 0, 0)),
        P.SwitchScenario(type="scenario", name="pond"),
        P.Select(type="select", species="shark", uid=1),
    ]
    for message in bad:
        runner.submit(1, message)
    wait_for(lambda: len(sink.errors()) >= errors_before + len(bad), what="one error per bad message")
    errors = sink.errors()[errors_before:]
    assert len(errors) == len(bad)
    assert errors[0] == (f"frame: {recording.n_frames} is out of range; this recording has "
                         f"{recording.n_frames} frames (0 to {recording.n_frames - 1})")
    assert errors[1] == "kind: no 'eclipse' events in this recording; it has: edit, scripted"
    assert "a replay only shows what was recorded" in errors[2] and errors[2].startswith("type: 'fire'")
    assert errors[3].startswith("type: 'scenario'")
    assert errors[4].startswith("species: unknown species 'shark'")
    assert runner.frame_index == 7 and not runner.playing
    assert all(F.decode_frame(f).step == int(recording.steps[7]) for f in sink.frames[frames_before:])


@pytest.mark.parametrize("text, field", [
    ('{"type": "seek", "frame": -1}', "frame"),
    ('{"type": "seek"}', "frame"),
    ('{"type": "seek", "frame": "ten"}', "frame"),
    ('{"type": "next_event", "kind": ""}', "kind"),
    ('{"type": "prev_event", "back": 2}', "back"),
])
def test_malformed_replay_messages_are_refused_naming_the_field(text, field):
    with pytest.raises(P.MessageError) as caught:
        P.parse_client_message(text)
    assert caught.value.field == field


def test_selection_inspects_the_recorded_animal(replay, recording):
    runner, sink = replay
    _seek(runner, sink, 10)
    truth = recording.frame(10)["bird"]
    uid = int(truth.uid[4])
    runner.submit(7, P.Select(type="select", species="bird", uid=uid))
    wait_for(lambda: any(c == 7 for c, _ in sink.inspects), what="an inspect message")
    info = [m for c, m in sink.inspects if c == 7][-1]
    assert info["alive"] and info["uid"] == uid and info["step"] == int(recording.steps[10])
    assert np.allclose(info["position"], truth.position[4], atol=1e-5)
    assert np.allclose(info["velocity"], truth.velocity[4], atol=1e-5)
    assert math.isclose(info["speed"], float(np.linalg.norm(truth.velocity[4].astype(np.float64))), rel_tol=1e-6)
    assert info["state"] is None  # the flock has no brain
    runner.submit(7, P.Select(type="select", species="bird", uid=10**9))
    wait_for(lambda: [m for c, m in sink.inspects if c == 7][-1]["alive"] is False, what="a not-alive inspect")


def test_status_carries_the_recorded_metrics_and_counts(replay, recording):
    runner, sink = replay
    _seek(runner, sink, 12)  # step 24: the last metric sample is step 20
    wait_for(lambda: _last_status(sink)["replay"]["frame"] == 12, what="the status of frame 12")
    status = _last_status(sink)
    assert status["step"] == 24 and status["counts"] == {"bird": 40}
    assert status["metrics_step"] == 20
    j = int(np.flatnonzero(recording.metrics["bird"]["step"] == 20)[0])
    assert math.isclose(status["metrics"]["bird"]["polarization"], recording.metrics["bird"]["polarization"][j])


def test_speed_paces_the_playhead_by_recorded_time(replay, recording):
    runner, sink = replay
    frame_dt = float(recording.times[1] - recording.times[0])  # 2 steps of 1/30 s
    runner.submit(1, P.Speed(type="speed", multiplier=0.25))
    start = time.perf_counter()
    runner.submit(1, P.Resume(type="resume"))
    wait_for(lambda: runner.frame_index >= 1, what="slow playback to move")
    time.sleep(0.6)
    shown = runner.frame_index
    # at ¼× the playhead is never further than a quarter of the wall time since play was asked
    assert 1 <= shown <= math.floor((time.perf_counter() - start) * 0.25 / frame_dt + 1e-6)
    runner.submit(1, P.Speed(type="speed", multiplier=8.0))
    wait_for(lambda: not runner.playing, timeout=10, what="fast playback to reach the end")
    assert runner.frame_index == recording.n_frames - 1
