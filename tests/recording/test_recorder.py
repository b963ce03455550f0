"""The recorder and the reader: what is read back is what the simulation held, whatever happens to the writer."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import starling
from starling.frames import orientation_vectors, pack_orientations
from starling.recording import Recorder, RecordingError, open_recording, record
from starling.world import Clock, Journal

SRC = str(Path(starling.__file__).resolve().parents[1])


def _copies(sim):
    """Every population's arrays now and after each step (an observer), to compare with what was recorded."""
    def copy(step, populations):
        return step, {name: {k: getattr(p, k).copy() for k in ("uid", "position", "velocity")}
                      for name, p in populations.items()}

    seen = [copy(sim.step_count, sim.world.populations)]
    sim.observe(lambda view: seen.append(copy(view.step, view.populations)))
    return seen


@pytest.mark.parametrize("precision,tolerance", [("float32", 0.0), ("float16", 0.05)])
def test_read_back_equals_the_simulation(tmp_path, precision, tolerance):
    sim = starling.load_scenario("flock", seed=4, overrides=["n=200"], record_debug=False)
    seen = _copies(sim)
    record(sim, tmp_path / "run.zarr", 40, every=1, precision=precision)
    rec = open_recording(tmp_path / "run.zarr")
    assert rec.complete and rec.n_frames == 41 and list(rec.steps) == list(range(41))
    assert rec.scenario == "flock" and rec.seed == 4 and rec.precision == precision
    assert rec.config["species"][0]["count"] == 200
    assert len(seen) == 41
    for i, (step, pops) in enumerate(seen):
        frame = rec.frame(i)
        assert rec.steps[i] == step
        bird = frame["bird"]
        np.testing.assert_array_equal(bird.uid, pops["bird"]["uid"])
        # float16 keeps 11 bits of the offset from the flock's centre: a few cm over a ~60 m flock
        np.testing.assert_allclose(bird.position, pops["bird"]["position"], rtol=0, atol=tolerance)
        np.testing.assert_allclose(bird.velocity, pops["bird"]["velocity"], rtol=0, atol=tolerance * 0.2 or 0)
    whole = rec.array("bird", "position")
    assert whole.shape[0] == 41
    np.testing.assert_allclose(whole[-1, :200], seen[-1][1]["bird"]["position"], atol=tolerance)
    assert rec.array("bird", "alive")[:, :200].all() and not rec.array("bird", "alive")[:, 200:].any()


def test_frames_read_in_order_with_read_ahead_equal_the_whole_arrays(tmp_path):
    sim = starling.load_scenario("flock", seed=3, overrides=["n=40"], record_debug=False)
    record(sim, tmp_path / "b.zarr", 50, block_frames=8)
    rec = open_recording(tmp_path / "b.zarr")
    assert rec.block == 8 and rec.n_frames == 51
    whole = rec.array("bird", "position")
    uids = rec.array("bird", "uid")
    for i in list(range(rec.n_frames)) + [3, 47, 12]:  # playback, then jumps back
        frame = rec.frame(i)["bird"]
        np.testing.assert_array_equal(frame.uid, uids[i, :40])
        np.testing.assert_array_equal(frame.position, whole[i, :40])


def test_orientations_survive_the_round_trip_within_the_codecs_quarter_degree(rng):
    f = rng.normal(size=(500, 3))
    f /= np.linalg.norm(f, axis=1, keepdims=True)
    u = np.cross(f, rng.normal(size=(500, 3)))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    forward, up = orientation_vectors(pack_orientations(f, u))
    assert np.degrees(np.arccos(np.clip((forward * f).sum(1), -1, 1))).max() < 0.25
    assert np.degrees(np.arccos(np.clip((up * u).sum(1), -1, 1))).max() < 0.25


