"""Fans: consecutive rays sharing an origin (an animal's rays) are traced together by the batched cast.

A fan gathers the primitives near it once and skips the terrain walks when the terrain blocks under it are
all below (or above) it; these tests check that every ray of a fan still gets exactly the hit it gets when
cast on its own, and the brute-force hit, on random scenes and on edge cases (rays starting inside
primitives, grazing, running along cell borders, zero-length, at or outside the terrain's edge).
"""

import numba
import numpy as np
import pytest

from env_oracles import brute_force_cast, heightfield_triangles, random_unit, triangle_normals
from starling.environment import ALL_LAYERS, Environment, Heightfield, RayHits, WaterBodies, cast_rays
from starling.environment.builders import default_scatter_region, pasture_config
from starling.environment.config import BoxConfig, CylinderConfig, PlaneConfig, SphereConfig
from starling.world.layers import layer_mask
from starling.environment.raycast import _MAX_FAN
from starling.environment.terrain import block_bounds, box_clear_of_terrain
from starling.steering.queries.rays import RayQuerySpec, generate_rays
from test_env_raycast import _mixed_scene

FIELDS = ("hit", "distance", "point", "normal", "layer")


def _one_by_one(env, origins, dirs, maxd, mask, parallel=False) -> RayHits:
    """The casts of the rays on their own: the rays reordered so that no two neighbours share an origin
    (every fan has one ray), cast, and put back in order."""
    n = origins.shape[0]
    order = np.lexsort((np.arange(n), _rank_within_origin(origins)))
    maxd = np.broadcast_to(np.asarray(maxd, np.float32), (n,))
    res = cast_rays(env, origins[order], dirs[order], np.ascontiguousarray(maxd[order]), mask, parallel=parallel)
    out = RayHits.allocate(n)
    for f in FIELDS:
        getattr(out, f)[order] = getattr(res, f)
    return out


def _rank_within_origin(origins):
    """For each row, how many earlier rows have the same origin (sorting by it interleaves the fans)."""
    _, inverse = np.unique(origins, axis=0, return_inverse=True)
    rank = np.zeros(len(origins), np.int64)
    seen: dict[int, int] = {}
    for k, u in enumerate(inverse.ravel()):
        rank[k] = seen.get(u, 0)
        seen[u] = rank[k] + 1
    return rank


def _assert_identical(a: RayHits, b: RayHits, label=""):
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        assert np.array_equal(x, y, equal_nan=True), f"{label}: {f} differs in {np.sum(~np.isclose(x, y))} rows"


def _terrain_normals_at(env, p, d):
    """Unit normals, facing against ``d``, of every terrain triangle whose footprint holds ``p`` (x, z) —
    more than one where ``p`` lies on an edge between triangles, where either is the normal there."""
    tr = env.terrain
    tris = heightfield_triangles(tr.heights, tr.x0, tr.z0, tr.dx, tr.dz)
    normals = triangle_normals(tris)
    a, b, c = tris[:, 0][:, [0, 2]], tris[:, 1][:, [0, 2]], tris[:, 2][:, [0, 2]]
    q = np.asarray(p, np.float64)[[0, 2]]

    def cross(u, v, w):
        return (v[:, 0] - u[:, 0]) * (w[1] - u[:, 1]) - (v[:, 1] - u[:, 1]) * (w[0] - u[:, 0])

    e = [cross(a, b, q), cross(b, c, q), cross(c, a, q)]
    tol = 1e-6
    inside = ((e[0] >= -tol) & (e[1] >= -tol) & (e[2] >= -tol)) | ((e[0] <= tol) & (e[1] <= tol) & (e[2] <= tol))
    n = normals[inside]
    return np.where((n @ d <= 0)[:, None], n, -n)


