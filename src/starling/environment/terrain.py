"""Heightfield terrain: heights on a regular x–z grid, two triangles per cell.

Layout
------
``heights[j, i]`` is the height at ``x = x0 + i * dx``, ``z = z0 + j * dz`` (rows run along +z, columns
along +x, like an image seen from above with +z pointing down the page).  Cell ``(i, j)`` spans
``[x_i, x_i + dx] x [z_j, z_j + dz]`` with local coordinates ``u = (x - x_i) / dx`` and
``w = (z - z_j) / dz``.  It is split along its diagonal ``u = w`` into

* the *lower* triangle (``u >= w``) with corners ``(0,0), (1,0), (1,1)``, and
* the *upper* triangle (``u < w``) with corners ``(0,0), (1,1), (0,1)``.

The surface is exactly this piecewise-planar triangulation everywhere: :meth:`Heightfield.height_at`, the
normals, the ray casts and the sphere sweeps all use the same planes, so a point reported as a hit lies on
the surface that :meth:`height_at` describes.  The solid is everything below the surface inside the
rectangle.

Ray casts (:func:`ray_heightfield`) walk the cells crossed by the ray's projection on the x–z plane
(Amanatides–Woo DDA).  In each cell the vertical gap ``f(t) = y(t) - h(x(t), z(t))`` is linear on each of
the (at most two) triangle pieces, so a sign change is found exactly by linear interpolation.  The gap at
the end of one piece is carried into the next, which makes the walk watertight: a crossing exactly on a
cell edge cannot slip between two cells through rounding.  Cells whose height range lies entirely below or
above the ray's height range over the cell are skipped with two comparisons, and before walking at all a
ray looks up the *clearance maps* (the terrain's lowest and highest point ahead of its first cell, for a
few reaches): a short ray that passes above everything ahead of it is rejected with one lookup.  Fans of
rays from one origin test the box around them against the *block bounds* instead (the lowest and highest
point of every block of 2 x 2 cells, small enough to stay in cache): :func:`box_clear_of_terrain`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .mesh import distance_to_triangle, sweep_triangle
from .primitives import INF

# Kernels here never allocate, so they are compiled without Numba's reference counting (``_nrt=False``):
# otherwise every array handed to an inlined helper is incref'd and decref'd with atomic operations on
# each call, which costs more than the geometry itself (measured: 40 ns per ray cast on the terrain).
_jit = njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True, _nrt=False)
_ijit = njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True, inline="always", _nrt=False)


@_jit
def cell_plane(h, i, j, upper, dx, dz):
    """Plane of one triangle of cell ``(i, j)`` as ``y = h0 + bx * (x - x_i) + bz * (z - z_j)``.

    Returns ``(h0, bx, bz)``; ``upper`` selects the ``u < w`` triangle.
    """
    h00 = h[j, i]
    h11 = h[j + 1, i + 1]
    if upper:
        h01 = h[j + 1, i]
        return h00, (h11 - h01) / dx, (h01 - h00) / dz
    h10 = h[j, i + 1]
    return h00, (h10 - h00) / dx, (h11 - h10) / dz


@_jit
def plane_normal(bx, bz):
    """Unit upward normal of the plane ``y = c + bx x + bz z``."""
    n = math.sqrt(bx * bx + 1.0 + bz * bz)
    return -bx / n, 1.0 / n, -bz / n


@_jit
def locate(h, x0, z0, dx, dz, x, z):
    """Cell ``(i, j)`` containing ``(x, z)`` (clamped to the grid) and whether the point is inside the
    rectangle."""
    nx = h.shape[1]
    nz = h.shape[0]
    fx = (x - x0) / dx
    fz = (z - z0) / dz
    inside = fx >= 0.0 and fz >= 0.0 and fx <= nx - 1 and fz <= nz - 1
    i = min(max(int(math.floor(fx)), 0), nx - 2)
    j = min(max(int(math.floor(fz)), 0), nz - 2)
    return i, j, inside


@_jit
def height_and_normal(h, x0, z0, dx, dz, x, z):
    """Surface height and unit normal at ``(x, z)``; ``nan`` height outside the rectangle."""
    i, j, inside = locate(h, x0, z0, dx, dz, x, z)
    xi = x0 + i * dx
    zj = z0 + j * dz
    u = (x - xi) / dx
    w = (z - zj) / dz
    h0, bx, bz = cell_plane(h, i, j, u < w, dx, dz)
    nx, ny, nz = plane_normal(bx, bz)
    if not inside:
        return np.nan, nx, ny, nz
    return h0 + bx * (x - xi) + bz * (z - zj), nx, ny, nz


@_jit
def _heights_and_normals(h, x0, z0, dx, dz, xs, zs, out_h, out_n):
    # serial on purpose: lookups are cheap, and a parallel kernel would add seconds of compile time
    for k in range(xs.shape[0]):
        hh, nx, ny, nz = height_and_normal(h, x0, z0, dx, dz, xs[k], zs[k])
        out_h[k] = hh
        out_n[k, 0] = nx
        out_n[k, 1] = ny
        out_n[k, 2] = nz


CLEARANCE_RADII = (1, 2, 3, 4, 6, 8, 12, 16)
"""Reaches, in blocks, of the clearance maps (see :func:`clearance_maps`)."""


def clearance_block(ncx: int, ncz: int) -> int:
    """Cells per side of a clearance-map block: 2, or more for large grids so that the maps stay below
    about 16 MiB (they hold ``4 * len(CLEARANCE_RADII) * 2`` floats per block)."""
    block = 2
    while (-(-ncx // block)) * (-(-ncz // block)) * 4 * len(CLEARANCE_RADII) * 16 > 16 << 20:
        block *= 2
    return block


def clearance_maps(cell_min: np.ndarray, cell_max: np.ndarray) -> np.ndarray:
    """``(4, L, nbz, nbx, 2)`` float64 clearance maps of a heightfield.

    The cells are grouped in blocks of ``B x B`` (:func:`clearance_block`).  Entry ``[q, l, bj, bi]`` holds
    the ``[min, max]`` terrain height over the blocks that lie within ``r = CLEARANCE_RADII[l]`` blocks of
    block ``(bi, bj)`` *in the direction of quadrant* ``q`` — blocks ``bi .. bi + sx r`` by ``bj .. bj + sz r``
    with ``sx = -1 if q & 2 else 1`` and ``sz = -1 if q & 1 else 1``.

    A ray heading into quadrant ``q`` whose last block is at most ``r`` blocks from its first stays inside
    that window; if the whole ray is higher than the window's maximum (or lower than its minimum) it cannot
    cross the terrain, and one lookup replaces the walk.  Looking only ahead of the ray (a quarter of a
    centred window) matters: for a grazing herd's short rays about three in four are settled this way
    instead of one in two.
    """
    from scipy.ndimage import maximum_filter, minimum_filter

    ncz, ncx = cell_min.shape
    block = clearance_block(ncx, ncz)
    nbz = -(-ncz // block)
    nbx = -(-ncx // block)
    pad_z = nbz * block - ncz
    pad_x = nbx * block - ncx
    lo = np.pad(cell_min, ((0, pad_z), (0, pad_x)), mode="edge").reshape(nbz, block, nbx, block).min(axis=(1, 3))
    hi = np.pad(cell_max, ((0, pad_z), (0, pad_x)), mode="edge").reshape(nbz, block, nbx, block).max(axis=(1, 3))
    out = np.empty((4, len(CLEARANCE_RADII), nbz, nbx, 2))
    for q in range(4):
        for level, radius in enumerate(CLEARANCE_RADII):
            size = radius + 1
            # scipy centres a window of `size` on each element and shifts it by -origin: origin -(size // 2)
            # makes it [b, b + radius], origin (size - 1) // 2 makes it [b - radius, b]
            oz = (size - 1) // 2 if q & 1 else -(size // 2)
            ox = (size - 1) // 2 if q & 2 else -(size // 2)
            out[q, level, :, :, 0] = minimum_filter(lo, size=size, mode="nearest", origin=(oz, ox))
            out[q, level, :, :, 1] = maximum_filter(hi, size=size, mode="nearest", origin=(oz, ox))
    return np.ascontiguousarray(out)


BLOCK_MAP_MAX = 1 << 16
"""Most blocks in a :func:`block_bounds` map (512 KiB of float32 pairs)."""


def block_bounds(cell_min: np.ndarray, cell_max: np.ndarray) -> tuple[int, np.ndarray]:
    """``(shift, bounds)``: the lowest and highest terrain point of every block of ``2 ** shift`` by
    ``2 ** shift`` cells, ``(nbz, nbx, 2) float32`` rounded outwards (so every comparison against them stays
    conservative); ``shift`` is 1, or more for grids that would otherwise need over :data:`BLOCK_MAP_MAX`
    blocks.  The map is small enough to stay in cache, which makes it the cheap first test of whether a box
    (a fan of rays, :func:`box_clear_of_terrain`) can meet the terrain at all."""
    ncz, ncx = cell_min.shape
    shift = 1
    while (-(-ncx >> shift)) * (-(-ncz >> shift)) > BLOCK_MAP_MAX:
        shift += 1
    block = 1 << shift
    nbz = -(-ncz // block)
    nbx = -(-ncx // block)
    pad = ((0, nbz * block - ncz), (0, nbx * block - ncx))
    lo = np.pad(cell_min, pad, mode="edge").reshape(nbz, block, nbx, block).min(axis=(1, 3))
    hi = np.pad(cell_max, pad, mode="edge").reshape(nbz, block, nbx, block).max(axis=(1, 3))
    lo32 = lo.astype(np.float32)
    hi32 = hi.astype(np.float32)
    lo32 = np.where(lo32.astype(np.float64) > lo, np.nextafter(lo32, np.float32(-np.inf)), lo32)
    hi32 = np.where(hi32.astype(np.float64) < hi, np.nextafter(hi32, np.float32(np.inf)), hi32)
    return shift, np.ascontiguousarray(np.stack([lo32, hi32], axis=-1))


@_jit
def box_clear_of_terrain(bb, shift, x0, z0, x1, z1, inv_dx, inv_dz, ncx, ncz, xa, xb, ya, yb, za, zb, max_blocks):
    """Whether nothing in the box ``[xa, xb] x [ya, yb] x [za, zb]`` can lie on the terrain surface: 1 when
    the box misses the terrain's rectangle or every :func:`block_bounds` block under it lies strictly below
    ``ya`` (or every one strictly above ``yb``), 0 when some block reaches into the box's height range, and
    -1 (untested) when the box covers more than ``max_blocks`` blocks.  ``ncx, ncz`` count cells; ``x1, z1``
    are the far edges of the rectangle."""
    if xb < x0 or xa > x1 or zb < z0 or za > z1:
        return 1
    ci0 = min(max(np.int64(math.floor((max(xa, x0) - x0) * inv_dx)), 0), ncx - 1)
    ci1 = min(max(np.int64(math.floor((min(xb, x1) - x0) * inv_dx)), 0), ncx - 1)
    cj0 = min(max(np.int64(math.floor((max(za, z0) - z0) * inv_dz)), 0), ncz - 1)
    cj1 = min(max(np.int64(math.floor((min(zb, z1) - z0) * inv_dz)), 0), ncz - 1)
    bi0 = ci0 >> shift
    bi1 = ci1 >> shift
    bj0 = cj0 >> shift
    bj1 = cj1 >> shift
    if (bi1 - bi0 + 1) * (bj1 - bj0 + 1) > max_blocks:
        return -1
    lo = INF
    hi = -INF
    for bj in range(bj0, bj1 + 1):
        for bi in range(bi0, bi1 + 1):
            lo = min(lo, np.float64(bb[bj, bi, 0]))
            hi = max(hi, np.float64(bb[bj, bi, 1]))
        if hi >= ya and lo <= yb:
            return 0
    return 1


@_jit
def locate_inv(nx, nz, x0, z0, inv_dx, inv_dz, x, z):
    """:func:`locate` with precomputed inverse spacings (no division) and grid sizes; cell only."""
    i = min(max(int(math.floor((x - x0) * inv_dx)), 0), nx - 2)
    j = min(max(int(math.floor((z - z0) * inv_dz)), 0), nz - 2)
    return i, j


@_jit
def ray_heightfield(h, cb, dil, block_shift, x0, z0, dx, dz, inv_dx, inv_dz, hmin, hmax, ox, oy, oz, ddx, ddy, ddz,
                    ix, iz, tmax, use_clearance=True):
    """First crossing in ``[0, tmax]`` of the ray ``o + t d`` with the heightfield surface.

    ``cb`` holds every cell's lowest and highest corner, ``(ncz * ncx, 2)`` row-major (one cache line per
    lookup); ``dil`` are the :func:`clearance_maps` with blocks of ``2 ** block_shift`` cells; ``inv_dx,
    inv_dz`` the inverse spacings and ``ix, iz`` the inverse direction components
    (:func:`~starling.environment.mesh.safe_inverse`), so that setting up the walk needs no division.
    ``use_clearance = False`` skips the clearance-map lookup (for callers that have already made a tighter
    test).  Returns ``(t, nx, ny, nz)`` with the upward normal of the triangle hit; ``t = inf`` when none.
    """
    nxs = h.shape[1]
    nzs = h.shape[0]
    x1 = x0 + (nxs - 1) * dx
    z1 = z0 + (nzs - 1) * dz
    t0 = 0.0
    t1 = tmax
    # clip the ray to the rectangle
    if abs(ddx) <= 1e-300:
        if ox < x0 or ox > x1:
            return INF, 0.0, 0.0, 0.0
    else:
        ta = (x0 - ox) * ix
        tb = (x1 - ox) * ix
        if ta > tb:
            ta, tb = tb, ta
        t0 = max(t0, ta)
        t1 = min(t1, tb)
    if abs(ddz) <= 1e-300:
        if oz < z0 or oz > z1:
            return INF, 0.0, 0.0, 0.0
    else:
        ta = (z0 - oz) * iz
        tb = (z1 - oz) * iz
        if ta > tb:
            ta, tb = tb, ta
        t0 = max(t0, ta)
        t1 = min(t1, tb)
    if t0 > t1:
        return INF, 0.0, 0.0, 0.0
    # the whole clipped ray above the highest or below the lowest point: no crossing
    ya = oy + t0 * ddy
    yb = oy + t1 * ddy
    y_lo = min(ya, yb)
    y_hi = max(ya, yb)
    if y_lo > hmax or y_hi < hmin:
        return INF, 0.0, 0.0, 0.0

    i, j = locate_inv(nxs, nzs, x0, z0, inv_dx, inv_dz, ox + t0 * ddx, oz + t0 * ddz)
    if use_clearance:
        # one lookup in the clearance maps: is the ray clear of all terrain ahead of its first cell?
        ie, je = locate_inv(nxs, nzs, x0, z0, inv_dx, inv_dz, ox + t1 * ddx, oz + t1 * ddz)
        # (shifts, not integer divisions: a 64-bit division costs tens of cycles, more than the whole walk)
        bi = i >> block_shift
        bj = j >> block_shift
        reach_blocks = max(abs((ie >> block_shift) - bi), abs((je >> block_shift) - bj))
        quadrant = (2 if ie < i else 0) + (1 if je < j else 0)
        for level in range(dil.shape[1]):
            if CLEARANCE_RADII[level] >= reach_blocks:
                if y_lo > dil[quadrant, level, bj, bi, 1] or y_hi < dil[quadrant, level, bj, bi, 0]:
                    return INF, 0.0, 0.0, 0.0
                break

    step_i = 0
    step_j = 0
    t_next_x = INF
    t_next_z = INF
    dt_x = INF
    dt_z = INF
    if ddx > 1e-300:
        step_i = 1
        t_next_x = (x0 + (i + 1) * dx - ox) * ix
        dt_x = dx * ix
    elif ddx < -1e-300:
        step_i = -1
        t_next_x = (x0 + i * dx - ox) * ix
        dt_x = -dx * ix
    if ddz > 1e-300:
        step_j = 1
        t_next_z = (z0 + (j + 1) * dz - oz) * iz
        dt_z = dz * iz
    elif ddz < -1e-300:
        step_j = -1
        t_next_z = (z0 + j * dz - oz) * iz
        dt_z = -dz * iz

    ncx = nxs - 1
    gd = ddx * inv_dx - ddz * inv_dz
    inv_gd = 1.0 / gd if gd != 0.0 else 0.0
    t_cur = t0
    ys = oy + t0 * ddy
    f_prev = 0.0
    f_valid = False
    c = j * ncx + i
    step_c_x = step_i
    step_c_z = step_j * ncx
    while True:
        t_end = min(t_next_x, t_next_z, t1)
        if t_end < t_cur:
            t_end = t_cur
        ye = oy + t_end * ddy
        if min(ys, ye) > cb[c, 1] or max(ys, ye) < cb[c, 0]:
            # the ray stays strictly above (or below) this cell: the sign of the gap cannot change
            f_valid = False
        else:
            xi = x0 + i * dx
            zj = z0 + j * dz
            # g(t) = u(t) - w(t): which triangle the ray is over
            g0 = (ox - xi) * inv_dx - (oz - zj) * inv_dz
            ta = t_cur
            for piece in range(2):
                if piece == 0:
                    tb = t_end
                    if gd != 0.0:
                        ts = -g0 * inv_gd
                        if ts > t_cur and ts < t_end:
                            tb = ts
                else:
                    if ta >= t_end:
                        break
                    tb = t_end
                tm = 0.5 * (ta + tb)
                upper = g0 + tm * gd < 0.0
                h00 = h[j, i]
                h11 = h[j + 1, i + 1]
                if upper:
                    h01 = h[j + 1, i]
                    h0, bx, bz = h00, (h11 - h01) * inv_dx, (h01 - h00) * inv_dz
                else:
                    h10 = h[j, i + 1]
                    h0, bx, bz = h00, (h10 - h00) * inv_dx, (h11 - h10) * inv_dz
                if not f_valid:
                    f_prev = (oy + ta * ddy) - (h0 + bx * (ox + ta * ddx - xi) + bz * (oz + ta * ddz - zj))
                    f_valid = True
                fb = (oy + tb * ddy) - (h0 + bx * (ox + tb * ddx - xi) + bz * (oz + tb * ddz - zj))
                if f_prev == 0.0 or (f_prev > 0.0 and fb <= 0.0) or (f_prev < 0.0 and fb >= 0.0):
                    if f_prev == 0.0:
                        t_hit = ta
                    else:
                        t_hit = ta + (tb - ta) * (f_prev / (f_prev - fb))
                    nx, ny, nz = plane_normal(bx, bz)
                    return t_hit, nx, ny, nz
                f_prev = fb
                ta = tb
        if t_end >= t1:
            break
        # step to the next cell without a data-dependent jump (the x/z choice is unpredictable)
        sx = t_next_x <= t_next_z
        t_cur = t_next_x if sx else t_next_z
        i += step_i if sx else 0
        j += 0 if sx else step_j
        c += step_c_x if sx else step_c_z
        t_next_x += dt_x if sx else 0.0
        t_next_z += 0.0 if sx else dt_z
        ys = ye
        if i < 0 or j < 0 or i > nxs - 2 or j > nzs - 2:
            break
    return INF, 0.0, 0.0, 0.0


@_jit
def _triangle_corners(h, x0, z0, dx, dz, i, j, upper):
    xi = x0 + i * dx
    zj = z0 + j * dz
    ax, ay, az = xi, h[j, i], zj
    cx, cy, cz = xi + dx, h[j + 1, i + 1], zj + dz
    if upper:
        bx, by, bz = cx, cy, cz
        cx, cy, cz = xi, h[j + 1, i], zj + dz
    else:
        bx, by, bz = xi + dx, h[j, i + 1], zj
    return ax, ay, az, bx, by, bz, cx, cy, cz


@_jit
def _cell_range(lo, hi, origin, spacing, n_cells):
    a = int(math.floor((lo - origin) / spacing))
    b = int(math.floor((hi - origin) / spacing))
    return max(a, 0), min(b, n_cells - 1)


@_jit
def sweep_heightfield(h, cmin, cmax, x0, z0, dx, dz, ox, oy, oz, ddx, ddy, ddz, tmax, rs):
    """Contact of a sphere of radius ``rs`` moving from ``o`` along unit ``d`` over at most ``tmax`` with
    the heightfield surface (see :func:`starling.environment.mesh.sweep_triangle` for the contract).

    Visits, row by row, the cells within ``rs`` of the segment's x–z footprint.
    """
    nxs = h.shape[1]
    nzs = h.shape[0]
    ex = ox + tmax * ddx
    ez = oz + tmax * ddz
    j_lo, j_hi = _cell_range(min(oz, ez) - rs, max(oz, ez) + rs, z0, dz, nzs - 1)
    best = INF
    bnx, bny, bnz = 0.0, 1.0, 0.0
    for j in range(j_lo, j_hi + 1):
        # part of the segment whose z lies within rs of the row
        zlo = z0 + j * dz - rs
        zhi = z0 + (j + 1) * dz + rs
        ta = 0.0
        tb = tmax
        if abs(ddz) > 1e-300:
            q0 = (zlo - oz) / ddz
            q1 = (zhi - oz) / ddz
            if q0 > q1:
                q0, q1 = q1, q0
            ta = max(ta, q0)
            tb = min(tb, q1)
        if ta > tb:
            continue
        xa = ox + ta * ddx
        xb = ox + tb * ddx
        ya = oy + ta * ddy
        yb = oy + tb * ddy
        y_lo = min(ya, yb) - rs
        y_hi = max(ya, yb) + rs
        i_lo, i_hi = _cell_range(min(xa, xb) - rs, max(xa, xb) + rs, x0, dx, nxs - 1)
        for i in range(i_lo, i_hi + 1):
            if cmax[j, i] < y_lo or cmin[j, i] > y_hi:
                continue
            for upper in (False, True):
                ax, ay, az, bx, by, bz, cx, cy, cz = _triangle_corners(h, x0, z0, dx, dz, i, j, upper)
                _, px, pz = cell_plane(h, i, j, upper, dx, dz)
                nx, ny, nz = plane_normal(px, pz)
                t, gx, gy, gz = sweep_triangle(
                    ox, oy, oz, ddx, ddy, ddz, min(best, tmax), rs, ax, ay, az, bx, by, bz, cx, cy, cz, nx, ny, nz
                )
                if t < best:
                    best = t
                    bnx, bny, bnz = gx, gy, gz
    return best, bnx, bny, bnz


@_jit
def sd_heightfield(h, cmin, cmax, x0, z0, dx, dz, px, py, pz, window):
    """Signed distance from ``p`` to the terrain solid (negative below the surface inside the
    rectangle) and the outward direction, considering the triangles within ``window`` of ``p``.

    Exact whenever the true distance is below ``window``; otherwise returns ``+inf`` above the surface, or,
    below it, the distance to the tangent plane of the surface straight above ``p`` (a lower bound on the
    depth good enough to push a point out).
    """
    nxs = h.shape[1]
    nzs = h.shape[0]
    hh, tnx, tny, tnz = height_and_normal(h, x0, z0, dx, dz, px, pz)
    below = not math.isnan(hh) and py < hh
    best = INF
    gx, gy, gz = 0.0, 1.0, 0.0
    if window > 0.0:
        i_lo, i_hi = _cell_range(px - window, px + window, x0, dx, nxs - 1)
        j_lo, j_hi = _cell_range(pz - window, pz + window, z0, dz, nzs - 1)
        for j in range(j_lo, j_hi + 1):
            for i in range(i_lo, i_hi + 1):
                if cmax[j, i] < py - window or cmin[j, i] > py + window:
                    continue
                for upper in (False, True):
                    ax, ay, az, bx, by, bz, cx, cy, cz = _triangle_corners(h, x0, z0, dx, dz, i, j, upper)
                    _, sx, sz = cell_plane(h, i, j, upper, dx, dz)
                    nx, ny, nz = plane_normal(sx, sz)
                    d, qx, qy, qz = distance_to_triangle(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz, nx, ny, nz)
                    if d < best:
                        best = d
                        gx, gy, gz = qx, qy, qz
    if best < window:
        if below:
            if best <= 1e-12:
                return 0.0, tnx, tny, tnz
            return -best, -gx, -gy, -gz
        return best, gx, gy, gz
    if below:
        return -(hh - py) * tny, tnx, tny, tnz
    return INF, 0.0, 1.0, 0.0


@dataclass(frozen=True)
class Heightfield:
    """A heightfield terrain (see the module docstring for the layout).

    Attributes
    ----------
    heights: ``(nz, nx) float64``
        Heights in metres; ``nx, nz >= 2``.
    x0, z0: float
        Coordinates of sample ``[0, 0]`` (the corner with the smallest x and z), metres.
    dx, dz: float
        Sample spacing along x and z, metres.
    layer: int
        Layer index (bit) of the terrain.
    cell_min, cell_max: ``(nz - 1, nx - 1) float64``
        Lowest and highest corner of every cell (the early-outs of the casts).
    cell_bounds: ``((nz - 1) * (nx - 1), 2) float64``
        The same, interleaved and flattened row-major (what the ray walk reads).
    clearance: ``(4, L, nbz, nbx, 2) float64``
        :func:`clearance_maps` of the cells (the early-out of short rays), with blocks of
        ``clearance_block(nx - 1, nz - 1)`` cells.
    block_shift, block_bounds:
        :func:`block_bounds` of the cells (the early-out of fans of rays).
    """

    heights: np.ndarray
    x0: float
    z0: float
    dx: float
    dz: float
    layer: int
    cell_min: np.ndarray
    cell_max: np.ndarray
    cell_bounds: np.ndarray
    clearance: np.ndarray
    block_shift: int
    block_bounds: np.ndarray

    @staticmethod
    def from_heights(heights: np.ndarray, x_min: float, z_min: float, x_max: float, z_max: float,
                     layer: int = 0) -> "Heightfield":
        """Wrap a ``(nz, nx)`` height grid spanning ``[x_min, x_max] x [z_min, z_max]``."""
        h = np.ascontiguousarray(heights, dtype=np.float64)
        if h.ndim != 2 or h.shape[0] < 2 or h.shape[1] < 2:
            raise ValueError(f"heights must be a 2D grid of at least 2 x 2 samples, got shape {h.shape}")
        if not np.all(np.isfinite(h)):
            raise ValueError("heights contain non-finite values")
        if not (x_max > x_min and z_max > z_min):
            raise ValueError("the terrain rectangle must have x_max > x_min and z_max > z_min")
        corners = np.stack([h[:-1, :-1], h[:-1, 1:], h[1:, :-1], h[1:, 1:]])
        cell_min = np.ascontiguousarray(corners.min(axis=0))
        cell_max = np.ascontiguousarray(corners.max(axis=0))
        shift, blocks = block_bounds(cell_min, cell_max)
        return Heightfield(
            heights=h,
            x0=float(x_min),
            z0=float(z_min),
            dx=(x_max - x_min) / (h.shape[1] - 1),
            dz=(z_max - z_min) / (h.shape[0] - 1),
            layer=int(layer),
            cell_min=cell_min,
            cell_max=cell_max,
            cell_bounds=np.ascontiguousarray(np.stack([cell_min.ravel(), cell_max.ravel()], axis=1)),
            clearance=clearance_maps(cell_min, cell_max),
            block_shift=shift,
            block_bounds=blocks,
        )

    @property
    def shape(self) -> tuple[int, int]:
        """``(nz, nx)`` samples."""
        return self.heights.shape  # type: ignore[return-value]

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` corners of the terrain's bounding box, ``(3,)`` float64 each."""
        nz, nx = self.heights.shape
        lo = np.array([self.x0, self.heights.min(), self.z0])
        hi = np.array([self.x0 + (nx - 1) * self.dx, self.heights.max(), self.z0 + (nz - 1) * self.dz])
        return lo, hi

    def height_and_normal_at(self, x, z) -> tuple[np.ndarray, np.ndarray]:
        """Heights ``(n,)`` and unit normals ``(n, 3)`` at the points ``(x, z)`` (arrays or scalars);
        the height is ``nan`` outside the rectangle."""
        xs = np.ascontiguousarray(np.atleast_1d(x), dtype=np.float64).ravel()
        zs = np.ascontiguousarray(np.atleast_1d(z), dtype=np.float64).ravel()
        xs, zs = np.broadcast_arrays(xs, zs)
        xs = np.ascontiguousarray(xs)
        zs = np.ascontiguousarray(zs)
        out_h = np.empty(xs.shape[0])
        out_n = np.empty((xs.shape[0], 3))
        _heights_and_normals(self.heights, self.x0, self.z0, self.dx, self.dz, xs, zs, out_h, out_n)
        return out_h, out_n

    def height_at(self, x, z):
        """Surface height (metres) at ``(x, z)``; ``nan`` outside the rectangle.  Scalars give a float."""
        h, _ = self.height_and_normal_at(x, z)
        return float(h[0]) if np.ndim(x) == 0 and np.ndim(z) == 0 else h

    def normal_at(self, x, z):
        """Unit upward surface normal at ``(x, z)``: ``(3,)`` for scalars, else ``(n, 3)``."""
        _, n = self.height_and_normal_at(x, z)
        return n[0] if np.ndim(x) == 0 and np.ndim(z) == 0 else n
