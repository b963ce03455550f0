"""The seed-003 behaviours of the classroom scene against hand-computed values.

boid_cohesion / boid_alignment / boid_separation (the slides' BoidCohesion, BoidAlign,
BoidSeparation), their breathing factor, room_walls (separation from the closest point of
each wall) and jitter (noise from the kernel random stream).
"""
import math

import numpy as np
import pytest

from starling.steering.pipeline import NeighborView
from starling.steering.targets import CoreAgents
from starling.steering.queries.pairs import PairGeometry
from starling.steering.random import stream_key, uniform
from starling.steering.registry import get_behavior
from starling.steering.results import VelocityResults


def agents(positions, forwards, uids=None):
    p = np.asarray(positions, np.float32)
    f = np.asarray(forwards, np.float32)
    up = np.tile(np.array([0, 1, 0], np.float32), (len(p), 1))
    uid = np.asarray(uids if uids is not None else np.arange(len(p)), np.int64)
    return CoreAgents(p, f * 2, f, up, uid)


def run_neighbor(kind, me, others, rows, time=0.0, **params):
    spec = get_behavior(kind)
    model = spec.params(kind=kind, **params)
    k = max(1, max(len(r) for r in rows))
    index = np.full((len(rows), k), -1, np.int32)
    count = np.zeros(len(rows), np.int32)
    for i, r in enumerate(rows):
        index[i, :len(r)] = r
        count[i] = len(r)
    out = VelocityResults(1, len(rows)).view(0, len(rows))
    direction, distance, angle = PairGeometry().compute(me.position, me.forward, others.position, index, count,
                                                        np.zeros(3, np.float32))
    spec.compiled(False)(me, others, NeighborView(index, count, distance, angle, direction),
                         model.kernel_params(), time, 0.02, out)
    return out


def run_simple(kind, a, time=0.0, dt=0.02, key=None, **params):
    spec = get_behavior(kind)
    kp = spec.params(kind=kind, **params).kernel_params()
    if key is not None:
        kp = kp._replace(key=np.uint64(key))
    out = VelocityResults(1, len(a.position)).view(0, len(a.position))
    spec.compiled(False)(a, kp, time, dt, out)
    return out


# me at the origin heading +z; A 2 m ahead heading +z, B 4 m to the right heading +x,
# C 6 m behind (outside a 5 m view)
ME = agents([[0, 0, 0]], [[0, 0, 1]])
OTHERS = agents([[0, 0, 2], [4, 0, 0], [0, 0, -6]], [[0, 0, 1], [1, 0, 0], [-1, 0, 0]])
VIEW = dict(max_distance=5.0, fov_deg=360.0)
R5 = 1 / math.sqrt(5)


def test_boid_cohesion_heads_for_the_plain_centroid_at_full_weight():
    # centroid of A and B: (2, 0, 1) (C is out of view); direction (2, 0, 1) / sqrt 5
    out = run_neighbor("boid_cohesion", ME, OTHERS, [[0, 1, 2]], weight_direction=0.8, **VIEW)
    np.testing.assert_allclose(out.direction[0], [2 * R5, 0, R5], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.8)
    assert out.speed_desire[0] == 0


def test_boid_cohesion_sees_only_its_field_of_view():
    # a 90° view straight ahead: B (90° to the side) is out, only A remains
    out = run_neighbor("boid_cohesion", ME, OTHERS, [[0, 1]], weight_direction=0.8, max_distance=5.0, fov_deg=90.0)
    np.testing.assert_allclose(out.direction[0], [0, 0, 1], atol=1e-6)


def test_boid_alignment_follows_the_summed_forward_vectors():
    # (0, 0, 1) + (1, 0, 0) normalised
    out = run_neighbor("boid_alignment", ME, OTHERS, [[0, 1, 2]], weight_direction=0.4, **VIEW)
    np.testing.assert_allclose(out.direction[0], [math.sqrt(0.5), 0, math.sqrt(0.5)], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.4)


def test_boid_separation_weighs_each_neighbour_by_one_over_its_distance():
    # Σ (p − q)/|p − q| / (|p − q| + 1e-4): A gives (0, 0, −1/2.0001), B (−1/4.0001, 0, 0)
    out = run_neighbor("boid_separation", ME, OTHERS, [[0, 1, 2]], weight_direction=0.9, **VIEW)
    v = np.array([-1 / 4.0001, 0.0, -1 / 2.0001])
    np.testing.assert_allclose(out.direction[0], v / np.linalg.norm(v), atol=1e-6)
    np.testing.assert_allclose(out.direction[0], [-R5, 0, -2 * R5], atol=1e-4)  # ≈ (−1, 0, −2)/√5
    assert out.direction_desire[0] == pytest.approx(0.9)


def test_no_neighbour_in_view_is_no_opinion():
    for kind in ("boid_cohesion", "boid_alignment", "boid_separation"):
        out = run_neighbor(kind, ME, OTHERS, [[2]], weight_direction=0.8, **VIEW)  # only C, 6 m away
        assert out.direction_desire[0] == 0 and not out.direction[0].any()


