"""Seed 004's built-ins (Ménard): the eight-way ray pattern and avoidance, the smooth-zone school,
holding the course between staggered updates; each against hand-computed values."""
import math

import numpy as np
import pytest
from pydantic import ValidationError

from starling.steering.pipeline import NeighborView, RayView
from starling.steering.targets import CoreAgents
from starling.steering.queries.pairs import PairGeometry
from starling.steering.queries.rays import RayQuerySpec, eight_way_index, eight_way_pattern
from starling.steering.registry import get_behavior
from starling.steering.results import VelocityResults
from starling.world.population import agent_tuple_type


def unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


# ------------------------------------------------------------------------------ the eight_way pattern
def test_eight_way_pattern_is_the_axis_then_rings_of_eight_deflected_by_90_k_over_K():
    pattern = eight_way_pattern(25)  # K = 3 rings: 30°, 60°, 90°
    assert pattern.shape == (25, 3)
    np.testing.assert_allclose(pattern[0], [0, 0, 1])
    np.testing.assert_allclose(np.linalg.norm(pattern, axis=1), 1.0)
    for k, deg in ((1, 30.0), (2, 60.0), (3, 90.0)):
        for j in range(8):
            d = pattern[eight_way_index(k, j)]
            assert math.degrees(math.acos(np.clip(d[2], -1, 1))) == pytest.approx(deg)
            assert math.degrees(math.atan2(d[1], d[0])) % 360.0 == pytest.approx(45.0 * j, abs=1e-9)
    # j = 0 and 4 are horizontal (local x), 2 and 6 vertical (local y)
    np.testing.assert_allclose(pattern[eight_way_index(3, 0)], [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(pattern[eight_way_index(3, 2)], [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(pattern[eight_way_index(3, 4)], [-1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(pattern[eight_way_index(3, 6)], [0, -1, 0], atol=1e-12)
    spec = RayQuerySpec(shape="eight_way", count=17)
    assert spec.pattern().shape == (17, 3) and spec.mode == 0  # the animal's local frame


@pytest.mark.parametrize("count", [1, 8, 10, 24])
def test_eight_way_query_needs_one_plus_eight_k_rays(count):
    with pytest.raises(ValidationError, match="1 \\+ 8"):
        RayQuerySpec(shape="eight_way", count=count)


# ------------------------------------------------------------------------------ eight_way_avoidance
def ray_view(hit_at: dict, count=25):
    """One animal heading +z with the local frame = world: rays of the pattern, ``hit_at`` {ray: distance}."""
    pattern = eight_way_pattern(count).astype(np.float32)
    view = RayView(np.zeros((1, count), bool), np.full((1, count), np.inf, np.float32),
                   np.zeros((1, count, 3), np.float32), np.zeros((1, count, 3), np.float32),
                   np.full((1, count), -1, np.int16), pattern[None].copy())
    for q, d in hit_at.items():
        view.hit[0, q] = True
        view.distance[0, q] = d
        view.normal[0, q] = -pattern[q]
        view.layer[0, q] = 3
    return view


def avoid(view, **params):
    spec = get_behavior("eight_way_avoidance")
    agents = CoreAgents(np.zeros((1, 3), np.float32), np.float32([[0, 0, 1]]), np.float32([[0, 0, 1]]),
                        np.float32([[0, 1, 0]]), np.zeros(1, np.int64))
    out = VelocityResults(1, 1).view(0, 1)
    spec.compiled(False)(agents, view, spec.params(**params).kernel_params(), 0.0, 1 / 30, out)
    return out.direction[0].astype(float), float(out.direction_desire[0]), float(out.speed_desire[0])


def test_no_opinion_while_the_way_ahead_is_clear():
    d, des, _ = avoid(ray_view({eight_way_index(1, 0): 0.5}), max_distance=3.0)
    assert des == 0.0 and not d.any()
    d, des, _ = avoid(ray_view({0: 3.5}), max_distance=3.0)  # beyond the probe
    assert des == 0.0


def test_a_near_obstacle_picks_the_90_degree_ring_and_its_freest_ray():
    # ahead at 0.5 of r = 3: closeness 5/6, ring round(3 · 5/6) = round(2.5) = 3 (90°);
    # every ray of ring 3 hits, the up-left diagonal (j = 3) farthest
    hits = {0: 0.5} | {eight_way_index(3, j): 1.0 + 0.1 * j for j in range(8)}
    hits[eight_way_index(3, 3)] = 2.9
    d, des, sdes = avoid(ray_view(hits), max_distance=3.0, weight_direction=0.8)
    np.testing.assert_allclose(d, eight_way_pattern(25)[eight_way_index(3, 3)], atol=1e-6)
    assert des == pytest.approx(0.8) and sdes == 0.0


def test_a_far_obstacle_deflects_by_the_smallest_ring_and_a_miss_is_infinitely_free():
    # ahead at 2.6 of 3: closeness 0.133, round(0.4) = 0 → ring 1 (30°); ray j = 5 misses, the others hit
    hits = {0: 2.6} | {eight_way_index(1, j): 2.0 for j in range(8) if j != 5}
    d, des, _ = avoid(ray_view(hits), max_distance=3.0)
    np.testing.assert_allclose(d, eight_way_pattern(25)[eight_way_index(1, 5)], atol=1e-6)
    # the middle ring at closeness 0.5 (1.5 m ahead): round(1.5) = 2 (60°)
    hits = {0: 1.5} | {eight_way_index(2, j): 1.0 for j in range(8) if j != 6}
    d, _, _ = avoid(ray_view(hits), max_distance=3.0)
    np.testing.assert_allclose(d, eight_way_pattern(25)[eight_way_index(2, 6)], atol=1e-6)


def test_sharks_prefer_horizontal_escapes():
    # ring 3: right (j = 0) free for 2.0 m, up (j = 2) for 3.0 m, the rest 1.0 m
    hits = {0: 0.3} | {eight_way_index(3, j): 1.0 for j in range(8)}
    hits[eight_way_index(3, 0)] = 2.0
    hits[eight_way_index(3, 2)] = 3.0
    pattern = eight_way_pattern(25)
    d, _, _ = avoid(ray_view(hits), max_distance=3.0)  # no preference: the freest, up
    np.testing.assert_allclose(d, pattern[eight_way_index(3, 2)], atol=1e-6)
    d, _, _ = avoid(ray_view(hits), max_distance=3.0, horizontal_preference=2.0)  # 2 · 2.0 > 3.0
    np.testing.assert_allclose(d, pattern[eight_way_index(3, 0)], atol=1e-6)
    # every ray of the ring misses: all equally free; the preferred horizontal one wins
    d, _, _ = avoid(ray_view({0: 0.3}), max_distance=3.0, horizontal_preference=1.5)
    assert abs(d[1]) < 1e-6 and abs(abs(d[0]) - 1.0) < 1e-6


# ------------------------------------------------------------------------------ reef_school
POS = [(0, 0, 0), (1, 0, 0), (0, 0, 5), (0, 9, 0), (3, 0, 0), (-5, 0, 0), (0, 0, 12)]
VEL = [(2, 0, 0), (0, 2, 0), (0, 0, 5), (1, 0, 0), (1, 0, 0), (1, 0, 0), (1, 0, 0)]
SCHOOL = dict(max_distance=12.0, fov_deg=300.0, repulsion_fraction=0.3, alignment_fraction=0.7, blend=0.1,
              weight_direction=0.7)


def school(vision, rows=(1, 2, 3, 4, 5, 6), **params):
    Agents = agent_tuple_type(("vision",))
    p = np.asarray(POS, np.float32)
    v = np.asarray(VEL, np.float32)
    f = v / np.linalg.norm(v, axis=1, keepdims=True)
    up = np.tile(np.float32([0, 1, 0]), (len(p), 1))
    everyone = CoreAgents(p, v, f, up, np.arange(len(p), dtype=np.int64))
    me = Agents(p[:1], v[:1], f[:1], up[:1], np.zeros(1, np.int64), np.float32([vision]))
    index = np.full((1, len(rows)), -1, np.int32)
    index[0] = rows
    count = np.int32([len(rows)])
    direction, distance, angle = PairGeometry().compute(me.position, me.forward, p, index, count,
                                                        np.zeros(3, np.float32))
    spec = get_behavior("reef_school")
    out = VelocityResults(1, 1).view(0, 1)
    spec.compiled(False)(me, everyone, NeighborView(index, count, distance, angle, direction),
                         spec.params(**(SCHOOL | params)).kernel_params(), 0.0, 0.1, out)
    return out.direction[0].astype(float), float(out.direction_desire[0])


def test_reef_school_blends_the_three_zones_and_the_previous_direction():
    # R = 10: repulsion to 3 m, alignment to 7 m, each edge blended over ±1 m.
    #   1 at d = 1: repulsion (w_r = 1);  4 at d = 3: on the edge, w_r = w_a = 0.5 (smoothstep(2, 4, 3))
    #   2 at d = 5: alignment (forward +z);  3 at d = 9: cohesion;  5 behind (180° > 150°), 6 beyond R: ignored
    # repulsion: away from 1·(1,0,0) + 0.5·(3,0,0) → (-1, 0, 0)
    # alignment: 1·(0,0,1) + 0.5·(1,0,0) → (0.5, 0, 1)/|…|;  cohesion: toward (0, 9, 0) → (0, 1, 0)
    # previous: (1, 0, 0)
    d, des = school(10.0)
    expected = np.array([-1, 0, 0]) + unit([0.5, 0, 1]) + np.array([0, 1, 0]) + np.array([1, 0, 0])
    np.testing.assert_allclose(d, unit(expected), atol=1e-5)
    assert des == pytest.approx(0.7)
    # the weights k_*: doubling repulsion's
    d, _ = school(10.0, repulsion_weight=2.0)
    np.testing.assert_allclose(d, unit(expected + [-1, 0, 0]), atol=1e-5)


def test_reef_school_sees_only_within_its_own_vision_radius():
    # R = 2.5: only 1 (d = 1) is seen; the edges scale with R (repulsion to 0.75 ± 0.25, alignment to
    # 1.75 ± 0.25), so at d = 1 it is purely in the alignment zone: its heading (0, 1, 0) + previous (1, 0, 0)
    d, des = school(2.5)
    np.testing.assert_allclose(d, unit([1, 1, 0]), atol=1e-5)
    assert des == pytest.approx(0.7)
    # nobody within 0.5 m: no opinion
    d, des = school(0.5)
    assert des == 0.0 and not d.any()


# ------------------------------------------------------------------------------ hold_course
def test_hold_course_asks_for_the_held_velocity_only_while_holding():
    Agents = agent_tuple_type(("stagger_hold", "held_x", "held_y", "held_z"))
    n = 3
    z = np.zeros((n, 3), np.float32)
    agents = Agents(z, z, np.tile(np.float32([0, 0, 1]), (n, 1)), np.tile(np.float32([0, 1, 0]), (n, 1)),
                    np.arange(n, dtype=np.int64), held_x=np.float32([3, 3, 0]), held_y=np.float32([0, 0, 0]),
                    held_z=np.float32([4, 4, 0]), stagger_hold=np.float32([1, 0, 1]))
    spec = get_behavior("hold_course")
    out = VelocityResults(1, n).view(0, n)
    params = spec.params()
    assert params.priority == 255
    spec.compiled(False)(agents, params.kernel_params(), 0.0, 0.1, out)
    np.testing.assert_allclose(out.direction[0], [0.6, 0, 0.8], atol=1e-6)
    assert out.direction_desire[0] == 1.0 and out.speed[0] == pytest.approx(5.0) and out.speed_desire[0] == 1.0
    assert out.direction_desire[1] == 0.0 and out.speed_desire[1] == 0.0   # deciding this step
    assert out.direction_desire[2] == 0.0 and out.speed_desire[2] == 0.0   # nothing held yet
