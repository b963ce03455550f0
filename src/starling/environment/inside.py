"""Batched inside tests and the nearest-surface probe against an :class:`~starling.environment.scene.Environment`.

:func:`nearest_one` finds the smallest signed distance from a point to the masked solids and surfaces within
a window (and the direction that increases it); :mod:`~starling.environment.collide` uses it to push
spheres out of what they overlap.  :func:`inside_solid` (behind :meth:`Environment.is_inside_solid`) counts
a point as inside when that distance is below its radius, or when it lies inside a solid (watertight) mesh
by the parity of the mesh triangles crossed by a ray from it.  Batches run in chunks like the ray casts
(:mod:`~starling.environment.casting`).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ..world.layers import ALL_LAYERS
from .casting import _CHUNK, PARALLEL_THRESHOLD, _as_rows, _chunk, _hjit, _pjit, _sjit, solids, stack_size
from .mesh import distance_to_triangle, point_in_box, ray_aabb, ray_triangle, safe_inverse
from .packed import prim_sd
from .primitives import INF, sd_plane
from .terrain import sd_heightfield


@_hjit
def nearest_one(geo, px, py, pz, window, mask, st_n):
    """Smallest signed distance from ``p`` to the masked solids and surfaces within ``window`` (primitives,
    planes, terrain: signed; mesh triangles: unsigned) and the direction that increases it fastest:
    ``(d, nx, ny, nz)``; ``d = inf`` when nothing is within ``window``.  ``geo`` is
    :func:`~starling.environment.casting.solids`."""
    pl_f, pl_i, ter_h, ter_cmin, ter_cmax, tf, prim_f, prim_i, pb_box, pb_node, tri_f, tri_i, tb_box, tb_node = geo
    best = INF
    bnx, bny, bnz = 0.0, 1.0, 0.0
    for p in range(pl_f.shape[0]):
        if (mask >> pl_i[p]) & 1:
            d, nx, ny, nz = sd_plane(px, py, pz, pl_f[p, 0], pl_f[p, 1], pl_f[p, 2], pl_f[p, 3], pl_f[p, 4],
                                     pl_f[p, 5])
            if d < best and d <= window:
                best, bnx, bny, bnz = d, nx, ny, nz
    if tf[0] > 0.0 and (mask >> np.int64(tf[7])) & 1:
        d, nx, ny, nz = sd_heightfield(ter_h, ter_cmin, ter_cmax, tf[1], tf[2], tf[3], tf[4], px, py, pz, window)
        if d < best and d <= window:
            best, bnx, bny, bnz = d, nx, ny, nz
    for which in range(2):
        box = pb_box if which == 0 else tb_box
        node = pb_node if which == 0 else tb_node
        if node.shape[0] == 0 or (node[0, 2] & mask) == 0:
            continue
        sp = 1
        st_n[0] = 0
        while sp > 0:
            sp -= 1
            ni = st_n[sp]
            if not point_in_box(px, py, pz, box, ni, window):
                continue
            c = node[ni, 1]
            if c > 0:
                s = node[ni, 0]
                for q in range(s, s + c):
                    if which == 0:
                        if not (mask >> prim_i[q, 1]) & 1:
                            continue
                        d, nx, ny, nz = prim_sd(prim_f, q, prim_i[q, 0], px, py, pz)
                    else:
                        if not (mask >> tri_i[q, 0]) & 1:
                            continue
                        ax, ay, az = tri_f[q, 0], tri_f[q, 1], tri_f[q, 2]
                        d, nx, ny, nz = distance_to_triangle(
                            px, py, pz, ax, ay, az,
                            ax + tri_f[q, 3], ay + tri_f[q, 4], az + tri_f[q, 5],
                            ax + tri_f[q, 6], ay + tri_f[q, 7], az + tri_f[q, 8],
                            tri_f[q, 9], tri_f[q, 10], tri_f[q, 11],
                        )
                    if d < best and d <= window:
                        best, bnx, bny, bnz = d, nx, ny, nz
            else:
                left = node[ni, 0]
                for child in range(left, left + 2):
                    if (node[child, 2] & mask) != 0:
                        st_n[sp] = child
                        sp += 1
    return best, bnx, bny, bnz


# a direction with no special relation to axis-aligned geometry, for crossing-parity tests
_PARITY_DIR = (0.0137173, 0.9997853, 0.0155251)


@_hjit
def _mesh_crossings(tri_f, tri_i, tb_box, tb_node, px, py, pz, mesh, st_n):
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
        if ray_aabb(px, py, pz, ix, iy, iz, INF, tb_box, np.int64(ni)) == INF:
            continue
        c = tb_node[ni, 1]
        if c > 0:
            s = tb_node[ni, 0]
            for q in range(s, s + c):
                if tri_i[q, 1] == mesh:
                    t = ray_triangle(px, py, pz, dx, dy, dz, INF, tri_f[q, 0], tri_f[q, 1], tri_f[q, 2], tri_f[q, 3],
                                     tri_f[q, 4], tri_f[q, 5], tri_f[q, 6], tri_f[q, 7], tri_f[q, 8])
                    if t < INF:
                        count += 1
        else:
            left = tb_node[ni, 0]
            st_n[sp] = left
            st_n[sp + 1] = left + 1
            sp += 2
    return count


@_hjit
def _inside_range(g, lo, hi, points, radii, mask, st_n, out):
    """Inside tests of points ``lo .. hi - 1`` (see :meth:`Environment.is_inside_solid`)."""
    geo = solids(g)
    mesh_f = g.mesh_f
    mesh_i = g.mesh_i
    tri_f = g.tri_f
    tri_i = g.tri_i
    tb_box = g.tb_box
    tb_node = g.tb_node
    for k in range(lo, hi):
        px = np.float64(points[k, 0])
        py = np.float64(points[k, 1])
        pz = np.float64(points[k, 2])
        rad = np.float64(radii[k] if radii.shape[0] > 1 else radii[0])
        d, _, _, _ = nearest_one(geo, px, py, pz, rad, mask, st_n)
        inside = d < rad
        if not inside:
            for m in range(mesh_f.shape[0]):
                if mesh_i[m, 0] == 0 or not (mask >> mesh_i[m, 1]) & 1:
                    continue
                if not (mesh_f[m, 0] <= px <= mesh_f[m, 3] and mesh_f[m, 1] <= py <= mesh_f[m, 4]
                        and mesh_f[m, 2] <= pz <= mesh_f[m, 5]):
                    continue
                if _mesh_crossings(tri_f, tri_i, tb_box, tb_node, px, py, pz, m, st_n) % 2 == 1:
                    inside = True
                    break
        out[k] = inside


@_pjit
def _inside_parallel(g, points, radii, mask, out):
    r = points.shape[0]
    n_chunks = (r + _CHUNK - 1) // _CHUNK
    size = 2 * stack_size(g)
    for c in prange(n_chunks):
        st_n = np.empty(size, np.int32)
        lo, hi = _chunk(c, r)
        _inside_range(g, lo, hi, points, radii, mask, st_n, out)


@_sjit
def _inside_serial(g, points, radii, mask, out):
    st_n = np.empty(2 * stack_size(g), np.int32)
    _inside_range(g, np.int64(0), np.int64(points.shape[0]), points, radii, mask, st_n, out)


# ----------------------------------------------------------------------------------------------------
# Python entry point
# ----------------------------------------------------------------------------------------------------


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
        # small batches (spawning, the health check of a scene's animals) stay serial: the threaded kernel
        # costs seconds of compilation on a cold start and its thread pool more than the work below this size
        kernel = _inside_parallel if n >= PARALLEL_THRESHOLD else _inside_serial
        kernel(env.arrays, p, radii, np.int64(int(mask) & ALL_LAYERS), out)
    return out
