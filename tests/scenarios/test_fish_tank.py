"""The fish_tank scenario (seed 002): a healthy school that never leaves its tank, whatever the query."""
import numpy as np
import pytest

import starling


def _tank(sim):
    mover = sim.scenario.species[0].mover
    return np.asarray(mover.bounds_min, np.float32), np.asarray(mover.bounds_max, np.float32)


def test_it_is_a_built_in_scenario_whose_tank_is_the_world():
    assert "fish_tank" in starling.scenario_names()
    sim = starling.load_scenario("fish_tank", record_debug=False)
    lo, hi = _tank(sim)
    np.testing.assert_array_equal(lo, sim.scenario.world.bounds_min)
    np.testing.assert_array_equal(hi, sim.scenario.world.bounds_max)
    sp = sim.scenario.species[0]
    assert (sp.mover.kind, sp.merger.kind) == ("reversal", "acceleration_sum")
    assert [b.kind for b in sp.groups[0].behaviors] == ["school_cohesion", "school_separation", "school_alignment"]
    # the query reaches every behaviour's radius
    assert max(b.max_distance for b in sp.groups[0].behaviors) <= sp.groups[0].query.max_distance


def test_two_thousand_steps_stay_healthy_and_inside_the_tank():
    sim = starling.load_scenario("fish_tank", record_debug=False)
    pop = sim.population("fish")
    lo, hi = _tank(sim)
    group = sim.pipelines[0].groups[0]
    start_y = pop.position[:pop.n, 1].copy()
    max_speed = sim.scenario.species[0].mover.max_speed
    most = 0
    for step in range(2000):
        sim.step()
        p = pop.position[:pop.n]
        inside = (p >= lo).all(axis=1) & (p <= hi).all(axis=1)
        assert inside.all(), (step, np.flatnonzero(~inside)[:5])
        if step % 50 == 0:
            assert sim.health() == {k: 0 for k in sim.health()}
            # every fish within the radius is seen (seed 002 averages all of them): no row cut at k
            assert int(group.neighbors.overflow.max()) == 0
            most = max(most, int(group.neighbors.count.max()))
            assert np.linalg.norm(pop.velocity[:pop.n], axis=1).max() <= max_speed * (1 + 1e-6)
    assert all(v == 0 for v in sim.health().values()), sim.health()
    assert pop.n == 1000
    assert most > 10  # the fish do school
    # no vertical acceleration (the seed's Z clamp on Starling's y) and a horizontal start: depths never change
    assert np.abs(pop.velocity[:pop.n, 1]).max() == 0.0
    np.testing.assert_array_equal(pop.position[:pop.n, 1], start_y)


def test_grid_brute_force_and_all_pairs_queries_give_the_same_trajectory():
    # 300 fish: 90,000 pairs, above the all-pairs shortcut of the grid method, so the grid is built
    def run(method):
        sim = starling.load_scenario("fish_tank", seed=5, record_debug=False, overrides=(
            "species.fish.count=300", f"species.fish.groups.0.query.method={method}"))
        assert sim.scenario.species[0].groups[0].query.method == method
        sim.step(150)
        pop = sim.population("fish")
        return pop.position[:pop.n].copy(), pop.velocity[:pop.n].copy()

    pg, vg = run("grid")
    for method in ("brute", "all_pairs"):
        pb, vb = run(method)
        np.testing.assert_array_equal(pg, pb, err_msg=method)
        np.testing.assert_array_equal(vg, vb, err_msg=method)


def test_the_school_stays_healthy_with_vertical_motion_allowed():
    sim = starling.load_scenario("fish_tank", seed=3, record_debug=False, overrides=(
        "species.fish.count=200", "species.fish.mover.lock_vertical=false", "species.fish.spawn.planar=false"))
    pop = sim.population("fish")
    lo, hi = _tank(sim)
    for _ in range(10):
        sim.step(30)
        p = pop.position[:pop.n]
        assert ((p >= lo) & (p <= hi)).all()
    assert all(v == 0 for v in sim.health().values())
    assert np.abs(pop.velocity[:pop.n, 1]).max() > 0.0
