"""Simple behaviours against hand-computed values (seed 000, 6.4.6 and 9.5.1)."""
import math

import numpy as np
import pytest
from scipy import stats

from starling.steering.noise import perlin1d, uniform_noise
from starling.steering.targets import CoreAgents
from starling.steering.registry import get_behavior
from starling.steering.results import VelocityResults


def agents(positions, forwards=None, uids=None):
    p = np.asarray(positions, np.float32)
    f = np.asarray(forwards if forwards is not None else [[0, 0, 1]] * len(p), np.float32)
    v = f * 2
    up = np.tile(np.array([0, 1, 0], np.float32), (len(p), 1))
    uid = np.asarray(uids if uids is not None else np.arange(len(p)), np.int64)
    return CoreAgents(p, v, f, up, uid)


def run(kind, a, time=0.0, **params):
    spec = get_behavior(kind)
    res = VelocityResults(1, len(a.position))
    out = res.view(0, len(a.position))
    spec.compiled(False)(a, spec.params(kind=kind, **params).kernel_params(), time, 0.1, out)
    return out


def test_homing_desire_follows_f_q1_of_the_remapped_distance():
    out = run("homing", agents([[30, 0, 0], [5, 0, 0], [80, 0, 0]]), home=(0, 0, 0), min_radius=10,
              max_radius=50, weight_direction=0.8)
    np.testing.assert_allclose(out.direction[0], [-1, 0, 0])
    assert out.direction_desire[0] == pytest.approx(0.8 * 0.5**2)
    assert out.direction_desire[1] == 0.0  # inside min_radius
    assert out.direction_desire[2] == pytest.approx(0.8)  # beyond max_radius: full weight
    assert out.speed_desire[0] == 0


def test_multi_homing_picks_the_smallest_home_that_contains_the_animal():
    homes = [dict(center=(0, 0, 0), min_radius=0, max_radius=100), dict(center=(20, 0, 0), min_radius=2, max_radius=10)]
    out = run("multi_homing", agents([[26, 0, 0], [-50, 0, 0], [500, 0, 0]]), homes=homes, weight_direction=1.0)
    np.testing.assert_allclose(out.direction[0], [-1, 0, 0])
    assert out.direction_desire[0] == pytest.approx(((6 - 2) / 8) ** 2)
    np.testing.assert_allclose(out.direction[1], [1, 0, 0])
    assert out.direction_desire[1] == pytest.approx(0.25)
    assert out.direction_desire[2] == 0.0  # outside every home


def test_keep_height_pushes_back_into_the_band():
    out = run("keep_height", agents([[0, 2, 0], [0, 7, 0], [0, 20, 0], [0, 43, 0]]), min_height=10,
              max_height=40, margin=5, weight_direction=0.5)
    np.testing.assert_allclose(out.direction[:, 1], [1, 1, 0, -1])
    np.testing.assert_allclose(out.direction_desire, [0.5, 0.5 * 0.36, 0, 0.5 * 0.36], rtol=1e-6)


def test_align_up_levels_a_climbing_animal():
    s, c = math.sin(math.radians(30)), math.cos(math.radians(30))
    out = run("align_up", agents([[0, 0, 0]], [[0, s, c]]), weight_direction=0.9)
    np.testing.assert_allclose(out.direction[0], [0, 0, 1], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.9 / 9, rel=1e-5)


def test_go_forward_keeps_heading_at_the_set_speed():
    out = run("go_forward", agents([[0, 0, 0]], [[1, 0, 0]]), speed=4.0, weight_direction=0.1, weight_speed=0.2)
    np.testing.assert_allclose(out.direction[0], [1, 0, 0])
    assert out.speed[0] == 4.0 and out.speed_desire[0] == pytest.approx(0.2)


def test_follow_path_aims_lookahead_metres_past_the_closest_point():
    out = run("follow_path", agents([[10, 0, 5]]), points=[(0, 0, 0), (100, 0, 0)], lookahead=3.0, speed=2.0)
    d = np.array([3, 0, -5.0])
    np.testing.assert_allclose(out.direction[0], d / np.linalg.norm(d), atol=1e-6)
    assert out.speed[0] == 2.0


def test_follow_path_wraps_around_a_loop_and_slows_at_the_end_of_an_open_path():
    square = [(0, 0, 0), (10, 0, 0), (10, 0, 10), (0, 0, 10)]
    # closest point (1, 0, 10) on the closing edge; 2 m further: round the corner to (0, 0, 9)
    out = run("follow_path", agents([[1, 0, 9.5]]), points=square, loop=True, lookahead=2.0)
    d = np.array([-1, 0, -0.5])
    np.testing.assert_allclose(out.direction[0], d / np.linalg.norm(d), atol=1e-6)
    out = run("follow_path", agents([[99, 0, 0]]), points=[(0, 0, 0), (100, 0, 0)], speed=4.0, arrival_radius=2.0)
    assert out.speed[0] == pytest.approx(2.0)


def test_uniform_noise_is_close_to_uniform_and_raw_perlin_is_not():
    rng = np.random.default_rng(5)
    seeds = rng.integers(0, 2**31, 40_000)
    xs = rng.uniform(0, 5000, 40_000)
    raw = np.array([perlin1d(int(s), float(x)) for s, x in zip(seeds, xs)])
    uni = np.array([uniform_noise(int(s), float(x)) for s, x in zip(seeds, xs)])
    assert stats.kstest((uni + 1) / 2, "uniform").statistic < 0.01
    assert stats.kstest((raw + 1) / 2, "uniform").statistic > 0.1
    assert uni.min() >= -1 and uni.max() <= 1


def test_noise_is_smooth_in_time():
    xs = np.linspace(0, 3, 3001)
    u = np.array([uniform_noise(7, float(x)) for x in xs])
    assert np.abs(np.diff(u)).max() < 0.02


def test_wandering_headings_cover_all_directions_evenly():
    n = 20_000
    out = run("wandering", agents(np.zeros((n, 3)), uids=np.arange(n) * 7919), time=12.3, max_pitch_deg=20,
              min_speed=2, max_speed=6, weight_direction=0.05, weight_speed=0.1)
    azimuth = np.arctan2(out.direction[:, 2], out.direction[:, 0])
    assert stats.kstest((azimuth + np.pi) / (2 * np.pi), "uniform").statistic < 0.02
    pitch = np.degrees(np.arcsin(np.clip(out.direction[:, 1], -1, 1)))
    assert pitch.min() >= -20.001 and pitch.max() <= 20.001
    assert out.speed.min() >= 2 and out.speed.max() <= 6
    np.testing.assert_allclose(out.direction_desire, 0.05, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out.direction, axis=1), 1.0, rtol=1e-5)
