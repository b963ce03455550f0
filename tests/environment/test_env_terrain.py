"""Heightfield queries by hand, procedural terrain features, height-map images, water bodies."""

import numpy as np
import pytest
from PIL import Image

from starling.environment import (
    Environment,
    EnvironmentConfig,
    EnvironmentFileError,
    Heightfield,
    TerrainConfig,
    WaterBodies,
    cast_rays,
)
from starling.environment import builders
from starling.environment.config import HillConfig, MountainRimConfig, PondBasinConfig


def test_flat_terrain_has_constant_height_and_an_upward_normal():
    t = Heightfield.from_heights(np.full((5, 7), 2.5), -3, -2, 3, 2)
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 3, 50)
    z = rng.uniform(-2, 2, 50)
    assert np.allclose(t.height_at(x, z), 2.5)
    assert np.allclose(t.normal_at(x, z), [0, 1, 0])
    assert t.height_at(0.0, 0.0) == 2.5 and isinstance(t.height_at(0.0, 0.0), float)
    assert np.isnan(t.height_at(3.5, 0.0)) and np.isnan(t.height_at(0.0, -2.1))


def test_a_plane_sampled_on_the_grid_is_reproduced_exactly_with_its_normal():
    # h = 1 + 0.5 x - 0.25 z is linear, so the triangulation represents it exactly
    xs = np.linspace(-4, 4, 9)
    zs = np.linspace(0, 6, 7)
    X, Z = np.meshgrid(xs, zs)
    t = Heightfield.from_heights(1 + 0.5 * X - 0.25 * Z, -4, 0, 4, 6)
    rng = np.random.default_rng(1)
    x = rng.uniform(-4, 4, 100)
    z = rng.uniform(0, 6, 100)
    assert np.allclose(t.height_at(x, z), 1 + 0.5 * x - 0.25 * z, atol=1e-12)
    expect = np.array([-0.5, 1.0, 0.25]) / np.linalg.norm([-0.5, 1.0, 0.25])
    assert np.allclose(t.normal_at(x, z), expect, atol=1e-12)
    # the slope angle is atan(|grad h|)
    angle = np.degrees(np.arccos(t.normal_at(0.3, 2.2)[1]))
    assert np.isclose(angle, np.degrees(np.arctan(np.hypot(0.5, 0.25))))


def test_height_inside_a_cell_follows_the_two_triangles_of_the_split():
    # one cell with corners h00=0, h10=1, h01=2, h11=5 over a 2 x 4 m cell
    t = Heightfield.from_heights(np.array([[0.0, 1.0], [2.0, 5.0]]), 0, 0, 2, 4)
    # lower triangle (u >= w): h = h00 + u (h10 - h00) + w (h11 - h10)
    u, w = 0.75, 0.25
    assert np.isclose(t.height_at(2 * u, 4 * w), u * 1 + w * 4)
    # upper triangle (u < w): h = h00 + u (h11 - h01) + w (h01 - h00)
    u, w = 0.25, 0.75
    assert np.isclose(t.height_at(2 * u, 4 * w), u * 3 + w * 2)
    # corners
    for (x, z), h in {(0, 0): 0, (2, 0): 1, (0, 4): 2, (2, 4): 5}.items():
        assert np.isclose(t.height_at(float(x), float(z)), h)
    # normal of the lower triangle: gradient (dh/dx, dh/dz) = (1/2, 4/4)
    n = t.normal_at(1.5, 1.0)
    assert np.allclose(n, np.array([-0.5, 1.0, -1.0]) / np.linalg.norm([-0.5, 1, -1]))


def test_rays_land_on_the_surface_that_height_at_describes():
    cfg = TerrainConfig(size=(60, 40), resolution=(61, 41), hills=[HillConfig(center=(5, 3), radius=15, height=6)],
                        pond=PondBasinConfig(center=(-15, -5), bottom_radius=4, bank_width=5, depth=2))
    env = Environment.from_config(EnvironmentConfig(terrain=cfg))
    rng = np.random.default_rng(2)
    origins = np.column_stack([rng.uniform(-29, 29, 300), np.full(300, 20.0), rng.uniform(-19, 19, 300)])
    dirs = np.column_stack([rng.normal(scale=0.3, size=300), -np.ones(300), rng.normal(scale=0.3, size=300)])
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    hits = cast_rays(env, origins, dirs, 100.0)
    inside = np.abs(hits.point[:, 0]) < 30
    inside &= np.abs(hits.point[:, 2]) < 20
    p = hits.point[hits.hit & inside].astype(np.float64)
    assert len(p) > 200
    assert np.allclose(env.height_at(p[:, 0], p[:, 2]), p[:, 1], atol=2e-4)
    assert np.allclose(hits.normal[hits.hit & inside], env.normal_at(p[:, 0], p[:, 2]), atol=1e-4)


