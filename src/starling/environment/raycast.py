"""Batched ray casts against an :class:`~starling.environment.scene.Environment`.

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
pool costs more than it saves.  A chunk is handled by one call (:func:`cast_range` & co.) that unpacks the
geometry once and loops over its rays, and that call is compiled without reference counting; cheap tests
run first (planes, water, primitives) so their hits shorten the terrain walk.  Outputs can be preallocated
(:meth:`RayHits.allocate`) and passed back in as ``out`` so the hot path does not allocate.

Consecutive rays with the same origin (an animal's rays, in the layout of
:func:`~starling.steering.queries.rays.generate_rays`) are traced as a *fan*: the primitives near the fan
are gathered once from the grid columns under the box around its segments, and one look at the terrain's
block bounds under that box settles the terrain for all its rays when they pass above it (see
:func:`cast_range`).  A fan's ray gets exactly the hit it gets when cast alone.

Sphere casts live in :mod:`~starling.environment.spherecast`, inside tests in
:mod:`~starling.environment.inside`, and what the three share in :mod:`~starling.environment.casting`;
:class:`RayHits`, :data:`PARALLEL_THRESHOLD`, :func:`sphere_cast` and :func:`inside_solid` are re-exported
here for the callers that import them from this module.
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
    stack_size,
)
from .inside import inside_solid
from .mesh import ray_aabb, ray_triangle, safe_inverse
from .packed import prim_ray
from .primitives import INF, ray_plane
from .spherecast import sphere_cast
from .terrain import box_clear_of_terrain, ray_heightfield
from .water import ray_water

__all__ = ["PARALLEL_THRESHOLD", "RayHits", "cast_into", "cast_range", "cast_rays", "inside_solid", "sphere_cast"]


@_jit
def _slab_clip(o, d, inv, lo, hi, t0, t1):
    """Clip ``[t0, t1]`` to where ``o + t d`` lies in ``[lo, hi]`` (one axis; ``inv = 1 / d``); empty when
    ``t0 > t1``."""
    if abs(d) <= 1e-300:
        if o < lo or o > hi:
            return 1.0, 0.0
        return t0, t1
    ta = (lo - o) * inv
    tb = (hi - o) * inv
    if ta > tb:
        ta, tb = tb, ta
    return max(t0, ta), min(t1, tb)


# fan constants
_MAX_FAN = 64
"""Most consecutive rays with one origin that are traced together as a fan (see :func:`cast_range`)."""

_FAN_GRID_CELLS = 64
"""A fan gathers its candidate primitives from at most this many columns of the primitive grid; a fan whose
box covers more (long rays) walks the grid ray by ray instead."""

_FAN_TERRAIN_BLOCKS = 64
"""The terrain early-outs of a fan and of its rays read at most this many blocks of the terrain's block bounds
(:func:`~starling.environment.terrain.block_bounds`); beyond that a ray walks the terrain as it would alone."""


@_hjit
def cast_range(g, lo, hi, origins, dirs, maxd, mask, st_n, st_t, cand, fan, hit, dist, point, normal, layer):
    """Cast rays ``lo .. hi - 1`` and write their nearest hits (see :func:`cast_rays`).

    One call handles a whole chunk of rays: the arrays are unpacked from ``g`` once, and everything per ray
    happens in this loop.  Cheap tests come first (planes, water, primitives) so that their hits shorten the
    terrain walk and the mesh traversal.

    *Fans*: consecutive rays with the same origin (an animal's rays, :mod:`starling.steering.queries.rays`)
    are traced together.  The fan's segments lie in the box around its origin and end points; the primitives
    whose bounds meet that box are gathered once from the grid columns under it (``cand``), and each ray
    then tests only those instead of walking the grid; if the terrain cells under the box all lie below (or
    above) the box, no ray of the fan can cross the terrain and the walks are skipped.  Both only leave out
    what a ray could not hit, so a fan's rays get the hits they would get one by one.
    """
    pl_f = g.pl_f
    pl_i = g.pl_i
    w_f = g.w_f
    w_i = g.w_i
    w_poly = g.w_poly
    prim_f = g.prim_f
    prim_i = g.prim_i
    prim_box = g.prim_box
    pg_start = g.pg_start
    pg_items = g.pg_items
    pg_y = g.pg_y
    pg_mask = g.pg_mask
    pg_box = g.pg_box
    pg_ent = g.pg_ent
    ter_h = g.ter_h
    ter_cb = g.ter_cb
    ter_dil = g.ter_dil
    ter_bb = g.ter_bb
    tri_f = g.tri_f
    tri_i = g.tri_i
    tb_box = g.tb_box
    tb_node = g.tb_node
    tf = g.ter_f
    ter_lay = np.int64(tf[7])
    ter_on = tf[0] > 0.0 and (mask >> ter_lay) & 1 == 1
    tx0, tz0, tdx, tdz, thmin, thmax, tidx, tidz = tf[1], tf[2], tf[3], tf[4], tf[5], tf[6], tf[8], tf[9]
    tshift = np.int64(tf[10])
    bshift = np.int64(tf[11])
    tncx = np.int64(ter_h.shape[1]) - 1
    tncz = np.int64(ter_h.shape[0]) - 1
    tx1 = tx0 + tncx * tdx
    tz1 = tz0 + tncz * tdz
    gf = g.pg_f
    # the grid holds the same items as the primitive BVH, whose root has the union of their layers
    grid_on = pg_items.shape[0] > 0 and (g.pb_node[0, 2] & mask) != 0
    gx0, gz0, gcell, ginv = gf[0], gf[1], gf[2], gf[3]
    gnx = np.int64(gf[4])
    gnz = np.int64(gf[5])
    gx1 = gx0 + gnx * gcell
    gz1 = gz0 + gnz * gcell
    tri_on = tb_node.shape[0] > 0 and (tb_node[0, 2] & mask) != 0
    n_planes = pl_f.shape[0]
    n_water = w_f.shape[0]
    n_maxd = maxd.shape[0]
    k0 = lo
    while k0 < hi:
        # the fan: rays k0 .. k1 - 1 share their origin
        o0 = origins[k0, 0]
        o1 = origins[k0, 1]
        o2 = origins[k0, 2]
        k1 = k0 + 1
        while (k1 < hi and k1 - k0 < _MAX_FAN and origins[k1, 0] == o0 and origins[k1, 1] == o1
               and origins[k1, 2] == o2):
            k1 += 1
        ox = np.float64(o0)
        oy = np.float64(o1)
        oz = np.float64(o2)
        fan_grid = False  # the fan's candidates are cand[:nc]
        nc = 0
        fan_ter = False  # the fan's rays test their own boxes against the terrain's block bounds first
        fan_clear = False  # no ray of the fan can cross the terrain
        # unit directions and lengths, once per ray (fan[r] = dx, dy, dz, tmax, usable)
        for k in range(k0, k1):
            r = k - k0
            dx = np.float64(dirs[k, 0])
            dy = np.float64(dirs[k, 1])
            dz = np.float64(dirs[k, 2])
            tmax = min(np.float64(maxd[k] if n_maxd > 1 else maxd[0]), MAX_DISTANCE)
            dn = np.sqrt(dx * dx + dy * dy + dz * dz)
            usable = dn > 1e-30 and tmax >= 0.0
            if usable:
                inv_n = 1.0 / dn
                dx *= inv_n
                dy *= inv_n
                dz *= inv_n
            fan[r, 0] = dx
            fan[r, 1] = dy
            fan[r, 2] = dz
            fan[r, 3] = tmax
            fan[r, 4] = 1.0 if usable else 0.0
        if k1 - k0 >= 2 and (grid_on or ter_on):
            # box around the fan's segments (origin and end points), padded far beyond rounding
            bx0 = ox
            bx1 = ox
            by0 = oy
            by1 = oy
            bz0 = oz
            bz1 = oz
            reach = 0.0
            for r in range(k1 - k0):
                if fan[r, 4] != 0.0:
                    tmax = fan[r, 3]
                    ex = ox + tmax * fan[r, 0]
                    ey = oy + tmax * fan[r, 1]
                    ez = oz + tmax * fan[r, 2]
                    bx0 = min(bx0, ex)
                    bx1 = max(bx1, ex)
                    by0 = min(by0, ey)
                    by1 = max(by1, ey)
                    bz0 = min(bz0, ez)
                    bz1 = max(bz1, ez)
                    reach = max(reach, tmax)
            pad = 1e-6 + 1e-9 * (abs(ox) + abs(oy) + abs(oz) + reach)
            bx0 -= pad
            by0 -= pad
            bz0 -= pad
            bx1 += pad
            by1 += pad
            bz1 += pad
            if grid_on:
                if bx1 < gx0 or bx0 > gx1 or bz1 < gz0 or bz0 > gz1:
                    fan_grid = True  # the box misses every column: no candidates
                else:
                    ci0 = min(max(np.int64(np.floor((max(bx0, gx0) - gx0) * ginv)), 0), gnx - 1)
                    ci1 = min(max(np.int64(np.floor((min(bx1, gx1) - gx0) * ginv)), 0), gnx - 1)
                    cj0 = min(max(np.int64(np.floor((max(bz0, gz0) - gz0) * ginv)), 0), gnz - 1)
                    cj1 = min(max(np.int64(np.floor((min(bz1, gz1) - gz0) * ginv)), 0), gnz - 1)
                    if (ci1 - ci0 + 1) * (cj1 - cj0 + 1) <= _FAN_GRID_CELLS:
                        fan_grid = True
                        for cj in range(cj0, cj1 + 1):
                            # the entries of columns ci0 .. ci1 of a row are contiguous; an item listed in several
                            # columns is taken in the first of the block (its first column, or ci0 if that is
                            # further on; the same for rows), and only when its layer is wanted and its bounds
                            # meet the box (no branches: these tests are unpredictable)
                            row = cj * gnx
                            first_row = cj == cj0
                            for q in range(pg_start[row + ci0], pg_start[row + ci1 + 1]):
                                take = (((pg_ent[q, 1] == 0) | (pg_ent[q, 0] == ci0))
                                        & ((pg_ent[q, 2] == 0) | first_row)
                                        & ((mask >> pg_ent[q, 3]) & 1 == 1)
                                        & (pg_box[q, 0] <= bx1) & (pg_box[q, 3] >= bx0)
                                        & (pg_box[q, 1] <= by1) & (pg_box[q, 4] >= by0)
                                        & (pg_box[q, 2] <= bz1) & (pg_box[q, 5] >= bz0))
                                # (written either way, kept only when taken: every item is taken at most
                                # once, so nc stays within the primitives and cand has one slot more)
                                cand[nc] = pg_items[q]
                                nc += 1 if take else 0
            if ter_on:
                state = box_clear_of_terrain(ter_bb, bshift, tx0, tz0, tx1, tz1, tidx, tidz, tncx, tncz, bx0, bx1,
                                             by0, by1, bz0, bz1, _FAN_TERRAIN_BLOCKS)
                fan_clear = state == 1
                fan_ter = state == 0
        for k in range(k0, k1):
            r = k - k0
            dx = fan[r, 0]
            dy = fan[r, 1]
            dz = fan[r, 2]
            tmax = fan[r, 3]
            best = tmax
            found = False
            bnx, bny, bnz = 0.0, 0.0, 0.0
            blay = -1
            if fan[r, 4] != 0.0:
                ix = safe_inverse(dx)
                iy = safe_inverse(dy)
                iz = safe_inverse(dz)
                for p in range(n_planes):
                    lay = pl_i[p]
                    if (mask >> lay) & 1:
                        t, nx, ny, nz = ray_plane(ox, oy, oz, dx, dy, dz, best, pl_f[p, 0], pl_f[p, 1], pl_f[p, 2],
                                                  pl_f[p, 3], pl_f[p, 4], pl_f[p, 5])
                        if t <= best:
                            best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
                for w in range(n_water if dy != 0.0 else 0):
                    lay = w_i[w, 2]
                    if (mask >> lay) & 1:
                        t, nx, ny, nz = ray_water(ox, oy, oz, dx, dy, dz, best, w_f, w_i, w_poly, w)
                        if t <= best:
                            best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
                if fan_grid:
                    # the fan's candidates (their layers are in the mask)
                    for q in range(nc):
                        it = cand[q]
                        if ray_aabb(ox, oy, oz, ix, iy, iz, best, prim_box, np.int64(it)) < INF:
                            t, nx, ny, nz = prim_ray(prim_f, it, prim_i[it, 0], ox, oy, oz, dx, dy, dz, best)
                            if t <= best:
                                best, bnx, bny, bnz, blay, found = t, nx, ny, nz, prim_i[it, 1], True
                elif grid_on:
                    # finite primitives: walk the columns of the x-z grid crossed by the ray
                    t0, t1 = _slab_clip(ox, dx, ix, gx0, gx1, 0.0, best)
                    t0, t1 = _slab_clip(oz, dz, iz, gz0, gz1, t0, t1)
                    if t0 <= t1:
                        i = min(max(np.int64(np.floor((ox + t0 * dx - gx0) * ginv)), 0), gnx - 1)
                        j = min(max(np.int64(np.floor((oz + t0 * dz - gz0) * ginv)), 0), gnz - 1)
                        si = 0
                        sj = 0
                        tnx = INF
                        tnz = INF
                        ddx = INF
                        ddz = INF
                        if dx > 1e-300:
                            si = 1
                            tnx = (gx0 + (i + 1) * gcell - ox) * ix
                            ddx = gcell * ix
                        elif dx < -1e-300:
                            si = -1
                            tnx = (gx0 + i * gcell - ox) * ix
                            ddx = -gcell * ix
                        if dz > 1e-300:
                            sj = 1
                            tnz = (gz0 + (j + 1) * gcell - oz) * iz
                            ddz = gcell * iz
                        elif dz < -1e-300:
                            sj = -1
                            tnz = (gz0 + j * gcell - oz) * iz
                            ddz = -gcell * iz
                        tc = t0
                        while True:
                            te = min(tnx, tnz, t1)
                            c = j * gnx + i
                            if (pg_mask[c] & mask) != 0:
                                ys = oy + tc * dy
                                ye = oy + te * dy
                                if min(ys, ye) <= pg_y[c, 1] and max(ys, ye) >= pg_y[c, 0]:
                                    for q in range(pg_start[c], pg_start[c + 1]):
                                        it = pg_items[q]
                                        lay = prim_i[it, 1]
                                        if (mask >> lay) & 1 and ray_aabb(ox, oy, oz, ix, iy, iz, best, prim_box,
                                                                          np.int64(it)) < INF:
                                            t, nx, ny, nz = prim_ray(prim_f, it, prim_i[it, 0], ox, oy, oz, dx, dy,
                                                                     dz, best)
                                            if t <= best:
                                                best, bnx, bny, bnz, blay, found = t, nx, ny, nz, lay, True
                            # a hit within the columns visited so far cannot be beaten by later columns
                            if best <= te or te >= t1:
                                break
                            sx = tnx <= tnz
                            tc = tnx if sx else tnz
                            i += si if sx else 0
                            j += 0 if sx else sj
                            tnx += ddx if sx else 0.0
                            tnz += 0.0 if sx else ddz
                            if i < 0 or j < 0 or i >= gnx or j >= gnz:
                                break
                if ter_on and not fan_clear:
                    state = -1
                    if fan_ter:
                        # the ray's own box up to its nearest hit so far, padded like the fan's
                        ex = ox + best * dx
                        ey = oy + best * dy
                        ez = oz + best * dz
                        pad = 1e-6 + 1e-9 * (abs(ox) + abs(oy) + abs(oz) + best)
                        state = box_clear_of_terrain(ter_bb, bshift, tx0, tz0, tx1, tz1, tidx, tidz, tncx, tncz,
                                                     min(ox, ex) - pad, max(ox, ex) + pad, min(oy, ey) - pad,
                                                     max(oy, ey) + pad, min(oz, ez) - pad, max(oz, ez) + pad,
                                                     _FAN_TERRAIN_BLOCKS)
                    if state != 1:
                        # (once the blocks under the ray were read, the clearance maps' coarser windows would
                        # settle nothing more)
                        t, nx, ny, nz = ray_heightfield(ter_h, ter_cb, ter_dil, tshift, tx0, tz0, tdx, tdz, tidx,
                                                        tidz, thmin, thmax, ox, oy, oz, dx, dy, dz, ix, iz, best,
                                                        state == -1)
                        if t <= best:
                            best, bnx, bny, bnz, blay, found = t, nx, ny, nz, ter_lay, True
                # mesh triangles: BVH, near child first
                if tri_on:
                    t0 = ray_aabb(ox, oy, oz, ix, iy, iz, best, tb_box, np.int64(0))
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
                        c = tb_node[ni, 1]
                        if c > 0:
                            s = tb_node[ni, 0]
                            for q in range(s, s + c):
                                lay = tri_i[q, 0]
                                if (mask >> lay) & 1:
                                    t = ray_triangle(ox, oy, oz, dx, dy, dz, best, tri_f[q, 0], tri_f[q, 1],
                                                     tri_f[q, 2], tri_f[q, 3], tri_f[q, 4], tri_f[q, 5], tri_f[q, 6],
                                                     tri_f[q, 7], tri_f[q, 8])
                                    if t <= best:
                                        best, blay, found = t, lay, True
                                        bnx, bny, bnz = tri_f[q, 9], tri_f[q, 10], tri_f[q, 11]
                        else:
                            left = tb_node[ni, 0]
                            right = left + 1
                            tl = INF
                            tr = INF
                            if (tb_node[left, 2] & mask) != 0:
                                tl = ray_aabb(ox, oy, oz, ix, iy, iz, best, tb_box, np.int64(left))
                            if (tb_node[right, 2] & mask) != 0:
                                tr = ray_aabb(ox, oy, oz, ix, iy, iz, best, tb_box, np.int64(right))
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
                                st_n[sp] = left
                                st_t[sp] = tl
                                sp += 1
                                st_n[sp] = right
                                st_t[sp] = tr
                                sp += 1
            else:
                tmax = 0.0
            if found:
                if bnx * dx + bny * dy + bnz * dz > 0.0:
                    bnx, bny, bnz = -bnx, -bny, -bnz
                hit[k] = True
                dist[k] = best
                point[k, 0] = ox + best * dx
                point[k, 1] = oy + best * dy
                point[k, 2] = oz + best * dz
                normal[k, 0] = bnx
                normal[k, 1] = bny
                normal[k, 2] = bnz
                layer[k] = blay
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
        k0 = k1


@_pjit
def _cast_parallel(g, origins, dirs, maxd, mask, hit, dist, point, normal, layer):
    r = origins.shape[0]
    n_chunks = (r + _CHUNK - 1) // _CHUNK
    size = stack_size(g)
    n_items = g.prim_f.shape[0] + 1  # (the gather writes one slot past its last candidate)
    for c in prange(n_chunks):
        st_n = np.empty(size, np.int32)
        st_t = np.empty(size)
        cand = np.empty(n_items, np.int32)
        fan = np.empty((_MAX_FAN, 5))
        lo, hi = _chunk(c, r)
        cast_range(g, lo, hi, origins, dirs, maxd, mask, st_n, st_t, cand, fan, hit, dist, point,
                   normal, layer)


@_sjit
def _cast_serial(g, origins, dirs, maxd, mask, hit, dist, point, normal, layer):
    size = stack_size(g)
    st_n = np.empty(size, np.int32)
    st_t = np.empty(size)
    cand = np.empty(g.prim_f.shape[0] + 1, np.int32)  # (the gather writes one slot past its last candidate)
    fan = np.empty((_MAX_FAN, 5))
    cast_range(g, np.int64(0), np.int64(origins.shape[0]), origins, dirs, maxd, mask, st_n, st_t, cand, fan, hit,
               dist, point, normal, layer)


# ----------------------------------------------------------------------------------------------------
# Python entry point
# ----------------------------------------------------------------------------------------------------


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
    cast_into(env, o, d, maxd, int(mask), res, r >= PARALLEL_THRESHOLD if parallel is None else parallel)
    return res


def cast_into(env, origins: np.ndarray, directions: np.ndarray, maxd: np.ndarray, mask: int, out: RayHits,
              parallel: bool) -> None:
    """:func:`cast_rays` for a caller whose arguments already have the kernel's types, checked by nobody:
    ``(r, 3)`` C-ordered float32 origins and directions, a ``(1,)`` or ``(r,)`` float32 ``maxd``, an int
    ``mask`` and ``out`` of exactly ``r`` rows (the steering pipeline's ray groups, every step)."""
    r = origins.shape[0]
    if r == 0:
        return
    kernel = _cast_parallel if parallel else _cast_serial
    # every argument's type is fixed, so the environment's call site may skip Numba's typing
    # of its geometry on each call (starling.kernel_calls)
    env.kernel_calls(kernel, r, env.arrays, origins, directions, maxd, np.int64(mask & ALL_LAYERS), out.hit,
                     out.distance, out.point, out.normal, out.layer)

