"""Neighbour lists kept over steps (``verlet.py``): the grid's table, bit for bit, at every call.

A population that queries itself through a table it keeps answers from lists of the rows
within ``r + skin``, rebuilt only when a row has moved ``skin / 2``. Whatever happened
since the build — small moves, moves just under and just over the limit, rows reordered,
animals added or removed, the radius or box changed, a crowd — each call's table must be
the exhaustive search's (brute force), with ``overflow`` exact, and the lists must really
have answered (the tests count the calls each way).
"""
from __future__ import annotations

import numpy as np
import pytest

import starling.parallel as parallel
import starling.steering.queries.neighbors as neighbors
from starling.steering.queries import verlet
from starling.steering.queries.neighbors import NeighborQuerySpec, Neighbors, find_neighbors

from test_neighbors import cloud  # (pytest puts this folder on the path)


@pytest.fixture(autouse=True)
def lists_always(monkeypatch):
    """The lists answer from the first call and never lose on time (the choice between the two
    answers is made on measured cost; these tests check the lists' answers, not the choice)."""
    monkeypatch.setattr(verlet, "FIRST_GRID_CALLS", 0)
    monkeypatch.setattr(neighbors, "NEIGHBOR_LISTS", True)


def _spec(r, k, fov, mode="knn", early=False, any_order=False):
    return NeighborQuerySpec(max_distance=r, k=k, fov_deg=fov, mode=mode, early_stop=early, any_order=any_order)


def _assert_exact(got, pos, fwd, spec, box, label, *, overflow=True):
    brute = NeighborQuerySpec(max_distance=spec.max_distance, k=spec.k, fov_deg=spec.fov_deg, method="brute")
    exact = find_neighbors(pos, fwd, pos, brute, exclude_self=True, box=box)
    n = exact.n
    np.testing.assert_array_equal(got.index[:n], exact.index, err_msg=f"index {label}")
    np.testing.assert_array_equal(got.distance[:n], exact.distance, err_msg=f"distance {label}")
    np.testing.assert_array_equal(got.count[:n], exact.count, err_msg=f"count {label}")
    if overflow:
        np.testing.assert_array_equal(got.overflow[:n], exact.overflow, err_msg=f"overflow {label}")


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("wrap", [False, True])
@pytest.mark.parametrize("fov, k, mode, keep", [(360.0, 5, "knn", True), (270.0, 5, "knn", True),
                                                (300.0, 24, "all_in_radius", True), (270.0, 5, "knn", False)])
def test_a_moving_cloud_gets_the_exhaustive_table_at_every_call(dims, wrap, fov, k, mode, keep, monkeypatch):
    if not keep:  # a big population's lists: only the lists kept between builds, the build's table let go
        monkeypatch.setattr(verlet, "KEEP_BUILD_TABLE", 0)
    rng = np.random.default_rng(11 + dims + 10 * wrap + k)
    side = 30.0 if dims == 3 else 90.0  # a few in reach, not a crowd (one is left to the grid, below)
    r = 2.5
    pos, fwd = cloud(rng, 1500, side, dims=dims)
    box = (side, side if dims == 3 else 0.0, side) if wrap else None
    spec = _spec(r, k, fov, mode)
    table = Neighbors(0, k)
    for call in range(30):
        got = find_neighbors(pos, fwd, pos, spec, exclude_self=True, box=box, out=table)
        _assert_exact(got, pos, fwd, spec, box, f"call {call}")
        # a step: everybody moves a little, at a speed that runs out the skin every few calls;
        # now and then a few jump (a teleport, a respawn) and force a rebuild
        step = rng.normal(scale=0.015, size=pos.shape).astype(np.float32)
        if call % 7 == 6:
            step[rng.random(len(pos)) < 0.01] *= 50.0
        if dims == 2:
            step[:, 1] = 0.0
        pos = pos + step
        if wrap:
            pos = np.mod(pos, np.float32(side)).astype(np.float32)
            pos[pos >= np.float32(side)] = 0.0
        turn = rng.normal(scale=0.2, size=fwd.shape).astype(np.float32)
        fwd = fwd + turn * (np.linalg.norm(fwd, axis=1, keepdims=True) > 0)
        if dims == 2:
            fwd[:, 1] = 0.0
        fwd = (fwd / np.maximum(np.linalg.norm(fwd, axis=1, keepdims=True), 1e-9)).astype(np.float32)
    lists = table.lists
    assert (lists.table is None) == (not keep)
    assert lists.grid_calls == 0 and lists.calls == 30  # every call answered from lists …
    assert 3 <= lists.rebuilds <= 20  # … kept over several calls, and rebuilt when they ran out


@pytest.mark.parametrize("wrap", [False, True])
def test_the_threaded_check_gets_the_exhaustive_table_too(wrap, monkeypatch):
    """The same cloud with every kernel threaded: the check's rows split over chunks of the
    population, each chunk in blocks (a small population is threaded only when asked)."""
    monkeypatch.setattr(parallel, "_threads_from", 1)
    test_a_moving_cloud_gets_the_exhaustive_table_at_every_call(3, wrap, 270.0, 5, "knn", True, monkeypatch)


