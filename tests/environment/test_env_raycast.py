"""Batched ray casts against brute force; mesh loading; inside tests against analytic answers."""

import numpy as np
import pytest
import trimesh

from env_oracles import brute_force_cast, moller_trumbore_all, random_unit, triangle_normals
from starling.environment import (
    ALL_LAYERS,
    Environment,
    EnvironmentConfig,
    EnvironmentFileError,
    Heightfield,
    RayHits,
    WaterBodies,
    cast_rays,
    layer_mask,
)
from starling.environment.config import (
    BoxConfig,
    CapsuleConfig,
    CylinderConfig,
    PlaneConfig,
    SphereConfig,
)
from starling.world.layers import LayerRegistry

USER_LAYERS = ["rocks", "trees"]


def _mixed_scene(seed: int) -> Environment:
    rng = np.random.default_rng(seed)
    registry = LayerRegistry(USER_LAYERS)
    solid_layers = ["environment", "rocks", "trees", "fake_walls"]

    def lay():
        return solid_layers[rng.integers(len(solid_layers))]

    def pos():
        return tuple(rng.uniform([-18, -2, -18], [18, 6, 18]))

    shapes = []
    for _ in range(15):
        shapes.append(SphereConfig(center=pos(), radius=rng.uniform(0.3, 2.0), layer=lay()))
    for _ in range(15):
        shapes.append(BoxConfig(center=pos(), half_extents=tuple(rng.uniform(0.2, 2.0, 3)),
                                yaw_pitch_roll_deg=tuple(rng.uniform(-180, 180, 3)), layer=lay()))
    for _ in range(10):
        shapes.append(CapsuleConfig(base=pos(), height=rng.uniform(0.0, 3.0), radius=rng.uniform(0.2, 1.0),
                                    axis=tuple(random_unit(rng, 1)[0]), layer=lay()))
    for _ in range(10):
        shapes.append(CylinderConfig(base=pos(), height=rng.uniform(0.5, 4.0), radius=rng.uniform(0.2, 1.0),
                                     axis=tuple(random_unit(rng, 1)[0]), layer=lay()))
    shapes.append(PlaneConfig(point=(0, -4, 0), normal=(0, 1, 0), layer="ground"))
    shapes.append(PlaneConfig(point=(30, 0, 0), normal=(-1, 0.1, 0.2), layer="fake_walls"))
    # a small terrain with bumps
    n = 25
    xs = np.linspace(-20, 20, n)
    X, Z = np.meshgrid(xs, xs)
    heights = -1.0 + 1.5 * np.sin(X / 4) * np.cos(Z / 5) + rng.normal(scale=0.2, size=X.shape)
    terrain = Heightfield.from_heights(heights, -20, -20, 20, 20, layer=registry.index("terrain"))
    water = WaterBodies.from_regions([
        (0.2, "circle", (5.0, -5.0, 6.0), registry.index("water")),
        (0.5, "polygon", [(-15, 5), (-5, 4), (-6, 14), (-14, 12)], registry.index("water")),
    ])
    # meshes: an icosphere (layer rocks) and a random soup (layer environment)
    ico = trimesh.creation.icosphere(subdivisions=2, radius=2.5)
    ico_tris = ico.vertices[ico.faces] + np.array([-8.0, 3.0, 8.0])
    soup = rng.uniform(-15, 15, (60, 1, 3)) + rng.normal(scale=1.5, size=(60, 3, 3))
    triangles = np.concatenate([ico_tris, soup])
    tri_layers = np.concatenate([np.full(len(ico_tris), registry.index("rocks")),
                                 np.full(len(soup), registry.index("environment"))])
    mesh_ids = np.concatenate([np.zeros(len(ico_tris), int), np.ones(len(soup), int)])
    return Environment.from_parts(layers=registry, terrain=terrain, water=water, shapes=shapes, triangles=triangles,
                                  triangle_layers=tri_layers, triangle_mesh_ids=mesh_ids, mesh_solid=[True, False])


