"""Order metrics on hand-built configurations, in open and in periodic (wrapping) worlds."""
import math

import numpy as np
import pytest

import starling
from starling.config import validate_scenario
from starling.metrics import (center_of_mass, groups, local_polarization, milling, minimum_image,
                              nearest_neighbor_distance, polarization)

BOX = (10.0, 0.0, 10.0)  # x and z wrap with period 10 m, y does not


def test_polarization_of_aligned_and_opposed_headings():
    assert polarization([[1, 0, 0], [3, 0, 0]]) == pytest.approx(1.0)
    assert polarization([[1, 0, 0], [-2, 0, 0]]) == pytest.approx(0.0)
    assert polarization([[1, 0, 0], [0, 0, 1]]) == pytest.approx(math.sqrt(2) / 2)


def test_two_animals_across_the_seam_are_one_metre_apart():
    p = [[0.5, 5.0, 5.0], [9.5, 5.0, 5.0]]
    assert nearest_neighbor_distance(p, box=BOX) == pytest.approx(1.0)
    assert nearest_neighbor_distance(p) == pytest.approx(9.0)  # the open world measures straight through
    # world coordinates need not start at 0: a box over [-5, 5) wraps the same way
    assert nearest_neighbor_distance([[-4.5, 0, 0], [4.5, 0, 0]], box=BOX) == pytest.approx(1.0)
    # an axis of length 0 or inf does not wrap
    assert nearest_neighbor_distance(p, box=(0.0, 0.0, 10.0)) == pytest.approx(9.0)
    assert nearest_neighbor_distance(p, box=(np.inf, 0.0, 10.0)) == pytest.approx(9.0)


def test_minimum_image_and_circular_centre():
    np.testing.assert_allclose(minimum_image([[9.0, 9.0, -6.0]], BOX), [[-1.0, 9.0, 4.0]])
    # two animals 0.5 m either side of the seam: their centre is on the seam, not mid-box
    c = center_of_mass([[9.5, 3.0, 2.0], [0.5, 5.0, 2.0]], BOX)
    assert c[0] == pytest.approx(0.0, abs=1e-12) or c[0] == pytest.approx(10.0)
    assert c[1:] == pytest.approx([4.0, 2.0])
    assert center_of_mass([[9.5, 3.0, 2.0], [0.5, 5.0, 2.0]])[0] == pytest.approx(5.0)


def _ring(center, radius, count, box=None, clockwise=False):
    phi = np.arange(count) * 2 * np.pi / count
    pos = np.stack([center[0] + radius * np.cos(phi), np.full(count, center[1]),
                    center[2] + radius * np.sin(phi)], axis=1)
    tangent = np.stack([-np.sin(phi), np.zeros(count), np.cos(phi)], axis=1) * (-1 if clockwise else 1)
    if box is not None:
        pos[:, [0, 2]] = np.mod(pos[:, [0, 2]], 10.0)  # where a wrapping world keeps them
    return pos, 2.0 * tangent


def test_a_ring_straddling_the_seam_mills_perfectly():
    pos, vel = _ring((0.5, 2.0, 0.5), 3.0, 24, box=BOX)
    assert pos[:, 0].min() < 1 and pos[:, 0].max() > 9  # it really straddles the seam
    c = center_of_mass(pos, BOX)
    assert np.allclose(c, [0.5, 2.0, 0.5])  # symmetric ring: the circular mean is exact
    assert milling(pos, vel, box=BOX) == pytest.approx(1.0, abs=1e-12)
    # read as an open world, its four pieces in the corners are measured about the box's
    # middle: 0.74, not a mill
    assert milling(pos, vel) < 0.8
    # a ring translating as a whole does not mill: Σ r × v = (Σ r) × v = 0
    assert milling(pos, np.tile([1.0, 0.0, 0.0], (24, 1)), box=BOX) == pytest.approx(0.0, abs=1e-12)


def test_milling_of_two_counter_rotating_rings_cancels():
    a, va = _ring((5.0, 0.0, 5.0), 2.0, 12)
    b, vb = _ring((5.0, 0.0, 5.0), 2.0, 12, clockwise=True)
    assert milling(np.vstack([a, b]), np.vstack([va, vb])) == pytest.approx(0.0, abs=1e-12)


def test_a_group_split_by_the_seam_is_one_group():
    pos = [[9.6, 1, 5], [9.9, 1, 5], [0.2, 1, 5], [0.5, 1, 5], [5.0, 1, 5], [5.3, 1, 5]]
    assert groups(pos, 0.5, box=BOX) == (2, pytest.approx(4 / 6))
    assert groups(pos, 0.5) == (3, pytest.approx(2 / 6))  # open world: the seam splits it
    assert groups([[0, 0, 0], [3, 0, 0], [6, 0, 0]], 2.0) == (3, pytest.approx(1 / 3))  # loners are groups
    assert groups([[0, 0, 0], [1.5, 0, 0], [3, 0, 0]], 2.0) == (1, 1.0)  # linked through the middle one
    assert groups(np.zeros((0, 3)), 1.0) == (0, 0.0)


