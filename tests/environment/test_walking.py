"""The ground mover (seed 000, 9.5.7 "2.5D Movement"): slopes, falling, stepping, swimming, alignment."""
import math

import numpy as np
import pytest

from starling.environment import Environment, Heightfield, WaterBodies
from starling.environment.config import BoxConfig
from starling.environment.walking import FALLING, GROUNDED, SWIMMING, GroundMover, GroundMoverParams

CH = 0.5  # centre height


def ramp_env(slope_deg, water=None, shapes=()):
    """Flat ground (y = 0) for x < 0, then a ramp of ``slope_deg`` up along +x (1 m cells)."""
    xs = np.arange(-20.0, 41.0)
    heights = np.where(xs > 0, np.tan(np.radians(slope_deg)) * xs, 0.0)
    grid = np.tile(heights, (21, 1))
    terrain = Heightfield.from_heights(grid, -20.0, -10.0, 40.0, 10.0)
    return Environment.from_parts(terrain=terrain, water=water, shapes=shapes)


def walker(env, position, velocity=(0.0, 0.0, 0.0), **kw):
    params = dict(max_speed=6.0, speed_up_acceleration=2.0, slow_down_acceleration=6.0, lateral_acceleration=4.0,
                  center_height=CH, min_slope_deg=10.0, max_slope_deg=40.0)
    params.update(kw)
    mover = GroundMover(GroundMoverParams(**params))
    mover.attach_environment(env)
    v = np.array([velocity], np.float32)
    speed = np.linalg.norm(v[0])
    fwd = v / speed if speed > 1e-6 else np.array([[0.0, 0.0, 1.0]], np.float32)
    state = (np.array([position], np.float32), v, fwd.astype(np.float32), np.array([[0.0, 1.0, 0.0]], np.float32))
    return mover, state


def walk(mover, state, desired, seconds, dt=1 / 30):
    """Drive one animal with a constant desired velocity; its positions, velocities and states per step."""
    pos, vel, fwd, up = state
    d = np.array([desired], np.float32)
    track, speeds, states = [], [], []
    for _ in range(int(round(seconds / dt))):
        mover.move(pos, vel, fwd, up, d, dt)
        track.append(pos[0].astype(np.float64))
        speeds.append(vel[0].astype(np.float64))
        states.append(int(mover.state_array[0]))
    return np.array(track), np.array(speeds), states


def test_an_animal_walking_up_a_slope_steeper_than_the_maximum_stops():
    env = ramp_env(55.0)
    mover, state = walker(env, (-3.0, CH, 0.0), (2.0, 0.0, 0.0))
    track, vel, states = walk(mover, state, (3.0, 0.0, 0.0), 10.0)
    # it reached the foot of the ramp, then lost all speed on it and stays put
    assert track[:, 0].max() > 0.0
    speed = np.linalg.norm(vel, axis=1)
    assert speed[-60:].max() < 1e-3
    np.testing.assert_allclose(track[-60:], track[-1:].repeat(60, axis=0), atol=1e-3)
    assert track[-1, 1] < 1.5 + CH  # barely on the ramp: it stopped within a couple of metres of climb
    assert all(s == GROUNDED for s in states)


def test_a_moderate_slope_is_climbed_slower_than_flat_ground():
    # grade 25 degrees: the desired speed is scaled by 1 - (25 - 10) / (40 - 10) = 0.5
    env = ramp_env(25.0)
    mover, state = walker(env, (5.0, math.tan(math.radians(25.0)) * 5.0 + CH, 0.0), (1.5, 0.0, 0.0))
    track, vel, states = walk(mover, state, (3.0, 0.0, 0.0), 6.0)
    speed = np.linalg.norm(vel, axis=1)
    assert speed[-1] == pytest.approx(1.5, abs=0.02)
    assert track[-1, 0] > 10.0  # it keeps climbing
    # on the surface: the centre stays center_height above the ground
    np.testing.assert_allclose(track[:, 1], env.height_at(track[:, 0], track[:, 2]) + CH, atol=1e-3)


def test_walking_down_a_slope_goes_faster_than_asked():
    # downhill at 25 degrees the desired speed (and the top speed) are scaled by 1 + 0.5
    env = ramp_env(25.0)
    start = (20.0, math.tan(math.radians(25.0)) * 20.0 + CH, 0.0)
    mover, state = walker(env, start, (-2.0, 0.0, 0.0))
    _, vel, states = walk(mover, state, (-2.0, 0.0, 0.0), 2.0)
    assert np.linalg.norm(vel[-1]) == pytest.approx(3.0, abs=0.02)
    assert all(s == GROUNDED for s in states)


@pytest.mark.parametrize("dt", [1 / 30, 1 / 240])
def test_speeding_up_on_flat_ground_takes_the_difference_over_the_rate_at_any_frame_rate(dt):
    env = ramp_env(0.0)
    mover, state = walker(env, (-10.0, CH, 0.0), (1.0, 0.0, 0.0), speed_up_acceleration=2.0)
    _, vel, _ = walk(mover, state, (5.0, 0.0, 0.0), 3.0, dt)
    reached = int(np.argmax(np.linalg.norm(vel - (5.0, 0.0, 0.0), axis=1) < 1e-4)) + 1
    assert reached * dt == pytest.approx((5.0 - 1.0) / 2.0, abs=dt + 1e-9)


