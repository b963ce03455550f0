"""Whole simulations: reproducibility, snapshot semantics, the flock scenario's invariants."""
import numba
import numpy as np
import pytest

import starling
from starling.config import validate_scenario

TWO_SPECIES = {
    "name": "two",
    "seed": 4,
    "species": [
        {"name": "sheep", "count": 60, "mover": {"kind": "planar", "max_speed": 4},
         "spawn": {"center": [0, 0, 0], "size": [30, 0, 30]},
         "groups": [
             {"query": {"max_distance": 6, "k": 5}, "behaviors": [{"kind": "cohesion"}, {"kind": "separation"}]},
             {"query": {"targets": ["wolf"], "max_distance": 15, "k": 2}, "behaviors": [{"kind": "flee", "priority": 3}]},
         ],
         "behaviors": [{"kind": "wandering"}]},
        {"name": "wolf", "count": 3, "mover": {"kind": "planar", "max_speed": 6},
         "spawn": {"center": [0, 0, 0], "size": [30, 0, 30]},
         "groups": [{"query": {"targets": ["sheep"], "max_distance": 20, "k": 3}, "behaviors": [{"kind": "seek"}]}],
         "behaviors": [{"kind": "wandering"}]},
    ],
}


def run(data, steps=40):
    sim = starling.Simulation(validate_scenario(data))
    sim.step(steps)
    return {name: sim.population(name).position.copy() for name in sim.species}


def test_the_same_seed_gives_the_same_trajectory_and_another_seed_does_not():
    a = run(TWO_SPECIES)
    b = run(TWO_SPECIES)
    c = run({**TWO_SPECIES, "seed": 5})
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    assert not np.allclose(a["sheep"], c["sheep"])


def test_species_order_does_not_change_the_outcome():
    swapped = {**TWO_SPECIES, "species": TWO_SPECIES["species"][::-1]}
    a = run(TWO_SPECIES)
    b = run(swapped)
    # spawn order differs (each species draws from its own generator by index), so compare
    # trajectories started from identical states: swap the per-species seeds by re-seeding
    sim_a = starling.Simulation(validate_scenario(TWO_SPECIES))
    sim_b = starling.Simulation(validate_scenario(swapped))
    for name in sim_a.species:
        pa, pb = sim_a.population(name), sim_b.population(name)
        for arr in ("position", "velocity", "forward", "up", "uid"):
            getattr(pb, arr)[:] = getattr(pa, arr)
    # the kernels' random streams are keyed by species index too (starling.steering.random):
    # give each species the same streams in both runs
    for pipe_a in sim_a.pipelines:
        pipe_b = next(p for p in sim_b.pipelines if p.name == pipe_a.name)
        for slot_a, slot_b in zip(pipe_a.slots, pipe_b.slots, strict=True):
            slot_b.kernel_params = slot_b.kernel_params._replace(key=slot_a.kernel_params.key)
    sim_a.step(30)
    sim_b.step(30)
    for name in sim_a.species:
        np.testing.assert_array_equal(sim_a.population(name).position, sim_b.population(name).position)
    assert a.keys() == b.keys()


def test_the_same_thread_count_reproduces_a_large_parallel_run():
    overrides = ["species.bird.count=21000"]
    runs = []
    for threads in (2, 2, 1):
        numba.set_num_threads(threads)
        sim = starling.load_scenario("flock", overrides=overrides)
        sim.step(3)
        runs.append(sim.population("bird").position.copy())
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    np.testing.assert_array_equal(runs[0], runs[1])
    # every kernel is per-animal independent, so even another thread count agrees
    np.testing.assert_array_equal(runs[0], runs[2])


def test_the_flock_scenario_stays_healthy_and_coheres():
    sim = starling.load_scenario("flock")
    sim.step(300)
    m = sim.metrics()["bird"]
    assert sim.health() == {"nan": 0}
    assert m["count"] == 1000
    birds = sim.population("bird")
    assert np.all(birds.position[:, 1] > 0)  # nobody went underground
    assert 2.0 < m["mean_speed"] <= 7.5 + 1e-3
    assert m["local_polarization"] > 0.8  # neighbours fly in a common heading
    assert 0.5 < m["nn_distance"] < 3.0  # neither collapsed nor dispersed
    # without alignment the same flock is visibly less ordered
    control = starling.load_scenario("flock", overrides=["species.0.groups.0.behaviors.alignment.enabled=false"])
    control.step(300)
    assert control.metrics()["bird"]["local_polarization"] < m["local_polarization"] - 0.2


def test_inspect_reports_behaviours_neighbours_and_the_merged_velocity():
    sim = starling.load_scenario("flock")
    sim.step(20)
    uid = int(sim.population("bird").uid[10])
    info = sim.inspect("bird", uid)
    names = [b["name"] for b in info["behaviors"]]
    assert names[:3] == ["cohesion", "alignment", "separation"] and "wandering" in names
    assert 0 < len(info["neighbors"]) <= 7
    assert all(n["species"] == "bird" and n["uid"] != uid for n in info["neighbors"])
    assert len(info["desired_velocity"]) == 3
    assert sim.inspect("bird", 10**9) is None


def test_predators_and_prey_react_to_each_other():
    sim = starling.Simulation(validate_scenario(TWO_SPECIES))
    sim.step(5)
    sheep = sim.population("sheep")
    info = [sim.inspect("sheep", int(u)) for u in sheep.uid]
    fleeing = [i for i in info if any(b["kind"] == "flee" and b["direction_desire"] > 0 for b in i["behaviors"])]
    assert fleeing, "some sheep within 15 m of a wolf must flee"
    assert np.all(sheep.position[:, 1] == 0)  # planar movers stay on their plane
