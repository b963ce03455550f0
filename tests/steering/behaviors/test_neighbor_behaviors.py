"""Cohesion, alignment, separation, flee and seek against hand-computed values (seed 000, 6.4.5, 9.5.2)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from starling.steering.pipeline import NeighborView
from starling.steering.targets import CoreAgents
from starling.steering.queries.pairs import PairGeometry
from starling.steering.registry import get_behavior
from starling.steering.results import VelocityResults

# o for a neighbour at distance 2 of r = 5 straight ahead: f_ip(0.4, 2) * f_q2(0, 2) = 5.25
# and at distance 2 to the side with fov = 360°: 5.25 * (1 - 0.5²) = 3.9375
O_AHEAD = 1 / 0.16 - 1
O_SIDE = O_AHEAD * 0.75


def agents(positions, velocities, forwards=None):
    p = np.asarray(positions, np.float32)
    v = np.asarray(velocities, np.float32)
    if forwards is None:
        s = np.linalg.norm(v, axis=1, keepdims=True)
        forwards = np.where(s > 0, v / np.maximum(s, 1e-9), [0, 0, 1])
    f = np.asarray(forwards, np.float32)
    up = np.tile(np.array([0, 1, 0], np.float32), (len(p), 1))
    return CoreAgents(p, v, f, up, np.arange(len(p), dtype=np.int64))


def run(kind, me, others, rows, params):
    spec = get_behavior(kind)
    model = spec.params(kind=kind, **params)
    k = max(1, max((len(r) for r in rows), default=1))
    index = np.full((len(rows), k), -1, np.int32)
    dist = np.full((len(rows), k), np.inf, np.float32)
    count = np.zeros(len(rows), np.int32)
    for i, r in enumerate(rows):
        for q, j in enumerate(r):
            index[i, q] = j
            dist[i, q] = np.linalg.norm(others.position[j] - me.position[i])
        count[i] = len(r)
    res = VelocityResults(1, len(rows))
    out = res.view(0, len(rows))
    direction, distance, angle = PairGeometry().compute(me.position, me.forward, others.position, index, count,
                                                        np.zeros(3, np.float32))
    np.testing.assert_allclose(distance[index >= 0], dist[index >= 0], rtol=1e-6)
    spec.compiled(False)(me, others, NeighborView(index, count, distance, angle, direction),
                         model.kernel_params(), 0.0, 0.1, out)
    return out


ME = agents([[0, 0, 0]], [[0, 0, 2]])
PAIR = agents([[0, 0, 2], [2, 0, 0]], [[0, 0, 4], [3, 0, 0]])
VISION = dict(max_distance=5.0, fov_deg=360.0)


def test_cohesion_heads_for_the_observability_weighted_centroid():
    out = run("cohesion", ME, PAIR, [[0, 1]], dict(weight_direction=0.8, **VISION))
    a = np.array([O_SIDE * 2, 0, O_AHEAD * 2]) / (O_AHEAD + O_SIDE)
    np.testing.assert_allclose(out.direction[0], a / np.linalg.norm(a), atol=1e-6)
    np.testing.assert_allclose(out.direction[0], [0.6, 0, 0.8], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.8 * (np.linalg.norm(a) / 5) ** 2, rel=1e-5)
    assert out.direction_desire[0] == pytest.approx(0.0653061, rel=1e-4)
    assert out.speed_desire[0] == 0


def test_alignment_matches_weighted_mean_heading_and_speed():
    out = run("alignment", ME, PAIR, [[0, 1]], dict(weight_direction=0.8, weight_speed=0.3, max_speed=8.0, **VISION))
    np.testing.assert_allclose(out.direction[0], [0.6, 0, 0.8], atol=1e-6)
    theta = math.acos(0.8)
    assert out.direction_desire[0] == pytest.approx(0.8 * (theta / math.pi) ** 2, rel=1e-5)
    b = (O_AHEAD * 4 + O_SIDE * 3) / (O_AHEAD + O_SIDE)
    assert out.speed[0] == pytest.approx(b, rel=1e-6) and b == pytest.approx(3.571429, rel=1e-6)
    assert out.speed_desire[0] == pytest.approx(0.3 * ((b - 2) / 8) ** 2, rel=1e-5)


def test_separation_moves_away_with_desire_from_the_most_observable_neighbour():
    out = run("separation", ME, PAIR, [[0, 1]], dict(weight_direction=0.6, **VISION))
    np.testing.assert_allclose(out.direction[0], [-0.6, 0, -0.8], atol=1e-6)
    fsep = 1 - 1 / (0.01 * O_AHEAD + 1) ** 2
    assert out.direction_desire[0] == pytest.approx(0.6 * fsep, rel=1e-5)
    assert out.direction_desire[0] == pytest.approx(0.05835, rel=1e-3)


def test_separation_desire_is_zero_at_the_edge_of_vision():
    edge = agents([[0, 0, 5]], [[0, 0, 1]])
    out = run("separation", ME, edge, [[0]], dict(weight_direction=0.6, **VISION))
    assert out.direction_desire[0] == 0


def test_a_neighbour_behind_outside_the_field_of_view_is_ignored():
    behind = agents([[0, 0, -2]], [[0, 0, 1]])
    for kind in ("cohesion", "alignment", "separation", "flee", "seek"):
        out = run(kind, ME, behind, [[0]], dict(max_distance=5.0, fov_deg=270.0))
        assert out.direction_desire[0] == 0 and out.speed_desire[0] == 0, kind


def test_flee_runs_away_faster_the_closer_the_threat():
    out = run("flee", ME, PAIR, [[0]], dict(weight_direction=0.8, weight_speed=0.7, max_speed=8.0, **VISION))
    a = 1 - (1 - 0.6) ** 2  # q4 easing of closeness 1 - 2/5
    np.testing.assert_allclose(out.direction[0], [0, 0, -1], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.8 * a, rel=1e-6)
    assert out.speed[0] == pytest.approx(8.0 * a, rel=1e-6)
    assert out.speed_desire[0] == pytest.approx(0.7 * a, rel=1e-6)
    far = run("flee", ME, agents([[0, 0, 4]], [[0, 0, 0]]), [[0]], dict(max_distance=5.0, fov_deg=360.0, max_speed=8.0))
    assert far.speed[0] < out.speed[0] and far.direction_desire[0] < out.direction_desire[0]


def test_seek_goes_for_the_nearest_visible_neighbour():
    # both at 2 m: the first in the (distance, index)-sorted row wins
    out = run("seek", ME, PAIR, [[0, 1]], dict(weight_direction=0.7, max_speed=8.0, **VISION))
    np.testing.assert_allclose(out.direction[0], [0, 0, 1], atol=1e-6)
    # rows come sorted by distance (the query's contract): nearest first
    out = run("seek", ME, agents([[3, 0, 0], [0, 0, 1]], [[0, 0, 0]] * 2), [[1, 0]], dict(max_distance=5.0, fov_deg=360.0, max_speed=8.0))
    np.testing.assert_allclose(out.direction[0], [0, 0, 1], atol=1e-6)


def test_no_neighbours_means_no_opinion():
    for kind in ("cohesion", "alignment", "separation", "flee", "seek"):
        out = run(kind, ME, PAIR, [[]], dict(max_distance=5.0, fov_deg=360.0))
        assert out.direction_desire[0] == 0 and out.speed_desire[0] == 0
        assert np.all(out.direction[0] == 0)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 12),
    st.floats(0.5, 20),
    st.floats(10, 360),
    st.floats(0, 1), st.floats(0, 1),
    st.integers(0, 2**31 - 1),
    st.sampled_from(["cohesion", "alignment", "separation", "flee", "seek"]),
)
def test_no_nan_and_desires_within_their_weights_for_any_input(m, radius, fov, wd, ws, seed, kind):
    rng = np.random.default_rng(seed)
    pos = (rng.normal(size=(m + 1, 3)) * radius * rng.choice([0.01, 0.5, 2.0])).astype(np.float32)
    pos[1] = pos[0] if m > 1 and seed % 3 == 0 else pos[1]  # sometimes coincident animals
    vel = (rng.normal(size=(m + 1, 3)) * rng.choice([0.0, 1.0, 5.0])).astype(np.float32)
    a = agents(pos[:1], vel[:1])
    o = agents(pos[1:], vel[1:])
    out = run(kind, a, o, [list(range(m))], dict(max_distance=radius, fov_deg=fov, weight_direction=wd,
                                               weight_speed=ws, **({} if kind in ("cohesion", "separation") else {"max_speed": 7.0})))
    values = [out.direction[0], out.direction_desire, out.speed, out.speed_desire]
    assert all(np.isfinite(v).all() for v in values)
    assert 0 <= out.direction_desire[0] <= wd + 1e-6
    assert 0 <= out.speed_desire[0] <= ws + 1e-6
    n = np.linalg.norm(out.direction[0])
    assert n == 0 or abs(n - 1) < 1e-5
    assert out.speed[0] >= 0


def test_pair_geometry_uses_the_minimum_image_in_a_periodic_box():
    me = agents([[0.5, 5, 5]], [[-1, 0, 0]])
    other = agents([[9.5, 5, 5]], [[0, 0, 1]])
    index = np.array([[0]], np.int32)
    count = np.array([1], np.int32)
    direction, distance, angle = PairGeometry().compute(me.position, me.forward, other.position, index, count,
                                                        np.array([10, 10, 10], np.float32))
    assert distance[0, 0] == pytest.approx(1.0, abs=1e-5)  # across the wrap, not 9 m the other way
    np.testing.assert_allclose(direction[0, 0], [-1, 0, 0], atol=1e-6)
    assert angle[0, 0] == pytest.approx(0.0, abs=1e-4)  # straight ahead of an animal facing -x
