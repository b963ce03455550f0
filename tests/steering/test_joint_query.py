"""Species that flock together share one neighbour query a step (steering.pipeline.JointQuery):
linked only where every species asks it, and row for row the table each would have found alone."""
import copy

import numpy as np
import pytest

import starling
from starling.config import validate_scenario

SPAWN = {"center": [0, 5, 0], "size": [12, 6, 12]}


def flock(targets=("west", "east"), k=4, fov=300.0):
    return {"label": "flock", "query": {"targets": list(targets), "max_distance": 6, "k": k, "fov_deg": fov},
            "behaviors": [{"kind": "cohesion"}, {"kind": "separation"}, {"kind": "alignment"}]}


def species(name, count, groups):
    return {"name": name, "count": count, "mover": {"kind": "free", "max_speed": 4}, "spawn": SPAWN,
            "groups": groups, "behaviors": [{"kind": "wandering"}]}


def scene(*species_list, seed=5):
    return {"name": "joint", "seed": seed, "species": list(species_list)}


def _sim(data):
    return starling.Simulation(validate_scenario(data), record_debug=False)


def _groups(sim):
    return {(p.name, g.label): g for p in sim.pipelines for g in p.groups}


def test_groups_are_linked_only_where_every_target_species_asks_the_same_query():
    sim = _sim(scene(species("west", 30, [flock()]), species("east", 20, [flock()])))
    g = _groups(sim)
    assert g["west", "flock"].joint is not None and g["west", "flock"].joint is g["east", "flock"].joint
    # east asks another k: each asks alone
    sim = _sim(scene(species("west", 30, [flock()]), species("east", 20, [flock(k=5)])))
    assert all(group.joint is None for group in _groups(sim).values())
    # only west asks about both
    sim = _sim(scene(species("west", 30, [flock()]), species("east", 20, [flock(targets=["east"])])))
    assert all(group.joint is None for group in _groups(sim).values())
    # a third species among the targets that does not ask
    sim = _sim(scene(species("west", 30, [flock(("west", "east", "crow"))]),
                     species("east", 20, [flock(("west", "east", "crow"))]), species("crow", 5, [])))
    assert all(group.joint is None for group in _groups(sim).values())


@pytest.mark.parametrize("order", [("west", "east"), ("east", "west")])
def test_a_joint_query_finds_each_species_the_table_and_desires_it_finds_alone(order):
    # the species list in one order, the targets in another: each species' rows start where its
    # animals start among the targets, not where the species is listed
    counts = {"west": 37, "east": 23}
    data = scene(*(species(name, counts[name], [flock()]) for name in order))
    sim = _sim(data)
    sim.step(20)
    alone = copy.deepcopy(sim)
    for group in _groups(alone).values():
        group.joint = None
    assert all(group.joint is not None for group in _groups(sim).values())
    t, dt = sim.world.clock.time, sim.world.clock.dt
    for s in (sim, alone):
        shared = {}
        for pipeline in s.pipelines:
            pipeline.compute(s.world, t, dt, record=True, gathered=shared)
    for key, group in _groups(sim).items():
        other = _groups(alone)[key]
        n = sim.population(key[0]).n
        # the group's table reads like a whole one (the inspector and the bench read n, k, rows)
        assert (group.neighbors.n, len(group.neighbors), group.neighbors.k) == (n, n, group.query.k)
        np.testing.assert_array_equal(group.neighbors.count[:n], other.neighbors.count[:n])
        assert group.neighbors.count[:n].sum() > 0
        for r in range(n):
            c = group.neighbors.count[r]
            np.testing.assert_array_equal(group.neighbors.index[r, :c], other.neighbors.index[r, :c])
            np.testing.assert_array_equal(group.neighbors.distance[r, :c], other.neighbors.distance[r, :c])
    for p, q in zip(sim.pipelines, alone.pipelines):
        n = sim.population(p.name).n
        np.testing.assert_array_equal(p.desired[:n], q.desired[:n])
    # and stepping on: the same trajectories
    sim.step(30)
    alone.step(30)
    for name in counts:
        np.testing.assert_array_equal(sim.population(name).position, alone.population(name).position)


def test_the_inspector_reads_a_joint_groups_own_rows():
    sim = starling.Simulation(validate_scenario(scene(species("west", 30, [flock()]), species("east", 20, [flock()]))),
                              record_debug=True)
    sim.step(5)
    east = next(p for p in sim.pipelines if p.name == "east")
    uid = int(sim.population("east").uid[3])
    row = east.inspect_row(sim.world, uid)
    group = _groups(sim)["east", "flock"]
    assert row["row"] == 3 and len(row["neighbors"]) == int(group.neighbors.count[3])
    assert all(nb["uid"] != uid for nb in row["neighbors"])
