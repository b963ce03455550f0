"""``avoid_collisions`` (the closest point of approach) against hand-computed values, and two
birds meeting head-on with the flock's mover, with and without it."""
import math

import numpy as np
import pytest

from starling.config import load_scenario_config, validate_scenario
from starling.simulation import Simulation
from starling.steering.behaviors.neighbor.avoidance import closest_approach, threat
from starling.steering.pipeline import NeighborView
from starling.steering.queries.pairs import PairGeometry
from starling.steering.registry import get_behavior
from starling.steering.results import VelocityResults
from starling.steering.targets import CoreAgents


def animals(positions, velocities):
    p = np.asarray(positions, np.float32)
    v = np.asarray(velocities, np.float32)
    f = v / np.linalg.norm(v, axis=1, keepdims=True)
    up = np.tile(np.array([0, 1, 0], np.float32), (len(p), 1))
    return CoreAgents(p, v, f, up, np.arange(len(p), dtype=np.int64))


def avoid(others, me=None, **params):
    """The behaviour's result for one animal at the origin flying +z at 6 m/s, every other its neighbour."""
    me = me or animals([[0, 0, 0]], [[0, 0, 6]])
    spec = get_behavior("avoid_collisions")
    kp = spec.params(kind="avoid_collisions", **{"max_distance": 40.0, "fov_deg": 360.0, "horizon": 2.0,
                                                  "clearance": 2.0, "weight_direction": 0.9, **params}).kernel_params()
    n = len(others.position)
    index = np.arange(n, dtype=np.int32)[None, :]
    count = np.array([n], np.int32)
    direction, distance, angle = PairGeometry().compute(me.position, me.forward, others.position, index, count,
                                                        np.zeros(3, np.float32))
    out = VelocityResults(1, 1).view(0, 1)
    spec.compiled(False)(me, others, NeighborView(index, count, distance, angle, direction), kp, 0.0, 1 / 30, out)
    return out


def test_the_closest_approach_by_hand():
    # offset (1, 0, 10) closing at 12 m/s along z: closest after 120 / 144 s, 1 m apart along x
    t, cx, cy, cz = closest_approach(1.0, 0.0, 10.0, 0.0, 0.0, -12.0)
    assert t == pytest.approx(120 / 144)
    assert (cx, cy, cz) == pytest.approx((1.0, 0.0, 0.0))
    # moving together: not approaching
    assert closest_approach(1.0, 2.0, 3.0, 0.0, 0.0, 0.0) == (0.0, 1.0, 2.0, 3.0)
    # urgency (1 - t/h)^l (1 - miss/clearance): (1 - 0.8333/2) (1 - 1/2) = 0.291667; squared ease-in 0.170139
    assert threat(120 / 144, 1.0, 2.0, 2.0, 1.0) == pytest.approx(7 / 24)
    assert threat(120 / 144, 1.0, 2.0, 2.0, 2.0) == pytest.approx((7 / 12) ** 2 / 2)
    assert threat(-0.1, 0.5, 2.0, 2.0, 1.0) == 0.0  # receding
    assert threat(2.5, 0.5, 2.0, 2.0, 1.0) == 0.0  # past the horizon
    assert threat(0.5, 2.0, 2.0, 2.0, 1.0) == 0.0  # a clear miss


def test_a_neighbour_passing_close_pushes_away_from_where_it_will_be():
    out = avoid(animals([[1, 0, 10]], [[0, 0, -6]]))
    np.testing.assert_allclose(out.direction[0], [-1, 0, 0], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.9 * 7 / 24, rel=1e-5)
    assert out.speed_desire[0] == 0


def test_a_dead_on_approach_swerves_right_on_both_sides():
    # me flying +z swerves to forward × up = -x; the other, flying -z, to +x: they pass
    out = avoid(animals([[0, 0, 10]], [[0, 0, -6]]))
    np.testing.assert_allclose(out.direction[0], [-1, 0, 0], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.9 * 7 / 12, rel=1e-5)  # (1 - 0.8333/2) (1 - 0)
    theirs = avoid(animals([[0, 0, 0]], [[0, 0, 6]]), me=animals([[0, 0, 10]], [[0, 0, -6]]))
    np.testing.assert_allclose(theirs.direction[0], [1, 0, 0], atol=1e-6)


