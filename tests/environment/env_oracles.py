"""Independent reference implementations for the environment tests (plain NumPy, no acceleration).

* Exact signed distance functions of the primitives, written from their textbook definitions, and a
  sphere tracer over them: the oracle for the analytic per-shape kernels (ray and sphere casts).
* Möller–Trumbore over *all* triangles: the oracle for the heightfield DDA and the mesh BVH.
* A brute-force cast over every shape of a scene (no BVH, no DDA, no early-outs): the oracle for
  :func:`starling.environment.raycast.cast_rays`.
"""

from __future__ import annotations

import numpy as np

from starling.environment import primitives as P
from starling.environment import rotations as R

# ----------------------------------------------------------------------------------------------------
# exact signed distances, vectorised over points (m, 3)
# ----------------------------------------------------------------------------------------------------


def sdf_sphere(p, c, r):
    return np.linalg.norm(p - c, axis=-1) - r


def sdf_box(p, c, rot, h):
    q = (p - c) @ rot  # local coordinates (rot's columns are the box axes)
    e = np.abs(q) - h
    outside = np.linalg.norm(np.maximum(e, 0.0), axis=-1)
    inside = np.minimum(e.max(axis=-1), 0.0)
    return outside + inside


def sdf_capsule(p, a, b, r):
    ab = b - a
    s = np.clip(((p - a) @ ab) / (ab @ ab), 0.0, 1.0)
    return np.linalg.norm(p - (a + s[..., None] * ab), axis=-1) - r


def sdf_cylinder(p, a, u, hgt, r):
    w = p - a
    y = w @ u
    rho = np.linalg.norm(w - y[..., None] * u, axis=-1)
    dr = rho - r
    dy = np.abs(y - hgt / 2) - hgt / 2
    return np.minimum(np.maximum(dr, dy), 0.0) + np.hypot(np.maximum(dr, 0.0), np.maximum(dy, 0.0))


def numeric_gradient(f, p, eps=1e-6):
    g = np.zeros_like(p)
    for k in range(3):
        e = np.zeros(3)
        e[k] = eps
        g[..., k] = (f(p + e) - f(p - e)) / (2 * eps)
    return g / np.linalg.norm(g, axis=-1, keepdims=True)


def sphere_trace(sdf, origins, dirs, tmax, inflate=0.0, tol=1e-9, max_steps=200000):
    """First ``t`` in ``[0, tmax]`` where ``|sdf| - inflate`` reaches 0 along each ray (``inf`` if none).

    Stepping by the exact distance to the (inflated) surface can never step over it, so the first
    crossing is found for rays starting outside or inside.
    """
    n = origins.shape[0]
    t = np.zeros(n)
    done = np.zeros(n, bool)
    result = np.full(n, np.inf)
    for _ in range(max_steps):
        act = ~done
        if not act.any():
            break
        p = origins[act] + t[act, None] * dirs[act]
        d = np.abs(sdf(p) - inflate)
        idx = np.flatnonzero(act)
        hit = d < tol
        result[idx[hit]] = t[idx[hit]]
        done[idx[hit]] = True
        t[idx[~hit]] += d[~hit]
        over = t > tmax
        done |= over
    return result


# ----------------------------------------------------------------------------------------------------
# triangles
# ----------------------------------------------------------------------------------------------------


def moller_trumbore_all(o, d, tris, tmax):
    """For one ray, the nearest crossing over ``(t, 3, 3)`` triangles: ``(t, index)`` or ``(inf, -1)``."""
    v0 = tris[:, 0]
    e1 = tris[:, 1] - v0
    e2 = tris[:, 2] - v0
    pv = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, pv)
    ok = np.abs(det) > 1e-300
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    tv = o - v0
    u = np.einsum("ij,ij->i", tv, pv) * inv
    qv = np.cross(tv, e1)
    v = (qv @ d) * inv
    t = np.einsum("ij,ij->i", e2, qv) * inv
    valid = ok & (u >= 0) & (u <= 1) & (v >= 0) & (u + v <= 1) & (t >= 0) & (t <= tmax)
    if not valid.any():
        return np.inf, -1
    k = np.flatnonzero(valid)[np.argmin(t[valid])]
    return float(t[k]), int(k)


def triangle_normals(tris):
    n = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    return n / np.linalg.norm(n, axis=1, keepdims=True)


def heightfield_triangles(h, x0, z0, dx, dz):
    """All ``2 (nz-1)(nx-1)`` triangles of a heightfield as ``(t, 3, 3)`` corners (same split as the
    terrain module: diagonal from (i, j) to (i+1, j+1))."""
    nz, nx = h.shape
    tris = []
    for j in range(nz - 1):
        for i in range(nx - 1):
            x, z = x0 + i * dx, z0 + j * dz
            p00 = (x, h[j, i], z)
            p10 = (x + dx, h[j, i + 1], z)
            p11 = (x + dx, h[j + 1, i + 1], z + dz)
            p01 = (x, h[j + 1, i], z + dz)
            tris.append((p00, p10, p11))
            tris.append((p00, p11, p01))
    return np.asarray(tris, dtype=np.float64)


# ----------------------------------------------------------------------------------------------------
# brute-force cast over a whole scene
# ----------------------------------------------------------------------------------------------------


def _point_in_polygon(poly, x, z):
    inside = False
    n = len(poly)
    for i in range(n):
        xi, zi = poly[i]
        xj, zj = poly[i - 1]
        if (zi > z) != (zj > z) and x < xi + (z - zi) * (xj - xi) / (zj - zi):
            inside = not inside
    return inside


