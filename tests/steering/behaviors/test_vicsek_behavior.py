"""vicsek_alignment (Vicsek et al. 1995) against hand-computed values: the equal-weight mean
heading within the radius (the animal itself included on request) and its angular noise."""
import math

import numpy as np
import pytest
from scipy import stats

from starling.steering.pipeline import NeighborView
from starling.steering.targets import CoreAgents
from starling.steering.queries.pairs import PairGeometry
from starling.steering.random import normal, stream_key, uniform
from starling.steering.registry import get_behavior
from starling.steering.results import VelocityResults


def agents(positions, headings, uids=None):
    p = np.asarray(positions, np.float32)
    f = np.asarray(headings, np.float32)
    up = np.tile(np.array([0, 1, 0], np.float32), (len(p), 1))
    uid = np.asarray(uids if uids is not None else np.arange(len(p)), np.int64)
    return CoreAgents(p, f * 0.03, f, up, uid)  # velocity = v0 · heading


def run(me, others, rows, time=0.0, dt=1.0, key=0, **params):
    spec = get_behavior("vicsek_alignment")
    kp = spec.params(kind="vicsek_alignment", **params).kernel_params()._replace(key=np.uint64(key))
    k = max(1, max(len(r) for r in rows))
    index = np.full((len(rows), k), -1, np.int32)
    count = np.zeros(len(rows), np.int32)
    for i, r in enumerate(rows):
        index[i, :len(r)] = r
        count[i] = len(r)
    out = VelocityResults(1, len(rows)).view(0, len(rows))
    direction, distance, angle = PairGeometry().compute(me.position, me.forward, others.position, index, count,
                                                        np.zeros(3, np.float32))
    spec.compiled(False)(me, others, NeighborView(index, count, distance, angle, direction), kp, time, dt, out)
    return out


# me at the origin heading +x; A 0.5 m away heading +z; B 0.8 m away heading +x;
# C 1.5 m away heading −x (outside r = 1: ignored although the query returned it)
ME = agents([[0, 0, 0]], [[1, 0, 0]], uids=[7])
OTHERS = agents([[0.5, 0, 0], [0, 0, 0.8], [1.5, 0, 0]], [[0, 0, 1], [1, 0, 0], [-1, 0, 0]])
VIEW = dict(max_distance=1.0, fov_deg=360.0)