def test_every_k_keeps_every_kth_step_and_metrics_are_sampled(tmp_path):
    sim = starling.load_scenario("flock", seed=1, overrides=["n=100"], record_debug=False)
    record(sim, tmp_path / "r.zarr", 30, every=4, metrics_every=10)
    rec = open_recording(tmp_path / "r.zarr")
    assert list(rec.steps) == [0, 4, 8, 12, 16, 20, 24, 28]
    bird = rec.metrics["bird"]
    assert list(bird["step"]) == [0, 10, 20, 30]
    assert bird["polarization"][-1] == pytest.approx(sim.metrics()["bird"]["polarization"])
    assert bird["count"][0] == 100


def test_a_growing_population_widens_the_arrays_and_an_edit_is_an_event(tmp_path):
    sim = starling.load_scenario("flock", seed=2, overrides=["n=20"], record_debug=False)
    with Recorder(sim, tmp_path / "g.zarr", every=1) as recorder:
        sim.step(3)
        sim.set("species.bird.count=90")  # past the first capacity (20 × 1.25 → 25)
        sim.step(3)
        assert recorder.frames == 7
    rec = open_recording(tmp_path / "g.zarr")
    counts = rec.array("bird", "alive").sum(axis=1)
    assert list(counts) == [20, 20, 20, 20, 90, 90, 90]
    np.testing.assert_array_equal(rec.frame(-1)["bird"].uid, sim.population("bird").uid)
    edits = [e for e in rec.events if e["kind"] == "edit"]
    assert len(edits) == 1 and edits[0]["step"] == 3
    assert edits[0]["detail"]["changes"] == {"species.bird.count": [20, 90]}


def test_deaths_with_their_cause_and_player_shots_are_events(tmp_path):
    from starling.ecology import ecology_of

    sim = starling.load_scenario("lagoon", seed=3, record_debug=False)
    with Recorder(sim, tmp_path / "d.zarr", every=2) as _:
        fish = sim.population("fish")
        victims = [int(u) for u in fish.uid[:2]]
        where = fish.position[:2].copy()
        ecology_of(sim).kill("fish", victims, cause="test")
        sim.step(1)
        sim.fire(np.array([0.0, 3.0, 0.0]), np.array([1.0, 0.0, 0.0]))
        sim.step(4)
    rec = open_recording(tmp_path / "d.zarr")
    deaths = {e["uid"]: e for e in rec.events if e["kind"] == "death" and e["detail"]["cause"] == "test"}
    assert set(deaths) == set(victims)
    for uid, position in zip(victims, where):
        assert deaths[uid]["species"] == "fish" and deaths[uid]["step"] == 0
        # where it died: at the end of step 0, one step's swim from where it was asked to die
        np.testing.assert_allclose(deaths[uid]["position"], position, atol=0.2)
    assert [e["kind"] for e in rec.events].count("fire") == 1
    assert not any(e["kind"] in ("spawn", "death") and e["species"] not in rec.species for e in rec.events)
    alive = rec.array("fish", "uid")
    assert not np.isin(victims, alive[-1]).any() and np.isin(victims, alive[0]).all()
    assert rec.state_names("fish") == ["normal", "alone", "afraid"]
    assert (rec.frame(-1)["fish"].state >= 0).all() and (rec.frame(-1)["shark"].state >= 0).all()
    assert rec.counters["fish"]["deaths"][-1] >= 2


def test_track_follows_one_animal_by_uid(tmp_path):
    sim = starling.load_scenario("flock", seed=5, overrides=["n=50"], record_debug=False)
    uid = int(sim.population("bird").uid[7])
    positions = []
    sim.observe(lambda v: positions.append(v.population("bird").position[v.population("bird").uid == uid][0].copy()))
    record(sim, tmp_path / "t.zarr", 12, every=1)
    track = open_recording(tmp_path / "t.zarr").track("bird", uid)
    assert track.columns == ["step", "time", "x", "y", "z", "vx", "vy", "vz", "speed", "state"]
    assert track["step"].to_list() == list(range(13))
    np.testing.assert_allclose(track.select("x", "y", "z").to_numpy()[1:], np.array(positions), atol=1e-6)


