"""The shared pair geometry: hand-computed values, and the SIMD kernel against its one-pass reference."""
import math

import numpy as np
import pytest

from starling.steering.queries.pairs import PairGeometry, _geometry_range, geometry_one_pass_range


def _run(kernel, position, forward, target, index, count, box):
    n, k = index.shape
    direction = np.full((n, k, 3), 7.0, np.float32)
    distance = np.full((n, k), 7.0, np.float32)
    angle = np.full((n, k), 7.0, np.float32)
    kernel(0, n, position, forward, target, index, count, box, direction, distance, angle)
    return direction, distance, angle


def test_hand_computed_pairs_in_a_periodic_box():
    # animal 0 at x = 0.5 facing +x; target 0 at x = 9.5 is 1 m behind it through the seam (box 10),
    # target 1 is 3 m ahead and 4 m up: distance 5, direction (0.6, 0.8, 0), angle acos(0.6)
    position = np.array([[0.5, 0.0, 0.0]], np.float32)
    forward = np.array([[2.0, 0.0, 0.0]], np.float32)  # not unit: the kernel normalises it
    target = np.array([[9.5, 0.0, 0.0], [3.5, 4.0, 0.0]], np.float32)
    index = np.array([[0, 1, -1]], np.int32)
    count = np.array([2], np.int32)
    box = np.array([10.0, 0.0, 0.0], np.float32)  # only x wraps
    direction, distance, angle = PairGeometry().compute(position, forward, target, index, count, box)
    assert distance[0, :2] == pytest.approx([1.0, 5.0], abs=1e-6)
    assert direction[0, 0] == pytest.approx([-1.0, 0.0, 0.0], abs=1e-6)
    assert direction[0, 1] == pytest.approx([0.6, 0.8, 0.0], abs=1e-6)
    assert angle[0, :2] == pytest.approx([math.pi, math.acos(0.6)], abs=2e-6)


def test_coincident_animals_and_an_animal_without_a_forward_get_zeros():
    position = np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]], np.float32)
    forward = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]], np.float32)
    target = np.array([[1.0, 1.0, 1.0], [0.0, 2.0, 0.0]], np.float32)
    index = np.array([[0], [1]], np.int32)
    count = np.array([1, 1], np.int32)
    direction, distance, angle = _run(_geometry_range, position, forward, target, index, count, np.zeros(3, np.float32))
    assert distance[0, 0] == 0.0 and list(direction[0, 0]) == [0.0, 0.0, 0.0] and angle[0, 0] == 0.0
    assert distance[1, 0] == 2.0 and list(direction[1, 0]) == [0.0, 1.0, 0.0] and angle[1, 0] == 0.0


@pytest.mark.parametrize("box", [(0.0, 0.0, 0.0), (10.0, 0.0, 10.0), (10.0, 6.0, 8.0)])
@pytest.mark.parametrize("k", [1, 5, 17, 128])
def test_the_simd_kernel_equals_the_one_pass_reference_bit_for_bit(box, k):
    rng = np.random.default_rng(k)
    n = 300
    position = (rng.random((n, 3)) * 10).astype(np.float32)
    forward = (rng.random((n, 3)) - 0.5).astype(np.float32)
    forward[::7] = 0.0  # animals at rest
    index = rng.integers(0, n, (n, k)).astype(np.int32)
    index[::5, 0] = np.arange(0, n, 5)  # some animals are their own neighbour (distance 0)
    count = rng.integers(0, k + 1, n).astype(np.int32)
    args = (position, forward, position, index, count, np.array(box, np.float32))
    fast = _run(_geometry_range, *args)
    reference = _run(geometry_one_pass_range, *args)
    for got, want in zip(fast, reference):
        assert np.array_equal(got, want)
    threaded = PairGeometry().compute(*args, parallel=True)
    for got, want in zip(threaded, reference):
        valid = np.arange(k)[None, :] < count[:, None]
        assert np.array_equal(got[valid], want[valid])


def test_rows_within_the_box_skip_the_fold_and_still_equal_the_reference_bit_for_bit():
    """Near neighbours, as a query finds them: most rows cross no seam (the kernel then skips the
    minimum image), some do, on every wrapping axis; plus targets at infinity and NaN."""
    rng = np.random.default_rng(11)
    n, k = 400, 12
    side = np.float32(10.0)
    position = (rng.random((n, 3)) * side).astype(np.float32)
    position[:40] = (rng.random((40, 3)) * 0.3).astype(np.float32)  # in a corner: rows across seams
    forward = (rng.random((n, 3)) - 0.5).astype(np.float32)
    target = (position[rng.integers(0, n, n)] + rng.normal(scale=0.4, size=(n, 3))).astype(np.float32) % side
    target[:40] = (side - rng.random((40, 3)) * 0.3).astype(np.float32)  # across the seams from the corner
    target[397] = np.inf
    target[398] = -np.inf
    target[399] = np.nan
    index = rng.integers(0, n, (n, k)).astype(np.int32)
    index[:40] = rng.integers(0, 40, (40, k))
    index[40:200] = np.argsort(rng.random((160, n)), axis=1)[:, :k]  # anywhere: across the box
    index[200:] = rng.integers(40, 397, (200, k))
    index[::9, -1] = rng.integers(397, 400, len(index[::9]))
    count = np.full(n, k, np.int32)
    count[::4] = rng.integers(0, k, len(count[::4]))
    for box in [(side, side, side), (side, 0.0, side), (0.0, 0.0, 0.0)]:
        args = (position, forward, target, index, count, np.array(box, np.float32))
        fast = _run(_geometry_range, *args)
        reference = _run(geometry_one_pass_range, *args)
        for name, got, want in zip(("direction", "distance", "angle"), fast, reference):
            bad = np.argwhere(~((got == want) | (np.isnan(got) & np.isnan(want))))
            assert len(bad) == 0, (box, name, bad[:5], got[tuple(bad[0])], want[tuple(bad[0])])
