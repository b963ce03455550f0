"""The halfway mover (seed 003, BoidBlending): constant speed, the heading turns half-way per half_time."""
import math

import numpy as np
import pytest

from starling.steering.registry import get_mover


def make(**params):
    spec = get_mover("halfway")
    return spec.factory(spec.params(**params))


def state(velocities, forwards=None):
    v = np.asarray(velocities, np.float32)
    n = len(v)
    f = np.asarray(forwards if forwards is not None else [[0, 0, 1]] * n, np.float32)
    return np.zeros((n, 3), np.float32) + [0, 1.5, 0], v.copy(), f.copy(), np.tile(np.float32([0, 1, 0]), (n, 1))


def step(mover, s, desired, dt, times=1, **kw):
    pos, vel, fwd, up = s
    d = np.asarray(desired, np.float32)
    for _ in range(times):
        mover.move(pos, vel, fwd, up, d, dt, **kw)
    return pos, vel, fwd, up


def test_one_step_of_half_time_is_the_bisector_at_constant_speed():
    # heading +z, desire +x: the normalised (x̂ + ẑ)/2 is 45° between them; speed stays 3
    mover = make(max_speed=3.0, half_time=0.02)
    pos, vel, fwd, up = step(mover, state([[0, 0, 2]]), [[5, 0, 0]], 0.02)
    h = math.sqrt(0.5)
    np.testing.assert_allclose(fwd[0], [h, 0, h], atol=1e-6)
    np.testing.assert_allclose(vel[0], [3 * h, 0, 3 * h], atol=1e-5)
    np.testing.assert_allclose(pos[0], [0.06 * h, 1.5, 0.06 * h], atol=1e-6)  # moved 3 m/s · 0.02 s
    np.testing.assert_allclose(up[0], [0, 1, 0], atol=1e-6)


def test_each_step_halves_the_remaining_angle():
    mover = make(max_speed=3.0, half_time=0.02)
    _, _, fwd, _ = step(mover, state([[0, 0, 2]]), [[1, 0, 0]], 0.02, times=2)
    a = math.radians(67.5)  # 45° then half of the remaining 45°
    np.testing.assert_allclose(fwd[0], [math.sin(a), 0, math.cos(a)], atol=1e-6)


def test_the_turn_does_not_depend_on_the_step():
    # two steps of 0.01 s turn as far as one of 0.02 s: 1 − (1 − t)² with t = 1 − 0.5^(1/2) is 1/2
    mover = make(max_speed=3.0, half_time=0.02)
    _, _, fwd, _ = step(mover, state([[0, 0, 2]]), [[1, 0, 0]], 0.01, times=2)
    h = math.sqrt(0.5)
    np.testing.assert_allclose(fwd[0], [h, 0, h], atol=1e-5)
    # with half_time 0.04 s one step of 0.02 s covers 1 − 0.5^0.5 ≈ 29 % of the 90°
    slow = make(max_speed=3.0, half_time=0.04)
    _, _, fwd, _ = step(slow, state([[0, 0, 2]]), [[1, 0, 0]], 0.02)
    angle = math.degrees(math.atan2(fwd[0, 0], fwd[0, 2]))
    assert angle == pytest.approx(90 * (1 - 0.5 ** 0.5), abs=1e-3)


def test_no_desire_keeps_the_heading_and_the_speed():
    mover = make(max_speed=3.0)
    pos, vel, fwd, _ = step(mover, state([[0, 0, 2]]), [[0, 0, 0]], 0.02)
    np.testing.assert_allclose(vel[0], [0, 0, 3], atol=1e-6)


def test_planar_ignores_the_vertical_part_and_turns_around_in_the_plane():
    mover = make(max_speed=3.0)
    pos, vel, fwd, _ = step(mover, state([[0, 0, 2], [0, 0, 2]]), [[0, 9, 1], [0, 0, -1]], 0.02)
    np.testing.assert_allclose(vel[0], [0, 0, 3], atol=1e-6)          # desire (0, 9, 1) is +z in the plane
    assert vel[1, 1] == 0 and abs(vel[1, 2]) < 1e-5                   # straight behind: half-way is sideways
    assert np.linalg.norm(vel[1]) == pytest.approx(3.0, rel=1e-6)
    assert (pos[:, 1] == 1.5).all()


def test_free_3d_turns_toward_up_too():
    mover = make(max_speed=2.0, planar=False)
    _, vel, fwd, up = step(mover, state([[0, 0, 1]]), [[0, 1, 0]], 0.02)
    h = math.sqrt(0.5)
    np.testing.assert_allclose(fwd[0], [0, h, h], atol=1e-6)
    np.testing.assert_allclose(up[0], [0, h, -h], atol=1e-6)  # world up made perpendicular to the heading
    assert not mover.planar and make().planar


def test_from_rest_the_heading_is_the_forward_vector():
    mover = make(max_speed=3.0)
    _, vel, _, _ = step(mover, state([[0, 0, 0]], [[1, 0, 0]]), [[0, 0, 0]], 0.02)
    np.testing.assert_allclose(vel[0], [3, 0, 0], atol=1e-6)


def test_per_animal_speeds_and_speed_scale():
    mover = make(max_speed={"uniform": [2.0, 4.0]})
    assert mover.max_speed == pytest.approx(3.0)  # the mean, where one number is needed
    s = state([[0, 0, 1], [0, 0, 1]])
    _, vel, _, _ = step(mover, s, [[0, 0, 1], [0, 0, 1]], 0.02, drawn={"max_speed": np.array([2.5, 3.5])},
                        speed_scale=np.array([1.0, 0.5], np.float32))
    np.testing.assert_allclose(vel[:, 2], [2.5, 1.75], atol=1e-6)


def test_parallel_and_serial_agree(rng):
    n = 2000
    v = rng.normal(size=(n, 3)).astype(np.float32)
    d = rng.normal(size=(n, 3)).astype(np.float32)
    mover = make(max_speed=3.0, planar=False)
    a = state(v)
    b = state(v)
    step(mover, a, d, 0.02)
    step(mover, b, d, 0.02, parallel=True)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