def test_a_pair_closing_in_from_outside_the_lists_is_caught_at_the_limit():
    """Two animals built just beyond ``r + skin`` apart: moving each just under ``skin / 2``
    toward the other cannot bring them into reach, so the lists hold; a little more forces a
    rebuild, and the pair is found."""
    r = 2.0
    skin = verlet.SKIN * r
    far = np.array([[50.0, 50.0, 50.0]], np.float32)
    gap = r + skin + 1e-3
    pos = np.array([[10.0, 10.0, 10.0], [10.0 + gap, 10.0, 10.0]], np.float32)
    # a crowd elsewhere, so the query goes through the grid (and its lists), not the all-pairs kernel
    rng = np.random.default_rng(2)
    crowd = (far + rng.random((400, 3)) * 30.0).astype(np.float32)
    pos = np.concatenate([pos, crowd]).astype(np.float32)
    fwd = np.zeros_like(pos)
    spec = _spec(r, 4, 360.0)
    table = Neighbors(0, 4)
    find_neighbors(pos, fwd, pos, spec, exclude_self=True, out=table)
    assert table.count[0] == 0 and table.lists.rebuilds == 1
    for inward in (0.5 * skin - 2e-3, 0.5 * skin + 2e-3):
        moved = pos.copy()
        moved[0, 0] += np.float32(inward)
        moved[1, 0] -= np.float32(inward)
        got = find_neighbors(moved, fwd, moved, spec, exclude_self=True, out=table)
        _assert_exact(got, moved, fwd, spec, None, f"moved {inward}")
    assert table.lists.rebuilds == 2  # the second move went past the limit
    assert table.count[0] == 1 and table.index[0, 0] == 1  # and brought the pair into reach


def _reordered(seed: int, *, told: bool):
    """A cloud queried once, then its rows shuffled (the lists told of it or not) and queried again:
    the second table checked against brute force; returns the table."""
    rng = np.random.default_rng(seed)
    pos, fwd = cloud(rng, 3000, 40.0)
    spec = _spec(3.0, 6, 270.0)
    table = Neighbors(0, 6)
    find_neighbors(pos, fwd, pos, spec, exclude_self=True, out=table)
    order = rng.permutation(len(pos))
    pos, fwd = np.ascontiguousarray(pos[order]), np.ascontiguousarray(fwd[order])
    if told:
        table.rows_permuted(order)
    got = find_neighbors(pos, fwd, pos, spec, exclude_self=True, out=table)
    _assert_exact(got, pos, fwd, spec, None, f"after a reordering {'told' if told else 'not told'}")
    return table


@pytest.mark.parametrize("keep", [True, False])
def test_rows_reordered_through_the_table_keep_their_lists(keep, monkeypatch):
    if not keep:  # a big population's lists, kept without the build's table
        monkeypatch.setattr(verlet, "KEEP_BUILD_TABLE", 0)
    table = _reordered(5, told=True)
    assert table.lists.rebuilds == 1  # followed, not rebuilt
    assert (table.lists.table is None) == (not keep)


def test_a_reordering_the_lists_were_not_told_of_is_caught():
    assert _reordered(6, told=False).lists.rebuilds == 2


@pytest.mark.parametrize("change", ["fewer", "more", "radius", "box"])
def test_a_changed_population_radius_or_box_rebuilds(change):
    rng = np.random.default_rng(8)
    pos, fwd = cloud(rng, 2000, 40.0)
    spec, box = _spec(3.0, 5, 360.0), None
    table = Neighbors(0, 5)
    find_neighbors(pos, fwd, pos, spec, exclude_self=True, out=table)
    find_neighbors(pos, fwd, pos, spec, exclude_self=True, out=table)
    assert table.lists.rebuilds == 1
    if change == "fewer":
        pos, fwd = pos[:1500].copy(), fwd[:1500].copy()
    elif change == "more":
        extra, extra_fwd = cloud(rng, 300, 40.0)
        pos, fwd = np.concatenate([pos, extra]), np.concatenate([fwd, extra_fwd])
    elif change == "radius":
        spec = _spec(4.0, 5, 360.0)
    else:
        box = (40.0, 40.0, 40.0)
    got = find_neighbors(pos, fwd, pos, spec, exclude_self=True, box=box, out=table)
    _assert_exact(got, pos, fwd, spec, box, change)
    assert table.lists.rebuilds == 2


def test_a_crowd_is_left_to_the_grid_with_the_same_table():
    rng = np.random.default_rng(9)
    pos, fwd = cloud(rng, 2000, 10.0)  # ~ 100 in reach, 7 kept: lists would be twice the sphere
    spec = _spec(2.5, 7, 300.0, early=True)
    table = Neighbors(0, 7)
    for call in range(3):
        got = find_neighbors(pos, fwd, pos, spec, exclude_self=True, out=table)
        _assert_exact(got, pos, fwd, spec, None, f"call {call}", overflow=False)
        pos = (pos + rng.normal(scale=0.02, size=pos.shape)).astype(np.float32)
    lists = table.lists
    assert lists.grid_calls == 3 and lists.wait > 0


