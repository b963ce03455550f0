"""Vector helpers: the fast arccos, the slerps' cosine and sine, and slerp."""
import math

import numpy as np

from numba import njit

from starling.steering.vecmath import SLERP_APART, cos_sin_half_turn, fast_acos, slerp_apart, slerp_unit


def test_fast_acos_is_within_2e8_radians_everywhere():
    xs = np.concatenate([np.linspace(-1, 1, 200_001), [-1.0, -0.0, 0.0, 1.0, 0.999999999, -0.999999999]])
    err = max(abs(fast_acos(float(x)) - math.acos(x)) for x in xs)
    assert err < 2.5e-8


def test_fast_acos_clamps_rounding_overshoot():
    assert fast_acos(1.0000001) == 0.0
    assert abs(fast_acos(-1.0000001) - math.pi) < 1e-12


@njit
def _cos_sin_over(thetas):
    """cos_sin_half_turn over an array, in a loop as the mover's stages call it (LLVM may vectorise it)."""
    c = np.empty_like(thetas)
    s = np.empty_like(thetas)
    for i in range(thetas.size):
        c[i], s[i] = cos_sin_half_turn(thetas[i])
    return c, s


def test_the_slerps_cosine_and_sine_are_within_4e16_of_the_c_library_on_a_half_turn():
    # the oracle is the C library (math.cos, math.sin); edges, a grid and random angles in [0, π]
    rng = np.random.default_rng(7)
    thetas = np.concatenate([[0.0, 1e-12, 1e-6, math.pi / 4, math.pi / 2, math.pi - 1e-9, math.pi],
                             np.linspace(0.0, math.pi, 100_001), rng.uniform(0.0, math.pi, 100_000)])
    c, s = _cos_sin_over(thetas)
    assert np.abs(c - np.cos(thetas)).max() < 4e-16
    assert np.abs(s - np.sin(thetas)).max() < 4e-16
    one = [cos_sin_half_turn(float(t)) for t in thetas[:7]]  # the scalar form gives the same bits
    assert one == list(zip(c[:7].tolist(), s[:7].tolist()))
    assert abs(one[0][0] - 1.0) < 4e-16 and abs(one[0][1]) < 4e-16 and abs(one[-1][0] + 1.0) < 4e-16


def test_slerp_moves_by_the_fraction_of_the_angle_and_stays_unit():
    a = (1.0, 0.0, 0.0)
    b = (0.0, 0.0, 1.0)
    x, y, z = slerp_unit(*a, *b, 0.25)
    assert abs(math.hypot(x, y, z) - 1) < 1e-12
    assert abs(math.degrees(math.acos(x)) - 22.5) < 1e-5  # slerp uses fast_acos (2e-8 rad)
    x, y, z = slerp_unit(*a, -1.0, 0.0, 0.0, 0.5)  # antiparallel: still a unit vector, 90° away
    assert abs(math.hypot(x, y, z) - 1) < 1e-12 and abs(x) < 1e-9


def test_the_general_slerp_is_slerp_unit_bit_for_bit_where_the_vectors_are_apart():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2000, 3))
    b = rng.normal(size=(2000, 3))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    t = rng.uniform(0, 1, 2000)
    apart = 0
    for (ax, ay, az), (bx, by, bz), f in zip(a, b, t):
        c = ax * bx + ay * by + az * bz
        if abs(c) <= SLERP_APART:
            apart += 1
            assert slerp_apart(ax, ay, az, bx, by, bz, c, f) == slerp_unit(ax, ay, az, bx, by, bz, f)
    assert apart > 1900
