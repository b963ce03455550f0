"""Batched ray casts, sphere casts and inside tests against an :class:`~starling.environment.scene.Environment`.

These are the *Ray Query* back end of seed 000 (2.1.1, 7.1.1, 9.5.5): a query produces per-animal rays
(:mod:`starling.steering.queries.rays`), this module intersects them with the static scene in one Numba
pass, and ray behaviours read the hits.  Each hit carries what 7.1.1 asks of the physics engine: the
hit's distance, point, normal, plus the layer of the shape hit.

Semantics, shared by the fast kernels and the brute-force oracle in the tests:

* the hit is the **nearest** surface crossing with ``0 <= t <= max_distance`` over every shape whose layer
  is in the mask; a ray starting inside a solid reports where it leaves it;
* the **normal** is the unit surface normal turned to face the ray's origin (``dot(normal, d) <= 0``);
* a miss has ``hit = False``, ``distance = inf``, ``normal = 0``, ``layer = -1`` and ``point`` at the end
  of the ray (handy for debug drawing).

Performance: batches of at least :data:`PARALLEL_THRESHOLD` rays run in parallel (``prange`` over chunks of
rays, each chunk with its own traversal stack); smaller batches run serially, because waking the thread
pool costs more than it saves.  Outputs can be preallocated (:meth:`RayHits.allocate`) and passed back in
as ``out`` so the hot path does not allocate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from .layers import ALL_LAYERS
from .mesh import (
    APPROACH_EPS,
    CONTACT_EPS,
    distance_to_triangle,
    ray_aabb,
    ray_aabb_grown,
    ray_triangle,
    safe_inverse,
    sweep_triangle,
)
from .primitives import (
    INF,
    KIND_BOX,
    KIND_CAPSULE,
    KIND_SPHERE,
    ray_box,
    ray_capsule,
    ray_cylinder,
    ray_plane,
    ray_sphere,
    sd_box,
    sd_capsule,
    sd_cylinder,
    sd_plane,
    sd_sphere,
    sweep_box,
    sweep_capsule,
    sweep_cylinder,
    sweep_plane,
    sweep_sphere,
)
from .terrain import ray_heightfield, sd_heightfield, sweep_heightfield
from .water import ray_water

PARALLEL_THRESHOLD = 2048
"""Batches with at least this many rays (or spheres, or points) use the parallel kernels."""

_CHUNK = 256

_jit = njit(cache=True, error_model="numpy", nogil=True)
_pjit = njit(cache=True, error_model="numpy", parallel=True)
_sjit = njit(cache=True, error_model="numpy")


@dataclass
class RayHits:
    """Results of a batch of ray (or sphere) casts, one row per ray.

    Attributes
    ----------
    hit: ``(r,) bool``
    distance: ``(r,) float32`` — metres along the ray (for sphere casts: the centre's travel); ``inf`` on a miss.
    point: ``(r, 3) float32`` — the hit point (sphere casts: the contact point on the surface); the ray's
        end point on a miss.
    normal: ``(r, 3) float32`` — unit normal facing the ray origin (sphere casts: from the surface to the
        sphere centre); zero on a miss.
    layer: ``(r,) int16`` — layer index of the shape hit, ``-1`` on a miss.
    """

    hit: np.ndarray
    distance: np.ndarray
    point: np.ndarray
    normal: np.ndarray
    layer: np.ndarray

    @staticmethod
    def allocate(n: int) -> "RayHits":
        """Buffers for ``n`` rays, to be reused through the ``out`` argument of the casts."""
        return RayHits(
            hit=np.zeros(n, np.bool_),
            distance=np.full(n, np.inf, np.float32),
            point=np.zeros((n, 3), np.float32),
            normal=np.zeros((n, 3), np.float32),
            layer=np.full(n, -1, np.int16),
        )

    def __len__(self) -> int:
        return int(self.hit.shape[0])

    def view(self, n: int) -> "RayHits":
        """The first ``n`` rows (views, no copy)."""
        return RayHits(self.hit[:n], self.distance[:n], self.point[:n], self.normal[:n], self.layer[:n])


# ----------------------------------------------------------------------------------------------------
# per-shape dispatch for the finite primitives
# ----------------------------------------------------------------------------------------------------


@_jit
def _prim_layer(g, kind, idx):
    if kind == KIND_SPHERE:
        return g.sph_l[idx]
    if kind == KIND_BOX:
        return g.box_l[idx]
    if kind == KIND_CAPSULE:
        return g.cap_l[idx]
    return g.cyl_l[idx]


@_jit
def _prim_ray(g, kind, idx, ox, oy, oz, dx, dy, dz, tmax):
    if kind == KIND_SPHERE:
        c = g.sph_c
        return ray_sphere(ox, oy, oz, dx, dy, dz, tmax, c[idx, 0], c[idx, 1], c[idx, 2], g.sph_r[idx])
    if kind == KIND_BOX:
        c = g.box_c
        h = g.box_h
        return ray_box(ox, oy, oz, dx, dy, dz, tmax, c[idx, 0], c[idx, 1], c[idx, 2], g.box_rot[idx],
                       h[idx, 0], h[idx, 1], h[idx, 2])
    if kind == KIND_CAPSULE:
        a = g.cap_a
        b = g.cap_b
        return ray_capsule(ox, oy, oz, dx, dy, dz, tmax, a[idx, 0], a[idx, 1], a[idx, 2], b[idx, 0], b[idx, 1],
                           b[idx, 2], g.cap_r[idx])
    a = g.cyl_a
    u = g.cyl_u
    return ray_cylinder(ox, oy, oz, dx, dy, dz, tmax, a[idx, 0], a[idx, 1], a[idx, 2], u[idx, 0], u[idx, 1],
                        u[idx, 2], g.cyl_h[idx], g.cyl_r[idx])


@_jit
def _prim_sd(g, kind, idx, px, py, pz):
    if kind == KIND_SPHERE:
        c = g.sph_c
        return sd_sphere(px, py, pz, c[idx, 0], c[idx, 1], c[idx, 2], g.sph_r[idx])
    if kind == KIND_BOX:
        c = g.box_c
        h = g.box_h
        return sd_box(px, py, pz, c[idx, 0], c[idx, 1], c[idx, 2], g.box_rot[idx], h[idx, 0], h[idx, 1], h[idx, 2])
    if kind == KIND_CAPSULE:
        a = g.cap_a
        b = g.cap_b
        return sd_capsule(px, py, pz, a[idx, 0], a[idx, 1], a[idx, 2], b[idx, 0], b[idx, 1], b[idx, 2], g.cap_r[idx])
    a = g.cyl_a
    u = g.cyl_u
    return sd_cylinder(px, py, pz, a[idx, 0], a[idx, 1], a[idx, 2], u[idx, 0], u[idx, 1], u[idx, 2], g.cyl_h[idx],
                       g.cyl_r[idx])


@_jit
def _prim_sweep(g, kind, idx, ox, oy, oz, dx, dy, dz, tmax, rs):
    if kind == KIND_SPHERE:
        c = g.sph_c
        return sweep_sphere(ox, oy, oz, dx, dy, dz, tmax, rs, c[idx, 0], c[idx, 1], c[idx, 2], g.sph_r[idx])
    if kind == KIND_BOX:
        c = g.box_c
        h = g.box_h
        return sweep_box(ox, oy, oz, dx, dy, dz, tmax, rs, c[idx, 0], c[idx, 1], c[idx, 2], g.box_rot[idx],
                         h[idx, 0], h[idx, 1], h[idx, 2])
    if kind == KIND_CAPSULE:
        a = g.cap_a
        b = g.cap_b
        return sweep_capsule(ox, oy, oz, dx, dy, dz, tmax, rs, a[idx, 0], a[idx, 1], a[idx, 2], b[idx, 0], b[idx, 1],
                             b[idx, 2], g.cap_r[idx])
    a = g.cyl_a
    u = g.cyl_u
    return sweep_cylinder(ox, oy, oz, dx, dy, dz, tmax, rs, a[idx, 0], a[idx, 1], a[idx, 2], u[idx, 0], u[idx, 1],
                          u[idx, 2], g.cyl_h[idx], g.cyl_r[idx])


@_jit
def _contact(sd, nx, ny, nz, dx, dy, dz, rs):
    """Overlap rule of the sphere sweeps: ``(overlapping, t)`` — an overlapped surface is a contact at
    ``t = 0`` if the motion goes into it, and no contact at all otherwise (each piece is convex, so moving
    away from it can never lead back into it)."""
    if sd < rs + CONTACT_EPS:
        if dx * nx + dy * ny + dz * nz < -APPROACH_EPS:
            return True, 0.0
        return True, INF
    return False, INF


# ----------------------------------------------------------------------------------------------------
# one ray
# ----------------------------------------------------------------------------------------------------


@_jit
def cast_one(g, ox, oy, oz, dx, dy, dz, tmax, mask, st_n, st_t):
    """Nearest hit of one ray (unit ``d``) within ``tmax``: ``(t, nx, ny, nz, layer)``, ``t = inf`` and
    ``layer = -1`` on a miss; the normal is the outward one (not yet turned to the origin)."""
    best = tmax
    found = False
    bnx, bny, bnz = 0.0, 0.0, 0.0
    blay = -1
    for p in range(g.pl_n.shape[0]):
        lay = g.pl_l[p]
        if (mask >> lay) & 1:
            t, nx, ny, nz = ray_plane(ox, oy, oz, dx, dy, dz, best, g.pl_p[p, 0], g.pl_p[p, 1], g.pl_p[p, 2],
                                      g.pl_n[p, 0], g.pl_n[p, 1], g.pl_n[p, 2])
            if t <= best:
                best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
    for w in range(g.w_surface.shape[0]):
        lay = g.w_layer[w]
        if (mask >> lay) & 1:
            t, nx, ny, nz = ray_water(ox, oy, oz, dx, dy, dz, best, g.w_surface, g.w_kind, g.w_circle, g.w_box,
                                      g.w_poly, g.w_start, g.w_count, w)
            if t <= best:
                best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
    tf = g.ter_f
    if tf[0] > 0.0:
        lay = np.int64(tf[7])
        if (mask >> lay) & 1:
            t, nx, ny, nz = ray_heightfield(g.ter_h, g.ter_cmin, g.ter_cmax, tf[1], tf[2], tf[3], tf[4], tf[5],
                                            tf[6], ox, oy, oz, dx, dy, dz, best)
            if t <= best:
                best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
    ix = safe_inverse(dx)
    iy = safe_inverse(dy)
    iz = safe_inverse(dz)
    # finite primitives
    if g.pb_start.shape[0] > 0 and (g.pb_mask[0] & mask) != 0:
        t0 = ray_aabb(ox, oy, oz, ix, iy, iz, best, g.pb_min, g.pb_max, 0)
        sp = 0
        if t0 < INF:
            st_n[0] = 0
            st_t[0] = t0
            sp = 1
        while sp > 0:
            sp -= 1
            ni = st_n[sp]
            if st_t[sp] > best:
                continue
            c = g.pb_count[ni]
            if c > 0:
                s = g.pb_start[ni]
                for q in range(s, s + c):
                    kind = g.pb_kind[q]
                    idx = g.pb_index[q]
                    lay = _prim_layer(g, kind, idx)
                    if (mask >> lay) & 1:
                        t, nx, ny, nz = _prim_ray(g, kind, idx, ox, oy, oz, dx, dy, dz, best)
                        if t <= best:
                            best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
            else:
                left = g.pb_start[ni]
                right = left + 1
                tl = INF
                tr = INF
                if (g.pb_mask[left] & mask) != 0:
                    tl = ray_aabb(ox, oy, oz, ix, iy, iz, best, g.pb_min, g.pb_max, left)
                if (g.pb_mask[right] & mask) != 0:
                    tr = ray_aabb(ox, oy, oz, ix, iy, iz, best, g.pb_min, g.pb_max, right)
                # push the far child first so that the near one is visited first
                if tl <= tr:
                    if tr < INF:
                        st_n[sp] = right
                        st_t[sp] = tr
                        sp += 1
                    if tl < INF:
                        st_n[sp] = left
                        st_t[sp] = tl
                        sp += 1
                else:
                    if tl < INF:
                        st_n[sp] = left
                        st_t[sp] = tl
                        sp += 1
                    st_n[sp] = right
                    st_t[sp] = tr
                    sp += 1
    # mesh triangles
    if g.tb_start.shape[0] > 0 and (g.tb_mask[0] & mask) != 0:
        t0 = ray_aabb(ox, oy, oz, ix, iy, iz, best, g.tb_min, g.tb_max, 0)
        sp = 0
        if t0 < INF:
            st_n[0] = 0
            st_t[0] = t0
            sp = 1
        while sp > 0:
            sp -= 1
            ni = st_n[sp]
            if st_t[sp] > best:
                continue
            c = g.tb_count[ni]
            if c > 0:
                s = g.tb_start[ni]
                for q in range(s, s + c):
                    lay = g.tri_l[q]
                    if (mask >> lay) & 1:
                        t = ray_triangle(ox, oy, oz, dx, dy, dz, best, g.tri_v0[q, 0], g.tri_v0[q, 1], g.tri_v0[q, 2],
                                         g.tri_e1[q, 0], g.tri_e1[q, 1], g.tri_e1[q, 2], g.tri_e2[q, 0],
                                         g.tri_e2[q, 1], g.tri_e2[q, 2])
                        if t <= best:
                            best, blay, found = t, lay, True
                            bnx, bny, bnz = g.tri_n[q, 0], g.tri_n[q, 1], g.tri_n[q, 2]
            else:
                left = g.tb_start[ni]
                right = left + 1
                tl = INF
                tr = INF
                if (g.tb_mask[left] & mask) != 0:
                    tl = ray_aabb(ox, oy, oz, ix, iy, iz, best, g.tb_min, g.tb_max, left)
                if (g.tb_mask[right] & mask) != 0:
                    tr = ray_aabb(ox, oy, oz, ix, iy, iz, best, g.tb_min, g.tb_max, right)
                if tl <= tr:
                    if tr < INF:
                        st_n[sp] = right
                        st_t[sp] = tr
                        sp += 1
                    if tl < INF:
                        st_n[sp] = left
                        st_t[sp] = tl
                        sp += 1
                else:
                    if tl < INF:
                        st_n[sp] = left
                        st_t[sp] = tl
                        sp += 1
                    st_n[sp] = right
                    st_t[sp] = tr
                    sp += 1
    if not found:
        return INF, 0.0, 0.0, 0.0, -1
    return best, bnx, bny, bnz, blay


@_jit
def _cast_into(g, origins, dirs, maxd, mask, k, st_n, st_t, hit, dist, point, normal, layer):
    ox = np.float64(origins[k, 0])
    oy = np.float64(origins[k, 1])
    oz = np.float64(origins[k, 2])
    dx = np.float64(dirs[k, 0])
    dy = np.float64(dirs[k, 1])
    dz = np.float64(dirs[k, 2])
    tmax = np.float64(maxd[k] if maxd.shape[0] > 1 else maxd[0])
    n = np.sqrt(dx * dx + dy * dy + dz * dz)
    t = INF
    nx, ny, nz, lay = 0.0, 0.0, 0.0, -1
    if n > 1e-30 and tmax >= 0.0:
        dx /= n
        dy /= n
        dz /= n
        t, nx, ny, nz, lay = cast_one(g, ox, oy, oz, dx, dy, dz, tmax, mask, st_n, st_t)
    else:
        tmax = 0.0
    if t < INF:
        if nx * dx + ny * dy + nz * dz > 0.0:
            nx, ny, nz = -nx, -ny, -nz
        hit[k] = True
        dist[k] = t
        point[k, 0] = ox + t * dx
        point[k, 1] = oy + t * dy
        point[k, 2] = oz + t * dz
        normal[k, 0] = nx
        normal[k, 1] = ny
        normal[k, 2] = nz
        layer[k] = lay
    else:
        hit[k] = False
        dist[k] = np.inf
        point[k, 0] = ox + tmax * dx
        point[k, 1] = oy + tmax * dy
        point[k, 2] = oz + tmax * dz
        normal[k, 0] = 0.0
        normal[k, 1] = 0.0
        normal[k, 2] = 0.0
        layer[k] = -1


@_jit
def stack_size(g):
    """Entries a BVH traversal stack of ``g`` needs (depth of the deeper BVH plus slack)."""
    return max(g.depth[0], g.depth[1]) + 4


@_pjit
def _cast_parallel(g, origins, dirs, maxd, mask, hit, dist, point, normal, layer):
    r = origins.shape[0]
    n_chunks = (r + _CHUNK - 1) // _CHUNK
    size = stack_size(g)
    for c in prange(n_chunks):
        st_n = np.empty(size, np.int32)
        st_t = np.empty(size)
        for k in range(c * _CHUNK, min(r, (c + 1) * _CHUNK)):
            _cast_into(g, origins, dirs, maxd, mask, k, st_n, st_t, hit, dist, point, normal, layer)


@_sjit
def _cast_serial(g, origins, dirs, maxd, mask, hit, dist, point, normal, layer):
    size = stack_size(g)
    st_n = np.empty(size, np.int32)
    st_t = np.empty(size)
    for k in range(origins.shape[0]):
        _cast_into(g, origins, dirs, maxd, mask, k, st_n, st_t, hit, dist, point, normal, layer)


# ----------------------------------------------------------------------------------------------------
# one swept sphere
# ----------------------------------------------------------------------------------------------------


@_jit
def sweep_one(g, ox, oy, oz, dx, dy, dz, tmax, rs, mask, st_n, st_t):
    """First contact of a sphere of radius ``rs`` moving from ``o`` along unit ``d`` for at most ``tmax``:
    ``(t, nx, ny, nz, layer)`` with the contact normal pointing from the surface to the centre;
    ``t = inf`` when the way is free.  Overlapped surfaces count only if the motion goes into them (see
    :func:`_contact`).  Water is ignored (not solid)."""
    best = tmax
    found = False
    bnx, bny, bnz = 0.0, 0.0, 0.0
    blay = -1
    for p in range(g.pl_n.shape[0]):
        lay = g.pl_l[p]
        if (mask >> lay) & 1:
            px, py, pz = g.pl_p[p, 0], g.pl_p[p, 1], g.pl_p[p, 2]
            nx, ny, nz = g.pl_n[p, 0], g.pl_n[p, 1], g.pl_n[p, 2]
            sd, _, _, _ = sd_plane(ox, oy, oz, px, py, pz, nx, ny, nz)
            over, t = _contact(sd, nx, ny, nz, dx, dy, dz, rs)
            if not over:
                t, nx, ny, nz = sweep_plane(ox, oy, oz, dx, dy, dz, best, rs, px, py, pz, nx, ny, nz)
            if t <= best:
                best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
    tf = g.ter_f
    if tf[0] > 0.0:
        lay = np.int64(tf[7])
        if (mask >> lay) & 1:
            t, nx, ny, nz = sweep_heightfield(g.ter_h, g.ter_cmin, g.ter_cmax, tf[1], tf[2], tf[3], tf[4], ox, oy, oz,
                                              dx, dy, dz, best, rs)
            if t <= best:
                best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
    ix = safe_inverse(dx)
    iy = safe_inverse(dy)
    iz = safe_inverse(dz)
    if g.pb_start.shape[0] > 0 and (g.pb_mask[0] & mask) != 0:
        sp = 0
        t0 = ray_aabb_grown(ox, oy, oz, ix, iy, iz, best, g.pb_min, g.pb_max, 0, rs)
        if t0 < INF:
            st_n[0] = 0
            st_t[0] = t0
            sp = 1
        while sp > 0:
            sp -= 1
            ni = st_n[sp]
            if st_t[sp] > best:
                continue
            c = g.pb_count[ni]
            if c > 0:
                s = g.pb_start[ni]
                for q in range(s, s + c):
                    kind = g.pb_kind[q]
                    idx = g.pb_index[q]
                    lay = _prim_layer(g, kind, idx)
                    if (mask >> lay) & 1:
                        sd, nx, ny, nz = _prim_sd(g, kind, idx, ox, oy, oz)
                        over, t = _contact(sd, nx, ny, nz, dx, dy, dz, rs)
                        if not over:
                            t, nx, ny, nz = _prim_sweep(g, kind, idx, ox, oy, oz, dx, dy, dz, best, rs)
                        if t <= best:
                            best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
            else:
                left = g.pb_start[ni]
                for child in range(left, left + 2):
                    if (g.pb_mask[child] & mask) != 0:
                        tc = ray_aabb_grown(ox, oy, oz, ix, iy, iz, best, g.pb_min, g.pb_max, child, rs)
                        if tc < INF:
                            st_n[sp] = child
                            st_t[sp] = tc
                            sp += 1
    if g.tb_start.shape[0] > 0 and (g.tb_mask[0] & mask) != 0:
        sp = 0
        t0 = ray_aabb_grown(ox, oy, oz, ix, iy, iz, best, g.tb_min, g.tb_max, 0, rs)
        if t0 < INF:
            st_n[0] = 0
            st_t[0] = t0
            sp = 1
        while sp > 0:
            sp -= 1
            ni = st_n[sp]
            if st_t[sp] > best:
                continue
            c = g.tb_count[ni]
            if c > 0:
                s = g.tb_start[ni]
                for q in range(s, s + c):
                    lay = g.tri_l[q]
                    if (mask >> lay) & 1:
                        ax, ay, az = g.tri_v0[q, 0], g.tri_v0[q, 1], g.tri_v0[q, 2]
                        t, nx, ny, nz = sweep_triangle(
                            ox, oy, oz, dx, dy, dz, best, rs, ax, ay, az,
                            ax + g.tri_e1[q, 0], ay + g.tri_e1[q, 1], az + g.tri_e1[q, 2],
                            ax + g.tri_e2[q, 0], ay + g.tri_e2[q, 1], az + g.tri_e2[q, 2],
                            g.tri_n[q, 0], g.tri_n[q, 1], g.tri_n[q, 2],
                        )
                        if t <= best:
                            best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
            else:
                left = g.tb_start[ni]
                for child in range(left, left + 2):
                    if (g.tb_mask[child] & mask) != 0:
                        tc = ray_aabb_grown(ox, oy, oz, ix, iy, iz, best, g.tb_min, g.tb_max, child, rs)
                        if tc < INF:
                            st_n[sp] = child
                            st_t[sp] = tc
                            sp += 1
    if not found:
        return INF, 0.0, 0.0, 0.0, -1
    return best, bnx, bny, bnz, blay


@_jit
def _sweep_into(g, origins, dirs, maxd, radii, mask, k, st_n, st_t, hit, dist, point, normal, layer):
    ox = np.float64(origins[k, 0])
    oy = np.float64(origins[k, 1])
    oz = np.float64(origins[k, 2])
    dx = np.float64(dirs[k, 0])
    dy = np.float64(dirs[k, 1])
    dz = np.float64(dirs[k, 2])
    tmax = np.float64(maxd[k] if maxd.shape[0] > 1 else maxd[0])
    rs = np.float64(radii[k] if radii.shape[0] > 1 else radii[0])
    n = np.sqrt(dx * dx + dy * dy + dz * dz)
    t = INF
    nx, ny, nz, lay = 0.0, 0.0, 0.0, -1
    if n > 1e-30 and tmax >= 0.0:
        dx /= n
        dy /= n
        dz /= n
        t, nx, ny, nz, lay = sweep_one(g, ox, oy, oz, dx, dy, dz, tmax, rs, mask, st_n, st_t)
    else:
        tmax = 0.0
    if t < INF:
        hit[k] = True
        dist[k] = t
        point[k, 0] = ox + t * dx - rs * nx
        point[k, 1] = oy + t * dy - rs * ny
        point[k, 2] = oz + t * dz - rs * nz
        normal[k, 0] = nx
        normal[k, 1] = ny
        normal[k, 2] = nz
        layer[k] = lay
    else:
        hit[k] = False
        dist[k] = np.inf
        point[k, 0] = ox + tmax * dx
        point[k, 1] = oy + tmax * dy
        point[k, 2] = oz + tmax * dz
        normal[k, 0] = 0.0
        normal[k, 1] = 0.0
        normal[k, 2] = 0.0
        layer[k] = -1


@_pjit
def _sweep_parallel(g, origins, dirs, maxd, radii, mask, hit, dist, point, normal, layer):
    r = origins.shape[0]
    n_chunks = (r + _CHUNK - 1) // _CHUNK
    size = 2 * stack_size(g)
    for c in prange(n_chunks):
        st_n = np.empty(size, np.int32)
        st_t = np.empty(size)
        for k in range(c * _CHUNK, min(r, (c + 1) * _CHUNK)):
            _sweep_into(g, origins, dirs, maxd, radii, mask, k, st_n, st_t, hit, dist, point, normal, layer)


@_sjit
def _sweep_serial(g, origins, dirs, maxd, radii, mask, hit, dist, point, normal, layer):
    size = 2 * stack_size(g)
    st_n = np.empty(size, np.int32)
    st_t = np.empty(size)
    for k in range(origins.shape[0]):
        _sweep_into(g, origins, dirs, maxd, radii, mask, k, st_n, st_t, hit, dist, point, normal, layer)


# ----------------------------------------------------------------------------------------------------
# proximity and inside tests
# ----------------------------------------------------------------------------------------------------


@_jit
def nearest_one(g, px, py, pz, window, mask, st_n):
    """Smallest signed distance from ``p`` to the masked solids and surfaces within ``window`` (primitives,
    planes, terrain: signed; mesh triangles: unsigned) and the direction that increases it fastest:
    ``(d, nx, ny, nz)``; ``d = inf`` when nothing is within ``window``."""
    best = INF
    bnx, bny, bnz = 0.0, 1.0, 0.0
    for p in range(g.pl_n.shape[0]):
        if (mask >> g.pl_l[p]) & 1:
            d, nx, ny, nz = sd_plane(px, py, pz, g.pl_p[p, 0], g.pl_p[p, 1], g.pl_p[p, 2], g.pl_n[p, 0], g.pl_n[p, 1],
                                     g.pl_n[p, 2])
            if d < best and d <= window:
                best, bnx, bny, bnz = d, nx, ny, nz
    tf = g.ter_f
    if tf[0] > 0.0 and (mask >> np.int64(tf[7])) & 1:
        d, nx, ny, nz = sd_heightfield(g.ter_h, g.ter_cmin, g.ter_cmax, tf[1], tf[2], tf[3], tf[4], px, py, pz, window)
        if d < best and d <= window:
            best, bnx, bny, bnz = d, nx, ny, nz
    if g.pb_start.shape[0] > 0 and (g.pb_mask[0] & mask) != 0:
        sp = 1
        st_n[0] = 0
        while sp > 0:
            sp -= 1
            ni = st_n[sp]
            if (px < g.pb_min[ni, 0] - window or px > g.pb_max[ni, 0] + window
                    or py < g.pb_min[ni, 1] - window or py > g.pb_max[ni, 1] + window
                    or pz < g.pb_min[ni, 2] - window or pz > g.pb_max[ni, 2] + window):
                continue
            c = g.pb_count[ni]
            if c > 0:
                s = g.pb_start[ni]
                for q in range(s, s + c):
                    kind = g.pb_kind[q]
                    idx = g.pb_index[q]
                    if (mask >> _prim_layer(g, kind, idx)) & 1:
                        d, nx, ny, nz = _prim_sd(g, kind, idx, px, py, pz)
                        if d < best and d <= window:
                            best, bnx, bny, bnz = d, nx, ny, nz
            else:
                left = g.pb_start[ni]
                for child in range(left, left + 2):
                    if (g.pb_mask[child] & mask) != 0:
                        st_n[sp] = child
                        sp += 1
    if g.tb_start.shape[0] > 0 and (g.tb_mask[0] & mask) != 0:
        sp = 1
        st_n[0] = 0
        while sp > 0:
            sp -= 1
            ni = st_n[sp]
            if (px < g.tb_min[ni, 0] - window or px > g.tb_max[ni, 0] + window
                    or py < g.tb_min[ni, 1] - window or py > g.tb_max[ni, 1] + window
                    or pz < g.tb_min[ni, 2] - window or pz > g.tb_max[ni, 2] + window):
                continue
            c = g.tb_count[ni]
            if c > 0:
                s = g.tb_start[ni]
                for q in range(s, s + c):
                    if (mask >> g.tri_l[q]) & 1:
                        ax, ay, az = g.tri_v0[q, 0], g.tri_v0[q, 1], g.tri_v0[q, 2]
                        d, nx, ny, nz = distance_to_triangle(
                            px, py, pz, ax, ay, az,
                            ax + g.tri_e1[q, 0], ay + g.tri_e1[q, 1], az + g.tri_e1[q, 2],
                            ax + g.tri_e2[q, 0], ay + g.tri_e2[q, 1], az + g.tri_e2[q, 2],
                            g.tri_n[q, 0], g.tri_n[q, 1], g.tri_n[q, 2],
                        )
                        if d < best and d <= window:
                            best, bnx, bny, bnz = d, nx, ny, nz
            else:
                left = g.tb_start[ni]
                for child in range(left, left + 2):
                    if (g.tb_mask[child] & mask) != 0:
                        st_n[sp] = child
                        sp += 1
    return best, bnx, bny, bnz


# a direction with no special relation to axis-aligned geometry, for crossing-parity tests
_PARITY_DIR = (0.0137173, 0.9997853, 0.0155251)


@_jit
def _mesh_crossings(g, px, py, pz, mesh, st_n):
    """Number of triangles of ``mesh`` crossed by the ray from ``p`` along :data:`_PARITY_DIR`."""
    dx, dy, dz = _PARITY_DIR
    ix = safe_inverse(dx)
    iy = safe_inverse(dy)
    iz = safe_inverse(dz)
    count = 0
    sp = 1
    st_n[0] = 0
    while sp > 0:
        sp -= 1
        ni = st_n[sp]
        if ray_aabb(px, py, pz, ix, iy, iz, INF, g.tb_min, g.tb_max, ni) == INF:
            continue
        c = g.tb_count[ni]
        if c > 0:
            s = g.tb_start[ni]
            for q in range(s, s + c):
                if g.tri_mesh[q] == mesh:
                    t = ray_triangle(px, py, pz, dx, dy, dz, INF, g.tri_v0[q, 0], g.tri_v0[q, 1], g.tri_v0[q, 2],
                                     g.tri_e1[q, 0], g.tri_e1[q, 1], g.tri_e1[q, 2], g.tri_e2[q, 0], g.tri_e2[q, 1],
                                     g.tri_e2[q, 2])
                    if t < INF:
                        count += 1
        else:
            left = g.tb_start[ni]
            st_n[sp] = left
            st_n[sp + 1] = left + 1
            sp += 2
    return count


@_jit
def inside_one(g, px, py, pz, radius, mask, st_n):
    """Whether the ball of ``radius`` around ``p`` overlaps a masked solid (see
    :meth:`Environment.is_inside_solid`)."""
    d, _, _, _ = nearest_one(g, px, py, pz, radius, mask, st_n)
    if d < radius:
        return True
    for m in range(g.mesh_solid.shape[0]):
        if not g.mesh_solid[m]:
            continue
        if (px < g.mesh_min[m, 0] or px > g.mesh_max[m, 0] or py < g.mesh_min[m, 1] or py > g.mesh_max[m, 1]
                or pz < g.mesh_min[m, 2] or pz > g.mesh_max[m, 2]):
            continue
        lay = g.mesh_l[m]
        if lay < 0 or not (mask >> lay) & 1:
            continue
        if _mesh_crossings(g, px, py, pz, m, st_n) % 2 == 1:
            return True
    return False


@_pjit
def _inside_parallel(g, points, radii, mask, out):
    r = points.shape[0]
    n_chunks = (r + _CHUNK - 1) // _CHUNK
    size = 2 * stack_size(g)
    for c in prange(n_chunks):
        st_n = np.empty(size, np.int32)
        for k in range(c * _CHUNK, min(r, (c + 1) * _CHUNK)):
            rad = np.float64(radii[k] if radii.shape[0] > 1 else radii[0])
            out[k] = inside_one(g, np.float64(points[k, 0]), np.float64(points[k, 1]), np.float64(points[k, 2]), rad,
                                mask, st_n)


# ----------------------------------------------------------------------------------------------------
# Python entry points
# ----------------------------------------------------------------------------------------------------


def _as_rows(a, name: str, dtype=np.float32) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must have shape (r, 3), got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=dtype)


def _per_row(value, r: int, name: str) -> np.ndarray:
    arr = np.ascontiguousarray(np.atleast_1d(np.asarray(value, dtype=np.float32)))
    if arr.ndim != 1 or (arr.shape[0] != 1 and arr.shape[0] != r):
        raise ValueError(f"{name} must be a scalar or have shape ({r},), got {np.shape(value)}")
    return arr  # a length-1 array is broadcast by the kernels


def _outputs(out: RayHits | None, r: int) -> RayHits:
    if out is None:
        return RayHits.allocate(r)
    if len(out) < r:
        raise ValueError(f"out holds {len(out)} rows but {r} rays were given")
    return out.view(r) if len(out) != r else out


def cast_rays(env, origins: np.ndarray, directions: np.ndarray, max_distance, mask: int = ALL_LAYERS,
              out: RayHits | None = None, parallel: bool | None = None) -> RayHits:
    """Cast ``r`` rays against the environment and return the nearest hit of each.

    Parameters
    ----------
    env: Environment
    origins: ``(r, 3) float32`` ray origins, metres.
    directions: ``(r, 3) float32`` unit directions (normalised again inside, in float64).
    max_distance: scalar or ``(r,)`` maximum hit distance, metres.
    mask: ``uint32`` layer mask (an ``int``; see :func:`~starling.environment.layers.layer_mask`).
    out: optional preallocated :class:`RayHits` with at least ``r`` rows, reused without allocation.
    parallel: force the parallel (True) or serial (False) kernel; default: parallel from
        :data:`PARALLEL_THRESHOLD` rays.

    Returns
    -------
    RayHits with ``r`` rows (``out`` itself, or a view of its first ``r`` rows).
    """
    o = _as_rows(origins, "origins")
    d = _as_rows(directions, "directions")
    if o.shape[0] != d.shape[0]:
        raise ValueError(f"origins and directions differ in length: {o.shape[0]} vs {d.shape[0]}")
    r = o.shape[0]
    maxd = _per_row(max_distance, r, "max_distance")
    res = _outputs(out, r)
    if r == 0:
        return res
    use_parallel = r >= PARALLEL_THRESHOLD if parallel is None else parallel
    kernel = _cast_parallel if use_parallel else _cast_serial
    kernel(env.arrays, o, d, maxd, np.int64(int(mask) & ALL_LAYERS), res.hit, res.distance, res.point, res.normal,
           res.layer)
    return res


def sphere_cast(env, origins: np.ndarray, directions: np.ndarray, max_distance, radius,
                mask: int = ALL_LAYERS, out: RayHits | None = None, parallel: bool | None = None) -> RayHits:
    """Sweep spheres of ``radius`` (scalar or ``(r,)``, metres) from ``origins`` along unit ``directions``
    for at most ``max_distance`` and report the first contact with the solids of the masked layers.

    ``distance`` is how far the centre travels before touching; ``point`` the contact point on the
    surface; ``normal`` the contact normal, from the surface towards the centre.  A sphere that already
    overlaps a surface reports ``distance = 0`` if it moves into it and ignores it otherwise (so a sphere
    resting on the ground can slide along it).  Water is not solid and is ignored.
    """
    o = _as_rows(origins, "origins")
    d = _as_rows(directions, "directions")
    if o.shape[0] != d.shape[0]:
        raise ValueError(f"origins and directions differ in length: {o.shape[0]} vs {d.shape[0]}")
    r = o.shape[0]
    maxd = _per_row(max_distance, r, "max_distance")
    radii = _per_row(radius, r, "radius")
    if np.any(radii < 0):
        raise ValueError("radius must be >= 0")
    res = _outputs(out, r)
    if r == 0:
        return res
    use_parallel = r >= PARALLEL_THRESHOLD if parallel is None else parallel
    kernel = _sweep_parallel if use_parallel else _sweep_serial
    kernel(env.arrays, o, d, maxd, radii, np.int64(int(mask) & ALL_LAYERS), res.hit, res.distance, res.point,
           res.normal, res.layer)
    return res


def inside_solid(env, points: np.ndarray, radius=0.0, mask: int = ALL_LAYERS) -> np.ndarray:
    """``(n,) bool``: :meth:`Environment.is_inside_solid` (points ``(n, 3)``, radius scalar or ``(n,)``)."""
    p = _as_rows(points, "points", dtype=np.float64)
    n = p.shape[0]
    radii = np.ascontiguousarray(np.atleast_1d(np.asarray(radius, dtype=np.float64)))
    if radii.ndim != 1 or radii.shape[0] not in (1, n):
        raise ValueError(f"radius must be a scalar or have shape ({n},)")
    if np.any(radii < 0):
        raise ValueError("radius must be >= 0")
    out = np.zeros(n, np.bool_)
    if n:
        _inside_parallel(env.arrays, p, radii, np.int64(int(mask) & ALL_LAYERS), out)
    return out
