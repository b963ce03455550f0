"""Neighbour statistics, density, speeds, occupancy and predation on hand-made data."""
import math

import numpy as np
import pytest

from starling.metrics import (density, distribution, first_time, groups, increments, milling,
                              nearest_neighbor_distances, nearest_neighbor_stats, occupancy, occupancy_series,
                              polarization, predation, speed_stats, total)

BOX = (10.0, 0.0, 10.0)  # x and z wrap, y (up) does not


def _lattice(n: int, spacing: float, y: float = 1.0, origin: float = 0.0) -> np.ndarray:
    """An n × n square lattice in the x–z plane."""
    i, k = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return np.stack([origin + i.ravel() * spacing, np.full(n * n, y), origin + k.ravel() * spacing], axis=1)


def test_aligned_flock_ring_mill_and_two_clumps():
    rng = np.random.default_rng(3)
    pos = rng.normal(size=(50, 3))
    assert polarization(np.tile([0.0, 0.0, 2.5], (50, 1))) == pytest.approx(1.0)
    phi = np.linspace(0, 2 * np.pi, 36, endpoint=False)
    ring = np.stack([5 * np.cos(phi), np.zeros(36), 5 * np.sin(phi)], axis=1)
    tangent = np.stack([-np.sin(phi), np.zeros(36), np.cos(phi)], axis=1)
    assert milling(ring, tangent) == pytest.approx(1.0)
    clumps = np.vstack([pos * 0.2, pos * 0.2 + [100.0, 0.0, 0.0]])
    assert groups(clumps, 5.0) == (2, pytest.approx(0.5))


def test_square_lattice_nearest_neighbour_is_the_spacing():
    pos = _lattice(6, 1.5)
    d = nearest_neighbor_distances(pos)
    assert d.shape == (36,)
    np.testing.assert_allclose(d, 1.5)
    s = nearest_neighbor_stats(pos)
    assert s == pytest.approx({"mean": 1.5, "median": 1.5, "sd": 0.0, "min": 1.5, "p5": 1.5, "p95": 1.5})


def test_nearest_neighbour_statistics_by_hand():
    # a line at x = 0, 1, 3, 7: nearest distances 1, 1, 2, 4
    s = nearest_neighbor_stats([[0, 0, 0], [1, 0, 0], [3, 0, 0], [7, 0, 0]])
    assert s["mean"] == pytest.approx(2.0)
    assert s["median"] == pytest.approx(1.5)
    assert s["sd"] == pytest.approx(math.sqrt((1 + 1 + 0 + 4) / 4))  # population sd about 2
    assert s["min"] == pytest.approx(1.0)
    # linear interpolation of sorted (1, 1, 2, 4) at rank 0.05·3 = 0.15 and 0.95·3 = 2.85
    assert s["p5"] == pytest.approx(1.0)
    assert s["p95"] == pytest.approx(2 + 0.85 * 2)
    assert math.isnan(nearest_neighbor_stats([[0, 0, 0]])["mean"])
    assert all(math.isnan(v) for v in distribution([]).values())


def test_nearest_neighbour_across_the_seam():
    # x = 0.5 and 9.5 are 1 m apart through the seam; the third sits 3 m from the first
    pos = [[0.5, 0, 5], [9.5, 0, 5], [3.5, 0, 5]]
    np.testing.assert_allclose(nearest_neighbor_distances(pos, box=BOX), [1.0, 1.0, 3.0])
    np.testing.assert_allclose(nearest_neighbor_distances(pos), [3.0, 6.0, 3.0])


def test_sampled_nearest_neighbours_are_exact_for_the_sampled_animals():
    pos = _lattice(10, 2.0)
    d = nearest_neighbor_distances(pos, sample=7)
    assert d.shape == (7,)
    np.testing.assert_allclose(d, 2.0)


def test_density_counts_the_lattice_neighbours_in_a_disc():
    # periodic 10 × 10 lattice of spacing 1 m in a 10 m box: within 1.5 m every animal
    # has 4 others at 1 m and 4 at √2 m
    pos = _lattice(10, 1.0, origin=0.25)
    assert density(pos, 1.5, box=BOX, flat=True) == pytest.approx(8 / (math.pi * 1.5 ** 2))
    # within 1.2 m only the 4 edge neighbours
    assert density(pos, 1.2, box=BOX, flat=True) == pytest.approx(4 / (math.pi * 1.2 ** 2))
    # the same lattice in 3-D: 4 others in a ball of 1.2 m
    assert density(pos, 1.2, box=BOX) == pytest.approx(4 / (4 / 3 * math.pi * 1.2 ** 3))
    # a sample of 10 animals sees the same (every animal of a periodic lattice is alike)
    assert density(pos, 1.5, box=BOX, flat=True, sample=10) == pytest.approx(8 / (math.pi * 1.5 ** 2))