def _assert_matches_brute_force(res: RayHits, env, origins, dirs, maxd, mask, label="", edges=False):
    """``edges``: the rays may hit the terrain exactly on an edge between two triangles, whose normal is
    then either triangle's (the brute force takes the first triangle of its list)."""
    d64 = dirs.astype(np.float64)
    norms = np.linalg.norm(d64, axis=1, keepdims=True)
    usable = norms[:, 0] > 1e-30
    d64[usable] /= norms[usable]
    d64[~usable] = (1.0, 0.0, 0.0)  # a zero direction hits nothing (its row is cleared below)
    hit, dist, normal, layer = brute_force_cast(env, origins, d64, maxd, mask)
    hit &= usable
    layer = np.where(hit, layer, -1)
    assert np.array_equal(res.hit, hit), f"{label}: hit differs in rows {np.flatnonzero(res.hit != hit)[:10]}"
    assert np.allclose(res.distance[hit], dist[hit], atol=1e-4, rtol=0), label
    assert np.all(np.isinf(res.distance[~hit])), label
    assert np.array_equal(res.layer, layer.astype(np.int16)), label
    same = np.all(np.abs(res.normal - normal) <= 1e-4, axis=1) | ~hit
    if edges:
        for k in np.flatnonzero(~same & (res.layer == env.terrain.layer)):
            choices = _terrain_normals_at(env, res.point[k], d64[k])
            same[k] = np.any(np.all(np.abs(choices - res.normal[k]) <= 1e-4, axis=1))
    assert same.all(), f"{label}: normal differs in rows {np.flatnonzero(~same)[:10]}"


def _check(env, origins, dirs, maxd, mask, label="", brute=True, edges=False):
    origins = np.ascontiguousarray(origins, np.float32)
    dirs = np.ascontiguousarray(dirs, np.float32)
    fan_serial = cast_rays(env, origins, dirs, maxd, mask, parallel=False)
    fan_parallel = cast_rays(env, origins, dirs, maxd, mask, parallel=True)
    single = _one_by_one(env, origins, dirs, maxd, mask)
    _assert_identical(fan_serial, single, f"{label} fan vs one by one")
    _assert_identical(fan_parallel, single, f"{label} parallel fan vs one by one")
    if brute:
        _assert_matches_brute_force(fan_serial, env, origins, dirs, maxd, mask, label, edges)
    return fan_serial


# ----------------------------------------------------------------------------------------------------
# random scenes
# ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_pasture():
    cfg = pasture_config(size=48.0, resolution=49, obstacles=60, seed=3)
    env = Environment.from_config(cfg)
    return cfg, env


@pytest.mark.parametrize("count, fov, length", [(8, 120.0, 6.0), (5, 360.0, 9.0), (3, 60.0, 30.0)])
def test_herd_fans_match_single_rays_and_brute_force(small_pasture, count, fov, length):
    """A grazing herd's horizontal fans over hills, trees and rocks (the case the fans are made for), some
    long enough to fall back to the ray-by-ray walks."""
    cfg, env = small_pasture
    rng = np.random.default_rng(count)
    n = 60
    region = default_scatter_region(cfg.terrain)
    x = rng.uniform(region[0] - 6, region[2] + 6, n)
    z = rng.uniform(region[1] - 6, region[3] + 6, n)
    ground = np.nan_to_num(env.height_at(x, z), nan=0.0)
    eyes = rng.choice([0.05, 0.6, 1.5], n)
    positions = np.column_stack([x, ground + eyes, z]).astype(np.float32)
    heading = rng.uniform(0, 2 * np.pi, n)
    forwards = np.column_stack([np.sin(heading), rng.normal(scale=0.2, size=n), np.cos(heading)]).astype(np.float32)
    spec = RayQuerySpec(shape="cone2d", count=count, fov_deg=fov, max_distance=length,
                        layers=["terrain", "environment", "water", "fake_walls"])
    rays = generate_rays(spec, positions, forwards)
    mask = spec.mask(env.layers)
    res = _check(env, rays.origins, rays.directions, rays.max_distance, mask, f"herd {count}")
    assert res.hit.sum() > 0.1 * len(res)
    assert {"terrain", "environment"} <= {env.layers.name(int(k)) for k in np.unique(res.layer[res.hit])}