@pytest.mark.parametrize("time, phase, factor", [
    (0.0, 0.0, 0.4),     # the slides' cohesion c = 1 − (cos 0 + 1) · 0.6 / 2 = 0.4
    (2.0, 0.0, 0.7),     # cos(π/2) = 0: 1 − 0.3
    (4.0, 0.0, 1.0),     # cos(π) = −1: the full weight
    (0.0, -90.0, 0.7),   # the slides' separation s = 1 − (sin 0 + 1) · 0.3 = 0.7
    (2.0, -90.0, 0.4),   # sin(π/2) = 1: 1 − 0.6
    (6.0, -90.0, 1.0),   # sin(3π/2) = −1
])
def test_breathing_scales_the_desire_as_the_slides_cohesion_and_separation(time, phase, factor):
    breathing = dict(breathing_period=8.0, breathing_amplitude=0.6, breathing_phase_deg=phase)
    for kind in ("boid_cohesion", "boid_alignment", "boid_separation"):
        out = run_neighbor(kind, ME, OTHERS, [[0, 1]], time=time, weight_direction=0.5, **VIEW, **breathing)
        assert out.direction_desire[0] == pytest.approx(0.5 * factor, abs=1e-9)


def test_breathing_off_is_the_weight_at_any_time():
    out = run_neighbor("boid_cohesion", ME, OTHERS, [[0, 1]], time=3.7, weight_direction=0.5,
                       breathing_period=0.0, breathing_amplitude=0.9, **VIEW)
    assert out.direction_desire[0] == pytest.approx(0.5)


ROOM = dict(room_min=(-10.0, 0.0, -10.0), room_max=(10.0, 3.0, 10.0), max_distance=2.0, weight_direction=0.9)


def test_room_walls_push_from_the_closest_point_of_each_wall_in_range():
    a = agents([[9, 1.5, 0],        # 1 m from the wall x = 10: straight back, −x
                [9, 1.5, -9.5],     # a corner: 1 m from x = 10, 0.5 m from z = −10
                [0, 1.5, 0],        # the middle: no wall within 2 m
                [12, 1.5, 0]],      # outside: back to the closest point inside, (10, 1.5, 0)
               [[0, 0, 1]] * 4)
    out = run_simple("room_walls", a, **ROOM)
    np.testing.assert_allclose(out.direction[0], [-1, 0, 0], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.9)
    # (−1/(1 + 1e-4), 0, +1/(0.5 + 1e-4)) normalised ≈ (−1, 0, 2)/√5
    v = np.array([-1 / 1.0001, 0.0, 1 / 0.5001])
    np.testing.assert_allclose(out.direction[1], v / np.linalg.norm(v), atol=1e-6)
    np.testing.assert_allclose(out.direction[1], [-R5, 0, 2 * R5], atol=1e-4)
    assert out.direction_desire[2] == 0 and not out.direction[2].any()
    np.testing.assert_allclose(out.direction[3], [-1, 0, 0], atol=1e-6)
    assert out.direction_desire[3] == pytest.approx(0.9)


def test_room_walls_floor_and_ceiling_only_when_asked():
    a = agents([[0, 0.5, 0]], [[0, 0, 1]])  # 0.5 m above the floor, 2.5 m under the ceiling
    assert run_simple("room_walls", a, **ROOM).direction_desire[0] == 0
    out = run_simple("room_walls", a, floor_and_ceiling=True, **ROOM)
    np.testing.assert_allclose(out.direction[0], [0, 1, 0], atol=1e-6)


def test_room_walls_cancel_exactly_between_two_walls():
    # a 2 m wide corridor: both walls 1 m away push equally, the sum is zero: no opinion
    out = run_simple("room_walls", agents([[0, 1, 0]], [[0, 0, 1]]), room_min=(-1, 0, -10), room_max=(1, 3, 10),
                     max_distance=2.0)
    assert out.direction_desire[0] == 0


def test_room_must_be_a_box():
    from pydantic import ValidationError
    with pytest.raises(ValidationError, match="room_max must exceed room_min"):
        get_behavior("room_walls").params(room_min=(0, 0, 0), room_max=(5, 0, 5))


def test_jitter_draws_from_the_kernel_stream_reproducibly():
    a = agents([[0, 0, 0]] * 3, [[0, 0, 1]] * 3, uids=[7, 8, 9])
    key = stream_key(3, 0, 4)
    out = run_simple("jitter", a, time=0.2, dt=0.02, key=key, weight_direction=0.25)
    for i, uid in enumerate([7, 8, 9]):
        angle = 2 * math.pi * uniform(key, uid, 10, 0)  # step 10 = 0.2 / 0.02, lane 0
        np.testing.assert_allclose(out.direction[i], [math.cos(angle), 0, math.sin(angle)], atol=1e-6)
        assert out.direction_desire[i] == pytest.approx(0.25)
    again = run_simple("jitter", a, time=0.2, dt=0.02, key=key, weight_direction=0.25)
    np.testing.assert_array_equal(out.direction, again.direction)
    other = run_simple("jitter", a, time=0.2, dt=0.02, key=stream_key(4, 0, 4), weight_direction=0.25)
    assert not np.allclose(out.direction, other.direction)
    later = run_simple("jitter", a, time=0.22, dt=0.02, key=key, weight_direction=0.25)
    assert not np.allclose(out.direction, later.direction)


def test_jitter_in_3d_is_a_unit_vector():
    a = agents([[0, 0, 0]] * 50, [[0, 0, 1]] * 50)
    out = run_simple("jitter", a, key=stream_key(1, 0, 0), horizontal=False, weight_direction=0.1)
    np.testing.assert_allclose(np.linalg.norm(out.direction, axis=1), 1.0, atol=1e-5)
    assert np.abs(out.direction[:, 1]).max() > 0.1  # leaves the plane