def test_entries_after_an_edit_carry_the_running_step():
    sim = starling.load_scenario("flock", seed=2, overrides=["n=20"], record_debug=False)
    sim.step(5)
    sim.set("species.bird.count=25")
    sim.step(5)
    sim.set("species.bird.count=30")
    entries, _, _ = sim.world.journal.since(0)
    assert [(e["kind"], e["step"]) for e in entries] == [("edit", 5), ("edit", 10)]


def test_the_journal_is_bounded_and_says_what_a_slow_reader_lost():
    clock = Clock(0.1)
    journal = Journal(clock, maxlen=3)
    for i in range(5):
        journal.log("spawn", "bird", i, (i, 0, 0))
    entries, nxt, lost = journal.since(0)
    assert [e["uid"] for e in entries] == [2, 3, 4] and nxt == 5 and lost == 2
    assert journal.since(5) == ([], 5, 0)


# ---------------------------------------------------------------- killed writers

def _start(args, tmp_path):
    env = {**os.environ, "PYTHONPATH": SRC, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "starling", "run", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_committed_blocks(path: Path, blocks: int, proc, timeout: float = 240.0) -> None:
    """Until ``blocks`` chunks of frames/step exist (what the writer commits last)."""
    chunks = path / "frames" / "step" / "c"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if chunks.is_dir() and len(list(chunks.iterdir())) >= blocks:
            return
        if proc.poll() is not None:
            raise AssertionError(f"the run ended early: {proc.stderr.read().decode()}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("no block was written in time")


@pytest.mark.slow
def test_a_writer_killed_with_sigkill_leaves_every_complete_block_readable(tmp_path):
    path = tmp_path / "killed.zarr"
    proc = _start(["flock", "--steps", "1000000", "--set", "n=300", "--record", str(path), "--every", "1",
                   "--precision", "float16"], tmp_path)
    try:
        _wait_for_committed_blocks(path, 3, proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    rec = open_recording(path)
    assert not rec.complete
    assert rec.n_frames >= 3 * rec.block and rec.n_frames % rec.block == 0
    assert list(rec.steps) == list(range(rec.n_frames))
    for i in (0, rec.n_frames // 2, rec.n_frames - 1):
        assert rec.frame(i)["bird"].n == 300
    assert np.isfinite(rec.array("bird", "position")).all()
    assert rec.metrics["bird"]["step"].max() <= rec.steps[-1]


@pytest.mark.slow
def test_ctrl_c_ends_a_recording_cleanly(tmp_path):
    path = tmp_path / "stopped.zarr"
    proc = _start(["flock", "--steps", "1000000", "--set", "n=300", "--record", str(path)], tmp_path)
    try:
        _wait_for_committed_blocks(path, 1, proc)
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr.decode()
    assert "interrupted at step" in stderr.decode() and "Traceback" not in stderr.decode()
    # every frame up to the interruption is in the file, the part block included (written on the
    # way out; when Ctrl-C lands right after a whole block there is no part block to write)
    said = re.search(r"interrupted at step (\d+):.*?holds\s+(\d+)\s+frames", stderr.decode(), re.S)  # wrapped anywhere
    assert said, stderr.decode()
    step, frames = int(said.group(1)), int(said.group(2))
    rec = open_recording(path)
    assert rec.complete and rec.n_frames == frames == step + 1 and rec.steps[-1] == step
    assert rec.header["end_step"] == rec.steps[-1]


# ---------------------------------------------------------------- what is not a recording

@pytest.fixture(scope="module")
def small_recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "small.zarr"
    sim = starling.load_scenario("flock", seed=1, overrides=["n=30"], record_debug=False)
    record(sim, path, 10)
    return path


def _bad_inputs(tmp_path, small_recording):
    import shutil

    import h5py
    import zarr

    empty_file = tmp_path / "empty.zarr"
    empty_file.write_bytes(b"")
    empty_dir = tmp_path / "emptydir.zarr"
    empty_dir.mkdir()
    hdf5 = tmp_path / "data.h5"
    with h5py.File(hdf5, "w") as f:
        f["x"] = np.arange(10)
    foreign = tmp_path / "foreign.zarr"
    zarr.create_array(str(foreign), shape=(4,), dtype="int32")
    cut = tmp_path / "cut.zarr"
    shutil.copytree(small_recording, cut)
    meta = cut / "zarr.json"
    meta.write_text(meta.read_text()[:200])
    missing_array = tmp_path / "missing.zarr"
    shutil.copytree(small_recording, missing_array)
    shutil.rmtree(missing_array / "pop" / "bird" / "velocity")
    return {
        "missing": (tmp_path / "nowhere.zarr", "no such file or directory"),
        "empty file": (empty_file, "an empty file"),
        "empty directory": (empty_dir, "an empty directory"),
        "hdf5": (hdf5, "an HDF5 file"),
        "foreign zarr": (foreign, "not a Starling recording"),
        "cut metadata": (cut, "damaged"),
        "missing array": (missing_array, "pop/bird/velocity"),
    }


def test_what_is_not_a_recording_gets_one_clear_error(tmp_path, small_recording):
    for case, (path, reason) in _bad_inputs(tmp_path, small_recording).items():
        with pytest.raises(RecordingError) as info:
            open_recording(path)
        message = str(info.value)
        assert str(path) in message and reason in message, (case, message)


def test_a_damaged_chunk_is_named_when_it_is_read(tmp_path, small_recording):
    import shutil

    path = tmp_path / "chunk.zarr"
    shutil.copytree(small_recording, path)
    chunk = next((path / "pop" / "bird" / "position" / "c").rglob("*"))
    while chunk.is_dir():
        chunk = next(chunk.iterdir())
    chunk.write_bytes(chunk.read_bytes()[:10])
    rec = open_recording(path)
    with pytest.raises(RecordingError, match="damaged chunk in pop/bird/position"):
        rec.frame(0)


def test_run_record_refuses_an_existing_path_and_a_bad_precision(tmp_path, small_recording):
    from typer.testing import CliRunner

    from starling.cli import app

    result = CliRunner().invoke(app, ["run", "flock", "--steps", "2", "--record", str(small_recording)])
    assert result.exit_code == 2 and "already exists" in result.output
    result = CliRunner().invoke(app, ["run", "flock", "--steps", "2", "--record", str(tmp_path / "x.zarr"),
                                      "--precision", "float8"])
    assert result.exit_code == 2 and "--precision" in result.output
    result = CliRunner().invoke(app, ["run", "flock", "--steps", "3", "--set", "n=20", "--json",
                                      "--record", str(tmp_path / "y.zarr"), "--every", "2"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout.strip().splitlines()[-1])
    assert data["recording"] == {"path": str(tmp_path / "y.zarr"), "frames": 2, "every": 2, "precision": "float32"}


def test_bench_record_reports_the_overhead_and_the_bytes_per_animal():
    from typer.testing import CliRunner

    from starling.cli import app

    result = CliRunner().invoke(app, ["bench", "--scenario", "flock", "--record", "float16", "--steps", "8",
                                      "--set", "n=100", "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout.strip().splitlines()[-1])
    assert r["animals"] == {"bird": 100} and r["precision"] == "float16" and r["rounds"] == 3
    assert r["recorded_step_ms"] > 0 and r["step_ms"] > 0
    assert r["overhead"] == pytest.approx(r["recorded_step_ms"] / r["step_ms"] - 1, rel=1e-3, abs=1e-3)
    # positions and velocities at 2 bytes, an orientation, a uid, a state: compressed, well under 32 B
    assert 2 < r["bytes_per_animal_frame"] < 32
    result = CliRunner().invoke(app, ["bench", "--record", "float16"])
    assert result.exit_code == 2 and "--scenario" in result.output
