"""Queries with ``any_order``: the same neighbours as the sorted table, rows of fewer than k
left unsorted in a deterministic order, full rows sorted; and the groups that ask for it."""
from __future__ import annotations

from dataclasses import replace

import numba
import numpy as np
import pytest

from starling.config import load_scenario_config
from starling.simulation import Simulation
from starling.steering import registry
from starling.parallel import PARALLEL_MIN_ANIMALS  # threads from this many animals, by default
from starling.steering.queries.neighbors import NeighborQuerySpec, Neighbors, find_neighbors
from starling.steering.queries.small import SMALL_MAX_PAIRS


def cloud(rng, n, side, dims):
    position = (rng.random((n, 3)) * side).astype(np.float32)
    forward = rng.normal(size=(n, 3))
    if dims == 2:
        position[:, 1] = 0.5
        forward[:, 1] = 0.0
    forward /= np.maximum(np.linalg.norm(forward, axis=1, keepdims=True), 1e-9)
    return position, forward.astype(np.float32)


def query(position, forward, targets, spec, box, exclude_self, out=None):
    out = find_neighbors(position, forward, targets, spec, exclude_self=exclude_self, box=box, out=out)
    n = position.shape[0]
    return out, (out.index[:n].copy(), out.distance[:n].copy(), out.count[:n].copy(), out.overflow[:n].copy())


def sort_rows(index, distance, count):
    """Each row's valid entries put in (distance, index) order, as a sorted query writes them."""
    index, distance = index.copy(), distance.copy()
    for i, c in enumerate(count):
        order = np.lexsort((index[i, :c], distance[i, :c]))
        index[i, :c] = index[i, :c][order]
        distance[i, :c] = distance[i, :c][order]
    return index, distance


# (n, side, dims): a small query (all pairs) and grid queries, serial and threaded
SIZES = [(120, 8.0, 3), (300, 10.0, 2), (PARALLEL_MIN_ANIMALS + 500, 30.0, 3)]


@pytest.mark.parametrize("n, side, dims", SIZES)
@pytest.mark.parametrize("box", [None, "wrap"])
@pytest.mark.parametrize("fov", [360.0, 270.0])
@pytest.mark.parametrize("k", [4, 64])
def test_the_same_neighbours_as_the_sorted_table_and_full_rows_stay_sorted(n, side, dims, box, fov, k):
    rng = np.random.default_rng(n + k)
    position, forward = cloud(rng, n, side, dims)
    box = [side, 0.0 if dims == 2 else side, side] if box else None
    for early in (False, True):
        sorted_spec = NeighborQuerySpec(max_distance=1.5, k=k, fov_deg=fov, early_stop=early)
        spec = replace(sorted_spec, any_order=True)
        _, want = query(position, forward, position, sorted_spec, box, True)
        out, got = query(position, forward, position, spec, box, True)
        np.testing.assert_array_equal(got[2], want[2])  # counts
        np.testing.assert_array_equal(got[3], want[3])  # overflow
        index, distance = sort_rows(got[0], got[1], got[2])
        np.testing.assert_array_equal(index, want[0])
        np.testing.assert_array_equal(distance, want[1])
        full = got[2] == k
        np.testing.assert_array_equal(got[0][full], want[0][full])  # a full row is sorted as it is
        # real rows of each kind were met: unsorted ones (k = 64), full ones (k = 4)
        assert (((got[2] < k) & (got[2] > 1)) if k == 64 else full).sum() > 10
        # moved a little and asked again with the same table: last call's rows seed the next
        moved = (position + rng.normal(scale=0.05, size=position.shape).astype(np.float32))
        _, want = query(moved, forward, moved, sorted_spec, box, True)
        _, got = query(moved, forward, moved, spec, box, True, out=out)
        np.testing.assert_array_equal(sort_rows(got[0], got[1], got[2])[0], want[0])
        np.testing.assert_array_equal(got[2], want[2])


@pytest.mark.parametrize("n, side, dims", SIZES[:2])
def test_rows_of_fewer_than_k_are_left_unsorted(n, side, dims):
    """The ranking is really skipped: many rows differ from the sorted table, and on the small path
    every unsorted row is in target index order."""
    rng = np.random.default_rng(3)
    position, forward = cloud(rng, n, side, dims)
    spec = NeighborQuerySpec(max_distance=1.5, k=64, any_order=True)
    _, got = query(position, forward, position, spec, None, True)
    _, want = query(position, forward, position, replace(spec, any_order=False), None, True)
    assert (got[0] != want[0]).any(axis=1).sum() > n // 4
    if n * n <= SMALL_MAX_PAIRS:
        for i, c in enumerate(got[2]):
            assert (np.diff(got[0][i, :c]) > 0).all()