def test_local_polarization_sees_neighbours_across_the_seam():
    # A and B fly +x 0.4 m apart across the seam; C flies -x 1.3 m from A on the open side
    pos = [[0.2, 1, 5], [9.8, 1, 5], [1.5, 1, 5]]
    vel = [[1, 0, 0], [1, 0, 0], [-1, 0, 0]]
    # periodic: A↔B agree (+1, +1), C's nearest is A (−1): mean 1/3
    assert local_polarization(pos, vel, k=1, box=BOX) == pytest.approx(1 / 3)
    # open: everyone's nearest is someone flying the other way
    assert local_polarization(pos, vel, k=1) == pytest.approx(-1.0)


def test_simulation_metrics_are_periodic_in_a_wrapping_world_and_count_groups():
    data = {
        "name": "wrap", "seed": 1, "world": {"bounds_min": [-5, 0, -5], "bounds_max": [5, 10, 5], "wrap": True},
        "species": [{"name": "fish", "count": 4, "mover": {"kind": "free", "max_speed": 2},
                     "groups": [{"query": {"max_distance": 0.8, "k": 3}, "behaviors": [{"kind": "cohesion"}]}]}],
    }
    sim = starling.Simulation(validate_scenario(data))
    fish = sim.population("fish")
    fish.position[:] = [[-4.8, 5, 0], [4.6, 5, 0], [0, 5, 0], [0.5, 5, 0]]  # 0.6 m across the seam, and a pair
    fish.velocity[:] = [[1, 0, 0]] * 4
    m = sim.metrics()["fish"]
    assert m["nn_distance"] == pytest.approx((0.6 + 0.6 + 0.5 + 0.5) / 4, rel=1e-6)
    assert (m["groups"], m["largest_group"]) == (2, 0.5)  # linked within the query's 0.8 m
    assert sim.metrics(group_radius=0.55)["fish"]["groups"] == 3
    assert sim.metrics(groups_max=3)["fish"]["groups"] is None
    # nearest distances 0.6, 0.6, 0.5, 0.5; everyone has one other within 0.8 m (free mover: per m³)
    assert m["nn_median"] == pytest.approx(0.55, rel=1e-6)
    assert (m["nn_min"], m["nn_sd"]) == (pytest.approx(0.5, rel=1e-6), pytest.approx(0.05, rel=1e-5))
    assert m["density"] == pytest.approx(1 / (4 / 3 * math.pi * 0.8 ** 3))
    assert (m["speed_min"], m["speed_max"], m["speed_sd"]) == (pytest.approx(1.0), pytest.approx(1.0),
                                                               pytest.approx(0.0))
    fish.velocity[:] = [[1, 0, 0], [0, 3, 0], [0, 0, 0], [0, 0, 4]]  # speeds 1, 3, 0, 4
    m = sim.metrics()["fish"]
    assert (m["mean_speed"], m["speed_min"], m["speed_max"]) == (2.0, 0.0, 4.0)
    assert m["speed_sd"] == pytest.approx(math.sqrt(2.5))


def test_simulation_metrics_density_is_per_area_for_planar_movers_and_none_when_undefined():
    data = {
        "name": "plane", "seed": 1, "world": {"bounds_min": [-5, 0, -5], "bounds_max": [5, 10, 5], "wrap": True},
        "species": [{"name": "fish", "count": 3, "mover": {"kind": "planar", "max_speed": 2},
                     "groups": [{"query": {"max_distance": 1.0, "k": 3}, "behaviors": [{"kind": "cohesion"}]}]}],
    }
    sim = starling.Simulation(validate_scenario(data))
    fish = sim.population("fish")
    fish.position[:] = [[-4.8, 5, 0], [4.6, 5, 0], [0, 5, 0]]  # a pair 0.6 m apart across the seam, one alone
    m = sim.metrics()["fish"]
    assert m["density"] == pytest.approx((1 + 1 + 0) / 3 / (math.pi * 1.0 ** 2))
    fish.position[:] = [[0, 5, 0]] * 3
    sim.world.population("fish").remove_rows(np.array([1, 2]))
    lone = sim.metrics()["fish"]
    assert lone["count"] == 1 and lone["nn_distance"] == 0.0
    assert lone["nn_median"] is None and lone["nn_p95"] is None and lone["speed_sd"] == 0.0