def brute_force_cast(env, origins, dirs, max_distance, mask):
    """Reference nearest hits ``(hit, t, normal, layer)`` testing every shape of ``env`` directly
    (``max_distance`` scalar or per ray)."""
    a = env.arrays
    n = origins.shape[0]
    max_distance = np.broadcast_to(np.asarray(max_distance, dtype=np.float64), (n,))
    hit = np.zeros(n, bool)
    dist = np.full(n, np.inf)
    normal = np.zeros((n, 3))
    layer = np.full(n, -1)
    terrain_tris = None
    if env.terrain is not None:
        tr = env.terrain
        terrain_tris = heightfield_triangles(tr.heights, tr.x0, tr.z0, tr.dx, tr.dz)
        terrain_normals = triangle_normals(terrain_tris)
    tri_v0, tri_e1, tri_e2, tri_n = a.tri_f[:, 0:3], a.tri_f[:, 3:6], a.tri_f[:, 6:9], a.tri_f[:, 9:12]
    tri_l = a.tri_i[:, 0]
    mesh_tris = np.stack([tri_v0, tri_v0 + tri_e1, tri_v0 + tri_e2], axis=1) if len(tri_v0) else None
    for k in range(n):
        tmax = float(max_distance[k])
        o = origins[k].astype(np.float64)
        d = dirs[k].astype(np.float64)
        d = d / np.linalg.norm(d)
        cands = []  # (t, normal, layer)
        for i in range(len(a.sph_r)):
            if (mask >> int(a.sph_l[i])) & 1:
                t, *nn = P.ray_sphere(*o, *d, tmax, *a.sph_c[i], a.sph_r[i])
                cands.append((t, nn, a.sph_l[i]))
        for i in range(len(a.box_h)):
            if (mask >> int(a.box_l[i])) & 1:
                t, *nn = P.ray_box(*o, *d, tmax, *a.box_c[i], R.rot9(a.box_rot[i]), *a.box_h[i])
                cands.append((t, nn, a.box_l[i]))
        for i in range(len(a.cap_r)):
            if (mask >> int(a.cap_l[i])) & 1:
                t, *nn = P.ray_capsule(*o, *d, tmax, *a.cap_a[i], *a.cap_b[i], a.cap_r[i])
                cands.append((t, nn, a.cap_l[i]))
        for i in range(len(a.cyl_r)):
            if (mask >> int(a.cyl_l[i])) & 1:
                t, *nn = P.ray_cylinder(*o, *d, tmax, *a.cyl_a[i], *a.cyl_u[i], a.cyl_h[i], a.cyl_r[i])
                cands.append((t, nn, a.cyl_l[i]))
        for i in range(len(a.pl_f)):
            if (mask >> int(a.pl_i[i])) & 1:
                p0, pn = a.pl_f[i, :3], a.pl_f[i, 3:]
                denom = d @ pn
                if denom != 0:
                    t = ((p0 - o) @ pn) / denom
                    if 0 <= t <= tmax:
                        cands.append((t, pn, a.pl_i[i]))
        w = env.water
        for i in range(len(w)):
            if (mask >> int(w.layer[i])) & 1 and d[1] != 0:
                t = (w.surface[i] - o[1]) / d[1]
                if 0 <= t <= tmax:
                    x, z = o[0] + t * d[0], o[2] + t * d[2]
                    if w.kind[i] == 1:
                        inside = (x - w.circle[i, 0]) ** 2 + (z - w.circle[i, 1]) ** 2 <= w.circle[i, 2] ** 2
                    else:
                        s, c = w.start[i], w.count[i]
                        inside = _point_in_polygon(w.poly[s:s + c], x, z)
                    if inside:
                        cands.append((t, (0.0, 1.0, 0.0), w.layer[i]))
        if terrain_tris is not None and (mask >> env.terrain.layer) & 1:
            t, i = moller_trumbore_all(o, d, terrain_tris, tmax)
            if i >= 0:
                cands.append((t, terrain_normals[i], env.terrain.layer))
        if mesh_tris is not None:
            sel = np.flatnonzero((mask >> tri_l.astype(np.int64)) & 1)
            if len(sel):
                t, i = moller_trumbore_all(o, d, mesh_tris[sel], tmax)
                if i >= 0:
                    cands.append((t, tri_n[sel[i]], tri_l[sel[i]]))
        cands = [c for c in cands if np.isfinite(c[0])]
        if cands:
            t, nn, lay = min(cands, key=lambda c: c[0])
            nn = np.asarray(nn, dtype=np.float64)
            if nn @ d > 0:
                nn = -nn
            hit[k], dist[k], normal[k], layer[k] = True, t, nn, lay
    return hit, dist, normal, layer


def random_unit(rng, n):
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def triangles_distance(p, tris):
    """Unsigned distance ``(m,)`` from points ``(m, 3)`` to the nearest of ``(t, 3, 3)`` triangles
    (projection inside the triangle: plane distance; otherwise the nearest edge)."""
    p = np.atleast_2d(p)
    a, b, c = tris[:, 0], tris[:, 1], tris[:, 2]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    rel = p[:, None, :] - a[None]  # (m, t, 3)
    sd = np.einsum("mtk,tk->mt", rel, n)
    q = p[:, None, :] - sd[..., None] * n[None]
    inside = np.ones(sd.shape, bool)
    best = np.full(sd.shape, np.inf)
    for u, v in ((a, b), (b, c), (c, a)):
        e = v - u
        inside &= np.einsum("mtk,tk->mt", np.cross(e[None], q - u[None]), n) >= 0
        s = np.clip(np.einsum("mtk,tk->mt", p[:, None, :] - u[None], e) / np.einsum("tk,tk->t", e, e), 0, 1)
        closest = u[None] + s[..., None] * e[None]
        best = np.minimum(best, np.linalg.norm(p[:, None, :] - closest, axis=-1))
    return np.where(inside, np.abs(sd), best).min(axis=1)