def test_procedural_features_have_their_documented_profiles():
    X, Z = np.meshgrid(np.linspace(-50, 50, 201), np.linspace(-50, 50, 201))
    hill = builders.hill_heights(X, Z, HillConfig(center=(10, -5), radius=20, height=4))
    assert np.isclose(hill.max(), 4) and hill[np.hypot(X - 10, Z + 5) >= 20].max() == 0
    assert np.isclose(builders.hill_heights(np.array(20.0), np.array(-5.0), HillConfig(center=(10, -5), radius=20,
                                                                                       height=4)), 2.0)
    pond = PondBasinConfig(center=(0, 0), bottom_radius=8, bank_width=4, depth=3)
    basin = builders.pond_basin_heights(X, Z, pond)
    d = np.hypot(X, Z)
    assert np.allclose(basin[d <= 8], -3) and np.allclose(basin[d >= 12], 0)
    bank = (d > 8) & (d < 12)
    assert np.all((basin[bank] > -3) & (basin[bank] < 0))
    # the bank rises monotonically with the distance from the centre
    order = np.argsort(d[bank])
    assert np.all(np.diff(basin[bank][order]) >= -1e-12)
    rim = builders.mountain_rim_heights(X, Z, (-50, -50, 50, 50), MountainRimConfig(height=10, width=15))
    assert np.isclose(rim[0, 100], 10) and np.isclose(rim[100, 0], 10)
    assert np.allclose(rim[np.minimum.reduce([X + 50, 50 - X, Z + 50, 50 - Z]) >= 15], 0)


def test_terrain_config_sums_base_hills_pond_and_rim():
    cfg = TerrainConfig(size=(100, 100), resolution=(101, 101), base_height=1.0,
                        hills=[HillConfig(center=(20, 20), radius=10, height=5)],
                        pond=PondBasinConfig(center=(-20, 0), bottom_radius=5, bank_width=5, depth=2),
                        rim=MountainRimConfig(height=8, width=10))
    env = Environment.from_config({"terrain": cfg.model_dump()})
    assert np.isclose(env.height_at(0.0, 0.0), 1.0)
    assert np.isclose(env.height_at(20.0, 20.0), 6.0)
    assert np.isclose(env.height_at(-20.0, 0.0), -1.0)
    assert np.isclose(env.height_at(-50.0, 0.0), 9.0)
    lo, hi = env.bounds
    assert np.allclose(lo, [-50, -1, -50]) and np.isclose(hi[1], 9.0)


def _write_image(path, array, mode):
    Image.fromarray(array, mode=mode).save(path)


def test_heightmap_images_map_gray_to_height_with_rows_along_z(tmp_path):
    img = np.zeros((3, 5), np.uint8)
    img[0, 4] = 255  # top-right pixel: x max, z min
    img[2, 0] = 51  # bottom-left: x min, z max
    _write_image(tmp_path / "h.png", img, "L")
    cfg = {"terrain": {"size": (8, 4), "image": {"path": "h.png", "vertical_scale": 10.0, "height_offset": -1.0}}}
    env = Environment.from_config(cfg, base_dir=tmp_path)
    assert env.terrain.shape == (3, 5)
    assert np.isclose(env.height_at(4.0, -2.0), 9.0)
    assert np.isclose(env.height_at(-4.0, 2.0), 1.0)
    assert np.isclose(env.height_at(0.0, 0.0), -1.0)


def test_sixteen_bit_heightmaps_use_their_full_range_and_can_be_resampled(tmp_path):
    img = np.linspace(0, 65535, 16, dtype=np.uint16).reshape(4, 4)
    Image.fromarray(img).save(tmp_path / "h16.png")
    image = {"path": str(tmp_path / "h16.png"), "vertical_scale": 2.0}
    env = Environment.from_config({"terrain": {"size": (3, 3), "image": image}})
    assert np.isclose(env.terrain.heights.max(), 2.0) and np.isclose(env.terrain.heights.min(), 0.0)
    env2 = Environment.from_config({"terrain": {"size": (3, 3), "resolution": (7, 9), "image": image}})
    assert env2.terrain.shape == (9, 7)