def _random_rays(rng, n):
    origins = rng.uniform([-20, -3, -20], [20, 8, 20], (n, 3)).astype(np.float32)
    dirs = random_unit(rng, n).astype(np.float32)
    maxd = rng.uniform(3, 40, n).astype(np.float32)
    return origins, dirs, maxd


def _assert_same(res: RayHits, ref, label=""):
    hit, dist, normal, layer = ref
    assert np.array_equal(res.hit, hit), label
    assert np.allclose(res.distance[hit], dist[hit], atol=1e-4, rtol=0), label
    assert np.all(np.isinf(res.distance[~hit])), label
    assert np.allclose(res.normal[hit], normal[hit], atol=1e-4), label
    assert np.array_equal(res.layer, layer.astype(np.int16)), label


@pytest.mark.parametrize("seed", [0, 1])
def test_cast_rays_matches_brute_force_on_a_mixed_scene_under_every_mask(seed):
    env = _mixed_scene(seed)
    rng = np.random.default_rng(100 + seed)
    origins, dirs, maxd = _random_rays(rng, 300)
    masks = [ALL_LAYERS, layer_mask("terrain"), env.mask(["environment", "rocks"]), env.mask(["water", "trees"]),
             env.mask(["ground", "fake_walls"]), 0]
    d64 = dirs.astype(np.float64)
    d64 /= np.linalg.norm(d64, axis=1, keepdims=True)
    for mask in masks:
        ref = brute_force_cast(env, origins, d64, maxd, mask)
        serial = cast_rays(env, origins, dirs, maxd, mask, parallel=False)
        parallel = cast_rays(env, origins, dirs, maxd, mask, parallel=True)
        _assert_same(serial, ref, f"serial mask={mask:#x}")
        _assert_same(parallel, ref, f"parallel mask={mask:#x}")
        if mask:
            assert serial.hit.sum() > 20  # the scene is busy enough for the comparison to mean something
        # a hit point lies on the ray at the reported distance; normals face the origin
        h = serial.hit
        expect = origins[h] + serial.distance[h, None] * d64[h]
        assert np.allclose(serial.point[h], expect, atol=1e-4)
        assert np.all(np.einsum("ij,ij->i", serial.normal[h], d64[h]) <= 1e-6)


def test_every_layer_of_the_mixed_scene_gets_hit():
    env = _mixed_scene(0)
    rng = np.random.default_rng(5)
    origins, dirs, _ = _random_rays(rng, 3000)
    res = cast_rays(env, origins, dirs, 60.0)
    names = {env.layers.name(int(i)) for i in np.unique(res.layer[res.hit])}
    assert {"terrain", "ground", "water", "environment", "rocks", "trees", "fake_walls"} <= names


def test_mesh_bvh_matches_brute_force_over_all_triangles():
    rng = np.random.default_rng(3)
    knot = trimesh.creation.torus(major_radius=3.0, minor_radius=0.8, major_sections=48, minor_sections=24)
    tris = knot.vertices[knot.faces]
    soup = rng.uniform(-6, 6, (400, 1, 3)) + rng.normal(scale=0.7, size=(400, 3, 3))
    tris = np.concatenate([tris, soup])
    env = Environment.from_parts(triangles=tris)
    assert env.tri_bvh.n_nodes > 100
    origins = rng.uniform(-8, 8, (400, 3)).astype(np.float32)
    dirs = random_unit(rng, 400).astype(np.float32)
    res = cast_rays(env, origins, dirs, 30.0)
    normals = triangle_normals(tris)
    for k in range(400):
        d = dirs[k].astype(np.float64) / np.linalg.norm(dirs[k].astype(np.float64))
        t, i = moller_trumbore_all(origins[k].astype(np.float64), d, tris, 30.0)
        assert res.hit[k] == (i >= 0)
        if i >= 0:
            assert abs(res.distance[k] - t) < 1e-4
            n = normals[i] if normals[i] @ d <= 0 else -normals[i]
            assert np.allclose(res.normal[k], n, atol=1e-4)