def test_without_ground_below_an_animal_falls_and_lands_on_its_feet():
    env = ramp_env(0.0)
    h = 5.0
    mover, state = walker(env, (-15.0, h + CH, 0.0), (1.0, 0.0, 0.0))
    dt = 1 / 60
    track, vel, states = walk(mover, state, (1.0, 0.0, 0.0), 2.0, dt)
    landed = states.index(GROUNDED)
    assert states[:landed] == [FALLING] * landed
    # free fall until the feet are within snap_distance (0.5 m) of the ground, which then holds them
    assert landed * dt == pytest.approx(math.sqrt(2 * (h - 0.5) / 9.81), abs=2 * dt)
    assert track[-1, 1] == pytest.approx(CH, abs=1e-4)
    assert vel[-1, 1] == pytest.approx(0.0, abs=1e-6)
    assert vel[-1, 0] == pytest.approx(1.0, abs=1e-3)  # the horizontal velocity survived the fall


def test_small_obstacles_are_stepped_over_and_tall_ones_are_not_climbed():
    low = BoxConfig(min_corner=(-12.0, -0.5, -5.0), max_corner=(-9.0, 0.2, 5.0))
    env = ramp_env(0.0, shapes=[low])
    mover, state = walker(env, (-16.0, CH, 0.0), (1.5, 0.0, 0.0))
    track, _, states = walk(mover, state, (1.5, 0.0, 0.0), 8.0)
    on_top = (track[:, 0] > -11.5) & (track[:, 0] < -9.5)
    np.testing.assert_allclose(track[on_top, 1], 0.2 + CH, atol=1e-4)
    assert track[-1, 0] > -5.0 and track[-1, 1] == pytest.approx(CH, abs=1e-4)
    # a 1 m block is taller than step_height: the mover keeps the feet on the ground in front of it
    # (collision resolution then stops the body, see tests/environment/test_env_system.py)
    tall = BoxConfig(min_corner=(-12.0, -0.5, -5.0), max_corner=(-9.0, 1.0, 5.0))
    mover, state = walker(ramp_env(0.0, shapes=[tall]), (-16.0, CH, 0.0), (1.5, 0.0, 0.0))
    track, _, _ = walk(mover, state, (1.5, 0.0, 0.0), 3.0)
    assert track[:, 1].max() < 0.2 + CH


def test_deep_water_is_swum_slowly_at_the_surface():
    # the ground drops from 0 to -3 m between x = 10 and x = 13; water at y = -0.5 from x = 8 on
    xs = np.arange(-20.0, 41.0)
    heights = np.tile(np.clip(-(xs - 10.0), -3.0, 0.0), (21, 1))
    terrain = Heightfield.from_heights(heights, -20.0, -10.0, 40.0, 10.0)
    water = WaterBodies.from_regions([(-0.5, "rectangle", (8.0, -10.0, 40.0, 10.0), 2)])
    env = Environment.from_parts(terrain=terrain, water=water)
    mover, state = walker(env, (0.0, CH, 0.0), (2.0, 0.0, 0.0), swim_speed_factor=0.35, float_height=-0.1)
    track, vel, states = walk(mover, state, (2.0, 0.0, 0.0), 12.0)
    assert states[0] == GROUNDED and states[-1] == SWIMMING
    swimming = np.array(states) == SWIMMING
    np.testing.assert_allclose(track[swimming, 1], -0.6, atol=1e-5)
    assert np.linalg.norm(vel[-1]) == pytest.approx(2.0 * 0.35, abs=0.02)
    # it waded in at walking speed first: shallow water is walked through
    first = int(np.argmax(swimming))
    assert track[first, 0] > 10.0


def test_up_follows_the_ground_and_forward_the_velocity_at_their_own_rates():
    env = ramp_env(20.0)
    normal = np.array([-math.sin(math.radians(20.0)), math.cos(math.radians(20.0)), 0.0])
    x0 = 15.0
    for align_rate in (2.0, 8.0):
        mover, state = walker(env, (x0, math.tan(math.radians(20.0)) * x0 + CH, 0.0), (0.0, 0.0, 1.0),
                              align_rate=align_rate, turn_rate=3.0)
        pos, vel, fwd, up = state
        d = np.array([[0.0, 0.0, 1.0]], np.float32)
        dt = 1 / 30
        for _ in range(6):  # 0.2 s
            mover.move(pos, vel, fwd, up, d, dt)
        tilt = math.acos(min(1.0, float(up[0] @ normal)))
        # a swing at constant rate leaves exp(-rate t) of the 20 degree angle
        assert tilt == pytest.approx(math.radians(20.0) * math.exp(-align_rate * 0.2), abs=1e-3)
        for _ in range(120):
            mover.move(pos, vel, fwd, up, d, dt)
        np.testing.assert_allclose(up[0], normal, atol=1e-4)
        assert abs(float(fwd[0] @ up[0])) < 1e-5
        np.testing.assert_allclose(fwd[0], vel[0] / np.linalg.norm(vel[0]), atol=1e-3)


def test_the_ground_mover_counts_no_references_per_animal(monkeypatch, references_outside_entry):
    """The water-surface lookup takes the scene's water arrays: inlined into Numba's IR it counted
    three references per animal and kernel (atomic operations); called, it counts none."""
    from starling.environment import walking

    calls = {}
    for name in ("_walk_range", "_settle_range"):
        kernel = getattr(walking, name)
        monkeypatch.setattr(walking, name, lambda *args, _k=kernel, _n=name: (calls.setdefault(_n, args), _k(*args)))
    water = WaterBodies.from_regions([(-0.5, "rectangle", (8.0, -10.0, 40.0, 10.0), 2)])
    mover, state = walker(ramp_env(5.0, water=water), (0.0, CH, 0.0), (2.0, 0.0, 0.0))
    walk(mover, state, (2.0, 0.0, 0.0), 1 / 30)
    monkeypatch.undo()
    for name, args in calls.items():
        assert references_outside_entry(getattr(walking, name), *args) == 0, name
    assert set(calls) == {"_walk_range", "_settle_range"}
