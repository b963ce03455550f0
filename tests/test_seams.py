"""The engine's seams: snapshot/restore, pickling, live reconfiguration, observers."""
import copy
import pickle
import subprocess
import sys

import numpy as np
import pytest

import starling
from starling.config import ConfigError


def _state_equal(a, b) -> list:
    """Every array and component of every population, bit for bit (names of what differs)."""
    bad = []
    assert set(a.world.populations) == set(b.world.populations)
    for name, pa in a.world.populations.items():
        pb = b.world.populations[name]
        if pa.n != pb.n:
            bad.append(f"{name}.n")
            continue
        for f in ("position", "velocity", "forward", "up", "uid", "tags"):
            if not np.array_equal(getattr(pa, f), getattr(pb, f)):
                bad.append(f"{name}.{f}")
        for c in pa.component_names:
            if not np.array_equal(pa.component(c), pb.component(c), equal_nan=True):
                bad.append(f"{name}.{c}")
    return bad


@pytest.mark.parametrize("name", ["flock", "pond", "pasture", "lagoon", "classroom", "savannah", "meadow", "reef"])
def test_snapshot_restore_continue_is_bit_identical(name):
    sim = starling.load_scenario(name, seed=4, record_debug=False)
    sim.step(25)
    if name == "lagoon":  # pending structural changes and events are part of the state too
        sim.fire([0.0, 3.0, 0.0], [0.0, -1.0, 0.2])
    twin = starling.Simulation.restore(sim.snapshot())
    sim.step(40)
    twin.step(40)
    assert _state_equal(sim, twin) == []
    assert sim.species_summary(sim.species[0]) == twin.species_summary(twin.species[0])
    assert twin.step_count == sim.step_count and twin.time == sim.time


def test_a_snapshot_is_plain_data_and_does_not_follow_the_run():
    sim = starling.load_scenario("flock", seed=1)
    snap = sim.snapshot()
    before = snap["world"]["populations"]["bird"]["arrays"]["position"].copy()
    sim.step(5)
    assert np.array_equal(snap["world"]["populations"]["bird"]["arrays"]["position"], before)

    def plain(x):
        if isinstance(x, dict):
            return all(isinstance(k, str) and plain(v) for k, v in x.items())
        if isinstance(x, (list, tuple)):
            return all(plain(v) for v in x)
        return isinstance(x, (str, int, float, bool, type(None), np.ndarray, np.integer, np.floating))

    assert plain(snap)
    with pytest.raises(ValueError, match="not a Starling snapshot"):
        starling.Simulation.restore({"format": "something else"})


CHILD = """
import pickle, sys, numpy as np
sim = pickle.loads(open(sys.argv[1], "rb").read())
sim.step(30)
pop = sim.population("fish")
np.savez(sys.argv[2], position=pop.position, velocity=pop.velocity, uid=pop.uid)
"""


def test_a_pickled_simulation_steps_in_another_process_like_here(tmp_path):
    sim = starling.load_scenario("pond", seed=2, record_debug=False)
    sim.step(10)
    (tmp_path / "sim.pkl").write_bytes(pickle.dumps(sim))
    out = tmp_path / "there.npz"
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "sim.pkl"), str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    sim.step(30)
    there = np.load(out)
    pop = sim.population("fish")
    assert np.array_equal(there["position"], pop.position)
    assert np.array_equal(there["velocity"], pop.velocity)
    assert np.array_equal(there["uid"], pop.uid)


def test_a_scenario_config_pickles():
    cfg = starling.load_scenario_config("lagoon")
    assert pickle.loads(pickle.dumps(cfg)) == cfg


# ---------------------------------------------------------------------------- reconfiguration

def _flock(seed=1):
    sim = starling.load_scenario("flock", seed=seed, overrides=["species.bird.count=300"])
    sim.step(10)
    return sim


@pytest.mark.parametrize("path,value,where", [
    ("species.0.count", -1, "species.bird.count"),
    ("species.0.groups.0.behaviors.0.kind", "no_such_behaviour", "species.bird.groups.0.behaviors.0.kind"),
    ("species.0.groups.0.behaviors.0.weight_direction", "heavy", "weight_direction"),
    ("species.0.groups.0.query.targets", ["nobody"], "species.bird.groups.0.query.targets.0"),
    ("species.0.mover.max_speed", -3.0, "species.bird.mover"),
])
def test_a_failing_edit_changes_nothing_and_names_the_path(path, value, where):
    sim = _flock()
    twin = _flock()
    before = pickle.dumps(sim.snapshot())
    data = sim.config_data()
    node = data
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[int(key)] if key.isdigit() else node[key]
    node[keys[-1]] = value
    with pytest.raises(ConfigError) as info:
        sim.reconfigure(data)
    assert where in str(info.value)
    assert pickle.dumps(sim.snapshot()) == before
    sim.step(20)
    twin.step(20)
    assert _state_equal(sim, twin) == []


