"""The GPU backend steps a simulation as the CPU does (run here on Numba's CUDA simulator)."""
import importlib.util
import json
import sys
import warnings
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from numba import prange
from typer.testing import CliRunner

import starling
from starling.cli import app
from starling.config import validate_scenario
from starling.simulation import Simulation
from starling.steering import registry
from starling.steering.results import emit

runner = CliRunner()
MOVING = ("position", "velocity", "forward", "up")


def calm_flock(count: int = 40, seed: int = 3, backend: str = "cpu") -> dict:
    """A small wrapping flock with the thesis' three neighbour behaviours and the 3D mover."""
    return {"name": "calm", "seed": seed, "dt": 1 / 30, "backend": backend,
            "world": {"bounds_min": [0, 0, 0], "bounds_max": [40, 40, 40], "wrap": True},
            "species": [{"name": "bird", "count": count,
                         "spawn": {"shape": "box", "center": [20, 20, 20], "size": [12, 12, 12], "speed": [4.0, 4.5],
                                   "direction": [1, 0, 0], "direction_spread_deg": 15},
                         "mover": {"kind": "free", "max_speed": 6.0},
                         "groups": [{"query": {"max_distance": 6.0, "k": 5, "fov_deg": 270}, "behaviors": [
                             {"kind": "cohesion", "priority": 0, "weight_direction": 0.4},
                             {"kind": "alignment", "priority": 0, "weight_direction": 0.5, "weight_speed": 0.3},
                             {"kind": "separation", "priority": 1, "weight_direction": 0.6}]}]}]}


def both(cfg: dict):
    cpu = Simulation(validate_scenario({**cfg, "backend": "cpu"}))
    gpu = Simulation(validate_scenario({**cfg, "backend": "cuda"}))
    assert gpu.backend == "cuda", gpu.backend_note
    return cpu, gpu


def gap(a, b, field="position") -> float:
    return max(float(np.max(np.abs(getattr(a.population(s), field) - getattr(b.population(s), field)), initial=0.0))
               for s in a.species)


def test_every_gpu_step_equals_the_cpu_step_from_the_same_state_for_100_steps():
    cpu, gpu = both(calm_flock(count=32))
    for step in range(100):
        for name in cpu.species:  # the GPU starts each step from the CPU's state
            for f in MOVING:
                getattr(gpu.population(name), f)[:] = getattr(cpu.population(name), f)
        gpu.device.upload()
        cpu.step()
        gpu.step()
        for f in MOVING:  # float32 rounding of quantities of order 10 m, 5 m/s, 1
            assert gap(cpu, gpu, f) < 2e-5, (step, f)


def test_free_running_trajectories_part_no_faster_than_a_one_ulp_nudge_on_the_cpu():
    # flocking is chaotic: any difference of one float32 rounding grows at the model's own rate, so
    # "within float32 tolerance" is measured against two CPU runs that start one ulp apart
    cpu, gpu = both(calm_flock())
    nudged = Simulation(validate_scenario(calm_flock()))
    pos = nudged.population("bird").position
    pos[:] = np.nextafter(pos, np.float32(np.inf))
    for step in range(1, 101):
        for sim in (cpu, gpu, nudged):
            sim.step()
        if step == 10:
            assert gap(cpu, gpu) < 1e-4 and gap(cpu, nudged) < 1e-4
    assert gap(cpu, gpu) < 10 * gap(cpu, nudged) + 1e-4
    assert gpu.health()["nan"] == 0


@pytest.mark.parametrize("name, overrides", [
    ("vicsek", ["n=40", "eta=2.5"]),  # the noise comes from the kernel random stream on both
    ("couzin", ["n=24"]),
    ("fish_tank", ["species.fish.count=30"]),  # seed 002's acceleration sum and reversal mover
])
def test_the_literature_models_and_the_fish_tank_run_the_same_on_both_backends(name, overrides):
    cpu = starling.load_scenario(name, overrides=overrides)
    gpu = starling.load_scenario(name, overrides=[*overrides, "backend=cuda"])
    assert gpu.backend == "cuda"
    for _ in range(15):
        cpu.step()
        gpu.step()
    assert gap(cpu, gpu) < 1e-4 and gap(cpu, gpu, "velocity") < 1e-4


