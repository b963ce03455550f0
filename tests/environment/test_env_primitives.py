"""The analytic per-shape kernels against sphere tracing of independently written distance functions."""

import numpy as np
import pytest

from env_oracles import (
    numeric_gradient,
    random_unit,
    sdf_box,
    sdf_capsule,
    sdf_cylinder,
    sdf_sphere,
    sphere_trace,
)
from starling.environment import mesh as M
from starling.environment import primitives as P
from starling.environment import rotations as R


def _shapes(rng):
    """One random instance of each finite primitive: (name, sdf, ray kernel, sd kernel, sweep kernel)."""
    c = rng.uniform(-1, 1, 3)
    r = rng.uniform(0.5, 1.5)
    rot = R.rotation_from_ypr(*rng.uniform(-180, 180, 3))
    r9 = R.rot9(rot)
    h = rng.uniform(0.3, 1.5, 3)
    a = rng.uniform(-1, 1, 3)
    b = a + random_unit(rng, 1)[0] * rng.uniform(0.5, 2.0)
    cr = rng.uniform(0.3, 0.9)
    u = random_unit(rng, 1)[0]
    hgt = rng.uniform(0.5, 2.5)
    yr = rng.uniform(0.3, 1.2)
    return [
        ("sphere", lambda p: sdf_sphere(p, c, r),
         lambda o, d, tm: P.ray_sphere(*o, *d, tm, *c, r),
         lambda p: P.sd_sphere(*p, *c, r),
         lambda o, d, tm, rs: P.sweep_sphere(*o, *d, tm, rs, *c, r), c),
        ("box", lambda p: sdf_box(p, c, rot, h),
         lambda o, d, tm: P.ray_box(*o, *d, tm, *c, r9, *h),
         lambda p: P.sd_box(*p, *c, r9, *h),
         lambda o, d, tm, rs: P.sweep_box(*o, *d, tm, rs, *c, r9, *h), c),
        ("capsule", lambda p: sdf_capsule(p, a, b, cr),
         lambda o, d, tm: P.ray_capsule(*o, *d, tm, *a, *b, cr),
         lambda p: P.sd_capsule(*p, *a, *b, cr),
         lambda o, d, tm, rs: P.sweep_capsule(*o, *d, tm, rs, *a, *b, cr), (a + b) / 2),
        ("cylinder", lambda p: sdf_cylinder(p, a, u, hgt, yr),
         lambda o, d, tm: P.ray_cylinder(*o, *d, tm, *a, *u, hgt, yr),
         lambda p: P.sd_cylinder(*p, *a, *u, hgt, yr),
         lambda o, d, tm, rs: P.sweep_cylinder(*o, *d, tm, rs, *a, *u, hgt, yr), a + u * hgt / 2),
    ]


def _rays_at(rng, center, n, spread):
    """Rays starting 3–6 m from ``center`` aimed near it."""
    origins = center + random_unit(rng, n) * rng.uniform(3, 6, (n, 1))
    target = center + rng.normal(scale=spread, size=(n, 3))
    dirs = target - origins
    return origins, dirs / np.linalg.norm(dirs, axis=1, keepdims=True)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ray_kernels_find_the_first_surface_crossing_of_each_primitive(seed):
    rng = np.random.default_rng(seed)
    for name, sdf, ray, _, _, center in _shapes(rng):
        origins, dirs = _rays_at(rng, center, 120, 1.2)
        # add rays starting inside the solid: they must report the exit
        inner = center + rng.normal(scale=0.05, size=(30, 3))
        inner = inner[sdf(inner) < 0]
        origins = np.vstack([origins, inner])
        dirs = np.vstack([dirs, random_unit(rng, len(inner))])
        ref = sphere_trace(sdf, origins, dirs, 20.0)
        hits = 0
        for k in range(len(origins)):
            t, nx, ny, nz = ray(origins[k], dirs[k], 20.0)
            assert np.isfinite(t) == np.isfinite(ref[k]), (name, k, t, ref[k])
            if np.isfinite(t):
                hits += 1
                assert abs(t - ref[k]) < 1e-4, (name, k, t, ref[k])
                grad = numeric_gradient(sdf, origins[k] + t * dirs[k])
                assert np.allclose([nx, ny, nz], grad, atol=1e-4), (name, k)
        assert hits > 30, name  # the rays were aimed well enough to exercise the kernel


