"""The movers' periodic wrap: Python's float modulo, bit for bit, without calling it when a step stays near."""
import math

import numpy as np
import pytest
from numba import njit

from starling.motion.movers import wrap_coordinate


@njit(cache=False)
def _wrap_all(xs, lo, size, out):
    for i in range(xs.shape[0]):
        out[i] = wrap_coordinate(xs[i], lo, size)


def _wrapped(xs, lo, size):
    out = np.empty_like(xs)
    _wrap_all(xs, lo, size, out)
    return out


def test_hand_computed_values_in_a_period_from_minus_ten_to_ten():
    xs = np.array([-10.0, -9.5, 0.0, 9.999, 10.0, 10.5, 29.0, -10.25, -30.0, 35.0])
    want = np.array([-10.0, -9.5, 0.0, 9.999, -10.0, -9.5, 9.0, 9.75, -10.0, -5.0])
    np.testing.assert_allclose(_wrapped(xs, -10.0, 20.0), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("lo, size", [(-10.0, 20.0), (0.0, 215.443469), (-107.7, 215.4), (3.0, 0.7)])
def test_equals_pythons_modulo_bit_for_bit(lo, size):
    rng = np.random.default_rng(11)
    # near the period (where the shortcut answers), far away (where the modulo runs) and the edges
    near = lo + rng.uniform(-size, 2 * size, 20_000)
    far = lo + rng.uniform(-50 * size, 50 * size, 2_000)
    edges = np.array([lo, lo + size, lo - size, lo + 2 * size, lo - 2 * size, lo + size * (1 - 1e-16),
                      lo - 1e-300, lo + 1e-300, np.nextafter(lo, -np.inf), np.nextafter(lo + size, np.inf),
                      np.nextafter(lo + 2 * size, -np.inf), np.nextafter(lo - size, np.inf)])
    xs = np.concatenate([near, far, edges])
    want = np.array([lo + (x - lo) % size for x in xs.tolist()])
    got = _wrapped(xs, lo, size)
    assert np.array_equal(got.view(np.int64), want.view(np.int64)), xs[got != want][:5]


def test_non_finite_coordinates_give_what_the_modulo_gives():
    xs = np.array([math.inf, -math.inf, math.nan])
    got = _wrapped(xs, -10.0, 20.0)
    assert np.isnan(got).all()
    assert all(math.isnan(-10.0 + (x + 10.0) % 20.0) for x in xs.tolist())
