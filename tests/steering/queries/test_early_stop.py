"""The grid's early stop for knn queries: last call's k-th distance tried first.

A knn group's query may stop once its k nearest are certain (``NeighborQuerySpec.early_stop``).
Whatever the hint in the reused table — last step's rows, rows of another cloud, garbage,
none — the index, distance and count columns must be those of the exhaustive search (brute
force, or the k-d tree for clouds too big for it); only ``overflow`` may count fewer.
"""
from __future__ import annotations

import numpy as np
import pytest

from starling.steering.queries.neighbors import NeighborQuerySpec, Neighbors, find_neighbors

from test_neighbors import cloud  # (pytest puts this folder on the path)


def _search(method, pos, fwd, *, r, k, fov=360.0, box=None, early=False, out=None):
    spec = NeighborQuerySpec(max_distance=r, k=k, fov_deg=fov, method=method, early_stop=early)
    return find_neighbors(pos, fwd, pos, spec, exclude_self=True, box=box, out=out)


def _assert_same_rows(early, exact, label):
    n = exact.n
    np.testing.assert_array_equal(early.index[:n], exact.index[:n], err_msg=f"index {label}")
    np.testing.assert_array_equal(early.distance[:n], exact.distance[:n], err_msg=f"distance {label}")
    np.testing.assert_array_equal(early.count[:n], exact.count[:n], err_msg=f"count {label}")
    assert np.all(early.overflow[:n] >= 0) and np.all(early.overflow[:n] <= exact.overflow[:n]), label


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("wrap", [False, True])
@pytest.mark.parametrize("fov", [360.0, 270.0])
def test_a_moving_dense_cloud_gets_the_exhaustive_rows_and_stops_early(dims, wrap, fov):
    rng = np.random.default_rng(7 + dims + 10 * wrap)
    side = 12.0
    pos, fwd = cloud(rng, 1500, side, dims=dims)  # dense: ~30 (2D: ~300) in reach, k = 6 kept
    box = (side, side if dims == 3 else 0.0, side) if wrap else None
    table = Neighbors(0, 6)
    stopped = 0
    for call in range(4):
        early = _search("grid", pos, fwd, r=2.5, k=6, fov=fov, box=box, early=True, out=table)
        exact = _search("brute", pos, fwd, r=2.5, k=6, fov=fov, box=box)
        _assert_same_rows(early, exact, f"call {call}")
        stopped += int(np.count_nonzero(early.overflow < exact.overflow))
        # everybody moves a little (a few a lot), as in a step
        step = rng.normal(scale=0.05, size=pos.shape).astype(np.float32)
        step[rng.random(len(pos)) < 0.02] *= 40.0
        if dims == 2:
            step[:, 1] = 0.0
        pos = pos + step
        pos = np.mod(pos, np.float32(side)).astype(np.float32) if wrap else pos
    assert stopped > 1000  # the short search did run (it left most of the sphere unvisited)


def test_garbage_hints_change_nothing():
    rng = np.random.default_rng(3)
    pos, fwd = cloud(rng, 800, 10.0)
    exact = _search("brute", pos, fwd, r=2.0, k=5)
    for fill in (np.nan, -1.0, 0.0, 1e-30, 0.01, 1.0, 1.9, 2.0, 50.0, np.inf):
        table = Neighbors(800, 5)
        table.reserve(800, 5)
        table.count[:] = 5  # every row claims to be full …
        table.distance[:] = fill  # … with this k-th distance
        table.index[:] = rng.integers(-1, 800, size=table.index.shape)
        _assert_same_rows(_search("grid", pos, fwd, r=2.0, k=5, early=True, out=table), exact, f"fill {fill}")
    table = Neighbors(800, 5)  # another cloud's rows
    other, _ = cloud(np.random.default_rng(4), 800, 3.0)
    _search("grid", other, fwd, r=2.0, k=5, early=True, out=table)
    _assert_same_rows(_search("grid", pos, fwd, r=2.0, k=5, early=True, out=table), exact, "another cloud")