@pytest.mark.parametrize("seed", [4, 5])
def test_signed_distance_kernels_match_the_reference_distances(seed):
    rng = np.random.default_rng(seed)
    for name, sdf, _, sd, _, center in _shapes(rng):
        pts = center + rng.normal(scale=1.5, size=(200, 3))
        ref = sdf(pts)
        for k in range(len(pts)):
            d, nx, ny, nz = sd(pts[k])
            assert abs(d - ref[k]) < 1e-9, (name, k)
            assert abs(np.linalg.norm([nx, ny, nz]) - 1) < 1e-9
            if abs(ref[k]) > 1e-3:
                # the direction is the gradient of the distance
                assert np.allclose([nx, ny, nz], numeric_gradient(sdf, pts[k]), atol=1e-4), (name, k)


@pytest.mark.parametrize("seed", [6, 7])
def test_sphere_sweeps_touch_each_primitive_where_the_inflated_distance_reaches_zero(seed):
    rng = np.random.default_rng(seed)
    for name, sdf, _, _, sweep, center in _shapes(rng):
        rs = rng.uniform(0.1, 0.6)
        origins, dirs = _rays_at(rng, center, 150, 0.7)
        keep = sdf(origins) > rs + 0.05
        origins, dirs = origins[keep], dirs[keep]
        ref = sphere_trace(sdf, origins, dirs, 20.0, inflate=rs)
        hits = 0
        for k in range(len(origins)):
            t, nx, ny, nz = sweep(origins[k], dirs[k], 20.0, rs)
            assert np.isfinite(t) == np.isfinite(ref[k]), (name, k, t, ref[k])
            if np.isfinite(t):
                hits += 1
                assert abs(t - ref[k]) < 1e-4, (name, k, t, ref[k])
                c = origins[k] + t * dirs[k]
                assert np.allclose([nx, ny, nz], numeric_gradient(sdf, c), atol=1e-4), (name, k)
        assert hits > 30, name


def test_cylinder_sweep_solves_the_rim_torus():
    """Spheres aimed at the rim of a vertical cylinder first touch the torus around the rim circle."""
    rng = np.random.default_rng(11)
    a, u, hgt, r, rs = np.zeros(3), np.array([0.0, 1.0, 0.0]), 2.0, 0.5, 0.3
    sdf = lambda p: sdf_cylinder(p, a, u, hgt, r)  # noqa: E731
    ang = rng.uniform(0, 2 * np.pi, 200)
    rim = np.stack([r * np.cos(ang), np.where(rng.random(200) < 0.5, 0.0, hgt), r * np.sin(ang)], axis=1)
    outward = np.stack([np.cos(ang), np.where(rim[:, 1] > 0, 1.0, -1.0), np.sin(ang)], axis=1)
    outward /= np.linalg.norm(outward, axis=1, keepdims=True)
    origins = rim + 3 * outward + rng.normal(scale=0.2, size=(200, 3))
    dirs = rim + rng.normal(scale=0.1, size=(200, 3)) - origins
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    ref = sphere_trace(sdf, origins, dirs, 10.0, inflate=rs)
    rim_contacts = 0
    for k in range(200):
        t, nx, ny, nz = P.sweep_cylinder(*origins[k], *dirs[k], 10.0, rs, *a, *u, hgt, r)
        assert np.isfinite(t) == np.isfinite(ref[k])
        if np.isfinite(t):
            assert abs(t - ref[k]) < 1e-4
            c = origins[k] + t * dirs[k]
            y = c[1]
            if y < 0 or y > hgt:
                if np.hypot(c[0], c[2]) > r:
                    rim_contacts += 1
    assert rim_contacts > 50


def _segment_distance(p, a, b):
    ab = b - a
    s = np.clip(((p - a) @ ab) / (ab @ ab), 0, 1)
    return np.linalg.norm(p - (a + s[:, None] * ab), axis=1)