def _listed_cloud(seed, n):
    """A sparse cloud whose table has just built its first lists (FIRST_GRID_CALLS is 0 here)."""
    rng = np.random.default_rng(seed)
    pos, fwd = cloud(rng, n, 40.0)
    spec = _spec(3.0, 5, 360.0)
    table = Neighbors(0, 5)
    find_neighbors(pos, fwd, pos, spec, exclude_self=True, out=table)
    return rng, pos, fwd, spec, table


def test_a_list_that_costs_more_than_the_grid_hands_over():
    rng, pos, fwd, spec, table = _listed_cloud(10, 2000)
    lists = table.lists
    lists.grid_cost = 1e-9  # the grid, as measured, is far cheaper
    answered_by = []
    for call in range(4):
        pos = (pos + rng.normal(scale=0.3, size=pos.shape)).astype(np.float32)  # past the skin each call
        grid_calls = lists.grid_calls
        got = find_neighbors(pos, fwd, pos, spec, exclude_self=True, out=table)
        _assert_exact(got, pos, fwd, spec, None, f"call {call}")
        answered_by.append("grid" if lists.grid_calls > grid_calls else "lists")
    # the first build paid for its table (memory the next builds reuse), so its list is not
    # judged on it and is rebuilt; the second, a fair price, loses
    assert answered_by == ["lists", "grid", "grid", "grid"]
    assert lists.rebuilds == 2 and lists.wait == verlet.RETRY_AFTER - 3
    assert lists.backoff == 2 * verlet.RETRY_AFTER


def test_only_a_build_that_reuses_its_memory_is_judged():
    """The first build, and one that had to widen its rows, grow buffers the next builds reuse:
    their time is not a fair price of a build, so the list is not handed over on it."""
    rng, pos, fwd, spec, table = _listed_cloud(11, 3000)
    lists = table.lists
    assert lists.rebuilds == 1 and lists._list_build is None  # first build: rows widened, table made
    pos = (pos + rng.normal(scale=0.3, size=pos.shape)).astype(np.float32)
    find_neighbors(pos, fwd, pos, spec, exclude_self=True, out=table)
    assert lists.rebuilds == 2 and lists._list_build > 0.0  # same width, same table: a fair price
    denser = np.concatenate([pos, pos[:1500] + np.float32(0.05)])  # more rows, and rows twice as long
    fwd2 = np.concatenate([fwd, fwd[:1500]])
    got = find_neighbors(denser, fwd2, denser, spec, exclude_self=True, out=table)
    _assert_exact(got, denser, fwd2, spec, None, "denser")
    assert lists.rebuilds == 3 and lists._list_build is None


def test_unsorted_rows_of_many_are_left_to_the_grid():
    """A query that lets rows stay unsorted and keeps many (Vicsek's 64) is not answered from
    lists: they would rank rows the grid leaves as met."""
    rng = np.random.default_rng(12)
    pos, fwd = cloud(rng, 2000, 40.0)
    spec = _spec(3.0, 64, 360.0, any_order=True)
    table = Neighbors(0, 64)
    find_neighbors(pos, fwd, pos, spec, exclude_self=True, out=table)
    assert table.lists is None


@pytest.mark.parametrize("wrap", [False, True])
def test_the_displacement_test_counts_what_numpy_measures(wrap):
    """The validity test's two vectorised passes against NumPy: the largest coordinate magnitude
    (from the float32 bits) and how many rows moved past a limit (minimum image where the box
    wraps; a NaN counts as moved), serial and over threads."""
    rng = np.random.default_rng(13)
    n = 5000
    box = np.array([40.0, 30.0, 50.0], np.float32) if wrap else verlet.NO_WRAP
    built = (rng.random((n, 3)) * np.array([40.0, 30.0, 50.0]) - 3.0).astype(np.float32)
    step = rng.normal(scale=0.3, size=(n, 3))
    pos = (built + step).astype(np.float32)
    if wrap:  # some rows cross the seam: their raw offset is nearly a period
        pos[::7] = np.mod(pos[::7] + 3.0, box) - 3.0
    d = pos.astype(np.float64) - built.astype(np.float64)
    if wrap:
        d -= box * np.rint(d / box)
    d2 = (d * d).sum(axis=1)
    for limit2 in (0.0, 0.05, 0.25, 1.0, float(np.max(d2)), 1e9):
        expected = int(np.count_nonzero(d2 > limit2))
        assert verlet._moved_past(pos, built, box, 0, n, limit2) == expected
        assert verlet._moved_past_parallel(pos, built, box, limit2, 3) == expected
    bits = verlet._largest_magnitude(pos, 0, n)
    assert verlet._float32_of_bits(bits) == np.array([bits], np.int32).view(np.float32)[0] == np.abs(pos).max()
    assert verlet._largest_magnitude_parallel(pos, 3) == bits
    pos[17, 1] = np.nan
    assert verlet._moved_past(pos, built, box, 0, n, 1e9) == 1
    assert np.isnan(verlet._float32_of_bits(verlet._largest_magnitude(pos, 0, n)))