@pytest.mark.parametrize("seed", [0, 1])
def test_3d_fans_on_a_mixed_scene_match_single_rays_and_brute_force_under_every_mask(seed):
    """Cones of 1 to 70 rays (more than a fan holds) with per-ray lengths from 0 to 40 m, pointing
    anywhere, in a scene with every kind of shape."""
    env = _mixed_scene(seed)
    rng = np.random.default_rng(200 + seed)
    origins, dirs, maxd = [], [], []
    while sum(len(o) for o in origins) < 600:
        count = int(rng.choice([1, 2, 3, 8, 17, 70]))
        o = rng.uniform([-22, -3, -22], [22, 8, 22])
        spec = RayQuerySpec(shape="cone3d", count=count, fov_deg=float(rng.uniform(10, 300)),
                            max_distance=1.0, direction=tuple(random_unit(rng, 1)[0]), world_space=True)
        origins.append(np.repeat(o[None], count, axis=0))
        dirs.append(spec.pattern())
        maxd.append(rng.choice([0.0, 1e-6, 2.0, 6.0, 40.0], count, p=[0.1, 0.1, 0.2, 0.3, 0.3])
                    * rng.uniform(0.5, 1.0, count))
    origins = np.concatenate(origins)
    dirs = np.concatenate(dirs)
    maxd = np.concatenate(maxd).astype(np.float32)
    masks = [ALL_LAYERS, layer_mask("terrain"), env.mask(["environment", "rocks"]), env.mask(["water", "trees"]),
             env.mask(["ground", "fake_walls"]), 0]
    hits = [int(_check(env, origins, dirs, maxd, mask, f"mask={mask:#x}").hit.sum()) for mask in masks]
    assert hits[0] > 100 and min(hits[1:-1]) > 0 and hits[-1] == 0


def test_fans_are_deterministic_whatever_the_thread_count(small_pasture):
    cfg, env = small_pasture
    rng = np.random.default_rng(11)
    n = 5000
    positions = np.column_stack([rng.uniform(-20, 20, n), rng.uniform(0, 4, n), rng.uniform(-20, 20, n)])
    heading = rng.uniform(0, 2 * np.pi, n)
    forwards = np.column_stack([np.sin(heading), np.zeros(n), np.cos(heading)])
    rays = generate_rays(RayQuerySpec(count=8, max_distance=6.0), positions, forwards)
    mask = ALL_LAYERS
    reference = cast_rays(env, rays.origins, rays.directions, 6.0, mask, parallel=False)
    threads = numba.get_num_threads()
    try:
        for t in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(t)
            _assert_identical(cast_rays(env, rays.origins, rays.directions, 6.0, mask, parallel=True), reference,
                              f"{t} threads")
    finally:
        numba.set_num_threads(threads)


# ----------------------------------------------------------------------------------------------------
# edge cases
# ----------------------------------------------------------------------------------------------------


def _edge_scene() -> Environment:
    """A terrain of 1 m cells over [0, 16] x [0, 12] with a ridge, and primitives placed on exact grid lines."""
    xs = np.arange(17.0)
    zs = np.arange(13.0)
    X, Z = np.meshgrid(xs, zs)
    heights = 0.5 * np.sin(X / 2.0) + 0.25 * np.cos(Z / 3.0) + np.where(X == 10, 2.0, 0.0)
    terrain = Heightfield.from_heights(heights, 0.0, 0.0, 16.0, 12.0)
    shapes = [
        BoxConfig(center=(4.0, 2.0, 4.0), half_extents=(1.0, 1.0, 1.0)),  # faces on the terrain's grid lines
        BoxConfig(center=(12.0, 1.5, 8.0), half_extents=(0.5, 1.0, 2.0), yaw_pitch_roll_deg=(30.0, 0.0, 0.0)),
        SphereConfig(center=(8.0, 2.0, 3.0), radius=1.0),
        SphereConfig(center=(-3.0, 1.0, 6.0), radius=1.5),  # beyond the terrain's edge
        CylinderConfig(base=(6.0, 0.0, 9.0), height=3.0, radius=0.5),
        PlaneConfig(point=(0.0, -3.0, 0.0), normal=(0.0, 1.0, 0.0), layer="ground"),
    ]
    water = WaterBodies.from_regions([(0.1, "rectangle", (13.0, 1.0, 15.0, 4.0), 2)])
    return Environment.from_parts(terrain=terrain, shapes=shapes, water=water)


def _fan(origin, dirs, maxd):
    dirs = np.asarray(dirs, np.float64)
    return (np.repeat(np.asarray(origin, np.float64)[None], len(dirs), axis=0), dirs,
            np.broadcast_to(np.asarray(maxd, np.float64), (len(dirs),)))


AXES = [(1, 0, 0), (-1, 0, 0), (0, 0, 1), (0, 0, -1), (0, -1, 0), (0, 1, 0), (1, 0, 1), (1, -0.05, -1)]


