"""The all-pairs path of small queries gives the grid's table bit for bit, and the contract's."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from starling.steering.queries import neighbors as N
from starling.steering.queries.candidates import query_thresholds
from starling.steering.queries.grid import GridIndex
from starling.steering.queries.neighbors import NeighborQuerySpec, Neighbors, find_neighbors
from starling.steering.queries.small import SMALL_MAX_PAIRS


def cloud(rng, n, side, dims):
    position = (rng.random((n, 3)) * side).astype(np.float32)
    forward = rng.normal(size=(n, 3))
    if dims == 2:
        position[:, 1] = 1.5
        forward[:, 1] = 0.0
    forward /= np.maximum(np.linalg.norm(forward, axis=1, keepdims=True), 1e-9)
    forward[rng.random(n) < 0.1] = 0.0
    return position, forward.astype(np.float32)


def grid_table(spos, sfwd, tpos, spec, exclude_self, box=None):
    """The grid's answer, built directly (find_neighbors would take the small path)."""
    n, k = spos.shape[0], spec.k
    index = np.full((n, k), -7, np.int32)
    distance = np.full((n, k), -7, np.float32)
    count = np.full(n, -7, np.int32)
    overflow = np.full(n, -7, np.int32)
    grid = GridIndex()
    same = tpos is spos
    grid.build(tpos, spec.max_distance, N.normalize_box(box), self_position=spos, target_forward=sfwd if same else None)
    grid.query(spos, sfwd, spec.max_distance, spec.fov_deg, k, index, distance, count, overflow,
               exclude_self=exclude_self)
    return index, distance, count, overflow