def _triangle_distance(p, tri):
    """Distance from points to a triangle: the plane distance where the projection falls inside, else the
    nearest edge."""
    if p.ndim == 1:
        return _triangle_distance(p[None, :], tri)[0]
    a, b, c = tri
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n)
    sd = (p - a) @ n
    q = p - sd[:, None] * n
    inside = np.ones(len(p), bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= (np.cross(v - u, q - u) @ n) >= 0
    edges = np.minimum.reduce([_segment_distance(p, a, b), _segment_distance(p, b, c), _segment_distance(p, c, a)])
    return np.where(inside, np.abs(sd), edges)


def test_triangle_sweep_matches_tracing_of_the_triangle_distance():
    rng = np.random.default_rng(12)
    for _ in range(6):
        tri = rng.uniform(-1.5, 1.5, (3, 3))
        n = np.cross(tri[1] - tri[0], tri[2] - tri[0])
        n /= np.linalg.norm(n)
        rs = rng.uniform(0.1, 0.5)
        dist = lambda p: _triangle_distance(p, tri)  # noqa: E731
        origins, dirs = _rays_at(rng, tri.mean(axis=0), 150, 1.0)
        keep = dist(origins) > rs + 0.05
        origins, dirs = origins[keep], dirs[keep]
        ref = sphere_trace(dist, origins, dirs, 20.0, inflate=rs)
        for k in range(len(origins)):
            t, nx, ny, nz = M.sweep_triangle(*origins[k], *dirs[k], 20.0, rs, *tri[0], *tri[1], *tri[2], *n)
            assert np.isfinite(t) == np.isfinite(ref[k]), (k, t, ref[k])
            if np.isfinite(t):
                assert abs(t - ref[k]) < 1e-4
                assert np.allclose([nx, ny, nz], numeric_gradient(dist, origins[k] + t * dirs[k]), atol=1e-4)


def test_sweep_overlap_rule_blocks_motion_into_a_touched_surface_and_lets_sliding_through():
    tri = np.array([[-5.0, 0.0, -5.0], [5.0, 0.0, -5.0], [0.0, 0.0, 5.0]])
    n = np.array([0.0, 1.0, 0.0])
    rs = 0.5
    o = np.array([0.0, 0.5 - 1e-6, 0.0])  # touching (a hair inside the inflated surface)
    down = np.array([0.7071, -0.7071, 0.0])
    down /= np.linalg.norm(down)
    t, *normal = M.sweep_triangle(*o, *down, 2.0, rs, *tri[0], *tri[1], *tri[2], *n)
    assert t == 0.0 and np.allclose(normal, n)
    side = np.array([1.0, 0.0, 0.0])
    t, *_ = M.sweep_triangle(*o, *side, 2.0, rs, *tri[0], *tri[1], *tri[2], *n)
    assert t == np.inf
    up = np.array([0.0, 1.0, 0.0])
    t, *_ = M.sweep_triangle(*o, *up, 2.0, rs, *tri[0], *tri[1], *tri[2], *n)
    assert t == np.inf


def test_rotations_follow_the_documented_conventions():
    # yaw 90 turns +z (forward) towards +x, pitch 90 turns +z towards -y, roll 90 turns +x towards +y
    assert np.allclose(R.rotation_from_ypr(90, 0, 0) @ [0, 0, 1], [1, 0, 0], atol=1e-12)
    assert np.allclose(R.rotation_from_ypr(0, 90, 0) @ [0, 0, 1], [0, -1, 0], atol=1e-12)
    assert np.allclose(R.rotation_from_ypr(0, 0, 90) @ [1, 0, 0], [0, 1, 0], atol=1e-12)
    # the quaternion of a yaw of 90 degrees about +y gives the same matrix
    s = np.sqrt(0.5)
    assert np.allclose(R.rotation_from_quaternion(s, 0, s, 0), R.rotation_from_ypr(90, 0, 0), atol=1e-12)
    rot = R.rotation_from_ypr(33, -20, 71)
    assert np.allclose(rot @ rot.T, np.eye(3), atol=1e-12) and np.isclose(np.linalg.det(rot), 1.0)