def test_the_mean_heading_counts_itself_and_every_neighbour_within_r_equally():
    # self (1,0,0) + A (0,0,1) + B (1,0,0) = (2, 0, 1): direction (2, 0, 1)/√5
    out = run(ME, OTHERS, [[0, 1, 2]], **VIEW)
    np.testing.assert_allclose(out.direction[0], [2 / math.sqrt(5), 0, 1 / math.sqrt(5)], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(1.0)
    assert out.speed_desire[0] == 0.0
    # without itself: A + B = (1, 0, 1), i.e. 45°
    out = run(ME, OTHERS, [[0, 1, 2]], include_self=False, weight_direction=0.6, **VIEW)
    np.testing.assert_allclose(out.direction[0], [math.sqrt(0.5), 0, math.sqrt(0.5)], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.6)


def test_distance_does_not_weigh_a_neighbour():
    # A moved from 0.5 m to 0.99 m: the same mean (thesis alignment would weigh it less)
    others = agents([[0.99, 0, 0], [0, 0, 0.8], [1.5, 0, 0]], [[0, 0, 1], [1, 0, 0], [-1, 0, 0]])
    out = run(ME, others, [[0, 1, 2]], **VIEW)
    np.testing.assert_allclose(out.direction[0], [2 / math.sqrt(5), 0, 1 / math.sqrt(5)], atol=1e-6)


def test_alone_it_keeps_its_heading_or_has_no_opinion_without_itself():
    out = run(ME, OTHERS, [[2]], **VIEW)  # only C, out of range: the mean is one's own heading
    np.testing.assert_allclose(out.direction[0], [1, 0, 0], atol=1e-7)
    out = run(ME, OTHERS, [[2]], include_self=False, **VIEW)
    assert out.direction_desire[0] == 0.0


def test_a_neighbour_at_rest_counts_by_its_forward_and_one_without_a_heading_not_at_all():
    # A at rest facing +z counts as (0, 0, 1); B has neither velocity nor forward: not seen
    up = np.tile(np.array([0, 1, 0], np.float32), (2, 1))
    others = CoreAgents(np.array([[0.5, 0, 0], [0, 0, 0.8]], np.float32), np.zeros((2, 3), np.float32),
                        np.array([[0, 0, 1], [0, 0, 0]], np.float32), up, np.arange(2, dtype=np.int64))
    out = run(ME, others, [[0, 1]], **VIEW)  # self (1, 0, 0) + A (0, 0, 1): 45°
    np.testing.assert_allclose(out.direction[0], [math.sqrt(0.5), 0, math.sqrt(0.5)], atol=1e-6)
    out = run(ME, others, [[1]], include_self=False, **VIEW)  # only B: nobody with a heading
    assert out.direction_desire[0] == 0.0


def test_cancelling_headings_fall_back_to_ones_own():
    # self +x and a neighbour −x sum to zero: the own heading stands in for the mean
    others = agents([[0.5, 0, 0]], [[-1, 0, 0]])
    out = run(ME, others, [[0]], **VIEW)
    np.testing.assert_allclose(out.direction[0], [1, 0, 0], atol=1e-7)


def test_planar_noise_turns_the_mean_about_y_by_a_uniform_angle_from_the_stream():
    key = stream_key(1995, 0, 0)
    out = run(ME, OTHERS, [[0, 1, 2]], time=3.0, dt=1.0, key=key, eta=2.0, **VIEW)
    # Δθ = η (u − ½) with u = uniform(key, uid 7, step 3, lane 0); θ = atan2(z, x) of (2, 1)
    delta = 2.0 * (uniform(key, 7, 3, 0) - 0.5)
    theta = math.atan2(1, 2) + delta
    np.testing.assert_allclose(out.direction[0], [math.cos(theta), 0, math.sin(theta)], atol=1e-6)
    again = run(ME, OTHERS, [[0, 1, 2]], time=3.0, dt=1.0, key=key, eta=2.0, **VIEW)
    np.testing.assert_array_equal(out.direction, again.direction)
    later = run(ME, OTHERS, [[0, 1, 2]], time=4.0, dt=1.0, key=key, eta=2.0, **VIEW)
    assert not np.allclose(out.direction, later.direction)


def test_planar_noise_is_uniform_of_width_eta():
    n = 4000
    me = agents(np.zeros((n, 3)), np.tile([1.0, 0, 0], (n, 1)), uids=np.arange(n) + 100)
    out = run(me, me, [[] for _ in range(n)], time=5.0, key=stream_key(2, 0, 0), eta=2.0, **VIEW)
    assert np.abs(out.direction[:, 1]).max() == 0.0
    angle = np.arctan2(out.direction[:, 2], out.direction[:, 0])  # the heading was θ = 0
    assert angle.min() >= -1.0 - 1e-6 and angle.max() <= 1.0 + 1e-6
    assert angle.min() < -0.99 and angle.max() > 0.99
    assert stats.kstest(angle, stats.uniform(loc=-1.0, scale=2.0).cdf).pvalue > 1e-3
    # η = 0: no noise at all
    out = run(me, me, [[] for _ in range(n)], time=5.0, key=stream_key(2, 0, 0), eta=0.0, **VIEW)
    np.testing.assert_array_equal(out.direction, np.tile(np.float32([1, 0, 0]), (n, 1)))


def test_3d_noise_is_a_gaussian_tangent_rotation_of_sd_sigma():
    # one hand-computed draw: heading +x, g = three normals, t = σ (g − (g·x̂) x̂), m' = cos|t| x̂ + sin|t| t̂
    key = stream_key(3, 0, 1)
    me = agents([[0, 0, 0]], [[1, 0, 0]], uids=[11])
    out = run(me, me, [[]], time=2.0, key=key, planar=False, sigma=0.3, **VIEW)
    g = np.array([normal(key, 11, 2, lane) for lane in range(3)])
    t = 0.3 * np.array([0.0, g[1], g[2]])
    a = np.linalg.norm(t)
    np.testing.assert_allclose(out.direction[0], [math.cos(a), *(math.sin(a) * t[1:] / a)], atol=1e-6)
    # many draws: the turn angle² averages 2σ² (two tangent components of variance σ²)
    n = 4000
    me = agents(np.zeros((n, 3)), np.tile([1.0, 0, 0], (n, 1)))
    out = run(me, me, [[] for _ in range(n)], time=1.0, key=key, planar=False, sigma=0.1, **VIEW)
    turn = np.arccos(np.clip(out.direction[:, 0], -1, 1))
    assert np.mean(turn ** 2) == pytest.approx(2 * 0.1 ** 2, rel=0.08)
    np.testing.assert_allclose(np.linalg.norm(out.direction, axis=1), 1.0, atol=1e-5)


def test_planar_mean_ignores_vertical_heading_components_and_the_field_of_view_limits_it():
    # a neighbour climbing steeply counts by its horizontal heading only
    others = agents([[0.5, 0, 0]], [[0, 0.8, 0.6]])
    out = run(ME, others, [[0]], include_self=False, **VIEW)
    np.testing.assert_allclose(out.direction[0], [0, 0, 1], atol=1e-6)
    # a 90° view ahead (+x): B at (0, 0, 0.8) is 90° off, outside; A ahead is seen
    out = run(ME, OTHERS, [[0, 1]], include_self=False, max_distance=1.0, fov_deg=90.0)
    np.testing.assert_allclose(out.direction[0], [0, 0, 1], atol=1e-6)


def test_a_full_view_sees_a_neighbour_right_behind():
    # the pair geometry's float32 angle of a neighbour straight behind is π rounded up, above
    # the float64 half view π: a 360° view must count it all the same
    behind = agents([[-0.6, 0, 0]], [[0, 0, 1]])
    out = run(ME, behind, [[0]], include_self=False, **VIEW)
    np.testing.assert_allclose(out.direction[0], [0, 0, 1], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(1.0)
    # a view of 359° leaves it out: nobody seen, no opinion
    out = run(ME, behind, [[0]], include_self=False, max_distance=1.0, fov_deg=359.0)
    assert out.direction_desire[0] == 0.0