def test_missing_heightmap_is_one_clear_error_naming_it(tmp_path):
    cfg = {"terrain": {"size": (8, 4), "image": {"path": "maps/nope.png", "vertical_scale": 1.0}}}
    with pytest.raises(EnvironmentFileError, match=r"height-map image file '.*maps/nope\.png': no such file"):
        Environment.from_config(cfg, base_dir=tmp_path)


def test_broken_heightmap_is_one_clear_error_naming_it(tmp_path):
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\nthis is not a png")
    cfg = {"terrain": {"size": (8, 4), "image": {"path": "bad.png", "vertical_scale": 1.0}}}
    with pytest.raises(EnvironmentFileError) as info:
        Environment.from_config(cfg, base_dir=tmp_path)
    assert "bad.png" in str(info.value) and "height-map image" in str(info.value)


# ----------------------------------------------------------------------------------------------------
# water
# ----------------------------------------------------------------------------------------------------


def test_water_regions_surface_heights_and_in_water():
    w = WaterBodies.from_regions([
        (1.0, "rectangle", (0, 0, 4, 2), 2),
        (3.0, "circle", (10, 10, 2), 2),
        (0.5, "polygon", [(-10, -10), (-4, -10), (-7, -4)], 2),
    ])
    assert np.allclose(w.surface_height([1, 10, -7, 50], [1, 11, -8, 50]), [1.0, 3.0, 0.5, np.nan], equal_nan=True)
    pts = np.array([[1, 0.9, 1], [1, 1.1, 1], [11.9, 0, 10], [12.1, 0, 10], [-7, 0, -9], [-4.5, 0, -5]])
    assert w.in_water(pts).tolist() == [True, False, True, False, True, False]
    assert not w.in_water(pts, mask=0b1).any()  # the bodies are on layer 2 (water)


def test_rays_hit_the_water_surface_from_above_and_below_within_its_region():
    env = Environment.from_config({"water": [{"surface_height": 1.0, "circle": (0, 0, 5)}],
                                   "shapes": [{"kind": "plane", "point": (0, -2, 0)}]})
    o = np.array([[0, 5, 0], [0, -1, 0], [6, 5, 0], [3, 5, 3]], np.float32)
    d = np.array([[0, -1, 0], [0, 1, 0], [0, -1, 0], [0, -1, 0]], np.float32)
    res = cast_rays(env, o, d, 20.0, mask=env.mask(["water", "ground"]))
    assert res.layer.tolist() == [2, 2, 1, 2]
    assert np.allclose(res.distance, [4, 2, 7, 4])
    assert np.allclose(res.normal[:2], [[0, 1, 0], [0, -1, 0]])
    # without the water layer the ray falls to the ground
    res = cast_rays(env, o[:1], d[:1], 20.0, mask=env.mask("ground"))
    assert res.layer[0] == 1 and np.isclose(res.distance[0], 7)


def test_fill_pond_water_uses_the_basin_outer_circle():
    env = Environment.from_config({
        "terrain": {"size": (60, 60), "resolution": (61, 61),
                    "pond": {"center": (5, 5), "bottom_radius": 6, "bank_width": 4, "depth": 2}},
        "water": [{"surface_height": -0.5, "fill_pond": True}],
    })
    assert np.allclose(env.water.circle[0], [5, 5, 10])
    assert env.in_water(np.array([[5, -1.0, 5], [5, 0.0, 5], [25, -1.0, 5]])).tolist() == [True, False, False]


def test_pasture_builder_scatters_obstacles_on_dry_gentle_ground_inside_the_rim():
    cfg = builders.pasture_config(size=128, resolution=129, obstacles=80, seed=3)
    env = Environment.from_config(cfg)
    trunks = [s for s in env.shapes if s.kind == "cylinder"]
    assert len(trunks) + len([s for s in env.shapes if s.kind == "box"]) == 80
    region = builders.default_scatter_region(cfg.terrain)
    for s in trunks:
        x, y, z = s.base
        assert region[0] <= x <= region[2] and region[1] <= z <= region[3]
        assert np.isclose(y, env.height_at(x, z) - 0.3)
        assert np.isnan(env.surface_height(x, z)[0])
    xz = np.array([(s.base[0], s.base[2]) for s in trunks])
    gaps = np.linalg.norm(xz[:, None] - xz[None], axis=-1) + np.eye(len(xz)) * 1e9
    assert gaps.min() >= 1.0