def test_ray_heightfield_walk_matches_brute_force_over_all_terrain_triangles():
    rng = np.random.default_rng(9)
    n = 41
    xs = np.linspace(-10, 30, n)
    X, Z = np.meshgrid(xs, np.linspace(-5, 15, 21))
    heights = 2 * np.sin(X / 3) + np.cos(Z / 2) + rng.normal(scale=0.3, size=X.shape)
    terrain = Heightfield.from_heights(heights, -10, -5, 30, 15)
    env = Environment.from_parts(terrain=terrain)
    from env_oracles import heightfield_triangles

    tris = heightfield_triangles(terrain.heights, terrain.x0, terrain.z0, terrain.dx, terrain.dz)
    normals = triangle_normals(tris)
    m = 500
    origins = rng.uniform([-15, -4, -8], [35, 6, 18], (m, 3))
    dirs = random_unit(rng, m)
    # include axis-aligned and vertical rays, which take the DDA's special paths
    dirs[:40] = [[1, 0, 0], [0, 0, 1], [-1, 0, 0], [0, 0, -1], [0, -1, 0], [0, 1, 0], [1, -0.1, 0], [0, -0.1, -1]] * 5
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    res = cast_rays(env, origins.astype(np.float32), dirs.astype(np.float32), 50.0)
    o32 = origins.astype(np.float32).astype(np.float64)
    d32 = dirs.astype(np.float32).astype(np.float64)
    d32 /= np.linalg.norm(d32, axis=1, keepdims=True)
    for k in range(m):
        t, i = moller_trumbore_all(o32[k], d32[k], tris, 50.0)
        assert res.hit[k] == (i >= 0), k
        if i >= 0:
            assert abs(res.distance[k] - t) < 1e-4, k
            nn = normals[i] if normals[i] @ d32[k] <= 0 else -normals[i]
            assert np.allclose(res.normal[k], nn, atol=1e-4), k
    assert res.hit.sum() > 150


def test_preallocated_outputs_are_reused_and_views_returned():
    env = _mixed_scene(1)
    rng = np.random.default_rng(8)
    origins, dirs, maxd = _random_rays(rng, 50)
    buf = RayHits.allocate(80)
    res = cast_rays(env, origins, dirs, maxd, out=buf)
    assert len(res) == 50 and np.shares_memory(res.distance, buf.distance)
    fresh = cast_rays(env, origins, dirs, maxd)
    assert np.array_equal(res.hit, fresh.hit) and np.array_equal(res.layer, fresh.layer)
    with pytest.raises(ValueError, match="out holds 10 rows"):
        cast_rays(env, origins, dirs, maxd, out=RayHits.allocate(10))
    with pytest.raises(ValueError, match="max_distance"):
        cast_rays(env, origins, dirs, np.ones(7))


def test_empty_environment_has_no_hits_no_solids_and_no_bounds():
    env = Environment.empty()
    rng = np.random.default_rng(0)
    origins, dirs, _ = _random_rays(rng, 20)
    res = cast_rays(env, origins, dirs, 100.0)
    assert not res.hit.any() and np.all(res.layer == -1) and np.all(np.isinf(res.distance))
    assert np.allclose(res.point, origins + 100.0 * dirs, atol=1e-4)
    assert not env.is_inside_solid(origins, radius=5.0).any()
    assert env.bounds is None and env.is_empty
    assert np.isnan(env.height_at(0.0, 0.0))


# ----------------------------------------------------------------------------------------------------
# mesh files
# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ext", ["obj", "stl", "ply", "glb"])
def test_meshes_load_from_common_formats_with_their_transform(tmp_path, ext):
    source = trimesh.creation.box(extents=(2.0, 1.0, 3.0))
    path = tmp_path / f"box.{ext}"
    source.export(path)
    cfg = EnvironmentConfig(meshes=[{
        "path": path.name, "translation": (5.0, 1.0, -2.0), "yaw_pitch_roll_deg": (90.0, 0.0, 0.0), "scale": 2.0,
        "layer": "environment",
    }])
    env = Environment.from_config(cfg, base_dir=tmp_path)
    assert len(env.arrays.tri_f) == 12
    assert bool(env.arrays.mesh_i[0, 0])  # a closed box is watertight, hence solid
    # the transformed box spans x in 5 +- 3 (z extent 3 * 2 / 2 after the yaw), y in 1 +- 1, z in -2 +- 2
    lo, hi = env.bounds
    assert np.allclose(lo, [2.0, 0.0, -4.0], atol=1e-5) and np.allclose(hi, [8.0, 2.0, 0.0], atol=1e-5)
    res = cast_rays(env, np.array([[5.0, 10.0, -2.0], [-5.0, 1.0, -2.0]]), np.array([[0, -1, 0], [1, 0, 0]]), 50.0)
    assert np.allclose(res.distance, [8.0, 7.0], atol=1e-5)
    assert np.allclose(res.normal, [[0, 1, 0], [-1, 0, 0]], atol=1e-6)
    assert env.is_inside_solid(np.array([[5.0, 1.0, -2.0], [5.0, 3.0, -2.0]])).tolist() == [True, False]