def test_another_target_population_and_a_row_that_overflows():
    rng = np.random.default_rng(5)
    position, forward = cloud(rng, 60, 6.0, 3)
    targets, _ = cloud(rng, 900, 6.0, 3)  # 54,000 pairs: the small path
    for k in (5, 200):
        spec = NeighborQuerySpec(max_distance=2.0, k=k, any_order=True)
        _, got = query(position, forward, targets, spec, None, False)
        _, want = query(position, forward, targets, replace(spec, any_order=False), None, False)
        np.testing.assert_array_equal(got[2], want[2])
        np.testing.assert_array_equal(got[3], want[3])
        np.testing.assert_array_equal(sort_rows(got[0], got[1], got[2])[0], want[0])
        if k == 5:  # every row overflows: the k nearest, sorted
            assert (got[3] > 0).all()
            np.testing.assert_array_equal(got[0], want[0])


def test_unsorted_rows_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(8)
    n = PARALLEL_MIN_ANIMALS + 2_000  # the threaded grid query
    position, forward = cloud(rng, n, 40.0, 3)
    spec = NeighborQuerySpec(max_distance=2.0, k=32, any_order=True)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        _, one = query(position, forward, position, spec, None, True)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        _, many = query(position, forward, position, spec, None, True, out=Neighbors())
    finally:
        numba.set_num_threads(threads)
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)


def groups_any_order(sim):
    return {(p.name, g.label): g.query.any_order for p in sim.pipelines for g in p.groups}


def test_a_group_asks_for_any_order_only_when_every_behaviour_is_order_free():
    couzin = Simulation(load_scenario_config("couzin"), record_debug=False)
    assert groups_any_order(couzin) == {("fish", "zones"): True}
    vicsek = Simulation(load_scenario_config("vicsek"), record_debug=False)
    assert groups_any_order(vicsek) == {("particle", "vicsek"): True}
    flock = Simulation(load_scenario_config("flock"), record_debug=False)
    assert not any(groups_any_order(flock).values())  # the thesis' behaviours keep sorted rows
    # a live edit that adds a behaviour reading rows in order sorts them again, and back
    data = load_scenario_config("couzin").model_dump(mode="json")
    data["species"][0]["groups"][0]["behaviors"].append({"kind": "cohesion"})
    couzin.reconfigure(data)
    assert groups_any_order(couzin) == {("fish", "zones"): False}
    couzin.reconfigure(load_scenario_config("couzin"))
    assert groups_any_order(couzin) == {("fish", "zones"): True}


def test_every_order_free_behaviour_wants_the_same_from_either_table(scenes_using):
    """Each registered behaviour that claims ``order_free`` is checked on every built-in scene that
    uses it: from the unsorted table it wants what it wants from the sorted one, up to the
    rounding of its sums' order, whatever the table's rows hold."""
    claimed = {spec.name for spec in registry.behaviors("neighbor") if spec.order_free}
    assert {"couzin_zones", "vicsek_alignment"} <= claimed
    checked = set()
    for name, config in scenes_using(claimed):
        sims = [Simulation(config, record_debug=False) for _ in range(2)]
        for sim in sims:
            sim.step(20)
        for p, pipeline in enumerate(sims[0].pipelines):
            free = [g for g, group in enumerate(pipeline.groups) if group.query.any_order]
            if not free:
                continue
            for group in sims[1].pipelines[p].groups:
                group.query = replace(group.query, any_order=False)
            desires = []
            for sim in sims:
                world = sim.world
                sim.pipelines[p].compute(world, world.clock.time, world.clock.dt, gathered={})
                desires.append(sim.pipelines[p].desired[:world.population(pipeline.name).n].copy())
            tables = [[sim.pipelines[p].groups[g].neighbors.index for g in free] for sim in sims]
            assert not all(np.array_equal(a, b) for a, b in zip(*tables))  # unsorted rows were met
            np.testing.assert_allclose(desires[0], desires[1], rtol=0, atol=1e-5, err_msg=f"{name}/{pipeline.name}")
            checked |= {slot.spec.name for g in free for slot in pipeline.groups[g].behaviors}
    assert claimed <= checked  # no claim goes unchecked: a new one needs a scene (or a test) that uses it