def test_receding_late_and_clear_neighbours_leave_no_opinion():
    receding = animals([[0, 0, 10]], [[0, 0, 12]])
    too_late = animals([[0, 0, 30]], [[0, 0, -6]])  # meets in 2.5 s, the horizon is 2
    clear = animals([[3, 0, 10]], [[0, 0, -6]])  # passes 3 m off, the clearance is 2
    for others in (receding, too_late, clear):
        out = avoid(others)
        assert out.direction_desire[0] == 0
        np.testing.assert_array_equal(out.direction[0], [0, 0, 0])


def test_threats_sum_by_urgency_and_the_desire_is_the_most_urgent():
    # equal threats passing 1 m off along x and along y: away along (-1, -1, 0) / sqrt 2
    out = avoid(animals([[1, 0, 10], [0, 1, 10], [3, 0, 10]], [[0, 0, -6], [0, 0, -6], [0, 0, -6]]))
    np.testing.assert_allclose(out.direction[0], [-math.sqrt(0.5), -math.sqrt(0.5), 0], atol=1e-6)
    assert out.direction_desire[0] == pytest.approx(0.9 * 7 / 24, rel=1e-5)


def test_only_what_the_animal_sees_counts():
    # a faster bird closing from behind, 0.5 m off: a threat with all-round vision, unseen in a 90° one
    me = animals([[0, 0, 0]], [[0, 0, 2]])
    behind = animals([[0.5, 0, -5]], [[0, 0, 8]])
    assert avoid(behind, me=me, fov_deg=360.0).direction_desire[0] > 0
    assert avoid(behind, me=me, fov_deg=90.0).direction_desire[0] == 0


def _head_on(avoiding: bool, offset: float) -> float:
    """Closest two birds of the flock came, meeting head-on at 6 m/s each, ``offset`` m apart sideways:
    the flock's own mover, query, separation and look-ahead (nothing else: no roost, no wandering)."""
    bird = load_scenario_config("flock").species[0]
    flocking = next(g for g in bird.groups if g.label == "flocking")
    behaviors = [b.model_dump(exclude_none=True) for b in flocking.behaviors
                 if b.kind in ("separation", "avoid_collisions")]
    for b in behaviors:
        if b["kind"] == "avoid_collisions":
            b["enabled"] = avoiding
    sim = Simulation(validate_scenario({
        "name": "head-on", "seed": 1, "dt": 1 / 30,
        "world": {"bounds_min": [-100, 0, -100], "bounds_max": [100, 100, 100]},
        "species": [{"name": "bird", "count": 2, "mover": bird.mover.model_dump(exclude_none=True),
                     "spawn": {"shape": "box", "center": [0, 45, 0], "size": [1, 1, 1], "speed": [6, 6]},
                     "groups": [{"label": "flocking", "query": flocking.query.model_dump(exclude_none=True),
                                 "behaviors": behaviors}]}]}), record_debug=False)
    pop = sim.population("bird")
    pop.position[:] = [[0, 45, -10], [offset, 45, 10]]
    pop.velocity[:] = [[0, 0, 6], [0, 0, -6]]
    pop.forward[:] = [[0, 0, 1], [0, 0, -1]]
    closest = math.inf
    for _ in range(90):
        sim.step()
        p = sim.population("bird").position
        closest = min(closest, float(np.linalg.norm(p[0] - p[1])))
    return closest


@pytest.mark.parametrize("offset", [0.0, 0.3])
def test_two_birds_meeting_head_on_pass_with_room_only_when_they_look_ahead(offset):
    # the flock's separation alone (2 m, a sixth of a second at 12 m/s) cannot keep them apart
    assert _head_on(False, offset) < 1.0
    assert _head_on(True, offset) > 1.5