def test_missing_mesh_file_is_one_clear_error_naming_it(tmp_path):
    cfg = EnvironmentConfig(meshes=[{"path": "nowhere/rock.obj"}])
    with pytest.raises(EnvironmentFileError, match=r"nowhere/rock\.obj.*no such file"):
        Environment.from_config(cfg, base_dir=tmp_path)


@pytest.mark.parametrize("name, payload", [
    ("broken.stl", b"solid x\n facet normal 0 0 nonsense\n"),
    ("broken.glb", b"glTF\x02\x00\x00\x00garbage"),
    ("empty.obj", b"# nothing here\n"),
])
def test_broken_mesh_file_is_one_clear_error_naming_it(tmp_path, name, payload):
    (tmp_path / name).write_bytes(payload)
    with pytest.raises(EnvironmentFileError) as info:
        Environment.from_config({"meshes": [{"path": name}]}, base_dir=tmp_path)
    assert name in str(info.value) and "cannot load mesh file" in str(info.value)


# ----------------------------------------------------------------------------------------------------
# inside tests
# ----------------------------------------------------------------------------------------------------


def test_is_inside_solid_matches_analytic_answers_for_every_shape():
    rot_deg = (30.0, 20.0, -10.0)
    env = Environment.from_config({
        "layers": ["rocks"],
        "shapes": [
            {"kind": "sphere", "center": (0, 0, 0), "radius": 1.0},
            {"kind": "box", "center": (5, 0, 0), "half_extents": (1.0, 0.5, 2.0), "yaw_pitch_roll_deg": rot_deg,
             "layer": "rocks"},
            {"kind": "capsule", "base": (10, 0, 0), "height": 2.0, "radius": 0.5},
            {"kind": "cylinder", "base": (15, 0, 0), "height": 2.0, "radius": 0.5, "axis": (1, 0, 0)},
            {"kind": "plane", "point": (0, -10, 0), "normal": (0, 1, 0)},
        ],
    })
    from starling.environment.rotations import rotation_from_ypr

    rot = rotation_from_ypr(*rot_deg)
    pts, expect = [], []
    # sphere
    pts += [(0.99, 0, 0), (0, 1.01, 0), (0.5, 0.5, 0.5)]
    expect += [True, False, True]
    # box: local points mapped to world
    for local, inside in [((0.99, 0.49, 1.99), True), ((1.01, 0, 0), False), ((0, 0.51, 0), False),
                          ((-0.9, -0.4, -1.9), True)]:
        pts.append(tuple(np.array([5, 0, 0]) + rot @ np.array(local)))
        expect.append(inside)
    # capsule: segment from (10,0,0) to (10,2,0), radius 0.5
    pts += [(10, -0.49, 0), (10, -0.51, 0), (10.49, 1.0, 0), (10.2, 2.2, 0.2), (10.4, 2.4, 0.0)]
    expect += [True, False, True, True, False]
    # cylinder along +x from x=15 to x=17, radius 0.5: flat caps
    pts += [(15.01, 0.49, 0), (14.99, 0, 0), (16.99, 0, 0.49), (17.01, 0, 0), (16, 0.36, 0.36)]
    expect += [True, False, True, False, False]
    # below the plane
    pts += [(100, -10.01, 50), (100, -9.99, 50)]
    expect += [True, False]
    got = env.is_inside_solid(np.array(pts, dtype=np.float64))
    assert got.tolist() == expect
    # masks: the box is on layer "rocks"
    box_pt = np.array([[5.0, 0.0, 0.0]])
    assert env.is_inside_solid(box_pt, mask="rocks")[0]
    assert not env.is_inside_solid(box_pt, mask=["environment", "ground"])[0]
    # radius: a ball touching the sphere from 1.2 m away
    assert env.is_inside_solid(np.array([[1.2, 0, 0]]), radius=0.25)[0]
    assert not env.is_inside_solid(np.array([[1.2, 0, 0]]), radius=0.15)[0]


