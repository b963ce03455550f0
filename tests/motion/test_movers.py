"""Movers against seed 000, ch. 3: finite convergence time, frame-rate independence, bounds."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from starling.motion.movers import FreeMoverParams, Mover, PlanarMoverParams, move_one_pass_range


def make(planar=False, **kw):
    params = (PlanarMoverParams if planar else FreeMoverParams)(**kw)
    return Mover(params, planar=planar)


def state(vel, fwd=None):
    v = np.array([vel], np.float32)
    speed = float(np.linalg.norm(v[0]))
    if fwd is None:
        fwd = v[0] / speed if speed > 1e-6 else (0.0, 0.0, 1.0)
    f = np.array([fwd], np.float32)
    up = np.array([[0, 1, 0]], np.float32)
    return np.zeros((1, 3), np.float32), v, f, up


def steps_to_reach(mover, vel, desired, dt, limit=10_000):
    pos, v, f, up = state(vel)
    d = np.array([desired], np.float32)
    for k in range(1, limit):
        mover.move(pos, v, f, up, d, dt)
        if np.linalg.norm(v[0] - d[0]) < 1e-4:
            return k * dt
    raise AssertionError("never reached")


@pytest.mark.parametrize("dt", [1 / 30, 1 / 240])
def test_speeding_up_takes_the_difference_over_the_speed_up_rate(dt):
    mover = make(max_speed=10, speed_up_acceleration=2.0, slow_down_acceleration=5.0)
    t = steps_to_reach(mover, (1, 0, 0), (5, 0, 0), dt)
    assert t == pytest.approx(4.0 / 2.0, abs=dt + 1e-6)


@pytest.mark.parametrize("dt", [1 / 30, 1 / 240])
def test_slowing_down_uses_the_slow_down_rate(dt):
    mover = make(max_speed=10, speed_up_acceleration=2.0, slow_down_acceleration=6.0)
    t = steps_to_reach(mover, (0, 0, 9), (0, 0, 3), dt)
    assert t == pytest.approx(6.0 / 6.0, abs=dt + 1e-6)


def test_starting_from_rest_accelerates_toward_the_desired_velocity():
    mover = make(max_speed=10, speed_up_acceleration=3.0)
    t = steps_to_reach(mover, (0, 0, 0), (0, 3, 4), 1 / 60)
    assert t == pytest.approx(5.0 / 3.0, abs=1 / 60 + 1e-6)


def test_a_pure_turn_takes_the_lateral_difference_over_the_lateral_rate():
    # desired (0, 0, 4) from (4, 0, 0): the parallel part shrinks the speed while the
    # lateral part turns; with equal rates the time is bounded by |v_d - v_c| / A_lat
    mover = make(max_speed=10, speed_up_acceleration=4.0, slow_down_acceleration=4.0, lateral_acceleration=4.0)
    t = steps_to_reach(mover, (4, 0, 0), (0, 0, 4), 1 / 120)
    assert 1.0 <= t <= math.sqrt(32) / 4.0 + 0.05


def trajectory(dt, seconds=4.0, planar=False):
    mover = make(planar=planar, max_speed=8, speed_up_acceleration=3, slow_down_acceleration=5,
                 lateral_acceleration=4, drag=0.01)
    pos, v, f, up = state((2, 0, 0))
    steps = int(round(seconds / dt))
    for k in range(steps):
        t = k * dt
        # the desired velocity changes over time (a slalom), identical at both rates
        desired = np.array([[6 * math.cos(0.8 * t), 0.0 if planar else 1.5 * math.sin(0.5 * t), 6 * math.sin(0.8 * t)]], np.float32)
        mover.move(pos, v, f, up, desired, dt)
    return pos[0].copy(), v[0].copy()


@pytest.mark.parametrize("planar", [False, True])
def test_the_same_motion_within_two_percent_at_30_and_240_steps_per_second(planar):
    p30, v30 = trajectory(1 / 30, planar=planar)
    p240, v240 = trajectory(1 / 240, planar=planar)
    travelled = np.linalg.norm(p240)
    assert np.linalg.norm(p30 - p240) <= 0.02 * max(travelled, 1.0)
    assert np.linalg.norm(v30 - v240) <= 0.02 * max(np.linalg.norm(v240), 1.0)


@settings(max_examples=150, deadline=None)
@given(
    st.tuples(*[st.floats(-20, 20)] * 3),
    st.tuples(*[st.floats(-20, 20)] * 3),
    st.sampled_from([1 / 240, 1 / 60, 1 / 30, 0.1]),
    st.booleans(),
)
def test_acceleration_and_speed_never_exceed_their_bounds(vel, desired, dt, planar):
    p = dict(max_speed=7.0, speed_up_acceleration=3.0, slow_down_acceleration=5.0, lateral_acceleration=4.0, drag=0.02)
    mover = make(planar=planar, **p)
    pos, v, f, up = state(vel)
    if planar:
        v[0, 1] = 0
    speed0 = min(np.linalg.norm(v[0]), 1e9)
    before = v[0].astype(np.float64).copy()
    mover.move(pos, v, f, up, np.array([desired], np.float32), dt)
    after = v[0].astype(np.float64)
    assert np.isfinite(after).all() and np.isfinite(f).all() and np.isfinite(up).all()
    assert np.linalg.norm(after) <= p["max_speed"] + 1e-4
    # a step's velocity change is bounded by the two rates plus drag (and the clamp of an
    # initial over-speed back to max_speed)
    bound = math.hypot(p["slow_down_acceleration"], p["lateral_acceleration"]) * dt + p["drag"] * speed0**2 * dt
    over = max(0.0, speed0 - p["max_speed"])
    assert np.linalg.norm(after - before) <= bound + over + 1e-3
    assert abs(np.linalg.norm(f[0]) - 1) < 1e-4 and abs(np.linalg.norm(up[0]) - 1) < 1e-4


def test_drag_limits_the_top_speed_below_the_hard_cap():
    # with drag D the speed settles where A_up = v² D: v = sqrt(2 / 0.08) = 5
    mover = make(max_speed=20, speed_up_acceleration=2.0, drag=0.08)
    pos, v, f, up = state((1, 0, 0))
    d = np.array([[19, 0, 0]], np.float32)
    for _ in range(3000):
        mover.move(pos, v, f, up, d, 1 / 60)
    assert np.linalg.norm(v[0]) == pytest.approx(5.0, rel=0.03)


def test_a_banked_turn_tilts_up_toward_the_centre_of_the_turn():
    mover = make(max_speed=10, lateral_acceleration=6.0, banking=1.0, bank_rate=20.0)
    pos, v, f, up = state((0, 0, 5))
    # turning toward +x: the up vector leans to +x
    for _ in range(20):
        mover.move(pos, v, f, up, np.array([[5, 0, 0]], np.float32), 1 / 60)
    assert up[0, 0] > 0.2
    assert abs(float(np.dot(up[0], f[0]))) < 1e-4


def test_the_planar_mover_stays_in_its_plane():
    mover = make(planar=True, max_speed=5)
    pos, v, f, up = state((1, 0, 0))
    pos[0, 1] = 3.0
    for _ in range(100):
        mover.move(pos, v, f, up, np.array([[0, 4, 4]], np.float32), 1 / 30)
    assert pos[0, 1] == pytest.approx(3.0)
    assert v[0, 1] == 0.0 and f[0, 1] == 0.0
    np.testing.assert_allclose(up[0], [0, 1, 0], atol=1e-6)


def test_forward_follows_the_velocity_smoothly_at_the_turn_rate():
    mover = make(max_speed=5, turn_rate=2.0, lateral_acceleration=100.0, slow_down_acceleration=100, speed_up_acceleration=100)
    pos, v, f, up = state((0, 0, 3), fwd=(0, 0, 1))
    mover.move(pos, v, f, up, np.array([[3, 0, 0]], np.float32), 0.1)
    # velocity turned instantly; forward moved by 1 - exp(-0.2) of the 90° turn
    angle = math.degrees(math.acos(float(np.clip(f[0] @ np.array([0, 0, 1]), -1, 1))))
    assert angle == pytest.approx(90 * (1 - math.exp(-0.2)), abs=0.5)


def test_wrap_around_keeps_animals_inside_a_periodic_box():
    mover = make(max_speed=5)
    pos, v, f, up = state((5, 0, 0))
    pos[0] = (9.9, 5, 5)
    mover.move(pos, v, f, up, np.array([[5, 0, 0]], np.float32), 0.1, wrap=(np.zeros(3), np.full(3, 10.0)))
    assert pos[0, 0] == pytest.approx(0.4, abs=1e-5)


@pytest.mark.parametrize("planar", [False, True])
@pytest.mark.parametrize("n", [1, 15, 63, 64, 65, 150])
@pytest.mark.parametrize("per_animal", [False, True])
def test_the_staged_kernel_moves_every_animal_as_the_one_pass_form_does_bit_for_bit(planar, n, per_animal):
    """Block sizes around BLOCK (64) and every case the vectorised stages hand back to the one-animal
    functions: at rest, turning about (the slerps' antiparallel branch), nearly turned already (their
    near branch), an up along forward and a forward straight up (the degenerate projections)."""
    rng = np.random.default_rng(n + 100 * planar + 7 * per_animal)
    position = rng.uniform(0, 50, (n, 3)).astype(np.float32)
    velocity = rng.normal(0, 3, (n, 3)).astype(np.float32)
    velocity[::7] = 0.0  # at rest: forward keeps still, the first step speeds up along the desire
    forward = rng.normal(0, 1, (n, 3))
    forward = (forward / np.linalg.norm(forward, axis=1, keepdims=True)).astype(np.float32)
    up = rng.normal(0, 1, (n, 3)).astype(np.float32)
    up[::3] = (0.0, 1.0, 0.0)
    desired = rng.normal(0, 4, (n, 3)).astype(np.float32)
    desired[1::5] = -3.0 * velocity[1::5]  # turn about: the slerps' antiparallel branch
    desired[2::9] = 1.01 * velocity[2::9]  # nearly turned already: the slerps' near branch
    heading = velocity[2::9] / np.maximum(np.linalg.norm(velocity[2::9], axis=1, keepdims=True), 1e-9)
    forward[2::9] = np.where(np.abs(heading).sum(axis=1, keepdims=True) > 0, heading, forward[2::9])
    forward[3::11] = (0.0, 1.0, 0.0)  # world up projects to nothing
    up[4::13] = forward[4::13]  # the animal's up projects to nothing
    params = PlanarMoverParams(max_speed=6.0, drag=0.05) if planar else \
        FreeMoverParams(max_speed=6.0, drag=0.05, banking=2.0)
    mover = Mover(params, planar=planar)
    drawn = {"max_speed": rng.uniform(3, 7, n), "turn_rate": rng.uniform(2, 12, n)} if per_animal else None
    if per_animal and not planar:
        drawn["banking"] = np.where(np.arange(n) % 4 == 0, 0.0, rng.uniform(0.5, 3, n))  # some do not bank
        drawn["bank_rate"] = rng.uniform(1, 8, n)
    box = (np.zeros(3), np.full(3, 50.0))
    ours = [a.copy() for a in (position, velocity, forward, up)]
    oracle = [a.copy() for a in (position, velocity, forward, up)]
    for _ in range(12):
        speed_scale = rng.uniform(0.5, 1.0, n)
        accel_scale = rng.uniform(0.5, 1.0, n)
        kernel, args = mover.range_call(*ours, desired, 1 / 30, wrap=box, speed_scale=speed_scale,
                                        accel_scale=accel_scale, drawn=drawn)
        kernel(0, n, *args)
        move_one_pass_range(0, n, args[0], *oracle, desired, *args[6:])
    for got, want, name in zip(ours, oracle, ("position", "velocity", "forward", "up")):
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_the_threaded_mover_moves_as_the_serial_one_does():
    rng = np.random.default_rng(5)
    n = 1000
    arrays = [rng.normal(0, 3, (n, 3)).astype(np.float32) for _ in range(4)]
    desired = rng.normal(0, 4, (n, 3)).astype(np.float32)
    serial = [a.copy() for a in arrays]
    threaded = [a.copy() for a in arrays]
    mover = make(max_speed=6.0)
    for _ in range(5):
        mover.move(*serial, desired, 1 / 60)
        mover.move(*threaded, desired, 1 / 60, parallel=True)
    for got, want in zip(threaded, serial):
        np.testing.assert_array_equal(got, want)