def test_density_of_a_large_lattice_approaches_one_over_the_cell_area():
    # 1/a² = 0.25 per m² for a = 2 m; a disc of 7 m around a lattice point holds 36 others
    # (i² + k² ≤ 12.25 over the integers), 36 / (49 π) = 0.234: within 7 % of 1/a²
    pos = _lattice(25, 2.0)
    rho = density(pos, 7.0, box=(50.0, 0.0, 50.0), flat=True)
    assert rho == pytest.approx(36 / (49 * math.pi))
    assert rho == pytest.approx(1 / 4, rel=0.08)
    # the flat density ignores height: lifting half the animals 100 m changes nothing in x–z
    lifted = pos.copy()
    lifted[::2, 1] += 100.0
    assert density(lifted, 7.0, box=(50.0, 0.0, 50.0), flat=True) == pytest.approx(rho)


def test_density_across_the_seam_and_open_edges():
    pair = [[0.2, 0, 5], [9.8, 0, 5]]  # 0.4 m apart through the seam
    assert density(pair, 1.0, box=BOX, flat=True) == pytest.approx(1 / math.pi)
    assert density(pair, 1.0, flat=True) == pytest.approx(0.0)
    assert math.isnan(density(np.zeros((0, 3)), 1.0))
    with pytest.raises(ValueError, match="radius must be positive"):
        density(pair, 0.0)


def test_speed_statistics_by_hand():
    s = speed_stats([[3, 4, 0], [0, 0, 1], [0, 2, 0], [0, 0, 0]])  # speeds 5, 1, 2, 0
    assert s == pytest.approx({"mean": 2.0, "sd": math.sqrt((9 + 1 + 0 + 4) / 4), "min": 0.0, "max": 5.0})
    assert all(math.isnan(v) for v in speed_stats(np.zeros((0, 3))).values())


def test_occupancy_of_states():
    names = ["graze", "flee", "rest"]
    assert occupancy([0, 0, 1, 2, 0], names) == pytest.approx({"graze": 0.6, "flee": 0.2, "rest": 0.2})
    # -1 (no state) and out-of-range indices count in no state
    assert occupancy([0, -1, 5, 1], names) == pytest.approx({"graze": 0.25, "flee": 0.25, "rest": 0.0})
    assert all(math.isnan(v) for v in occupancy([], names).values())


def test_occupancy_over_time_reads_only_alive_slots():
    state = np.array([[0, 1, 1, 0], [1, 1, 0, -1], [0, 0, 0, 0]])
    alive = np.array([[True, True, True, False], [True, True, True, True], [False] * 4])
    occ = occupancy_series(state, alive, 2)
    np.testing.assert_allclose(occ[0], [1 / 3, 2 / 3])
    np.testing.assert_allclose(occ[1], [1 / 4, 2 / 4])
    assert np.isnan(occ[2]).all()
    with pytest.raises(ValueError, match="must be the same"):
        occupancy_series(state, alive[:, :2], 2)


def test_predation_from_cumulative_counters():
    times = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    caught = [0, 0, 0, 1, 1, 3]
    eaten = [0, 2, 2, 4, 6, 9]
    assert predation(times, caught, eaten) == {
        "catches": 3, "bites": 9, "time_to_first_catch": 2.0, "time_to_first_bite": 1.0,
        "catches_per_min": pytest.approx(3 * 60 / 3.0)}
    none = predation(times, [0] * 6, [0] * 6)
    assert none["time_to_first_catch"] is None and none["catches"] == 0
    np.testing.assert_allclose(increments(caught), [0, 0, 0, 1, 0, 2])
    assert total([]) == 0 and first_time([], []) is None
    assert predation([], [], [])["catches_per_min"] is None
    with pytest.raises(ValueError, match="differ in length"):
        first_time([0.0, 1.0], [1])
