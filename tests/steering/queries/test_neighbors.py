"""Oracle tests for the neighbour queries (thesis chapter 5, 9.5.3).

The brute-force method is the contract written out plainly; the grid and the
k-d tree must reproduce it exactly (same indices in the same order, same
counts and overflow, distances equal) on 2D and 3D clouds, with every
combination of radius, field of view, k, mode, wrap-around and population
layout, and on the degenerate inputs (empty, single, ties, coincident points).
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from starling import kernel_calls
from starling import parallel as parallel_module
from starling.steering.queries import grid as grid_module
from starling.steering.queries import grid_query
from starling.steering.queries.candidates import query_thresholds
from starling.steering.queries.grid import GridIndex
from starling.steering.queries.neighbors import (
    NeighborQuerySpec,
    Neighbors,
    find_neighbors,
    minimum_image,
    normalize_box,
    wrap_offset,
)

FAST = ("grid", "kdtree", "all_pairs")  # all_pairs: the compiled all-pairs method, checked like the others


# --- helpers -----------------------------------------------------------------


def cloud(rng, n, side, dims=3, zero_forward_fraction=0.1, y=1.5):
    """Uniform positions in a cube (3D) or an x-z square at constant y (2D), and forwards.

    Forwards are random unit vectors (in the x-z plane for 2D) with a few zero
    ones, which see all around.
    """
    position = rng.random((n, 3)) * side
    forward = rng.normal(size=(n, 3))
    if dims == 2:
        position[:, 1] = y
        forward[:, 1] = 0.0
    forward /= np.maximum(np.linalg.norm(forward, axis=1, keepdims=True), 1e-9)
    forward[rng.random(n) < zero_forward_fraction] = 0.0
    position = position.astype(np.float32)
    position[position >= np.float32(side)] = 0.0
    return position, forward.astype(np.float32)


def query(method, self_position, self_forward, target_position, *, r, k, fov=360.0,
          mode="knn", exclude_self=False, box=None, out=None):
    spec = NeighborQuerySpec(max_distance=r, k=k, fov_deg=fov, mode=mode, method=method)
    return find_neighbors(self_position, self_forward, target_position, spec,
                          exclude_self=exclude_self, box=box, out=out)


def snapshot(nbrs):
    return (nbrs.index.copy(), nbrs.distance.copy(), nbrs.count.copy(), nbrs.overflow.copy())


def assert_same(actual, expected, label=""):
    index, distance, count, overflow = actual
    e_index, e_distance, e_count, e_overflow = expected
    np.testing.assert_array_equal(count, e_count, err_msg=f"count {label}")
    np.testing.assert_array_equal(overflow, e_overflow, err_msg=f"overflow {label}")
    np.testing.assert_array_equal(index, e_index, err_msg=f"index {label}")
    finite = np.isfinite(e_distance)
    np.testing.assert_array_equal(np.isfinite(distance), finite, err_msg=f"padding {label}")
    np.testing.assert_allclose(distance[finite], e_distance[finite], rtol=0, atol=1e-5,
                               err_msg=f"distance {label}")


def assert_methods_agree(self_position, self_forward, target_position, **kwargs):
    expected = snapshot(query("brute", self_position, self_forward, target_position, **kwargs))
    for method in FAST:
        actual = snapshot(query(method, self_position, self_forward, target_position, **kwargs))
        assert_same(actual, expected, f"{method} {kwargs}")
    return expected


def independent_candidates(self_position, self_forward, target_position, r, fov, exclude_self,
                           box=None):
    """Float64 restatement of radius + field of view: the set each row may choose from.

    Used away from the boundaries only (pairs within 1e-4 of the radius or of
    the view's edge are reported separately as ``ambiguous``).
    """
    offset = target_position[None, :, :].astype(np.float64) - self_position[:, None, :]
    if box is not None:
        for a in range(3):
            if np.isfinite(box[a]) and box[a] > 0:
                offset[..., a] -= box[a] * np.round(offset[..., a] / box[a])
    distance = np.linalg.norm(offset, axis=2)
    inside = distance <= r
    ambiguous = np.abs(distance - r) < 1e-4
    if fov < 360.0:
        f = self_forward.astype(np.float64)
        norm_f = np.linalg.norm(f, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cosine = np.einsum("ik,ijk->ij", f, offset) / (norm_f[:, None] * distance)
        angle = np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))
        seen = (angle <= fov / 2) | (norm_f[:, None] == 0) | (distance == 0)
        ambiguous |= (np.abs(angle - fov / 2) < 1e-3) & (norm_f[:, None] > 0) & (distance > 0)
        inside &= seen
    if exclude_self:
        np.fill_diagonal(inside, False)
        np.fill_diagonal(ambiguous, False)
    return inside, distance, ambiguous


# --- the oracle on random clouds ---------------------------------------------


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("fov", [90.0, 270.0, 360.0])
@pytest.mark.parametrize("wrap", [False, True])
def test_grid_and_kdtree_equal_brute_force_on_random_clouds(dims, fov, wrap):
    rng = np.random.default_rng(1000 * dims + int(fov) + wrap)
    side = 30.0 if dims == 3 else 60.0
    position, forward = cloud(rng, 600, side, dims)
    box = np.array([side, side, side]) if wrap else None
    for r, k in ((4.0, 5), (7.5, 3), (2.0, 12)):
        expected = assert_methods_agree(position, forward, position, r=r, k=k, fov=fov,
                                        exclude_self=True, box=box)
        assert expected[2].sum() > 0


def test_brute_force_keeps_the_nearest_k_of_the_float64_candidate_set():
    rng = np.random.default_rng(7)
    position, forward = cloud(rng, 300, 20.0, 3)
    r, k, fov = 4.0, 4, 270.0
    index, distance, count, overflow = snapshot(
        query("brute", position, forward, position, r=r, k=k, fov=fov, exclude_self=True))
    inside, d64, ambiguous = independent_candidates(position, forward, position, r, fov, True)
    checked = 0
    for i in range(position.shape[0]):
        if ambiguous[i].any():
            continue
        candidates = np.flatnonzero(inside[i])
        assert count[i] + overflow[i] == candidates.size
        nearest = candidates[np.lexsort((candidates, d64[i, candidates]))][:k]
        np.testing.assert_array_equal(index[i, :count[i]], nearest)
        np.testing.assert_allclose(distance[i, :count[i]], d64[i, nearest], rtol=1e-6)
        checked += 1
    assert checked > 250


def test_rows_are_sorted_by_distance_then_index_and_padded():
    rng = np.random.default_rng(3)
    position, forward = cloud(rng, 500, 25.0, 3)
    index, distance, count, _ = snapshot(
        query("grid", position, forward, position, r=5.0, k=6, fov=300.0, exclude_self=True))
    for i in range(position.shape[0]):
        c = count[i]
        row_d, row_j = distance[i, :c], index[i, :c]
        ascending = (row_d[1:] > row_d[:-1]) | ((row_d[1:] == row_d[:-1]) & (row_j[1:] > row_j[:-1]))
        assert np.all(ascending)
        assert np.all(row_d <= 5.0) and np.all(row_j != i)
        assert np.all(index[i, c:] == -1) and np.all(np.isinf(distance[i, c:]))
    assert index.dtype == np.int32 and distance.dtype == np.float32
    assert count.dtype == np.int32


# --- modes, cap and overflow ---------------------------------------------------


def test_all_in_radius_keeps_everyone_up_to_the_cap_and_counts_the_rest():
    rng = np.random.default_rng(11)
    position, forward = cloud(rng, 400, 12.0, 3)
    r, fov = 4.0, 270.0
    inside, _, ambiguous = independent_candidates(position, forward, position, r, fov, True)
    for k in (3, 200):
        expected = assert_methods_agree(position, forward, position, r=r, k=k, fov=fov,
                                        mode="all_in_radius", exclude_self=True)
        _, _, count, overflow = expected
        clear = ~ambiguous.any(axis=1)
        np.testing.assert_array_equal((count + overflow)[clear], inside.sum(axis=1)[clear])
        assert np.all(count <= k)
        if k == 3:
            assert overflow.max() > 0
        else:
            assert overflow.max() == 0


def test_knn_and_all_in_radius_fill_identical_tables():
    rng = np.random.default_rng(12)
    position, forward = cloud(rng, 300, 15.0, 3)
    knn = snapshot(query("grid", position, forward, position, r=3.0, k=4, fov=200.0))
    air = snapshot(query("grid", position, forward, position, r=3.0, k=4, fov=200.0,
                         mode="all_in_radius"))
    assert_same(air, knn)


def test_field_of_view_filters_before_the_k_nearest_are_chosen():
    # Two close animals behind, two farther ones ahead: with a 90 degree view
    # and k = 2 the ones ahead are the neighbours ("filter, then take k").
    position = np.array([[0, 0, 0], [-1, 0, 0], [-1.2, 0, 0], [3, 0, 0], [3.5, 0, 0]], np.float32)
    forward = np.tile(np.array([[1, 0, 0]], np.float32), (5, 1))
    for method in ("brute", *FAST):
        nbrs = query(method, position[:1], forward[:1], position[1:], r=5.0, k=2, fov=90.0)
        assert nbrs.index[0].tolist() == [2, 3]
        assert nbrs.overflow[0] == 0
        np.testing.assert_allclose(nbrs.distance[0], [3.0, 3.5])


def test_zero_forward_sees_all_around():
    position = np.array([[0, 0, 0], [-1, 0, 0], [0, 0, 2], [1.5, 0, 0]], np.float32)
    forward = np.zeros((1, 3), np.float32)
    for method in ("brute", *FAST):
        nbrs = query(method, position[:1], forward, position, r=5.0, k=4, fov=10.0,
                     exclude_self=False)
        assert nbrs.index[0].tolist() == [0, 1, 3, 2]


# --- populations ---------------------------------------------------------------


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("wrap", [False, True])
def test_cross_population_queries_index_the_targets(dims, wrap):
    rng = np.random.default_rng(20 + dims + 2 * wrap)
    side = 25.0
    prey, prey_forward = cloud(rng, 350, side, dims)
    wolves, _ = cloud(rng, 40, side, dims)
    box = np.array([side, side, side]) if wrap else None
    # Wolves query the prey, and the prey query the wolves.
    wolf_forward = cloud(rng, 40, side, dims)[1]
    expected = assert_methods_agree(wolves, wolf_forward, prey, r=6.0, k=7, fov=250.0, box=box)
    assert expected[0].max() < prey.shape[0] and expected[2].sum() > 0
    assert_methods_agree(prey, prey_forward, wolves, r=6.0, k=3, fov=250.0, box=box)


def test_queriers_outside_the_targets_extent_find_nothing_or_the_edge():
    rng = np.random.default_rng(5)
    targets, _ = cloud(rng, 200, 10.0, 3)
    far = np.array([[100, 100, 100], [-50, 5, 5], [10.5, 5, 5], [-0.5, 2, 3]], np.float32)
    forward = np.zeros_like(far)
    expected = assert_methods_agree(far, forward, targets, r=2.0, k=4)
    assert expected[2][0] == 0 and expected[2][1] == 0


def test_exclude_self_skips_only_the_querier_itself():
    # Duplicated positions: each animal's twin is a neighbour at distance 0.
    base = np.array([[0, 0, 0], [1, 0, 0], [5, 5, 5]], np.float32)
    position = np.concatenate([base, base])
    forward = np.tile(np.array([[0, 0, 1]], np.float32), (6, 1))
    for method in ("brute", *FAST):
        nbrs = query(method, position, forward, position, r=1.5, k=3, fov=60.0, exclude_self=True)
        assert nbrs.index[0].tolist() == [3, -1, -1]  # twin kept; index 1 lies outside the view
        assert nbrs.distance[0, 0] == 0.0
        assert nbrs.index[2].tolist() == [5, -1, -1]
        assert nbrs.index[5].tolist() == [2, -1, -1]
        # Without exclusion the animal itself comes first (lower index on a tie at 0).
        nbrs = query(method, position, forward, position, r=1.5, k=3, fov=60.0)
        assert nbrs.index[0].tolist() == [0, 3, -1]
        assert nbrs.index[3].tolist() == [0, 3, -1]


def test_exclude_self_works_when_the_population_is_passed_as_a_copy():
    rng = np.random.default_rng(8)
    position, forward = cloud(rng, 300, 15.0, 3)
    expected = assert_methods_agree(position, forward, position, r=3.0, k=5, fov=270.0,
                                    exclude_self=True)
    copy = assert_methods_agree(position, forward, position.copy(), r=3.0, k=5, fov=270.0,
                                exclude_self=True)
    assert_same(copy, expected)


def test_exclude_self_requires_one_population():
    p = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match="n == m"):
        query("grid", p, p, p[:2], r=1.0, k=1, exclude_self=True)


# --- wrap-around -----------------------------------------------------------------


def test_wraparound_box_uses_the_minimum_image():
    box = np.array([10.0, 10.0, 10.0])
    position = np.array([[0.2, 5, 5], [9.9, 5, 5], [5, 9.8, 0.1], [5, 0.3, 9.95]], np.float32)
    forward = np.array([[-1, 0, 0], [1, 0, 0], [0, 1, 0], [0, -1, 0]], np.float32)
    for method in ("brute", *FAST):
        nbrs = query(method, position, forward, position, r=1.0, k=2, fov=90.0,
                     exclude_self=True, box=box)
        assert nbrs.index[:, 0].tolist() == [1, 0, 3, 2]
        np.testing.assert_allclose(nbrs.distance[:2, 0], 0.3, atol=1e-5)
        # Without the box the same animals are far apart.
        nbrs = query(method, position, forward, position, r=1.0, k=2, exclude_self=True)
        assert nbrs.count.tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("side", [3.0, 7.0, 40.0])
def test_small_and_large_boxes_relative_to_the_radius(side):
    # A box barely larger than the radius makes every cell reachable twice over
    # the seam; the query must still see each animal once, at its nearest image.
    rng = np.random.default_rng(int(side))
    position, forward = cloud(rng, 150, side, 3)
    assert_methods_agree(position, forward, position, r=2.5, k=8, fov=300.0,
                         exclude_self=True, box=np.array([side, side, side]))


def test_world_box_that_does_not_start_at_the_origin():
    # A world over [-L/2, L/2): the minimum image is translation invariant, so
    # only the box's side lengths matter.
    rng = np.random.default_rng(19)
    side = 30.0
    position, forward = cloud(rng, 600, side, 3)
    position -= np.float32(side / 2)
    box = np.array([side, side, side])
    expected = assert_methods_agree(position, forward, position, r=4.0, k=5, fov=270.0,
                                    exclude_self=True, box=box)
    assert expected[2].sum() > 0


def test_box_with_a_non_wrapping_axis_and_positions_outside_it():
    rng = np.random.default_rng(9)
    position, forward = cloud(rng, 400, 20.0, 3)
    position[:, 1] *= 3.0  # y spans 60 m and does not wrap
    position[:10, 0] += 60.0  # some coordinates outside [0, L): the minimum image
    position[10:20, 2] -= 40.0  # still applies, whole periods away
    box = np.array([20.0, np.inf, 20.0])
    assert_methods_agree(position, forward, position, r=3.0, k=6, fov=270.0,
                         exclude_self=True, box=box)


def test_2d_world_in_a_3d_box_is_gridded_flat_in_y():
    rng = np.random.default_rng(10)
    side = 50.0
    position, forward = cloud(rng, 500, side, 2)
    box = np.array([side, side, side])
    assert_methods_agree(position, forward, position, r=4.0, k=5, fov=270.0,
                         exclude_self=True, box=box)
    grid = GridIndex()
    grid.build(position, 4.0, normalize_box(box))
    assert grid.dims[1] == 1


def test_minimum_image_matches_the_query_offsets():
    box = np.array([10.0, 0.0, 4.0], np.float32)
    offset = np.array([6.0, -9.0, -2.5], np.float32)
    wrapped = minimum_image(offset, box)
    np.testing.assert_allclose(wrapped, [-4.0, -9.0, 1.5])
    assert wrapped.dtype == np.float32
    assert wrap_offset(np.float32(-7.0), np.float32(10.0)) == np.float32(3.0)
    assert wrap_offset(np.float32(-7.0), np.float32(np.inf)) == np.float32(-7.0)
    # The distance a query reports is the norm of this offset, bit for bit.
    position = np.array([[1.0, 0.0, 0.5], [7.0, -9.0, 3.0]], np.float32)
    nbrs = query("grid", position[:1], np.zeros((1, 3), np.float32), position, r=20.0, k=2,
                 box=box, exclude_self=False)
    o = minimum_image(position[1] - position[0], box)
    d2 = (o[0] * o[0] + o[1] * o[1]) + o[2] * o[2]  # float32 arithmetic, as the kernels
    assert nbrs.distance[0, 1] == np.sqrt(d2)


# --- degenerate inputs ---------------------------------------------------------


@pytest.mark.parametrize("method", ["brute", *FAST])
def test_empty_self_and_empty_target(method):
    rng = np.random.default_rng(0)
    position, forward = cloud(rng, 5, 5.0)
    empty = np.zeros((0, 3), np.float32)
    nbrs = query(method, empty, empty, position, r=2.0, k=3)
    assert nbrs.index.shape == (0, 3) and nbrs.count.shape == (0,)
    nbrs = query(method, position, forward, empty, r=2.0, k=3)
    assert nbrs.index.shape == (5, 3)
    assert np.all(nbrs.index == -1) and np.all(np.isinf(nbrs.distance))
    assert np.all(nbrs.count == 0) and np.all(nbrs.overflow == 0)
    nbrs = query(method, empty, empty, empty, r=2.0, k=3, exclude_self=True)
    assert nbrs.index.shape == (0, 3)


@pytest.mark.parametrize("method", ["brute", *FAST])
def test_a_single_animal(method):
    p = np.array([[3.0, 4.0, 5.0]], np.float32)
    f = np.array([[1.0, 0.0, 0.0]], np.float32)
    alone = query(method, p, f, p, r=1.0, k=2, exclude_self=True)
    assert alone.index.tolist() == [[-1, -1]] and alone.count.tolist() == [0]
    itself = query(method, p, f, p, r=1.0, k=2, fov=30.0)
    assert itself.index.tolist() == [[0, -1]] and itself.distance[0, 0] == 0.0


def test_exact_ties_on_a_lattice_are_broken_by_target_index():
    # A 2D lattice: the four axis neighbours tie at 1, the four diagonals at sqrt(2).
    g = np.arange(-2, 3, dtype=np.float32)
    xx, zz = np.meshgrid(g, g, indexing="ij")
    lattice = np.stack([xx.ravel(), np.zeros(xx.size, np.float32), zz.ravel()], axis=1)
    rng = np.random.default_rng(4)
    shuffled = lattice[rng.permutation(lattice.shape[0])]
    centre = np.flatnonzero(np.all(shuffled == 0, axis=1))[0]
    me = shuffled[centre:centre + 1]
    f = np.zeros((1, 3), np.float32)
    expected = assert_methods_agree(me, f, shuffled, r=1.5, k=6)
    index, distance, count, overflow = expected
    axis = sorted(np.flatnonzero(np.abs(shuffled).sum(axis=1) == 1).tolist())
    corner = (np.abs(shuffled[:, 0]) == 1) & (np.abs(shuffled[:, 2]) == 1)
    diagonal = sorted(np.flatnonzero(corner).tolist())
    assert index[0].tolist() == [centre] + axis + diagonal[:1]
    assert overflow[0] == 3
    # Ties across the whole lattice, every animal querying, in 2D and stacked 3D.
    stacked = np.concatenate([lattice + [0, dy, 0] for dy in (0.0, 1.0, 2.0)]).astype(np.float32)
    forward = np.tile(np.array([[1, 0, 0]], np.float32), (stacked.shape[0], 1))
    for fov in (90.0, 180.0, 270.0, 360.0):
        assert_methods_agree(stacked, forward, stacked, r=1.5, k=5, fov=fov, exclude_self=True)


@pytest.mark.parametrize("side, r, reach, ks", [
    (7, 2.5, 80, (40, 81, 128)),  # 80 in reach: more than the small ranking, ranked as mostly kept
    (9, 3.5, 178, (100, 178, 256)),  # 178 in reach: past the ranking of mostly kept rows, the key sort
])
def test_crowded_rows_with_ties_are_sorted_by_distance_then_index(side, r, reach, ks):
    # A shuffled lattice: the centre's neighbours lie in shells of equal distance, so the order
    # within a shell is the target index's.
    g = np.arange(-(side // 2), side // 2 + 1, dtype=np.float32)
    lattice = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)
    shuffled = lattice[np.random.default_rng(5).permutation(lattice.shape[0])]
    forward = np.tile(np.array([[0, 0, 1]], np.float32), (shuffled.shape[0], 1))
    for k in ks:
        index, distance, count, overflow = assert_methods_agree(
            shuffled, forward, shuffled, r=r, k=k, fov=360.0, exclude_self=True)
        centre = np.flatnonzero(np.all(shuffled == 0, axis=1))[0]
        assert count[centre] == min(reach, k) and overflow[centre] == reach - count[centre]
        row = distance[centre, :count[centre]]
        assert np.all(np.diff(row) >= 0)
        for d in np.unique(row):  # within a shell of equal distance, by target index
            shell = index[centre, :count[centre]][row == d]
            assert np.all(np.diff(shell) > 0)


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("wrap", [False, True])
def test_crowded_random_rows_equal_brute_force(dims, wrap):
    # 33 to 2k candidates per row (most of them kept): the ranking up to 128, the key sort
    # beyond, against brute force, with fields of view, zero forwards and a periodic box
    rng = np.random.default_rng(40 + 2 * dims + wrap)
    side = 5.0 if dims == 3 else 12.0
    position, forward = cloud(rng, 1000, side, dims)
    box = np.array([side, side, side]) if wrap else None
    grow = 1.0 if dims == 3 else 1.6
    ranked = sorted_ = 0
    for r, k, fov in ((1.4, 64, 360.0), (1.5, 128, 270.0), (1.2, 40, 300.0), (1.9, 128, 360.0)):
        index, distance, count, overflow = assert_methods_agree(
            position, forward, position, r=r * grow, k=k, fov=fov, exclude_self=True, box=box)
        seen = count + overflow
        assert np.mean((seen > 32) & (seen <= 2 * k)) > 0.3, (r, k, fov)
        ranked += np.sum((seen > 32) & (seen <= 128) & (seen <= 2 * k))
        sorted_ += np.sum((seen > 128) & (seen <= 2 * k))
    assert ranked > 500 and sorted_ > 300, (ranked, sorted_)


def test_neighbours_exactly_on_the_radius_and_on_the_edge_of_view_are_seen():
    me = np.zeros((1, 3), np.float32)
    f = np.array([[1, 0, 0]], np.float32)
    # At exactly r = 2; at exactly 45 and 135 degrees from forward.
    targets = np.array([[2, 0, 0], [1, 0, 1], [-1, 0, 1], [2.0001, 0, 0]], np.float32)
    for method in ("brute", *FAST):
        nbrs = query(method, me, f, targets, r=2.0, k=4, fov=90.0)
        assert nbrs.index[0].tolist() == [1, 0, -1, -1]
        nbrs = query(method, me, f, targets, r=2.0, k=4, fov=270.0)
        assert nbrs.index[0].tolist() == [1, 2, 0, -1]
    # An awkward radius: "distance <= r" holds for the reported float32 distance.
    r = 0.1
    targets = np.array([[0.1, 0, 0], [0.06, 0.08, 0]], np.float32)
    for method in ("brute", *FAST):
        nbrs = query(method, me, f, targets, r=r, k=2)
        kept = nbrs.distance[0, :nbrs.count[0]]
        assert np.all(kept.astype(np.float64) <= r)


def test_coincident_points_are_kept_and_visible():
    position = np.zeros((4, 3), np.float32)
    forward = np.tile(np.array([[0, 1, 0]], np.float32), (4, 1))
    for method in ("brute", *FAST):
        nbrs = query(method, position, forward, position, r=1.0, k=2, fov=1.0, exclude_self=True)
        assert nbrs.index.tolist() == [[1, 2], [0, 2], [0, 1], [0, 1]]
        assert np.all(nbrs.distance == 0.0) and nbrs.overflow.tolist() == [1, 1, 1, 1]


def test_non_finite_positions_are_never_neighbours():
    rng = np.random.default_rng(6)
    position, forward = cloud(rng, 200, 10.0, 3)
    position[3] = np.nan
    position[7, 0] = np.inf
    expected = assert_methods_agree(position, forward, position, r=2.0, k=4, exclude_self=True)
    index, _, count, _ = expected
    assert count[3] == 0 and count[7] == 0
    assert not np.isin(index, [3, 7]).any()


def test_far_flung_population_falls_back_to_hashing():
    rng = np.random.default_rng(13)
    flock, forward = cloud(rng, 500, 20.0, 3)
    flock[0] = [3e5, -2e5, 1e5]  # a straggler far away
    flock[1] = [3e5 + 1.0, -2e5, 1e5]  # and its companion
    grid = GridIndex()
    grid.build(flock, 2.5)
    assert grid.mode == "hash"
    expected = assert_methods_agree(flock, forward, flock, r=2.5, k=5, fov=270.0,
                                    exclude_self=True)
    assert expected[0][0, 0] == 1 and expected[0][1, 0] == 0


def test_moderately_sparse_population_uses_larger_dense_cells():
    rng = np.random.default_rng(14)
    flock, forward = cloud(rng, 300, 90.0, 3)
    grid = GridIndex()
    grid.build(flock, 2.0)
    assert grid.mode == "dense" and min(grid.cell_width) > 2.0
    assert_methods_agree(flock, forward, flock, r=2.0, k=3, exclude_self=True)


def test_a_crowd_uses_cells_of_half_the_radius_and_a_sparse_flock_cells_of_the_radius():
    rng = np.random.default_rng(15)
    crowd, forward = cloud(rng, 1000, 12.0, 3)  # about 9 birds per radius-wide cell
    grid = GridIndex()
    grid.build(crowd, 2.0)
    assert grid.mode == "dense" and max(grid.cell_width) < 1.1
    sparse, _ = cloud(rng, 1000, 46.4, 3)  # density 0.01 at r = 5: 1.4 per cell
    grid.build(sparse, 5.0)
    assert min(grid.cell_width) >= 5.0
    assert_methods_agree(crowd, forward, crowd, r=2.0, k=7, fov=300.0, exclude_self=True)


def test_a_flat_axis_of_a_periodic_world_is_gridded_without_the_minimum_image():
    # A planar world that wraps in all three axes (Vicsek's): everyone at one height, so no
    # pair's offset along y reaches half the period and y is gridded as a plain axis;
    # x and z stay rings, and rows across their seams still find their images.
    rng = np.random.default_rng(16)
    side = 12.0
    flat, forward = cloud(rng, 600, side, 2, y=0.5)
    box = np.array([side, 1.0, side], np.float32)
    grid = GridIndex()
    grid.build(flat, 1.5, box=box)
    assert list(grid.geom[9:12]) == [side, 0.0, side]
    index, _, count, _ = assert_methods_agree(flat, forward, flat, r=1.5, k=16, fov=300.0, exclude_self=True,
                                              box=box)
    near_seam = (flat[:, 0] < 1.5) | (flat[:, 0] > side - 1.5)
    across = [(i, j) for i in np.flatnonzero(near_seam) for j in index[i, :count[i]]
              if abs(flat[j, 0] - flat[i, 0]) > side / 2]
    assert len(across) > 20  # neighbours found through the x seam
    # spread over more than 0.45 of the period, an axis stays a ring
    tall = flat.copy()
    tall[:, 1] = rng.random(600).astype(np.float32) * 0.6
    grid.build(tall, 1.5, box=box)
    assert grid.geom[10] == 1.0
    assert_methods_agree(tall, forward, tall, r=1.5, k=16, fov=300.0, exclude_self=True, box=box)


def test_inputs_are_converted_to_contiguous_float32():
    rng = np.random.default_rng(15)
    position, forward = cloud(rng, 100, 8.0, 3)
    wide = np.asfortranarray(position.astype(np.float64))
    expected = snapshot(query("grid", position, forward, position, r=2.0, k=3))
    actual = snapshot(query("grid", wide, forward.tolist(), wide, r=2.0, k=3))
    assert_same(actual, expected)
    with pytest.raises(ValueError, match="shape"):
        query("grid", position[:, :2], forward, position, r=2.0, k=3)


def test_spec_validation_names_the_field():
    for kwargs, field in (
        (dict(max_distance=0.0, k=1), "max_distance"),
        (dict(max_distance=float("nan"), k=1), "max_distance"),
        (dict(max_distance=1.0, k=0), "k"),
        (dict(max_distance=1.0, k=2.5), "k"),
        (dict(max_distance=1.0, k=1, fov_deg=0.0), "fov_deg"),
        (dict(max_distance=1.0, k=1, fov_deg=361.0), "fov_deg"),
        (dict(max_distance=1.0, k=1, mode="nearest"), "mode"),
        (dict(max_distance=1.0, k=1, method="octree"), "method"),
    ):
        with pytest.raises(ValueError, match=field):
            NeighborQuerySpec(**kwargs)
    with pytest.raises(ValueError, match="box"):
        normalize_box([1.0, 2.0])
    with pytest.raises(ValueError, match="box"):
        normalize_box([1.0, -2.0, 3.0])
    assert normalize_box([np.inf, 0.0, np.inf]) is None


def test_distance_threshold_is_exactly_the_inclusive_radius():
    for r in (0.1, 1.0, 5.0, 7.3, 123.456):
        r2, _, _ = query_thresholds(r, 360.0)
        assert float(np.sqrt(r2)) <= r
        assert float(np.sqrt(np.nextafter(r2, np.float32(np.inf)))) > r


# --- buffers, threads, kernels --------------------------------------------------


def test_buffers_are_reused_across_calls():
    rng = np.random.default_rng(16)
    position, forward = cloud(rng, 300, 12.0, 3)
    out = Neighbors()
    first = query("grid", position, forward, position, r=2.0, k=4, exclude_self=True, out=out)
    assert first is out
    buffers = (out.index, out.distance, out.count, out.overflow)
    grid_buffers = (out._grid.positions, out._grid.order, out._grid.start)
    moved = position + np.float32(0.01)
    second = query("grid", moved, forward, moved, r=2.0, k=4, exclude_self=True, out=out)
    for before, after in zip(buffers, (out.index, out.distance, out.count, out.overflow)):
        assert after is before or after.base is before.base
    for before, after in zip(grid_buffers, (out._grid.positions, out._grid.order, out._grid.start)):
        assert after is before
    assert_same(snapshot(second), snapshot(query("brute", moved, forward, moved, r=2.0, k=4,
                                                exclude_self=True)))
    # Fewer animals: views of the same storage; more animals or another k: regrown.
    query("grid", position[:100], forward[:100], position[:100], r=2.0, k=4, out=out)
    assert out.index.shape == (100, 4) and np.shares_memory(out.index, buffers[0])
    query("grid", position, forward, position, r=2.0, k=6, out=out)
    assert out.index.shape == (300, 6)


def test_one_table_reused_across_changing_populations():
    # Sizes grow and shrink, populations switch between self and cross queries:
    # every buffer (rows, sorted copies, cell counts) must keep up.
    rng = np.random.default_rng(21)
    out = Neighbors()
    for step in range(25):
        n = int(rng.integers(0, 700))
        same = bool(rng.random() < 0.5)
        m = n if same else int(rng.integers(0, 900))
        side = float(rng.choice([5.0, 20.0, 60.0]))
        position, forward = cloud(rng, n, side, 3)
        target = position if same else cloud(rng, m, side, 3)[0]
        k = int(rng.integers(1, 7))
        kwargs = dict(r=3.0, k=k, fov=270.0, exclude_self=same)
        actual = snapshot(query("grid", position, forward, target, out=out, **kwargs))
        expected = snapshot(query("brute", position, forward, target, **kwargs))
        assert_same(actual, expected, f"step {step}")


def test_results_do_not_depend_on_the_thread_count(monkeypatch):
    # Force the parallel kernels, the chunked counting sort and the cell-order
    # row scatter onto a modest cloud, then compare 1 thread with all threads.
    monkeypatch.setattr(parallel_module, "_threads_from", 1)  # threads from one animal (starling.parallel)
    monkeypatch.setattr(grid_module, "PARALLEL_BUILD_MIN", 0)
    monkeypatch.setattr(grid_module, "DIRECT_ROWS_MAX", 0)
    rng = np.random.default_rng(17)
    position, forward = cloud(rng, 3000, 40.0, 3)
    others, other_forward = cloud(rng, 500, 40.0, 3)
    box = np.array([40.0, 40.0, 40.0])
    results = {}
    threads = numba.get_num_threads()
    try:
        for n_threads in sorted({1, threads}):
            numba.set_num_threads(n_threads)
            results[n_threads] = [
                snapshot(query(m, position, forward, position, r=3.0, k=5, fov=270.0,
                               exclude_self=True, box=box))
                for m in FAST
            ] + [snapshot(query("grid", others, other_forward, position, r=3.0, k=5, fov=270.0,
                                box=box))]
    finally:
        numba.set_num_threads(threads)
    reference = results[1]
    for n_threads, result in results.items():
        for a, b in zip(result, reference):
            assert_same(a, b, f"threads={n_threads}")
    brute = snapshot(query("brute", position, forward, position, r=3.0, k=5, fov=270.0,
                           exclude_self=True, box=box))
    for same_population in reference[:len(FAST)]:
        assert_same(same_population, brute)
    assert_same(reference[-1], snapshot(query("brute", others, other_forward, position, r=3.0,
                                             k=5, fov=270.0, box=box)))


def test_dense_neighbourhoods_overflow_the_candidate_buffer_correctly():
    # Thousands of animals within reach of each other: the grid's per-thread
    # buffer fills up and is emptied into the rows by insertion.
    rng = np.random.default_rng(18)
    position, forward = cloud(rng, 1500, 2.0, 3)
    for k in (3, 40):
        assert_methods_agree(position[:300], forward[:300], position, r=1.8, k=k, fov=300.0)


# --- property test ----------------------------------------------------------------

coordinate = st.floats(min_value=-4.0, max_value=4.0, allow_nan=False, width=32)


@st.composite
def scenes(draw):
    dims = draw(st.sampled_from([2, 3]))
    n = draw(st.integers(0, 30))
    same = draw(st.booleans())
    m = n if same else draw(st.integers(0, 30))
    lattice = draw(st.booleans())

    def points(count):
        if lattice:  # integer points: many exact ties and coincidences
            values = draw(st.lists(st.integers(-3, 3), min_size=3 * count, max_size=3 * count))
        else:
            values = draw(st.lists(coordinate, min_size=3 * count, max_size=3 * count))
        p = np.array(values, np.float32).reshape(count, 3)
        if dims == 2:
            p[:, 1] = 0.5
        return p

    position = points(n)
    target = position if same else points(m)
    directions = draw(st.lists(st.sampled_from(
        [(1, 0, 0), (0, 0, 1), (-1, 0, 0), (0.6, 0, 0.8), (0, 1, 0), (0, 0, 0)]),
        min_size=n, max_size=n))
    forward = np.array(directions, np.float32).reshape(n, 3)
    wrap = draw(st.booleans())
    box = np.array([8.0, 8.0 if dims == 3 else np.inf, 8.0]) if wrap else None
    if wrap:
        position = np.mod(position, 8.0).astype(np.float32)
        target = position if same else np.mod(target, 8.0).astype(np.float32)
    return dict(
        self_position=position,
        self_forward=forward,
        target_position=target,
        r=draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.7])),
        k=draw(st.integers(1, 6)),
        fov=draw(st.sampled_from([30.0, 90.0, 180.0, 270.0, 359.0, 360.0])),
        mode=draw(st.sampled_from(["knn", "all_in_radius"])),
        exclude_self=same and draw(st.booleans()),
        box=box,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenes())
def test_property_every_method_equals_brute_force(scene):
    scene = dict(scene)
    p, f, t = scene.pop("self_position"), scene.pop("self_forward"), scene.pop("target_position")
    expected = assert_methods_agree(p, f, t, **scene)
    index, distance, count, overflow = expected
    assert np.all(count >= 0) and np.all(overflow >= 0) and np.all(count <= scene["k"])
    assert not np.isnan(distance).any()


def test_the_grid_query_counts_no_references_per_row(monkeypatch, references_outside_entry):
    # every row of a dense flock goes through the insertion path, and a crowded one through
    # the sort: neither may count a reference per row (an atomic operation per animal and step)
    calls = []
    monkeypatch.setattr(grid_module, "_query_serial", lambda *args: calls.append(args))
    rng = np.random.default_rng(3)
    flock = rng.uniform(0.0, 4.0, (300, 3)).astype(np.float32)
    grid = GridIndex()
    grid.build(flock, 2.0)
    forward = np.tile(np.array([1.0, 0.0, 0.0], np.float32), (300, 1))
    index, distance = np.empty((300, 5), np.int32), np.empty((300, 5), np.float32)
    count, overflow = np.empty(300, np.int32), np.empty(300, np.int32)
    grid.query(flock, forward, 2.0, 360.0, 5, index, distance, count, overflow, exclude_self=True)
    assert len(calls) == 1
    assert references_outside_entry(grid_query._query_serial, *calls[0]) == 0


def test_one_grid_writes_rows_of_every_layout_it_is_handed_in_turn(monkeypatch):
    # The grid calls its query kernel through a call site, which skips Numba's typing after the
    # first call. Output rows of another layout (a wider table's first k columns, Fortran
    # order) or the grid's own rows (for many animals) must each get their own compiled
    # version, or the kernel would write with the wrong strides.
    rng = np.random.default_rng(21)
    flock, forward = cloud(rng, 400, 10.0, 3)
    k = 5
    expected = snapshot(query("brute", flock, forward, flock, r=2.0, k=k, fov=270.0, exclude_self=True))
    grid = GridIndex()
    grid.build(flock, 2.0, target_forward=forward)

    def rows(kind):
        n = flock.shape[0]
        count, overflow = np.zeros(n, np.int32), np.zeros(n, np.int32)
        if kind == "contiguous":
            return np.zeros((n, k), np.int32), np.zeros((n, k), np.float32), count, overflow
        if kind == "wider":
            return np.zeros((n, k + 3), np.int32)[:, :k], np.zeros((n, k + 3), np.float32)[:, :k], count, overflow
        return np.zeros((n, k), np.int32, order="F"), np.zeros((n, k), np.float32, order="F"), count, overflow

    with kernel_calls.checking():
        for kind, direct in [("contiguous", True), ("wider", True), ("contiguous", False), ("fortran", True),
                             ("contiguous", True), ("wider", False), ("wider", True)]:
            monkeypatch.setattr(grid_module, "DIRECT_ROWS_MAX", 32_768 if direct else 0)
            out = rows(kind)
            grid.query(flock, forward, 2.0, 270.0, k, *out, exclude_self=True)
            assert_same(out, expected, f"{kind} rows, {'written directly' if direct else 'scattered'}")