def test_edge_case_fans_match_single_rays_and_brute_force():
    env = _edge_scene()
    fans = [
        # starting inside a box (on its centre and on a grid line inside it), inside a sphere, in a cylinder
        _fan((4.0, 2.0, 4.0), AXES, 6.0),
        _fan((4.0, 2.5, 3.0), AXES, 6.0),
        _fan((8.0, 2.0, 3.0), AXES, 3.0),
        _fan((6.0, 1.0, 9.0), AXES, 3.0),
        # inside the bounds of the rotated box but outside the box
        _fan((12.45, 1.5, 9.9), AXES, 5.0),
        # grazing: along the top face of the box, tangent to the sphere's top, along a box edge
        _fan((0.5, 3.0, 4.0), [(1, 0, 0), (1, 0, 0.001), (1, 0, -0.001)], 8.0),
        _fan((5.0, 3.0, 3.0), [(1, 0, 0), (1, 0.0001, 0), (1, -0.0001, 0)], 6.0),
        _fan((0.5, 3.0, 3.0), [(1, 0, 0), (1, 0, 1e-7)], 8.0),
        # along terrain cell borders (integer x or z) and the diagonals the cells are split on
        _fan((2.0, 1.2, 6.0), [(1, 0, 0), (-1, 0, 0), (0, 0, 1), (0, 0, -1), (1, 0, 1), (-1, 0, -1), (1, -0.2, 0)],
             9.0),
        _fan((10.0, 2.2, 2.0), [(0, 0, 1), (0, -0.05, 1), (1, -0.3, 1), (-1, -0.3, -1)], 9.0),
        _fan((7.0, 3.0, 5.0), [(0, -1, 0), (0.01, -1, 0), (1, -1, 1)], 10.0),
        # short and zero-length rays, and a zero direction, in one fan
        _fan((3.0, 0.4, 8.0), [(1, 0, 0), (0, -1, 0), (0, 0, 0), (0, -1, 0.2)], [0.0, 1e-7, 1.0, 0.3]),
        _fan((4.0, 3.0, 4.0), [(0, -1, 0), (0, -1, 0)], [0.0, 1e-6]),  # touching the box's top face
        # on the terrain's edge, outside it looking in, outside looking along it, at a corner
        _fan((0.0, 1.0, 6.0), AXES, 6.0),
        _fan((-2.0, 0.8, 6.0), [(1, 0, 0), (1, -0.2, 0.1), (-1, 0, 0), (0, 0, 1)], 8.0),
        _fan((-0.5, 0.6, 5.0), [(0, 0, 1), (0, -0.1, 1), (0.1, -0.1, 1)], 8.0),
        _fan((16.0, 1.0, 12.0), AXES, 5.0),
        _fan((20.0, 0.5, 20.0), [(-1, 0, -1), (-1, -0.1, -1)], 10.0),
        # above the water, on the water surface, under it
        _fan((14.0, 0.6, 2.0), [(0, -1, 0), (0.3, -1, 0), (1, 0, 0)], 3.0),
        _fan((14.0, 0.1, 2.5), [(0, -1, 0), (0, 1, 0), (1, 0, 0)], 3.0),
        # under the terrain surface (rays leave through it)
        _fan((5.0, -1.0, 5.0), AXES, 6.0),
        # long rays (the fan's box is too large for the shared tests)
        _fan((1.0, 4.0, 1.0), [(1, -0.1, 0.5), (0.3, -0.05, 1), (1, 0, 0)], 1000.0),
    ]
    # rays ending exactly on a box face (the hit at t = max_distance counts), and along the columns of the
    # primitives' grid
    fans.append(_fan((0.5, 2.0, 4.0), [(1, 0, 0), (1, 0, 0), (0, 0, 1)], [2.5, 2.4999, 2.5]))
    gx0, gz0, cell = env.arrays.pg_f[:3]
    for i in range(4):
        x = gx0 + i * cell
        fans.append(_fan((x, 1.5, gz0 - 1.0), [(0, 0, 1), (0, -0.02, 1), (1, 0, 0), (-1, 0, 0)], 3 * cell))
        fans.append(_fan((gx0 - 1.0, 2.0, gz0 + i * cell), [(1, 0, 0), (1, 0, 1e-9), (0, 0, 1)], 4 * cell))
    origins = np.concatenate([f[0] for f in fans])
    dirs = np.concatenate([f[1] for f in fans])
    maxd = np.concatenate([f[2] for f in fans]).astype(np.float32)
    for mask in (layer_mask("terrain"), layer_mask("environment"), layer_mask(["water", "ground"])):
        res = _check(env, origins, dirs, maxd, mask, f"edge mask={mask:#x}", edges=True)
        assert res.hit.any()
    res = _check(env, origins, dirs, maxd, ALL_LAYERS, edges=True)
    assert res.hit.sum() > 0.4 * len(res)
    # the rays from inside solids report where they leave them
    inside = res.hit[:len(AXES)]
    assert inside.all() and np.all(res.distance[:len(AXES)] <= np.sqrt(3.0))


