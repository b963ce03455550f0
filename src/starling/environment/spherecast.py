"""Batched sphere casts (swept spheres) against an :class:`~starling.environment.scene.Environment`.

A sphere moves from its origin along a unit direction for at most a given distance and reports its first
contact with the solids of the masked layers: planes, terrain, primitives and mesh triangles (water is not
solid).  A sphere that already overlaps a surface touches it at once if it moves into it and ignores it
otherwise (:func:`_contact`), so a sphere resting on the ground can slide along it.

:func:`sweep_one` is the per-sphere kernel; :mod:`~starling.environment.collide` calls it for
collide-and-slide.  Batches run in chunks like the ray casts (:mod:`~starling.environment.casting`).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ..world.layers import ALL_LAYERS
from .casting import (
    _CHUNK,
    MAX_DISTANCE,
    PARALLEL_THRESHOLD,
    RayHits,
    _as_rows,
    _chunk,
    _hjit,
    _jit,
    _outputs,
    _per_row,
    _pjit,
    _sjit,
    solids,
    stack_size,
)
from .mesh import APPROACH_EPS, CONTACT_EPS, ray_aabb_grown, safe_inverse, sweep_triangle
from .packed import prim_sd, prim_sweep
from .primitives import INF, sd_plane, sweep_plane
from .terrain import sweep_heightfield


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


@_hjit
def sweep_one(geo, ox, oy, oz, dx, dy, dz, tmax, rs, mask, st_n, st_t):
    """First contact of a sphere of radius ``rs`` moving from ``o`` along unit ``d`` for at most ``tmax``:
    ``(t, nx, ny, nz, layer)`` with the contact normal pointing from the surface to the centre;
    ``t = inf`` when the way is free.  ``geo`` is :func:`~starling.environment.casting.solids` of the
    environment.  Overlapped surfaces count only if the motion goes into them (see :func:`_contact`).  Water
    is ignored (not solid)."""
    pl_f, pl_i, ter_h, ter_cmin, ter_cmax, tf, prim_f, prim_i, pb_box, pb_node, tri_f, tri_i, tb_box, tb_node = geo
    best = tmax
    found = False
    bnx, bny, bnz = 0.0, 0.0, 0.0
    blay = -1
    for p in range(pl_f.shape[0]):
        lay = pl_i[p]
        if (mask >> lay) & 1:
            px, py, pz = pl_f[p, 0], pl_f[p, 1], pl_f[p, 2]
            nx, ny, nz = pl_f[p, 3], pl_f[p, 4], pl_f[p, 5]
            sd, _, _, _ = sd_plane(ox, oy, oz, px, py, pz, nx, ny, nz)
            over, t = _contact(sd, nx, ny, nz, dx, dy, dz, rs)
            if not over:
                t, nx, ny, nz = sweep_plane(ox, oy, oz, dx, dy, dz, best, rs, px, py, pz, nx, ny, nz)
            if t <= best:
                best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
    if tf[0] > 0.0:
        lay = np.int64(tf[7])
        if (mask >> lay) & 1:
            t, nx, ny, nz = sweep_heightfield(ter_h, ter_cmin, ter_cmax, tf[1], tf[2], tf[3], tf[4], ox, oy, oz, dx, dy,
                                              dz, best, rs)
            if t <= best:
                best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
    ix = safe_inverse(dx)
    iy = safe_inverse(dy)
    iz = safe_inverse(dz)
    for which in range(2):
        box = pb_box if which == 0 else tb_box
        node = pb_node if which == 0 else tb_node
        if node.shape[0] == 0 or (node[0, 2] & mask) == 0:
            continue
        sp = 0
        t0 = ray_aabb_grown(ox, oy, oz, ix, iy, iz, best, box, np.int64(0), rs)
        if t0 < INF:
            st_n[0] = 0
            st_t[0] = t0
            sp = 1
        while sp > 0:
            sp -= 1
            ni = st_n[sp]
            if st_t[sp] > best:
                continue
            c = node[ni, 1]
            if c > 0:
                s = node[ni, 0]
                for q in range(s, s + c):
                    if which == 0:
                        lay = prim_i[q, 1]
                        if not (mask >> lay) & 1:
                            continue
                        kind = prim_i[q, 0]
                        sd, nx, ny, nz = prim_sd(prim_f, q, kind, ox, oy, oz)
                        over, t = _contact(sd, nx, ny, nz, dx, dy, dz, rs)
                        if not over:
                            t, nx, ny, nz = prim_sweep(prim_f, q, kind, ox, oy, oz, dx, dy, dz, best, rs)
                    else:
                        lay = tri_i[q, 0]
                        if not (mask >> lay) & 1:
                            continue
                        ax, ay, az = tri_f[q, 0], tri_f[q, 1], tri_f[q, 2]
                        t, nx, ny, nz = sweep_triangle(
                            ox, oy, oz, dx, dy, dz, best, rs, ax, ay, az,
                            ax + tri_f[q, 3], ay + tri_f[q, 4], az + tri_f[q, 5],
                            ax + tri_f[q, 6], ay + tri_f[q, 7], az + tri_f[q, 8],
                            tri_f[q, 9], tri_f[q, 10], tri_f[q, 11],
                        )
                    if t <= best:
                        best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
            else:
                left = node[ni, 0]
                for child in range(left, left + 2):
                    if (node[child, 2] & mask) != 0:
                        tc = ray_aabb_grown(ox, oy, oz, ix, iy, iz, best, box, np.int64(child), rs)
                        if tc < INF:
                            st_n[sp] = child
                            st_t[sp] = tc
                            sp += 1
    if not found:
        return INF, 0.0, 0.0, 0.0, -1
    return best, bnx, bny, bnz, blay


@_hjit
def _sweep_range(g, lo, hi, origins, dirs, maxd, radii, mask, st_n, st_t, hit, dist, point, normal, layer):
    geo = solids(g)
    for k in range(lo, hi):
        ox = np.float64(origins[k, 0])
        oy = np.float64(origins[k, 1])
        oz = np.float64(origins[k, 2])
        dx = np.float64(dirs[k, 0])
        dy = np.float64(dirs[k, 1])
        dz = np.float64(dirs[k, 2])
        tmax = min(np.float64(maxd[k] if maxd.shape[0] > 1 else maxd[0]), MAX_DISTANCE)
        rs = np.float64(radii[k] if radii.shape[0] > 1 else radii[0])
        n = np.sqrt(dx * dx + dy * dy + dz * dz)
        t = INF
        nx, ny, nz, lay = 0.0, 0.0, 0.0, -1
        if n > 1e-30 and tmax >= 0.0:
            dx /= n
            dy /= n
            dz /= n
            t, nx, ny, nz, lay = sweep_one(geo, ox, oy, oz, dx, dy, dz, tmax, rs, mask, st_n, st_t)
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
        lo, hi = _chunk(c, r)
        _sweep_range(g, lo, hi, origins, dirs, maxd, radii, mask, st_n, st_t, hit, dist,
                     point, normal, layer)


@_sjit
def _sweep_serial(g, origins, dirs, maxd, radii, mask, hit, dist, point, normal, layer):
    size = 2 * stack_size(g)
    st_n = np.empty(size, np.int32)
    st_t = np.empty(size)
    _sweep_range(g, np.int64(0), np.int64(origins.shape[0]), origins, dirs, maxd, radii, mask, st_n, st_t, hit, dist,
                 point, normal, layer)


# ----------------------------------------------------------------------------------------------------
# Python entry point
# ----------------------------------------------------------------------------------------------------


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

