"""A simulation steps exactly the same whether its self-queries answer from neighbour lists or not.

The lists (``steering/queries/verlet.py``) must leave every trajectory bit for bit as the grid
alone gives it: through rebuilds, the cell reordering of big populations (which the lists
follow instead of rebuilding), and an all-in-radius school.
"""
from __future__ import annotations

import numpy as np
import pytest

import starling.steering.queries.neighbors as neighbors
from starling.bench import bench_scenario
from starling.config import load_scenario_config, validate_scenario
from starling.simulation import REORDER_EVERY, REORDER_MIN_ANIMALS, Simulation
from starling.steering.queries import verlet


def _run(cfg, steps, lists: bool, monkeypatch):
    monkeypatch.setattr(neighbors, "NEIGHBOR_LISTS", lists)
    sim = Simulation(cfg, record_debug=False)
    sim.step(steps)
    return sim


@pytest.mark.parametrize("scene, steps", [("bench", 2 * REORDER_EVERY + 3), ("fish_tank", 60)])
def test_lists_change_no_trajectory(scene, steps, monkeypatch):
    monkeypatch.setattr(verlet, "FIRST_GRID_CALLS", 0)  # lists from the first call, whatever they cost
    if scene == "bench":
        cfg = validate_scenario(bench_scenario(REORDER_MIN_ANIMALS + 1000))
    else:
        cfg = load_scenario_config(scene)
    with_lists = _run(cfg, steps, True, monkeypatch)
    grid_alone = _run(cfg, steps, False, monkeypatch)
    for name in with_lists.species:
        a, b = with_lists.population(name), grid_alone.population(name)
        for field in ("position", "velocity", "forward", "up", "uid"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=f"{scene} {name} {field}")
    group = with_lists.pipelines[0].groups[0]
    lists = group.neighbors.lists
    assert lists is not None and lists.grid_calls == 0 and lists.calls == steps
    assert lists.rebuilds < steps // 3  # kept over steps (and through the reorderings, for the bench)
    assert grid_alone.pipelines[0].groups[0].neighbors.lists is None


def test_the_reordering_is_followed_not_rebuilt(monkeypatch):
    monkeypatch.setattr(verlet, "FIRST_GRID_CALLS", 0)
    monkeypatch.setattr(neighbors, "NEIGHBOR_LISTS", True)
    sim = Simulation(validate_scenario(bench_scenario(REORDER_MIN_ANIMALS + 1000)), record_debug=False)
    sim.step(REORDER_EVERY)  # the next reordering ends step REORDER_EVERY + 1
    lists = sim.pipelines[0].groups[0].neighbors.lists
    lists.built[: lists.n] = sim.population("boid").position  # as if just built: the skin is whole again
    before = lists.rebuilds
    sim.step(2)  # the reordering happens at the end of the first of these
    assert lists.rebuilds == before