def test_a_fan_longer_than_the_largest_fan_and_fans_across_chunks():
    """More rays with one origin than a fan holds, and fans split across the chunks of the parallel cast."""
    env = _edge_scene()
    rng = np.random.default_rng(4)
    n = 3 * _MAX_FAN + 7
    dirs = random_unit(rng, n)
    dirs[:, 1] = -np.abs(dirs[:, 1]) * 0.3
    origins = np.repeat([[8.5, 1.5, 6.5]], n, axis=0)
    _check(env, origins, dirs, 7.0, ALL_LAYERS, "long fan")
    # 33k rays in fans of 7 (not a divisor of the chunk size)
    m = 33_000 // 7
    pos = np.column_stack([rng.uniform(-2, 18, m), rng.uniform(0.2, 3.5, m), rng.uniform(-2, 14, m)])
    heading = rng.uniform(0, 2 * np.pi, m)
    fwd = np.column_stack([np.sin(heading), np.zeros(m), np.cos(heading)])
    rays = generate_rays(RayQuerySpec(count=7, fov_deg=200.0, max_distance=5.0), pos, fwd)
    _check(env, rays.origins, rays.directions, 5.0, ALL_LAYERS, "chunks", brute=False)


# ----------------------------------------------------------------------------------------------------
# the terrain's block bounds
# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(9, 9), (10, 17), (200, 3)])
def test_block_bounds_enclose_their_cells_and_boxes_reported_clear_are(shape):
    rng = np.random.default_rng(shape[0])
    heights = rng.normal(scale=3.0, size=shape) + 1e-3 * rng.normal(size=shape) + 1e6 * (shape[0] == 200)
    tr = Heightfield.from_heights(heights, -5.0, -4.0, 7.0, 9.0)
    shift, bb = block_bounds(tr.cell_min, tr.cell_max)
    assert shift == tr.block_shift and bb.dtype == np.float32
    b = 1 << shift
    ncz, ncx = tr.cell_min.shape
    for bj in range(bb.shape[0]):
        for bi in range(bb.shape[1]):
            cells = (slice(bj * b, (bj + 1) * b), slice(bi * b, (bi + 1) * b))
            assert float(bb[bj, bi, 0]) <= tr.cell_min[cells].min()
            assert float(bb[bj, bi, 1]) >= tr.cell_max[cells].max()
    x1, z1 = tr.x0 + ncx * tr.dx, tr.z0 + ncz * tr.dz
    for _ in range(300):
        xa, xb = np.sort(rng.uniform(-8, 10, 2))
        za, zb = np.sort(rng.uniform(-7, 12, 2))
        ya, yb = np.sort(rng.uniform(heights.min() - 1, heights.max() + 1, 2))
        state = box_clear_of_terrain(bb, shift, tr.x0, tr.z0, x1, z1, 1 / tr.dx, 1 / tr.dz, ncx, ncz, xa, xb, ya, yb,
                                     za, zb, 10_000)
        # the cells under the box, by their extents
        i = (tr.x0 + np.arange(ncx) * tr.dx <= xb) & (tr.x0 + np.arange(1, ncx + 1) * tr.dx >= xa)
        j = (tr.z0 + np.arange(ncz) * tr.dz <= zb) & (tr.z0 + np.arange(1, ncz + 1) * tr.dz >= za)
        under = np.ix_(j, i)
        if state == 1 and i.any() and j.any():
            assert tr.cell_max[under].max() < ya or tr.cell_min[under].min() > yb
        assert state in (0, 1)