def test_a_group_can_watch_another_species_even_an_empty_one():
    cfg = {"name": "watch", "seed": 1, "dt": 1 / 30, "world": {"bounds_min": [0, 0, 0], "bounds_max": [50, 50, 50]},
           "species": [
               {"name": "prey", "count": 20, "spawn": {"shape": "box", "center": [25, 25, 25], "size": [10, 10, 10],
                                                       "speed": [1, 2]},
                "groups": [{"query": {"targets": ["hawk"], "max_distance": 10, "k": 3},
                            "behaviors": [{"kind": "separation", "weight_direction": 0.9}]},
                           {"query": {"max_distance": 5, "k": 4}, "behaviors": [{"kind": "cohesion"}]}]},
               {"name": "hawk", "count": 0, "spawn": {"shape": "box", "center": [25, 25, 25], "size": [10, 10, 10],
                                                      "speed": [1, 2]},
                "groups": [{"query": {"targets": ["prey"], "max_distance": 20, "k": 2},
                            "behaviors": [{"kind": "cohesion"}]}]}]}
    cpu, gpu = both(cfg)
    for _ in range(4):
        cpu.step()
        gpu.step()
    assert gap(cpu, gpu) < 1e-5
    for sim in (cpu, gpu):  # hawks arrive: the prey's grid over them now has animals in it
        sim.set("species.hawk.count=2")
    for _ in range(4):
        cpu.step()
        gpu.step()
    assert gpu.backend == "cuda" and gpu.population("hawk").n == 2
    assert gap(cpu, gpu) < 1e-5


def _extending_example():
    path = Path(__file__).resolve().parents[2] / "docs" / "examples" / "avoid_center.py"
    spec = importlib.util.spec_from_file_location("avoid_center", path)
    module = sys.modules.get("avoid_center")
    if module is None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module


def test_the_tutorials_behaviour_runs_unchanged_on_both_backends():
    _extending_example()  # registers "avoid_zone" (docs/extending.md)
    overrides = ["species.bird.count=30",
                 'species.bird.behaviors.3={kind = "avoid_zone", priority = 6, weight_direction = 1.0, '
                 'center = [0.0, 45.0, -30.0], radius = 14.0}']
    cpu = starling.load_scenario("flock", overrides=overrides)
    gpu = starling.load_scenario("flock", overrides=[*overrides, "backend=cuda"])
    assert gpu.backend == "cuda", gpu.backend_note
    for _ in range(5):
        cpu.step()
        gpu.step()
    assert gap(cpu, gpu) < 1e-4
    # the zone's own results, read back from the device, are the CPU's
    row = next(s.row for s in cpu.pipelines[0].slots if s.spec.name == "avoid_zone")
    n = cpu.population("bird").n
    device_rows = gpu.device.species["bird"].results
    cpu_desire = cpu.pipelines[0].results.direction_desire[row, :n]
    assert cpu_desire.max() > 0  # some birds are in the zone
    np.testing.assert_allclose(device_rows.direction_desire.copy_to_host()[row, :n], cpu_desire, atol=1e-4)


class LateParams(starling.BehaviorParams):
    kind: Literal["test_gpu_late_write"] = "test_gpu_late_write"


def late_write(agents, p, time, dt, out):
    """Writes after its animal loop: fine on the CPU, impossible as one thread per animal."""
    pos = agents.position
    for i in prange(pos.shape[0]):
        emit(out, i, 1.0, 0.0, 0.0, 0.1, 0.0, 0.0)
    emit(out, 0, 0.0, 1.0, 0.0, 0.1, 0.0, 0.0)


@pytest.fixture
def late_writer():
    """Registered for one test only: other tests list every registered behaviour."""
    starling.behavior("test_gpu_late_write", kind="simple", params=LateParams)(late_write)
    yield
    del registry._behaviors["test_gpu_late_write"]


def test_what_the_gpu_cannot_run_is_named_and_the_scene_runs_on_the_cpu(late_writer):
    with pytest.warns(RuntimeWarning, match=r"species\.sheep\.ray_groups: ray casts run on the CPU only"):
        sim = starling.load_scenario("pasture", overrides=["backend=cuda"])
    assert sim.backend == "cpu" and sim.device is None
    assert "environment: the environment system runs on the CPU only" in sim.backend_note
    sim.step(2)
    with pytest.warns(RuntimeWarning) as caught:
        sim = starling.load_scenario("flock", overrides=["backend=cuda", "species.bird.count=20",
                                                         'species.bird.behaviors.3={kind = "test_gpu_late_write"}'])
    assert sim.backend == "cpu"
    assert ("species.bird.behaviors.3: behaviour 'test_gpu_late_write' cannot run on the GPU: it runs code after the "
            "animal loop") in str(caught[0].message)


