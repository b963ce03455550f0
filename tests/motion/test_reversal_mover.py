"""The reversal mover (seed 002's fish) against hand-computed steps.

Per step: a = (desired - v) / 1 s, |a| clamped to max_acceleration, a_y = 0 (Unreal's Z is
Starling's y), v += a dt, |v| clamped to max_speed, p += v dt, then at a wall the velocity
component across it points back in and the position is mirrored into the tank.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from starling.motion.reversal import ReversalMoverParams
from starling.steering.registry import get_mover

BOX = dict(bounds_min=(-1.0, 0.0, -1.0), bounds_max=(1.0, 10.0, 1.0))


def mover(**kw):
    spec = get_mover("reversal")
    return spec.factory(spec.params(kind="reversal", **{**BOX, **kw}))


def step(m, p, v, a, dt=0.1, parallel=False, forward=None):
    """One move of one fish at ``p`` with velocity ``v`` asked to accelerate by ``a``."""
    pos = np.array([p], np.float32)
    vel = np.array([v], np.float32)
    fwd = np.array([forward or (0.0, 0.0, 1.0)], np.float32)
    up = np.array([[0.0, 1.0, 0.0]], np.float32)
    desired = vel + np.array([a], np.float32)  # the merger's v + a · (1 s)
    m.move(pos, vel, fwd, up, desired, dt, parallel=parallel)
    return pos[0], vel[0], fwd[0], up[0]


@pytest.mark.parametrize("parallel", [False, True])
def test_the_acceleration_is_clamped_then_loses_its_vertical_part(parallel):
    # a = (6, 8, 0), |a| = 10 -> clamped to 5: (3, 4, 0) -> y zeroed: (3, 0, 0)
    # v = (1, 0, 0) + 0.1 (3, 0, 0) = (1.3, 0, 0); p = (0, 5, 0) + 0.1 v = (0.13, 5, 0)
    p, v, f, up = step(mover(max_speed=10.0, max_acceleration=5.0), (0, 5, 0), (1, 0, 0), (6, 8, 0),
                       parallel=parallel)
    np.testing.assert_allclose(v, [1.3, 0, 0], atol=1e-6)
    np.testing.assert_allclose(p, [0.13, 5, 0], atol=1e-6)
    np.testing.assert_allclose(f, [1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(up, [0, 1, 0], atol=1e-6)


def test_without_the_lock_the_fish_accelerates_up_and_down_too():
    # a = (0, 3, 0) under max 5: v = (0, 0, 1) + 0.1 (0, 3, 0) = (0, 0.3, 1)
    p, v, f, _ = step(mover(max_speed=10.0, max_acceleration=5.0, lock_vertical=False), (0, 5, 0), (0, 0, 1),
                      (0, 3, 0))
    np.testing.assert_allclose(v, [0, 0.3, 1], atol=1e-6)
    np.testing.assert_allclose(p, [0, 5.03, 0.1], atol=1e-6)
    np.testing.assert_allclose(f, np.array([0, 0.3, 1]) / math.sqrt(1.09), atol=1e-6)


def test_the_speed_is_clamped_after_the_acceleration():
    # v = (3, 0, 4), |v| = 5, a = (0, 0, 2): v = (3, 0, 4.2), |v| = √26.64 -> scaled to 2.5
    p, v, _, _ = step(mover(max_speed=2.5, max_acceleration=5.0), (0, 5, 0), (3, 0, 4), (0, 0, 2))
    want = np.array([3.0, 0.0, 4.2]) * 2.5 / math.sqrt(26.64)
    np.testing.assert_allclose(v, want, atol=1e-6)
    np.testing.assert_allclose(p, [0, 5, 0] + 0.1 * want, atol=1e-6)


def test_crossing_a_side_wall_reverses_the_component_across_it_and_mirrors_the_fish_back():
    # x: 0.95 + 0.1 * 1 = 1.05 > 1 -> x = 2 * 1 - 1.05 = 0.95, vx = -1; z untouched
    p, v, f, _ = step(mover(max_speed=10.0), (0.95, 5, 0), (1, 0, 0.5), (0, 0, 0))
    np.testing.assert_allclose(p, [0.95, 5, 0.05], atol=1e-6)
    np.testing.assert_allclose(v, [-1, 0, 0.5], atol=1e-6)
    np.testing.assert_allclose(f, np.array([-1, 0, 0.5]) / math.sqrt(1.25), atol=1e-6)
    # the low wall: -0.98 - 0.1 * 0.5 = -1.03 < -1 -> -2 + 1.03 = -0.97, vz = +0.5
    p, v, _, _ = step(mover(max_speed=10.0), (0, 5, -0.98), (0, 0, -0.5), (0, 0, 0))
    np.testing.assert_allclose(p, [0, 5, -0.97], atol=1e-6)
    np.testing.assert_allclose(v, [0, 0, 0.5], atol=1e-6)


def test_the_floor_and_the_surface_reverse_the_vertical_component():
    p, v, _, _ = step(mover(max_speed=10.0), (0, 0.02, 0), (0, -1, 0), (0, 0, 0))
    np.testing.assert_allclose(p, [0, 0.08, 0], atol=1e-6)
    np.testing.assert_allclose(v, [0, 1, 0], atol=1e-6)
    p, v, _, _ = step(mover(max_speed=10.0), (0, 9.95, 0), (0, 2, 0), (0, 0, 0))
    np.testing.assert_allclose(p, [0, 9.85, 0], atol=1e-5)
    np.testing.assert_allclose(v, [0, -2, 0], atol=1e-6)


def test_a_fish_already_heading_back_in_is_never_turned_out_again():
    # outside at x = 1.2 moving in at -1: x = 1.1, still outside -> mirrored to 0.9, and vx stays -1
    # (the seed's bare "times -1" would send it back out)
    p, v, _, _ = step(mover(max_speed=10.0), (1.2, 5, 0), (-1, 0, 0), (0, 0, 0))
    np.testing.assert_allclose(p, [0.9, 5, 0], atol=1e-6)
    np.testing.assert_allclose(v, [-1, 0, 0], atol=1e-6)


def test_a_corner_reverses_both_components():
    p, v, _, _ = step(mover(max_speed=10.0), (0.95, 5, 0.98), (1, 0, 1), (0, 0, 0))
    np.testing.assert_allclose(p, [0.95, 5, 0.92], atol=1e-6)
    np.testing.assert_allclose(v, [-1, 0, -1], atol=1e-6)


def test_each_fish_uses_its_own_drawn_limits():
    m = mover(max_speed=10.0, max_acceleration=5.0)
    pos = np.zeros((2, 3), np.float32) + [0, 5, 0]
    vel = np.zeros((2, 3), np.float32)
    fwd = np.tile(np.array([0, 0, 1], np.float32), (2, 1))
    up = np.tile(np.array([0, 1, 0], np.float32), (2, 1))
    desired = np.array([[100, 0, 0], [100, 0, 0]], np.float32)
    m.move(pos, vel, fwd, up, desired, 0.1, drawn={"max_acceleration": np.array([5.0, 2.0], np.float32)})
    np.testing.assert_allclose(vel[:, 0], [0.5, 0.2], atol=1e-6)


def test_the_same_motion_within_two_percent_at_30_and_240_steps_per_second():
    """Frame-rate independence: 2 m/s² from rest, capped at 3 m/s after 1.5 s."""
    def run(dt, seconds):
        m = mover(max_speed=3.0, max_acceleration=5.0, bounds_min=(-100, 0, -100), bounds_max=(100, 10, 100))
        pos = np.array([[0.0, 5.0, 0.0]], np.float32)
        vel = np.zeros((1, 3), np.float32)
        fwd = np.array([[0, 0, 1]], np.float32)
        up = np.array([[0, 1, 0]], np.float32)
        for _ in range(round(seconds / dt)):
            m.move(pos, vel, fwd, up, vel + np.array([[2.0, 0.0, 0.0]], np.float32), dt)
        return pos[0].copy() - [0.0, 5.0, 0.0], vel[0].copy()

    # After 1 s, still accelerating: semi-implicit Euler (the seed's: v first, then p) runs ahead
    # of x = a t²/2 by a t dt / 2, so the two rates differ by 2 · 1 · (1/30 - 1/240) / 2 m, and
    # that gap is all: the velocities agree.
    p30, v30 = run(1 / 30, 1.0)
    p240, v240 = run(1 / 240, 1.0)
    assert p30[0] - p240[0] == pytest.approx(1 / 30 - 1 / 240, rel=1e-3)
    np.testing.assert_allclose(v30, v240, atol=1e-5)
    # after 3 s: at the 3 m/s cap for the last 1.5 s, x = 2.25 + 4.5 m at both rates within 2 %
    p30, v30 = run(1 / 30, 3.0)
    p240, v240 = run(1 / 240, 3.0)
    assert np.linalg.norm(p30 - p240) <= 0.02 * np.linalg.norm(p240)
    np.testing.assert_allclose(v30, [3, 0, 0], atol=1e-5)
    np.testing.assert_allclose(v240, [3, 0, 0], atol=1e-5)
    assert p240[0] == pytest.approx(6.75, rel=0.01)


def test_the_tank_must_have_volume():
    with pytest.raises(ValueError, match="bounds_max.y"):
        ReversalMoverParams(kind="reversal", bounds_min=(0, 5, 0), bounds_max=(1, 5, 1))


@settings(max_examples=200, deadline=None)
@given(
    st.tuples(st.floats(-1, 1), st.floats(0, 10), st.floats(-1, 1)),
    st.tuples(*[st.floats(-8, 8)] * 3),
    st.tuples(*[st.floats(-50, 50)] * 3),
    st.sampled_from([1 / 240, 1 / 60, 1 / 30, 0.1]),
    st.booleans(),
)
def test_a_fish_stays_in_the_tank_within_its_limits(p, v, a, dt, lock):
    """Whatever it starts with (inside the tank, at most max_speed), after a step the fish is
    inside, finite, at most max_speed, and its velocity changed by at most max_acceleration · dt
    apart from the reversed components."""
    m = mover(max_speed=8.0 * math.sqrt(3), max_acceleration=5.0, lock_vertical=lock)
    p1, v1, f1, up1 = step(m, p, v, a, dt=dt)
    assert np.isfinite(np.concatenate([p1, v1, f1, up1])).all()
    assert (p1 >= [-1, 0, -1]).all() and (p1 <= [1, 10, 1]).all()
    assert np.linalg.norm(v1) <= 8.0 * math.sqrt(3) * (1 + 1e-5)
    # the velocity before the walls, restated: a clamped, y dropped if locked, v + a dt clamped
    v0 = np.asarray(v, np.float64)
    acc = np.asarray(a, np.float64)
    if np.linalg.norm(acc) > 5.0:
        acc *= 5.0 / np.linalg.norm(acc)
    if lock:
        acc[1] = 0.0
    pre = v0 + acc * dt
    if np.linalg.norm(pre) > 8.0 * math.sqrt(3):
        pre *= 8.0 * math.sqrt(3) / np.linalg.norm(pre)
    # the walls only ever turn components around; the change before them is at most max_acceleration · dt
    np.testing.assert_allclose(np.abs(v1), np.abs(pre), atol=1e-4)
    assert np.linalg.norm(pre - v0) <= 5.0 * dt * (1 + 1e-6) + 1e-9
    if lock:  # no vertical acceleration: the vertical speed can only shrink (the speed clamp scales it)
        assert abs(v1[1]) <= abs(v0[1]) + 1e-5
