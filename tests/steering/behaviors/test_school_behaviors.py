"""Seed 002's school_cohesion, school_separation and school_alignment against hand-computed values.

The scene (fish 0 is the one asking; its neighbours are listed nearest first):

    fish 1 at (3, 0, 0), velocity ( 3, 0, 0)     distance 3
    fish 2 at (0, 0, 4), velocity ( 0, 4, 0)     distance 4
    fish 3 at (5, 0, 0), velocity (-100, 0, 0)   distance 5 exactly: outside a radius of 5 (d < R is strict)

* cohesion, R = 5: fish 1 and 2; mean offset ((3 + 0)/2, 0, (0 + 4)/2) = (1.5, 0, 2), length 2.5,
  so ĉ = (0.6, 0, 0.8).
* separation, R = 3.5: fish 1 only; -(3, 0, 0) normalised = (-1, 0, 0).
* alignment, R = 4.5: fish 1 and 2; mean velocity (1.5, 2, 0), length 2.5, so â = (0.6, 0.8, 0);
  with R = 5.5 fish 3 joins: mean ((3 + 0 - 100)/3, 4/3, 0) = (-97/3, 4/3, 0), normalised
  (-97, 4, 0)/√9425.
"""
import math

import numpy as np
import pytest

from starling.steering.pipeline import NeighborView
from starling.steering.targets import CoreAgents
from starling.steering.queries.pairs import PairGeometry
from starling.steering.registry import get_behavior
from starling.steering.results import VelocityResults

POS = [(0, 0, 0), (3, 0, 0), (0, 0, 4), (5, 0, 0)]
VEL = [(1, 0, 0), (3, 0, 0), (0, 4, 0), (-100, 0, 0)]


def _agents(positions, velocities):
    p = np.asarray(positions, np.float32)
    v = np.asarray(velocities, np.float32)
    f = np.tile(np.array([0, 0, 1], np.float32), (len(p), 1))
    up = np.tile(np.array([0, 1, 0], np.float32), (len(p), 1))
    return CoreAgents(p, v, f, up, np.arange(len(p), dtype=np.int64))


def run(kind, rows, positions=POS, velocities=VEL, **params):
    """Run behaviour ``kind`` for the fish whose neighbour lists are ``rows`` (lists of indices)."""
    fish = _agents(positions, velocities)
    me = _agents(positions[:len(rows)], velocities[:len(rows)])
    spec = get_behavior(kind)
    model = spec.params(kind=kind, **params)
    k = max(1, max(len(r) for r in rows))
    index = np.full((len(rows), k), -1, np.int32)
    count = np.zeros(len(rows), np.int32)
    for i, r in enumerate(rows):
        index[i, :len(r)] = r
        count[i] = len(r)
    direction, distance, angle = PairGeometry().compute(me.position, me.forward, fish.position, index, count,
                                                        np.zeros(3, np.float32))
    res = VelocityResults(1, len(rows))
    out = res.view(0, len(rows))
    spec.compiled(False)(me, fish, NeighborView(index, count, distance, angle, direction),
                         model.kernel_params(), 0.0, 0.1, out)
    return out


def test_cohesion_heads_for_the_plain_centroid_of_the_fish_strictly_inside_its_radius():
    out = run("school_cohesion", [[1, 2, 3]], max_distance=5.0, weight_direction=0.3)
    np.testing.assert_allclose(out.direction[0], [0.6, 0.0, 0.8], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.3)
    assert out.speed[0] == 0 and out.speed_desire[0] == 0


def test_cohesion_counts_every_neighbour_the_same_whatever_its_distance():
    # with R = 6 fish 3 joins: mean offset ((3 + 0 + 5)/3, 0, 4/3) = (8/3, 0, 4/3) -> (2, 0, 1)/√5
    out = run("school_cohesion", [[1, 2, 3]], max_distance=6.0, weight_direction=0.3)
    np.testing.assert_allclose(out.direction[0], np.array([2, 0, 1]) / math.sqrt(5), atol=1e-6)


def test_separation_heads_away_from_the_mean_offset_of_the_fish_inside_its_radius():
    out = run("school_separation", [[1, 2, 3]], max_distance=3.5, weight_direction=0.8)
    np.testing.assert_allclose(out.direction[0], [-1.0, 0.0, 0.0], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.8)
    # R = 4.5: fish 1 and 2, -(1.5, 0, 2) normalised = (-0.6, 0, -0.8)
    out = run("school_separation", [[1, 2, 3]], max_distance=4.5, weight_direction=0.8)
    np.testing.assert_allclose(out.direction[0], [-0.6, 0.0, -0.8], atol=1e-6)


def test_alignment_follows_the_plain_mean_velocity_of_the_fish_inside_its_radius():
    out = run("school_alignment", [[1, 2, 3]], max_distance=4.5, weight_direction=0.5)
    np.testing.assert_allclose(out.direction[0], [0.6, 0.8, 0.0], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.5)
    out = run("school_alignment", [[1, 2, 3]], max_distance=5.5, weight_direction=0.5)
    np.testing.assert_allclose(out.direction[0], np.array([-97.0, 4.0, 0.0]) / math.sqrt(9425.0), atol=1e-6)


@pytest.mark.parametrize("kind", ["school_cohesion", "school_separation", "school_alignment"])
def test_no_neighbour_inside_the_radius_is_no_opinion(kind):
    out = run(kind, [[1, 2, 3], []], max_distance=2.0, weight_direction=0.7)
    for i in range(2):
        assert out.direction_desire[i] == 0.0
        np.testing.assert_array_equal(out.direction[i], [0.0, 0.0, 0.0])


@pytest.mark.parametrize("kind", ["school_cohesion", "school_separation"])
def test_neighbours_balanced_around_the_fish_give_no_opinion(kind):
    # two fish at (±2, 0, 0): the mean offset is zero, the seed's normalised zero vector stays zero
    out = run(kind, [[1, 2]], positions=[(0, 0, 0), (2, 0, 0), (-2, 0, 0)],
              velocities=[(1, 0, 0)] * 3, max_distance=5.0, weight_direction=0.7)
    assert out.direction_desire[0] == 0.0
    np.testing.assert_array_equal(out.direction[0], [0.0, 0.0, 0.0])


def test_opposite_velocities_give_alignment_no_opinion():
    out = run("school_alignment", [[1, 2]], positions=[(0, 0, 0), (2, 0, 0), (-2, 0, 0)],
              velocities=[(1, 0, 0), (0, 0, 3), (0, 0, -3)], max_distance=5.0, weight_direction=0.7)
    assert out.direction_desire[0] == 0.0