def test_the_default_and_all_in_radius_keep_overflow_exact():
    rng = np.random.default_rng(5)
    pos, fwd = cloud(rng, 1000, 8.0)
    exact = _search("brute", pos, fwd, r=2.0, k=4)
    table = Neighbors(0, 4)
    for _ in range(2):
        got = _search("grid", pos, fwd, r=2.0, k=4, out=table)  # early_stop defaults to False
        np.testing.assert_array_equal(got.overflow, exact.overflow)
    spec = NeighborQuerySpec(max_distance=2.0, k=4, mode="all_in_radius", early_stop=True)
    table = Neighbors(0, 4)
    for _ in range(2):
        got = find_neighbors(pos, fwd, pos, spec, exclude_self=True, out=table)
        np.testing.assert_array_equal(got.overflow, exact.overflow)


def test_a_neighbour_just_outside_the_first_radius_that_ties_in_float32_is_still_found():
    """The first try accepts only a k-th distance strictly below the float32 distance of its
    radius: an animal just outside it (d² one ulp above) can round to the same distance and,
    with a smaller index, come first."""
    f32 = np.float32
    widen = f32(1.25)
    for h in np.linspace(1.0, 1.6, 400, dtype=np.float32):
        r1 = f32(h * widen)
        rq2 = f32(r1 * r1)
        above = np.nextafter(rq2, f32(np.inf))
        if np.sqrt(above) != np.sqrt(rq2):
            continue
        # B at (u, v, 0) with fl(u² + v²) one ulp above rq2: search v for a small u step
        for v in (f32(0.0), *[f32(x) for x in np.geomspace(1e-4, 1e-2, 200)]):
            u = np.sqrt(f32(above - f32(v * v)))
            if f32(f32(u * u) + f32(v * v)) == above:
                break
        else:
            continue
        # A = 2, B = 1, and 300 animals far off (enough pairs that the grid, not the all-pairs
        # kernel, answers)
        far = np.random.default_rng(1).uniform(20.0, 60.0, size=(300, 3))
        pos = np.concatenate([[[0, 0, 0], [u, v, 0], [r1, 0, 0], [r1 + 3, 0, 0]], far]).astype(np.float32)
        fwd = np.zeros_like(pos)
        table = Neighbors(len(pos), 1)
        table.reserve(len(pos), 1)
        table.count[:] = 1
        table.distance[:] = h  # row 0's last k-th distance: its first try has radius r1
        early = _search("grid", pos, fwd, r=5.0, k=1, early=True, out=table)
        exact = _search("brute", pos, fwd, r=5.0, k=1)
        assert exact.index[0, 0] == 1 and exact.distance[0, 0] == early.distance[0, 0]
        assert early.overflow[0] == 2  # the first try (A alone) was refused: the full search met B and D
        _assert_same_rows(early, exact, f"h {h}")
        return
    pytest.fail("no float32 tie found to test with")


@pytest.mark.slow
def test_threads_and_rows_moved_home_from_cell_order():
    """40,000 animals: the threaded kernel, and rows written in cell order then scattered home
    (the hint is then read from the grid's own row buffers). Oracle: the k-d tree."""
    rng = np.random.default_rng(11)
    side = 60.0
    pos, fwd = cloud(rng, 40_000, side)
    table = Neighbors(0, 7)
    for call in range(3):
        early = _search("grid", pos, fwd, r=4.0, k=7, fov=300.0, early=True, out=table)
        exact = _search("kdtree", pos, fwd, r=4.0, k=7, fov=300.0)
        _assert_same_rows(early, exact, f"call {call}")
        pos = pos + rng.normal(scale=0.05, size=pos.shape).astype(np.float32)


def test_a_murmuration_steps_the_same_with_and_without_stopping_early():
    """The flock scene's knn groups stop early; forced to search exhaustively, every bird is
    where it would be, bit for bit."""
    from dataclasses import replace

    from starling.config import load_scenario_config
    from starling.simulation import Simulation

    runs = []
    for early in (True, False):
        sim = Simulation(load_scenario_config("flock"), record_debug=False)
        groups = [g for p in sim.pipelines for g in p.groups]
        assert all(g.query.early_stop for g in groups)  # what a simulation's knn groups ask for
        for g in groups:
            g.query = replace(g.query, early_stop=early)
        sim.step(40)
        pop = sim.population("bird")
        runs.append((pop.position.copy(), pop.velocity.copy(), [g.neighbors.overflow.copy() for g in groups]))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert all(np.all(a <= b) for a, b in zip(runs[0][2], runs[1][2]))
    assert any(np.any(a < b) for a, b in zip(runs[0][2], runs[1][2]))  # it did stop early
