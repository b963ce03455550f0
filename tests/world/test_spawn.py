"""Spawn sampling: spacing, shared headings, and the old draws kept where the new options are off."""
import numpy as np
import pytest
from scipy.spatial import cKDTree

from starling.config import ConfigError, load_scenario_config
from starling.world.spawn import MAX_PACKING, packing_fraction, region_volume, spawn_headings, spawn_positions

BALL = dict(shape="sphere", center=(1.0, 45.0, -3.0), size=(1.0, 1.0, 1.0), radius=25.0)


def _closest(p):
    d, _ = cKDTree(p).query(p, k=2)
    return d[:, 1].min()


def test_without_options_the_draws_are_those_of_the_plain_ball_and_isotropic_headings():
    # the pre-existing sampling, written out: scenarios that do not ask for spacing or a
    # direction start exactly as they always did
    rng = np.random.default_rng(7)
    d = rng.normal(size=(50, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    expected = np.asarray(BALL["center"]) + d * 25.0 * rng.random((50, 1)) ** (1 / 3)
    h = rng.normal(size=(50, 3))
    h[:, 1] = 0.0
    h /= np.linalg.norm(h, axis=1, keepdims=True)
    rng = np.random.default_rng(7)
    assert np.array_equal(spawn_positions(rng, 50, **BALL), expected)
    assert np.array_equal(spawn_headings(rng, 50, flat=True), h)


def test_min_spacing_holds_inside_the_region_and_is_reproducible():
    a = spawn_positions(np.random.default_rng(3), 1000, **BALL, min_spacing=2.0)
    b = spawn_positions(np.random.default_rng(3), 1000, **BALL, min_spacing=2.0)
    assert np.array_equal(a, b)
    assert _closest(a) >= 2.0
    assert np.linalg.norm(a - BALL["center"], axis=1).max() <= 25.0
    # without the option the same count lands much closer (what the option is for)
    assert _closest(spawn_positions(np.random.default_rng(3), 1000, **BALL)) < 1.0


def test_a_box_spawn_keeps_its_spacing_and_its_extent():
    box = dict(shape="box", center=(0.0, 5.0, 0.0), size=(40.0, 4.0, 40.0), radius=1.0)
    p = spawn_positions(np.random.default_rng(1), 300, **box, min_spacing=1.5)  # 8 % of the box
    assert _closest(p) >= 1.5
    assert np.all(np.abs(p - box["center"]) <= np.asarray(box["size"]) / 2)


def test_too_many_animals_for_the_spacing_shrink_it_to_what_fits():
    n = 10_000
    volume = region_volume("sphere", (1, 1, 1), 25.0, False)
    assert volume == pytest.approx(4 / 3 * np.pi * 25.0 ** 3)
    # 10,000 balls of 2 m diameter would cover 64 % of the 25 m ball: more than fits
    assert packing_fraction(n, 2.0, volume, False) == pytest.approx(n * np.pi / 6 * 8 / volume)
    p = spawn_positions(np.random.default_rng(2), n, **BALL, min_spacing=2.0)
    fitted = 2.0 * (MAX_PACKING / packing_fraction(n, 2.0, volume, False)) ** (1 / 3)
    assert 1.0 < fitted < 2.0
    assert _closest(p) >= fitted - 1e-9


def test_a_shared_direction_keeps_every_heading_within_its_spread():
    axis = np.array([1.0, 0.0, 1.0]) / np.sqrt(2)
    h = spawn_headings(np.random.default_rng(4), 2000, flat=False, direction=axis, spread_deg=40.0)
    assert np.allclose(np.linalg.norm(h, axis=1), 1.0)
    angle = np.degrees(np.arccos(np.clip(h @ axis, -1, 1)))
    assert angle.max() <= 40.0 + 1e-9
    # uniform on the cap: the mean cosine of a cap of half-angle a is (1 + cos a) / 2
    assert np.mean(h @ axis) == pytest.approx((1 + np.cos(np.radians(40))) / 2, abs=0.01)
    flat = spawn_headings(np.random.default_rng(4), 500, flat=True, direction=(0.0, 1.0, 1.0), spread_deg=10.0)
    assert np.all(flat[:, 1] == 0.0)
    assert np.degrees(np.arccos(np.clip(flat[:, 2], -1, 1))).max() <= 10.0 + 1e-9


def test_a_scenario_starts_its_animals_apart_and_heading_together():
    import starling

    sim = starling.load_scenario("flock", overrides=["species.bird.count=400"])
    pop = sim.population("bird")
    spawn = sim.scenario.species[0].spawn
    assert _closest(pop.position.astype(np.float64)) >= spawn.min_spacing * (1 - 1e-6)
    v = pop.velocity / np.linalg.norm(pop.velocity, axis=1, keepdims=True)
    assert np.degrees(np.arccos(np.clip(v @ np.asarray(spawn.direction), -1, 1))).max() <= spawn.direction_spread_deg + 1e-3


def test_bad_spawn_options_name_the_field():
    with pytest.raises(ConfigError, match=r"species.bird.spawn.direction: .*non-zero"):
        load_scenario_config("flock", ["species.bird.spawn.direction=[0, 0, 0]"])
    with pytest.raises(ConfigError, match=r"species.bird.spawn.min_spacing"):
        load_scenario_config("flock", ["species.bird.spawn.min_spacing=-1"])
    with pytest.raises(ConfigError, match=r"species.bird.spawn.direction_spread_deg"):
        load_scenario_config("flock", ["species.bird.spawn.direction_spread_deg=200"])