def test_observers_stops_and_edits_see_the_state_of_the_step_they_follow():
    cfg = calm_flock(count=24, backend="cuda")
    cfg["stop"] = [{"when": "time", "at": 0.2, "outcome": "done"}]
    sim = Simulation(validate_scenario(cfg))
    assert sim.backend == "cuda"
    seen = []
    sim.observe(lambda view: seen.append(view.population("bird").position.copy()))
    sim.step(3)
    device_now = sim.device.species["bird"].arrays["position"].copy_to_host()
    np.testing.assert_array_equal(seen[-1], device_now)  # the observer read the state after step 3
    np.testing.assert_array_equal(sim.population("bird").position, device_now)
    sim.set("species.bird.count=30")  # a live edit rebuilds the device state from the host
    assert sim.backend == "cuda" and sim.population("bird").n == 30
    sim.step(4)
    assert sim.outcome is not None and sim.outcome["outcome"] == "done"
    restored = Simulation.restore(sim.snapshot())
    assert restored.backend == "cuda"
    np.testing.assert_array_equal(restored.population("bird").position, sim.population("bird").position)


def test_steps_without_a_sync_copy_back_only_when_the_state_is_read():
    sim = Simulation(validate_scenario(calm_flock(count=20, backend="cuda")))
    world_pos = sim.world.population("bird").position  # the host array itself, read without sync
    before = world_pos.copy()
    sim.step(2, sync=False)
    np.testing.assert_array_equal(world_pos, before)  # not copied back yet
    device_now = sim.device.species["bird"].arrays["position"].copy_to_host()
    assert not np.array_equal(device_now, before)
    np.testing.assert_array_equal(sim.population("bird").position, device_now)  # reading syncs
    sim.step(1, sync=False)
    assert sim.metrics()["bird"]["count"] == 20  # so do metrics, health, inspect and snapshots
    np.testing.assert_array_equal(world_pos, sim.device.species["bird"].arrays["position"].copy_to_host())


def test_the_cli_runs_on_the_gpu_or_says_why_not(monkeypatch):
    result = runner.invoke(app, ["run", "vicsek", "--steps", "3", "--set", "n=20", "--backend", "cuda", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.strip().splitlines()[-1])["backend"] == "cuda"
    result = runner.invoke(app, ["run", "pasture", "--steps", "1", "--backend", "cuda", "--json"])
    assert result.exit_code == 0
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["backend"] == "cpu" and "ray casts run on the CPU only" in summary["backend_note"]
    result = runner.invoke(app, ["run", "flock", "--backend", "gpu"])
    assert result.exit_code == 2 and "--backend: expected cpu or cuda, got 'gpu'" in result.output

    from starling.cuda import runtime

    monkeypatch.setenv("STARLING_NO_CUDA", "1")
    runtime.unavailable_reason.cache_clear()
    try:
        result = runner.invoke(app, ["bench", "--backend", "cuda", "--sizes", "1000"])
        assert result.exit_code == 2
        assert "--backend cuda: the GPU backend cannot run here: STARLING_NO_CUDA is set" in result.output
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sim = starling.load_scenario("vicsek", overrides=["backend=cuda", "n=10"])
        assert sim.backend == "cpu" and "STARLING_NO_CUDA is set" in sim.backend_note
    finally:
        runtime.unavailable_reason.cache_clear()


def test_bench_reports_the_gpu_step_its_kernels_and_the_copy_back():
    result = runner.invoke(app, ["bench", "--backend", "cuda", "--sizes", "40", "--budget", "0.1", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    from starling.cuda import device_name

    assert report["backend"] == "cuda" and report["device"] == device_name()  # "simulator" here
    r = report["results"][0]
    assert r["n"] == 40 and r["step_ms"]["median"] > 0 and r["download_ms"]["median"] >= 0
    assert {"grid", "query", "pair_geometry", "cohesion", "alignment", "separation", "merger",
            "mover"} <= set(r["profile_ms"])
    assert r["health"]["nan"] == 0