def table(nb, n):
    return nb.index[:n].copy(), nb.distance[:n].copy(), nb.count[:n].copy(), nb.overflow[:n].copy()


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("fov", [90.0, 300.0, 360.0])
@pytest.mark.parametrize("k", [1, 3, 8, 40])
def test_small_queries_equal_the_grid_bit_for_bit(dims, fov, k):
    rng = np.random.default_rng(dims * 1000 + int(fov) + k)
    for n, side, r in ((200, 25.0, 20.0), (150, 40.0, 5.0), (60, 10.0, 3.0)):  # a dense school, a sparse one
        position, forward = cloud(rng, n, side, dims)
        spec = NeighborQuerySpec(max_distance=r, k=k, fov_deg=fov)
        small = find_neighbors(position, forward, position, spec, exclude_self=True)
        assert small._grid is None and small._small is not None  # it did take the small path
        for got, want in zip(table(small, n), grid_table(position, forward, position, spec, True)):
            np.testing.assert_array_equal(got, want)
        others = position[: n // 3].copy()  # another species: no self to exclude
        small = find_neighbors(position, forward, others, spec)
        for got, want in zip(table(small, n), grid_table(position, forward, others, spec, False)):
            np.testing.assert_array_equal(got, want)


def test_ties_coincident_points_and_the_edge_of_the_radius_match_the_grid():
    """Lattice points: many equal distances (ranked by index), neighbours exactly at the radius,
    coincident animals (always seen), a zero forward (sees all round)."""
    g = np.arange(6, dtype=np.float32)
    position = np.stack(np.meshgrid(g, g, g[:2], indexing="ij"), -1).reshape(-1, 3).astype(np.float32)
    position = np.concatenate([position, position[:5]])  # five coincident pairs
    forward = np.tile(np.float32([1.0, 0.0, 0.0]), (len(position), 1))
    forward[::7] = 0.0
    for r, k, fov in ((1.0, 4, 360.0), (2.0, 6, 90.0), (1.4142135, 5, 180.0)):
        spec = NeighborQuerySpec(max_distance=r, k=k, fov_deg=fov)
        small = find_neighbors(position, forward, position, spec, exclude_self=True)
        want = grid_table(position, forward, position, spec, True)
        for got, expected in zip(table(small, len(position)), want):
            np.testing.assert_array_equal(got, expected)
        assert (want[2] + want[3]).max() > k  # the rows were full: the cut by (distance, index) was tested


def test_large_queries_still_use_the_grid():
    rng = np.random.default_rng(5)
    position, forward = cloud(rng, 300, 30.0, 3)  # 90 000 pairs
    assert 300 * 300 > SMALL_MAX_PAIRS
    nb = find_neighbors(position, forward, position, NeighborQuerySpec(max_distance=3.0, k=4), exclude_self=True)
    assert nb._grid is not None and nb._small is None


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("k", [3, 40, 160])
def test_small_queries_in_a_wrapping_world_equal_the_grid_bit_for_bit(dims, k):
    """Minimum images across the seams, a box only a few radii wide, axes that do not wrap."""
    rng = np.random.default_rng(dims * 100 + k)
    for n, side, r, box in (
        (200, 20.0, 3.0, [20.0, 20.0, 20.0]),  # sparse, every axis wraps
        (150, 6.0, 2.5, [6.0, 6.0, 6.0]),  # the reach is almost half the period: every pair near a seam
        (180, 12.0, 4.0, [12.0, 0.0, 12.0]),  # x and z wrap, y has a floor and a sky
        (250, 10.0, 30.0, [10.0, np.inf, 10.0]),  # everybody in reach of everybody (the grid sorts these rows)
        (100, 10.0, 30.0, [10.0, np.inf, 10.0]),  # a smaller crowd (the grid ranks them)
    ):
        position, forward = cloud(rng, n, side, dims)
        position[:10, 0] = np.float32(side) - rng.random(10).astype(np.float32) * 0.1  # against the seam
        position[10:20, 0] = rng.random(10).astype(np.float32) * 0.1
        for fov in (360.0, 270.0):
            spec = NeighborQuerySpec(max_distance=r, k=k, fov_deg=fov)
            small = find_neighbors(position, forward, position, spec, exclude_self=True, box=box)
            assert small._grid is None and small._small is not None
            want = grid_table(position, forward, position, spec, True, box)
            for got, expected in zip(table(small, n), want):
                np.testing.assert_array_equal(got, expected)
            others = position[: n // 3].copy()
            small = find_neighbors(position, forward, others, spec, box=box)
            for got, expected in zip(table(small, n), grid_table(position, forward, others, spec, False, box)):
                np.testing.assert_array_equal(got, expected)


def test_crowded_rows_equal_the_grid_whichever_way_the_grid_orders_them():
    """A school all in reach of each other, kept whole and cut to k: the grid ranks, sorts or
    inserts such rows depending on their size; the all-pairs kernel's insertion must agree."""
    rng = np.random.default_rng(8)
    for n, k, path in ((100, 128, "grid ranks, kept whole"), (100, 60, "grid ranks, cut"), (200, 128, "grid sorts"),
                       (100, 40, "grid inserts")):
        position, forward = cloud(rng, n, 4.0, 3)
        position[-5:] = position[:5]  # coincident animals: ties broken by index
        spec = NeighborQuerySpec(max_distance=50.0, k=k)
        small = find_neighbors(position, forward, position, spec, exclude_self=True)
        assert small._small is not None, path
        for got, want in zip(table(small, n), grid_table(position, forward, position, spec, True)):
            np.testing.assert_array_equal(got, want, err_msg=path)


def test_the_all_pairs_method_wraps_like_brute_force():
    rng = np.random.default_rng(9)
    position, forward = cloud(rng, 400, 10.0, 2)  # Vicsek's density, beyond the small path's size
    for box in ([10.0, 10.0, 10.0], [10.0, 0.0, 10.0]):
        spec = NeighborQuerySpec(max_distance=1.0, k=64, fov_deg=360.0)
        want = find_neighbors(position, forward, position, replace(spec, method="brute"), exclude_self=True, box=box)
        got = find_neighbors(position, forward, position, replace(spec, method="all_pairs"), exclude_self=True, box=box)
        assert got._small is not None
        for a, b in zip(table(got, 400), table(want, 400)):
            np.testing.assert_array_equal(a, b)
        assert want.count[:400].mean() > 10  # real neighbourhoods, wrapped across the seams


def test_the_small_path_reuses_its_buffers():
    rng = np.random.default_rng(6)
    position, forward = cloud(rng, 100, 20.0, 3)
    out = Neighbors()
    find_neighbors(position, forward, position, NeighborQuerySpec(max_distance=4.0, k=3), exclude_self=True, out=out)
    columns = out._small.columns
    find_neighbors(position + 0.5, forward, position + 0.5, NeighborQuerySpec(max_distance=4.0, k=3),
                   exclude_self=True, out=out)
    assert out._small.columns is columns


@pytest.mark.parametrize("box", [None, [12.0, 12.0, 12.0]])
def test_a_reused_table_only_orders_the_work_never_the_answer(box):
    """The previous call's rows are read as a hint (last step's neighbours first): whatever they
    hold — last step's neighbours, another query's rows, garbage, duplicates, indices out of
    range — the table is the grid's."""
    rng = np.random.default_rng(10)
    position, forward = cloud(rng, 150, 12.0, 3)
    out = Neighbors()
    for step in range(4):  # a school moving a little each step, as in a simulation
        position = (position + rng.normal(scale=0.2, size=position.shape)).astype(np.float32) % np.float32(12.0)
        for spec in (NeighborQuerySpec(max_distance=30.0, k=160), NeighborQuerySpec(max_distance=4.0, k=6)):
            find_neighbors(position, forward, position, spec, exclude_self=True, box=box, out=out)
            for got, want in zip(table(out, 150), grid_table(position, forward, position, spec, True, box)):
                np.testing.assert_array_equal(got, want)
    spec = NeighborQuerySpec(max_distance=5.0, k=20)
    find_neighbors(position, forward, position, spec, exclude_self=True, box=box, out=out)
    out.index[:150] = rng.integers(-5, 160, size=out.index[:150].shape)  # garbage, with repeats
    out.count[:150] = rng.integers(0, 40, size=150)  # some beyond k
    find_neighbors(position, forward, position, spec, exclude_self=True, box=box, out=out)
    for got, want in zip(table(out, 150), grid_table(position, forward, position, spec, True, box)):
        np.testing.assert_array_equal(got, want)


def test_a_hinted_row_still_breaks_ties_by_index():
    """Lattice points (many equal distances) with hints that hold the largest indices first: a tie
    met later with a smaller index must still take the full row's last place."""
    g = np.arange(6, dtype=np.float32)
    position = np.stack(np.meshgrid(g, g, g[:3], indexing="ij"), -1).reshape(-1, 3).astype(np.float32)
    n = len(position)
    forward = np.zeros_like(position)
    for k in (3, 5, 9):
        spec = NeighborQuerySpec(max_distance=1.5, k=k)
        out = Neighbors()
        find_neighbors(position, forward, position, spec, exclude_self=True, out=out)
        out.index[:n] = np.arange(n - 1, n - 1 - k, -1, dtype=np.int32)  # the largest indices first
        out.count[:n] = k
        find_neighbors(position, forward, position, spec, exclude_self=True, out=out)
        want = grid_table(position, forward, position, spec, True)
        for got, expected in zip(table(out, n), want):
            np.testing.assert_array_equal(got, expected)
        assert (want[3] > 0).any()  # rows were cut among equal distances


def test_the_same_arrays_moved_in_place_and_asked_again_get_the_new_answer():
    """A group asks the same query of the same arrays every step (the kernel's arguments are then
    kept): moved in place, asked with another k, other targets or more rows, the table is the grid's."""
    rng = np.random.default_rng(12)
    position, forward = cloud(rng, 120, 12.0, 3)
    targets, _ = cloud(rng, 30, 12.0, 3)
    out = Neighbors()
    others, _ = cloud(rng, 30, 12.0, 3)
    narrow, wide = NeighborQuerySpec(max_distance=4.0, k=5), NeighborQuerySpec(max_distance=6.0, k=9)
    farther = NeighborQuerySpec(max_distance=7.0, k=5)  # only the radius differs from narrow
    # each change below is alone in changing what the search is asked
    asked = [(narrow, position), (narrow, position), (farther, position), (wide, position), (wide, position),
             (narrow, targets), (narrow, others), (narrow, position)]
    for step, (spec, tpos) in enumerate(asked):
        position[:] = (position + rng.normal(scale=0.3, size=position.shape)) % np.float32(12.0)
        itself = tpos is position
        N.search_into(position, forward, tpos, spec, None, itself, out)
        for got, want in zip(table(out, 120), grid_table(position, forward, tpos, spec, itself)):
            np.testing.assert_array_equal(got, want, err_msg=str(step))
    more, more_forward = cloud(rng, 140, 12.0, 3)  # more rows: the table grows
    N.search_into(more, more_forward, more, narrow, None, True, out)
    for got, want in zip(table(out, 140), grid_table(more, more_forward, more, narrow, True)):
        np.testing.assert_array_equal(got, want)
