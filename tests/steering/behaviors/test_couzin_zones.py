"""couzin_zones (Couzin et al. 2002) against hand-computed directions.

Animal 0 sits at the origin heading +x (velocity (2, 0, 0)); its neighbours, with
r_r = 1, Δr_o = 2, Δr_a = 3 (orientation ring [1, 3), attraction ring [3, 6)):

    1 at (0.6, 0, 0.8)    distance 1.0 → orientation (exactly r_r is not repulsion), velocity (0, 0, 5)
    2 at (0, 0, 2)        distance 2   → orientation, velocity (0, 3, 0)
    3 at (4, 0, 0)        distance 4   → attraction
    4 at (0, 0, -5)       distance 5   → attraction
    5 at (0.5, 0, 0)      distance 0.5 → repulsion
    6 at (-2, 0, 0)       distance 2, straight behind → in the 90° blind cone
"""
import math

import numpy as np
import pytest

from starling.steering.pipeline import NeighborView
from starling.steering.targets import CoreAgents
from starling.steering.queries.pairs import PairGeometry
from starling.steering.random import normal, step_index
from starling.steering.registry import get_behavior
from starling.steering.results import VelocityResults


def run(kind, rows, positions, velocities, **params):
    """Run behaviour ``kind`` for animals 0.. whose neighbour lists are ``rows``, at time 0, dt 0.1."""
    def agents(pos, vel):
        p = np.asarray(pos, np.float32)
        v = np.asarray(vel, np.float32)
        f = v / np.linalg.norm(v, axis=1, keepdims=True)  # facing where they fly
        up = np.tile(np.array([0, 1, 0], np.float32), (len(p), 1))
        return CoreAgents(p, np.asarray(vel, np.float32), f, up, np.arange(len(p), dtype=np.int64))

    everyone = agents(positions, velocities)
    me = agents(positions[:len(rows)], velocities[:len(rows)])
    spec = get_behavior(kind)
    k = max(1, max(len(r) for r in rows))
    index = np.full((len(rows), k), -1, np.int32)
    count = np.array([len(r) for r in rows], np.int32)
    for i, r in enumerate(rows):
        index[i, :len(r)] = r
    direction, distance, angle = PairGeometry().compute(me.position, me.forward, everyone.position, index, count,
                                                        np.zeros(3, np.float32))
    out = VelocityResults(1, len(rows)).view(0, len(rows))
    spec.compiled(False)(me, everyone, NeighborView(index, count, distance, angle, direction),
                         spec.params(kind=kind, **params).kernel_params(), 0.0, 0.1, out)
    return out

POS = [(0, 0, 0), (0.6, 0, 0.8), (0, 0, 2), (4, 0, 0), (0, 0, -5), (0.5, 0, 0), (-2, 0, 0)]
VEL = [(2, 0, 0), (0, 0, 5), (0, 3, 0), (1, 0, 0), (1, 0, 0), (1, 0, 0), (0, -7, 0)]
ZONES = dict(r_repulsion=1.0, dr_orientation=2.0, dr_attraction=3.0, noise_sd=0.0, max_distance=10.0,
             blind_angle_deg=90.0, weight_direction=0.9)


def couzin(rows, **extra):
    return run("couzin_zones", rows, positions=POS, velocities=VEL, **(ZONES | extra))


def unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def test_repulsion_has_absolute_priority():
    # 5 is within r_r: d = -(1, 0, 0) whatever the other zones hold
    out = couzin([[5, 1, 2, 3, 4]])
    np.testing.assert_allclose(out.direction[0], [-1, 0, 0], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.9)


def test_orientation_alone_sums_unit_headings_including_the_animal_itself():
    # v̂1 + v̂2 + v̂0 = (0,0,1) + (0,1,0) + (1,0,0) → (1, 1, 1)/√3
    out = couzin([[1, 2]])
    np.testing.assert_allclose(out.direction[0], unit([1, 1, 1]), atol=1e-6)
    out = couzin([[1, 2]], orientation_includes_self=False)
    np.testing.assert_allclose(out.direction[0], unit([0, 1, 1]), atol=1e-6)


def test_attraction_alone_heads_for_the_sum_of_unit_offsets():
    # r̂3 + r̂4 = (1, 0, 0) + (0, 0, -1) → (1, 0, -1)/√2
    out = couzin([[3, 4]])
    np.testing.assert_allclose(out.direction[0], unit([1, 0, -1]), atol=1e-6)


def test_both_rings_average_their_unit_directions():
    # d_o = (1, 1, 1)/√3, d_a = (1, 0, -1)/√2; d = their mean, normalised
    expected = unit(0.5 * (unit([1, 1, 1]) + unit([1, 0, -1])))
    out = couzin([[1, 2, 3, 4]])
    np.testing.assert_allclose(out.direction[0], expected, atol=1e-6)


def test_neighbours_in_the_blind_cone_are_not_perceived():
    # 6 is straight behind: in the 90° blind cone, so nobody is perceived and the heading is kept
    out = couzin([[6]])
    np.testing.assert_allclose(out.direction[0], [1, 0, 0], atol=1e-6)
    # with no blind angle it is in the orientation ring: v̂6 + v̂0 = (1, -1, 0)/√2
    out = couzin([[6]], blind_angle_deg=0.0)
    np.testing.assert_allclose(out.direction[0], unit([1, -1, 0]), atol=1e-6)


def test_noise_turns_the_direction_by_the_drawn_gaussian_angle():
    # nobody perceived: d = (1, 0, 0) turned about the vertical by σ·N(0, 1) of lane 0
    out = run("couzin_zones", [[6]], positions=POS, velocities=VEL,
              **(ZONES | dict(noise_sd=0.3, horizontal=True)))
    key = get_behavior("couzin_zones").params(kind="couzin_zones").kernel_params().key  # unset key: 0
    phi = 0.3 * normal(key, 0, step_index(0.0, 0.1), 0)
    np.testing.assert_allclose(out.direction[0], [math.cos(phi), 0, -math.sin(phi)], atol=1e-6)
    # in 3D the turn is about an axis across d: the angle to d is still |phi|, and d stays unit
    out3 = run("couzin_zones", [[6]], positions=POS, velocities=VEL, **(ZONES | dict(noise_sd=0.3)))
    d = out3.direction[0].astype(float)
    assert np.linalg.norm(d) == pytest.approx(1.0, abs=1e-6)
    assert math.acos(np.clip(d[0], -1, 1)) == pytest.approx(abs(phi), abs=1e-6)