def test_is_inside_solid_for_terrain_water_and_meshes():
    heights = np.zeros((11, 11))
    terrain = Heightfield.from_heights(heights, -5, -5, 5, 5)
    water = WaterBodies.from_regions([(2.0, "rectangle", (-5, -5, 5, 5), 2)])
    ico = trimesh.creation.icosphere(subdivisions=3, radius=1.0)
    quad = np.array([[[20, 0, 20], [22, 0, 20], [22, 0, 22]]], dtype=np.float64)
    tris = np.concatenate([ico.vertices[ico.faces] + [0, 5, 0], quad])
    mesh_ids = np.r_[np.zeros(len(ico.faces), int), 1]
    env = Environment.from_parts(terrain=terrain, water=water, triangles=tris, triangle_mesh_ids=mesh_ids,
                                 mesh_solid=[True, False])
    pts = np.array([
        [0, -0.01, 0],  # just below the terrain
        [0, 0.01, 0],  # just above it (and in the water, which is not solid)
        [7, -1, 0],  # below the terrain's height but outside its rectangle
        [0, 5, 0], [0.5, 5.5, 0.3],  # inside the closed icosphere
        [0, 6.05, 0], [1.1, 5, 0],  # outside it
        [21.5, -0.0, 20.5],  # on the open quad
    ])
    assert env.is_inside_solid(pts).tolist() == [True, False, False, True, True, False, False, False]
    assert env.is_inside_solid(np.array([[0, 0.3, 0]]), radius=0.31)[0]
    assert not env.is_inside_solid(np.array([[0, 0.3, 0]]), radius=0.29)[0]
    assert env.is_inside_solid(np.array([[21.5, 0.1, 20.5]]), radius=0.2)[0]  # touching the open surface
    assert env.in_water(np.array([[0, 0.01, 0], [0, 2.5, 0]])).tolist() == [True, False]


