"""The constant_speed mover (Vicsek 1995): a fixed speed, the heading becomes the desire at once
or turns toward it by at most turn_rate_deg per second."""
import math

import numpy as np
import pytest

from starling.steering.registry import get_mover


def make(**params):
    spec = get_mover("constant_speed")
    return spec.factory(spec.params(**params))


def state(velocities, forwards=None):
    v = np.asarray(velocities, np.float32)
    n = len(v)
    f = np.asarray(forwards if forwards is not None else [[0, 0, 1]] * n, np.float32)
    return np.zeros((n, 3), np.float32) + [0, 0.5, 0], v.copy(), f.copy(), np.tile(np.float32([0, 1, 0]), (n, 1))


def step(mover, s, desired, dt, times=1, **kw):
    pos, vel, fwd, up = s
    d = np.asarray(desired, np.float32)
    for _ in range(times):
        mover.move(pos, vel, fwd, up, d, dt, **kw)
    return pos, vel, fwd, up


def test_the_heading_becomes_the_desire_at_once_and_moves_v0_dt():
    # heading +z at 0.05, desire 5 m/s along (3, 0, 4)/5: new velocity 0.03·(0.6, 0, 0.8), moved by it × dt = 1
    mover = make(max_speed=0.03)
    pos, vel, fwd, up = step(mover, state([[0, 0, 0.05]]), [[3, 0, 4]], 1.0)
    np.testing.assert_allclose(fwd[0], [0.6, 0, 0.8], atol=1e-7)
    np.testing.assert_allclose(vel[0], [0.018, 0, 0.024], atol=1e-8)
    np.testing.assert_allclose(pos[0], [0.018, 0.5, 0.024], atol=1e-7)
    np.testing.assert_allclose(up[0], [0, 1, 0], atol=1e-7)


def test_planar_ignores_the_desires_vertical_part_and_a_zero_desire_keeps_the_heading():
    mover = make(max_speed=2.0)
    _, vel, _, _ = step(mover, state([[0, 0, 1]]), [[1, 5, 0]], 0.1)
    np.testing.assert_allclose(vel[0], [2, 0, 0], atol=1e-6)
    _, vel, _, _ = step(mover, state([[0, 0, 1]]), [[0, 0, 0]], 0.1)
    np.testing.assert_allclose(vel[0], [0, 0, 2], atol=1e-6)


def test_turn_rate_bounds_the_turn_per_second_at_any_step():
    # 90°/s for 0.5 s toward a desire 90° away: 45°; two steps of 0.25 s: the same
    mover = make(max_speed=1.0, turn_rate_deg=90.0)
    _, _, one, _ = step(mover, state([[0, 0, 1]]), [[1, 0, 0]], 0.5)
    _, _, two, _ = step(mover, state([[0, 0, 1]]), [[1, 0, 0]], 0.25, times=2)
    h = math.sqrt(0.5)
    np.testing.assert_allclose(one[0], [h, 0, h], atol=1e-6)
    np.testing.assert_allclose(two[0], [h, 0, h], atol=1e-6)
    # a remaining angle below the allowance is covered exactly (it arrives in finite time)
    _, _, fwd, _ = step(mover, state([[0, 0, 1]]), [[1, 0, 0]], 0.5, times=3)
    np.testing.assert_allclose(fwd[0], [1, 0, 0], atol=1e-6)
    # straight behind: turns about y by the allowance, staying in the plane
    _, _, back, _ = step(mover, state([[0, 0, 1]]), [[0, 0, -1]], 0.5)
    assert back[0, 1] == 0.0
    assert math.degrees(math.acos(back[0, 2])) == pytest.approx(45.0, abs=1e-3)


def test_3d_takes_the_full_desired_direction_and_the_speed_scale():
    mover = make(max_speed=2.0, planar=False)
    _, vel, _, _ = step(mover, state([[0, 0, 1]]), [[0, 3, 4]], 0.1, speed_scale=np.float32([0.5]))
    np.testing.assert_allclose(vel[0], [0, 0.6, 0.8], atol=1e-6)


def test_a_periodic_box_wraps_the_position():
    mover = make(max_speed=1.0)
    s = state([[1, 0, 0]])
    s[0][0] = [9.8, 0.5, 5.0]
    pos, _, _, _ = step(mover, s, [[1, 0, 0]], 0.5, wrap=(np.zeros(3), np.array([10.0, 1.0, 10.0])))
    np.testing.assert_allclose(pos[0], [0.3, 0.5, 5.0], atol=1e-5)


def test_per_animal_speeds():
    mover = make(max_speed={"uniform": [1.0, 2.0]})
    _, vel, _, _ = step(mover, state([[0, 0, 1]] * 2), [[1, 0, 0]] * 2, 0.1,
                        drawn={"max_speed": np.array([1.0, 2.0])})
    np.testing.assert_allclose(vel, [[1, 0, 0], [2, 0, 0]], atol=1e-6)


def test_a_heading_mover_without_its_kernels_is_refused_when_defined():
    from starling.motion.heading import HeadingMover

    with pytest.raises(TypeError, match="Incomplete must set serial, parallel"):
        class Incomplete(HeadingMover):  # noqa: F841 - defining it is the test
            fields = (("max_speed", float),)


@pytest.mark.parametrize("kernel", ["constant_speed", "halfway"])
def test_the_heading_movers_count_no_references_per_animal(kernel, references_outside_entry):
    """The shared heading helpers take the population's arrays: inlined into Numba's IR they
    counted about five references per animal (atomic operations); called, they count none."""
    from starling.motion import constant_speed, halfway

    range_kernel = constant_speed._constant_range if kernel == "constant_speed" else halfway._halfway_range
    pos, vel, fwd, up = state([[0, 0, 1.0], [1.0, 0, 0]])
    desired = np.float32([[1, 0, 0], [0, 0, 1]])
    table = np.float32([[2.0, 0.5]])
    box = np.float32([10, 10, 10])
    # one compilation covers both branches: ``planar`` is an argument, not a constant
    assert references_outside_entry(range_kernel, 0, 2, True, pos, vel, fwd, up, desired, table, 0.1, True,
                                    box * 0, box, np.zeros(0, np.float32)) == 0