def test_count_changes_keep_the_animals_that_remain():
    sim = _flock()
    pop = sim.population("bird")
    uids, pos, vel = pop.uid.copy(), pop.position.copy(), pop.velocity.copy()
    sim.set("species.bird.count=350")
    assert pop.n == 350  # the held Population object sees the new state
    assert np.array_equal(pop.uid[:300], uids) and np.array_equal(pop.position[:300], pos)
    assert np.array_equal(pop.velocity[:300], vel)
    assert len(np.unique(pop.uid)) == 350 and pop.uid[300:].min() > uids.max()
    sim.set("species.bird.count=120")
    assert np.array_equal(np.sort(pop.uid), np.sort(uids)[:120])  # the newest leave first
    sim.step(5)
    assert sim.health()["nan"] == 0


def test_species_behaviours_queries_and_movers_change_live():
    sim = _flock()
    data = sim.config_data()
    data["species"][0]["groups"][0]["behaviors"].append({"kind": "separation", "label": "extra"})
    data["species"][0]["groups"][0]["query"]["k"] = 3
    data["species"][0]["mover"]["max_speed"] = 4.0
    data["species"][0]["merger"] = {"kind": "weighted_mean"}  # (max_desire belongs to priority_desire alone)
    data["species"].append({"name": "hawk", "count": 4, "spawn": {"center": [0, 40, 0], "size": [5, 5, 5]}})
    sim.reconfigure(data)
    assert sim.species == ["bird", "hawk"] and sim.population("hawk").n == 4
    assert sim.pipelines[0].groups[0].query.k == 3
    assert [s.name for s in sim.pipelines[0].groups[0].behaviors][-1] == "extra"
    assert sim.pipelines[0].merger.kind == "weighted_mean"
    sim.step(30)
    assert np.linalg.norm(sim.population("bird").velocity, axis=1).max() <= 4.0 + 1e-4
    data["species"].pop(1)
    sim.reconfigure(data)
    assert "hawk" not in sim.world.populations


def test_observers_see_every_kth_step_read_only_and_survive_reconfiguration():
    sim = _flock()
    seen = []

    def watch(view):
        seen.append((view.step, float(view.population("bird").position[0, 0])))
        with pytest.raises(ValueError):
            view.population("bird").position[0, 0] = 1.0

    obs = sim.observe(watch, every=3)
    sim.step(7)
    assert [s for s, _ in seen] == [12, 15]
    sim.set("species.bird.count=310")
    sim.step(3)
    assert [s for s, _ in seen] == [12, 15, 18]
    obs.close()
    sim.step(3)
    assert len(seen) == 3
    with pytest.raises(ValueError):
        sim.observe(watch, every=0)


def test_two_seeds_give_different_animals_and_the_same_seed_the_same():
    a, b, c = (starling.load_scenario("flock", seed=s, overrides=["species.bird.count=200"]) for s in (1, 2, 1))
    for s in (a, b, c):
        s.step(30)
    assert not np.array_equal(a.population("bird").position, b.population("bird").position)
    assert np.array_equal(a.population("bird").position, c.population("bird").position)


def test_the_environment_world_and_time_step_change_live():
    sim = starling.load_scenario("pasture", seed=2, record_debug=False)
    sim.step(30)
    sheep = sim.population("sheep")
    t = sim.time
    data = sim.config_data()
    data["dt"] = data["dt"] / 2
    data["world"]["bounds_max"][1] = data["world"]["bounds_max"][1] + 10.0
    env = data["environment"]
    before = sim.environment
    far = np.array([[1000.0, 0.0, 1000.0]], np.float32)
    assert not before.is_inside_solid(far, 0.1)[0]
    env.setdefault("shapes", []).append({"kind": "box", "center": [1000.0, 0.0, 1000.0], "half_extents": [1, 1, 1]})
    sim.reconfigure(data)
    assert sim.environment is not before and sim.environment.is_inside_solid(far, 0.1)[0]  # the new box is there
    assert sim.dt == pytest.approx(data["dt"]) and sim.time == pytest.approx(t)
    sim.step(10)
    assert sim.time == pytest.approx(t + 10 * data["dt"])
    assert sim.world.bounds_max[1] == pytest.approx(data["world"]["bounds_max"][1])
    assert sheep.n == sim.population("sheep").n and sim.health()["nan"] == 0
    unchanged = sim.environment
    sim.set("species.sheep.mover.max_speed=2.5")
    assert sim.environment is unchanged  # static geometry is kept when its section did not change


def test_reordering_species_keeps_each_species_on_its_own_random_streams():
    sim = starling.load_scenario("lagoon", seed=5, record_debug=False)
    sim.step(20)
    data = sim.config_data()
    swapped = copy.deepcopy(data)
    swapped["species"].reverse()
    twin = starling.Simulation.restore(sim.snapshot())
    sim.reconfigure(swapped)
    sim.set("species.fish.count=230")  # newcomers draw from the fish's own streams, wherever the fish stand
    twin.set("species.fish.count=230")
    assert np.array_equal(sim.population("fish").position, twin.population("fish").position)
    assert np.array_equal(sim.population("fish").uid, twin.population("fish").uid)