def test_sphere_cast_matches_tracing_over_terrain_mesh_and_primitives():
    """Sphere casts through the terrain walk, both BVHs and the plane, against sphere tracing of the exact
    distance to every surface of the scene."""
    from env_oracles import heightfield_triangles, numeric_gradient, sdf_box, sdf_cylinder, sdf_sphere, sphere_trace
    from env_oracles import triangles_distance
    from starling.environment import sphere_cast
    from starling.environment.rotations import rotation_from_ypr

    rng = np.random.default_rng(21)
    X, Z = np.meshgrid(np.linspace(-6, 6, 9), np.linspace(-6, 6, 9))
    terrain = Heightfield.from_heights(0.8 * np.sin(X) * np.cos(Z / 2) + rng.normal(scale=0.2, size=X.shape),
                                       -6, -6, 6, 6)
    soup = rng.uniform([-5, 2, -5], [5, 5, 5], (25, 1, 3)) + rng.normal(scale=0.8, size=(25, 3, 3))
    rot = rotation_from_ypr(25, 10, -15)
    shapes = [
        SphereConfig(center=(3, 2.5, -2), radius=0.8),
        BoxConfig(center=(-3, 2.0, 2), half_extents=(0.7, 0.4, 1.0), yaw_pitch_roll_deg=(25, 10, -15)),
        CylinderConfig(base=(2, 1.0, 3), height=2.0, radius=0.5, axis=(0.3, 1, 0)),
        PlaneConfig(point=(0, 0, -7), normal=(0, 0, 1)),
    ]
    env = Environment.from_parts(terrain=terrain, shapes=shapes, triangles=soup)
    tris = np.concatenate([heightfield_triangles(terrain.heights, terrain.x0, terrain.z0, terrain.dx, terrain.dz),
                           soup])
    u = np.array([0.3, 1, 0]) / np.linalg.norm([0.3, 1, 0])

    def dist(p):
        p = np.atleast_2d(p)
        return np.minimum.reduce([
            triangles_distance(p, tris),
            np.abs(sdf_sphere(p, np.array([3, 2.5, -2]), 0.8)),
            np.abs(sdf_box(p, np.array([-3, 2.0, 2]), rot, np.array([0.7, 0.4, 1.0]))),
            np.abs(sdf_cylinder(p, np.array([2, 1.0, 3]), u, 2.0, 0.5)),
            np.abs(p[:, 2] + 7),
        ])

    rs = 0.3
    m = 150
    origins = rng.uniform([-6, 3, -6], [6, 7, 6], (m, 3))
    targets = rng.uniform([-6, -1, -7], [6, 3, 6], (m, 3))
    dirs = targets - origins
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    keep = dist(origins) > rs + 0.05
    origins, dirs = origins[keep], dirs[keep]
    o32 = origins.astype(np.float32)
    d32 = dirs.astype(np.float32)
    res = sphere_cast(env, o32, d32, 15.0, rs)
    o64 = o32.astype(np.float64)
    d64 = d32.astype(np.float64)
    d64 /= np.linalg.norm(d64, axis=1, keepdims=True)
    ref = sphere_trace(lambda p: dist(p), o64, d64, 15.0, inflate=rs)
    assert np.array_equal(res.hit, np.isfinite(ref))
    assert res.hit.sum() > 80
    assert np.allclose(res.distance[res.hit], ref[res.hit], atol=1e-4)
    for k in np.flatnonzero(res.hit):
        c = o64[k] + res.distance[k] * d64[k]
        assert np.allclose(res.normal[k], numeric_gradient(lambda p: dist(p), c), atol=1e-3)
        assert np.allclose(np.linalg.norm(c - res.point[k]), rs, atol=1e-4)


def test_infinite_and_zero_length_rays_and_zero_directions_are_handled():
    env = _mixed_scene(0)
    o = np.array([[1.0, 30.0, 2.0], [1.0, 30.0, 2.0], [0.0, 2.0, 0.0], [3.0, 3.0, 3.0]], np.float32)
    d = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 0], [0, 1, 0]], np.float32)
    res = cast_rays(env, o, d, np.array([np.inf, np.inf, 5.0, 0.0], np.float32))
    assert res.hit[0] and np.isfinite(res.distance[0]) and np.all(np.isfinite(res.point))
    assert not res.hit[2] and res.layer[2] == -1  # a zero direction hits nothing
    ref = brute_force_cast(env, o[:2], d[:2].astype(np.float64), 1e9, ALL_LAYERS)
    assert np.array_equal(res.hit[:2], ref[0]) and np.allclose(res.distance[:2][ref[0]], ref[1][ref[0]], atol=1e-4)


def test_no_nan_ever_leaves_the_ray_and_sphere_casts():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from starling.environment import sphere_cast

    env = _mixed_scene(1)
    coord = st.floats(-40, 40, allow_nan=False, width=32)
    comp = st.floats(-1, 1, allow_nan=False, width=32)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(coord, coord, coord, comp, comp, comp,
                              st.floats(0, 1e6, allow_nan=False, width=32)), min_size=1, max_size=16))
    def check(rows):
        a = np.array(rows, np.float32)
        res = cast_rays(env, a[:, :3], a[:, 3:6], a[:, 6])
        assert not np.isnan(res.distance).any() and np.isfinite(res.point).all() and np.isfinite(res.normal).all()
        sw = sphere_cast(env, a[:, :3], a[:, 3:6], np.minimum(a[:, 6], 50), 0.3)
        assert not np.isnan(sw.distance).any() and np.isfinite(sw.point).all() and np.isfinite(sw.normal).all()

    check()
