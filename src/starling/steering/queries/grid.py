"""Uniform-grid neighbour search: the default method behind ``find_neighbors``.

Design notes (thesis 5.3.2 and 9.5.3, DESIGN.md section 7)
-----------------------------------------------------------

A step asks, for every animal *i*, "which animals *j* lie within ``max_distance``
of me, inside my field of view, and which *k* of those are nearest?".  The
answer must be exact (the brute-force oracle in ``brute.py`` is the definition)
and cheap enough for a million animals per frame.  This module answers it with
a uniform grid that is thrown away and rebuilt on every call.

*Why rebuild instead of update.*  Animals move every step, so an incremental
structure pays bookkeeping on every move.  A counting sort over cell ids is two
linear passes (histogram, then scatter) and touches memory in a predictable
way, so rebuilding costs less than a per-animal update and there is no state to
go stale between steps.

*Why a dense grid first.*  The thesis (5.3.2) prefers a hashed sparse grid so a
user never has to declare a bounding box.  We get the same freedom by sizing a
dense grid from the bounding box of the targets at every call, so it always
fits; a flat array of cell starts is faster to index than a hash table.  Only
when that box is huge compared with the search radius (a straggler a hundred
kilometres away from its flock) would the dense grid need too many cells; then
the cells are enlarged a little or, past that, the same counting sort is run
over the buckets of a spatial hash and only occupied cells cost memory.

*Why cell order ("coherent" layout).*  The scatter pass copies every target's
position into a buffer sorted by cell, so the animals of one cell are adjacent
in memory, and the cells of one x-row are adjacent too (cell id grows fastest
along x).  A query therefore reads a few contiguous runs instead of chasing
indices.  Queries are issued in the same cell order, so consecutive queries
touch the same runs and stay in cache; this is what makes a million animals
affordable.

*Rows, not cells.*  For a query point the grid visits the (y, z) rows whose
cells can reach the search sphere; inside such a row the sphere's chord fixes
the x extent, so the whole row is one contiguous run of targets (two when the
row wraps around a periodic box).  This replaces the classical 27-cell stencil
by at most nine short runs, skips rows that cannot touch the sphere, and makes
the cell size choice (``CELL_SCALE``) mostly a question of how tightly the runs
hug the sphere.

*Exactness.*  Pruning (which rows and x extents to visit) is done in float64
with a slightly inflated radius, so it can only visit too much, never too
little.  Every visited candidate then goes through the single pair predicate
defined below (float32 offset, minimum image, squared distance, cosine field of
view test), the same one the k-d tree path uses and that ``brute.py`` restates
in NumPy.  Kept neighbours go into an insertion-sorted buffer of length k keyed
by (distance, target index), so the result does not depend on the order in
which candidates were met, nor on the number of threads.

*Threads.*  Each query writes only its own output row, so queries run in a
``prange`` without locks.  Starting Numba's thread pool costs tens of
microseconds, so small populations use a serial kernel (``SERIAL_QUERY_MAX``).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit, prange

__all__ = [
    "CELL_SCALE",
    "SERIAL_QUERY_MAX",
    "GridIndex",
    "minimum_image",
    "query_thresholds",
    "wrap_offset",
]

# Cell width as a multiple of the search radius.  With row runs (see module
# docstring) the width mostly controls how far a run overshoots the sphere along
# x and how many rows are visited; 1.0 measured best at the benchmark density
# (0.01 animals per cubic metre, r = 5 m) and within a few percent elsewhere.
CELL_SCALE = 1.0
# Queries up to this many animals run in a serial kernel: below it the start-up
# cost of the parallel region is larger than the work it would split.
SERIAL_QUERY_MAX = 4096
# Counting sorts of at least this many points use the parallel histogram.
PARALLEL_BUILD_MIN = 200_000
# Dense grids may have up to this many cells per point (plus a floor) before
# the grid switches to larger cells or hashing.
_CELLS_PER_POINT = 8
_MIN_CELL_CAP = 1 << 15
_MAX_DENSE_CELLS = 1 << 26
# Hash mode packs the three cell coordinates into one int64, 21 bits each.
_HASH_COORD_LIMIT = (1 << 21) - 1
_HASH_MULT = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15, Fibonacci hashing

_MODE_DENSE = 0
_MODE_HASH = 1


# ---------------------------------------------------------------------------
# Pair primitives.  The one compiled definition of "j is a neighbour of i",
# shared by the grid and the k-d tree kernels.  All arithmetic is float32 in a
# fixed order so that every method produces bit-identical distances.
# ---------------------------------------------------------------------------


@njit(cache=True, inline="always")
def wrap_offset(offset, length):
    """Minimum-image version of one offset component.

    ``offset`` is ``p_j - p_i`` along one axis and ``length`` that axis' period.
    A ``length`` of 0 or infinity means the axis does not wrap and the offset is
    returned unchanged.  Uses ``offset - length * rint(offset / length)``, which
    is exact for the usual case of both points inside ``[0, length)`` and stays
    correct for points outside it.  Pass float32 values to match the neighbour
    queries bit for bit (the queries do all pair arithmetic in float32).
    """
    if length > 0 and length < np.inf:
        return offset - length * np.rint(offset / length)
    return offset


@njit(cache=True)
def minimum_image(offset, box):
    """Minimum-image copy of a 3-vector offset in a periodic box.

    ``offset``: (3,) array ``p_j - p_i``; ``box``: (3,) side lengths of the
    wrap-around box over ``[0, L)``, 0 or ``inf`` for an axis that does not
    wrap.  Returns a new (3,) array of ``offset``'s dtype.  Behaviours should
    use this (or ``wrap_offset`` per component, which allocates nothing) so their
    offsets agree with the neighbour query; with float32 inputs, and ``box`` as
    normalised by ``neighbors.normalize_box``, the result is bit-identical to the
    offsets the query measured.
    """
    out = np.empty(3, dtype=offset.dtype)
    for a in range(3):
        out[a] = wrap_offset(offset[a], box[a])
    return out


@functools.lru_cache(maxsize=512)
def query_thresholds(max_distance: float, fov_deg: float) -> tuple[np.float32, np.float32, bool]:
    """Float32 thresholds that implement the contract's inclusive tests.

    Returns ``(r2, cos_limit, sees_all)``:

    * ``r2`` is the largest float32 ``d2`` whose float32 square root is still
      ``<= max_distance``; since a correctly rounded square root is monotone,
      ``d2 <= r2`` holds exactly when the reported distance satisfies
      ``distance <= max_distance`` (thesis eq. 5.1 without the square root, yet
      consistent with the distance we report).
    * ``cos_limit`` is ``cos(fov / 2)`` lowered by 2**-20 so that a neighbour
      lying exactly on the edge of the field of view (45 degrees on a lattice,
      say) is inside despite float32 rounding; the test is
      ``forward . offset >= cos_limit * |forward| * |offset|`` (thesis eq. 5.2,
      no arccos).  The slack widens the half-angle by about 1e-6 rad (more for
      very narrow fields of view: 1 % at fov = 1 degree).
    * ``sees_all`` is true for ``fov_deg >= 360``: the test is skipped.
    """
    r = float(max_distance)
    r2 = np.float32(r * r)
    inf32 = np.float32(np.inf)
    while r2 > 0 and float(np.sqrt(r2)) > r:
        r2 = np.nextafter(r2, np.float32(0))
    while True:
        nxt = np.nextafter(r2, inf32)
        if not np.isfinite(nxt) or float(np.sqrt(nxt)) > r:
            break
        r2 = nxt
    sees_all = float(fov_deg) >= 360.0
    cos_limit = np.float32(math.cos(math.radians(float(fov_deg) / 2.0)) - 2.0**-20)
    return np.float32(r2), cos_limit, sees_all


@njit(cache=True, inline="always")
def _fov_threshold(fx, fy, fz, cos_limit):
    """Per-animal FOV threshold ``cos_limit * |forward|`` (0 for a zero forward)."""
    return cos_limit * math.sqrt(fx * fx + fy * fy + fz * fz)


@njit(cache=True, inline="always")
def _offer(out_index, out_distance, i, count, k, dist, j):
    """Offer candidate ``(dist, j)`` to row ``i``'s sorted top-k buffer.

    The row is kept sorted by (distance, target index), so the k smallest keys
    survive whatever order candidates arrive in.  Returns the new fill count.
    """
    if count < k:
        pos = count
        count += 1
    else:
        last_d = out_distance[i, k - 1]
        if dist > last_d or (dist == last_d and j > out_index[i, k - 1]):
            return count
        pos = k - 1
    while pos > 0:
        prev_d = out_distance[i, pos - 1]
        if prev_d > dist or (prev_d == dist and out_index[i, pos - 1] > j):
            out_distance[i, pos] = prev_d
            out_index[i, pos] = out_index[i, pos - 1]
            pos -= 1
        else:
            break
    out_distance[i, pos] = dist
    out_index[i, pos] = j
    return count


@njit(cache=True, inline="always")
def _finish_row(out_index, out_distance, out_count, out_overflow, i, count, total, k):
    """Pad row ``i`` after its last neighbour and record count and overflow."""
    for s in range(count, k):
        out_index[i, s] = -1
        out_distance[i, s] = np.inf
    out_count[i] = count
    out_overflow[i] = total - count


@njit(cache=True, inline="always")
def _scan_run(
    s0, s1, px, py, pz, fx, fy, fz, thr, tpos, torder, box, r2, sees_all, excl,
    k, out_index, out_distance, i, count, total,
):
    """Test the contiguous run ``tpos[s0:s1]`` of cell-ordered targets against animal ``i``.

    This is the hot loop: float32 offset with minimum image, squared distance
    against ``r2`` first (cheap rejection, no square root), then the self test,
    then the cosine field of view test, then insertion.
    """
    bx = box[0]
    by = box[1]
    bz = box[2]
    for u in range(s0, s1):
        ox = wrap_offset(tpos[u, 0] - px, bx)
        oy = wrap_offset(tpos[u, 1] - py, by)
        oz = wrap_offset(tpos[u, 2] - pz, bz)
        d2 = ox * ox + oy * oy + oz * oz
        if d2 <= r2:
            j = torder[u]
            if j == excl:
                continue
            dist = math.sqrt(d2)
            if sees_all or fx * ox + fy * oy + fz * oz >= thr * dist:
                total += 1
                count = _offer(out_index, out_distance, i, count, k, dist, j)
    return count, total


# ---------------------------------------------------------------------------
# Grid geometry helpers.  ``geom`` (float64) holds per axis: origin [0:3], cell
# width [3:6], inverse width [6:9], ring length [9:12] (0 = the grid does not
# wrap on that axis).  ``idim`` (int64) holds dims [0:3], mode [3], hash mask
# [4], number of cells or buckets [5], hash table bits [6].
# ---------------------------------------------------------------------------


@njit(cache=True)
def _bbox(pos, out):
    """Bounding box of the finite coordinates of ``pos`` into ``out`` (6,): lo then hi."""
    for a in range(3):
        out[a] = np.inf
        out[3 + a] = -np.inf
    for j in range(pos.shape[0]):
        for a in range(3):
            v = pos[j, a]
            if v < out[a] and v > -np.inf:
                out[a] = v
            if v > out[3 + a] and v < np.inf:
                out[3 + a] = v


@njit(cache=True, inline="always")
def _axis_cell(v, a, geom, n):
    """Cell coordinate of coordinate ``v`` on axis ``a``: wrapped on a ring, clamped otherwise.

    Non-finite input lands in cell 0 (it can never pass the distance test).
    """
    ring = geom[9 + a]
    if ring > 0.0:
        v = v - ring * math.floor(v / ring)
        f = v * geom[6 + a]
    else:
        f = (v - geom[a]) * geom[6 + a]
    if f >= 0.0:
        if f < n:
            return np.int64(f)
        return n - 1
    return np.int64(0)


@njit(cache=True, inline="always")
def _hash_bucket(key, mask, shift):
    """Fibonacci hash of a packed cell key into ``[0, mask]``."""
    return ((key * _HASH_MULT) >> shift) & mask


@njit(cache=True, inline="always")
def _cell_key(x, y, z, geom, idim):
    """Dense cell id, or packed hash key, of a point (see ``_counting_sort``)."""
    cx = _axis_cell(x, 0, geom, idim[0])
    cy = _axis_cell(y, 1, geom, idim[1])
    cz = _axis_cell(z, 2, geom, idim[2])
    if idim[3] == _MODE_DENSE:
        return (cz * idim[1] + cy) * idim[0] + cx
    return cx | (cy << 21) | (cz << 42)


@njit(cache=True)
def _counting_sort(pos, geom, idim, start, cursor, cell_of, order, sorted_pos, sorted_key):
    """Serial stable counting sort of ``pos`` into cell order.

    Writes ``start`` (cells + 1 prefix sums), ``order`` (sorted slot -> original
    index), ``sorted_pos`` (the positions gathered into cell order) and, in hash
    mode, ``sorted_key`` (each slot's packed cell key, to reject hash collisions).
    """
    m = pos.shape[0]
    nc = idim[5]
    mode = idim[3]
    mask = idim[4]
    shift = 64 - idim[6]
    for c in range(nc + 1):
        start[c] = 0
    for j in range(m):
        key = _cell_key(pos[j, 0], pos[j, 1], pos[j, 2], geom, idim)
        if mode == _MODE_HASH:
            sorted_key[j] = key  # staged here, permuted below
            c = _hash_bucket(key, mask, shift)
        else:
            c = key
        cell_of[j] = c
        start[c + 1] += 1
    for c in range(nc):
        start[c + 1] += start[c]
    for c in range(nc):
        cursor[c] = start[c]
    for j in range(m):
        c = cell_of[j]
        u = cursor[c]
        cursor[c] = u + 1
        order[u] = j
    for u in range(m):
        j = order[u]
        sorted_pos[u, 0] = pos[j, 0]
        sorted_pos[u, 1] = pos[j, 1]
        sorted_pos[u, 2] = pos[j, 2]
    if mode == _MODE_HASH:
        for u in range(m):
            cell_of[u] = sorted_key[order[u]]
        for u in range(m):
            sorted_key[u] = cell_of[u]


@njit(cache=True, parallel=True)
def _counting_sort_parallel(pos, geom, idim, start, cursor, cell_of, order, sorted_pos, sorted_key):
    """Counting sort with the key computation and the gather spread over threads.

    The histogram and the scatter of indices stay serial (they are a small part
    of the cost and keep the sort stable); the result is identical to
    ``_counting_sort``.
    """
    m = pos.shape[0]
    nc = idim[5]
    mode = idim[3]
    mask = idim[4]
    shift = 64 - idim[6]
    for j in prange(m):
        key = _cell_key(pos[j, 0], pos[j, 1], pos[j, 2], geom, idim)
        if mode == _MODE_HASH:
            sorted_key[j] = key
            cell_of[j] = _hash_bucket(key, mask, shift)
        else:
            cell_of[j] = key
    for c in range(nc + 1):
        start[c] = 0
    for j in range(m):
        start[cell_of[j] + 1] += 1
    for c in range(nc):
        start[c + 1] += start[c]
    for c in range(nc):
        cursor[c] = start[c]
    for j in range(m):
        c = cell_of[j]
        u = cursor[c]
        cursor[c] = u + 1
        order[u] = j
    for u in prange(m):
        j = order[u]
        sorted_pos[u, 0] = pos[j, 0]
        sorted_pos[u, 1] = pos[j, 1]
        sorted_pos[u, 2] = pos[j, 2]
    if mode == _MODE_HASH:
        for u in prange(m):
            cell_of[u] = sorted_key[order[u]]
        for u in prange(m):
            sorted_key[u] = cell_of[u]


@njit(cache=True, inline="always")
def _axis_range(v, rp, a, geom, n):
    """Cells of axis ``a`` that a sphere of radius ``rp`` around ``v`` can touch.

    Returns ``(lo, hi, vv, full)``: unwrapped cell indices ``lo..hi`` (on a ring
    they may fall outside ``0..n-1`` and are wrapped by the caller), the
    coordinate ``vv`` in the frame the cell edges are measured in, and ``full``
    when the range covers the whole ring (then every cell is visited once and no
    pruning is done on this axis).  ``lo > hi`` means nothing is in reach.
    """
    v = float(v)
    ring = geom[9 + a]
    inv = geom[6 + a]
    if ring > 0.0:
        if not (v > -np.inf and v < np.inf):
            return np.int64(1), np.int64(0), v, False
        if 2.0 * rp >= ring:
            return np.int64(0), n - 1, v, True
        vv = v - ring * math.floor(v / ring)
        lo = np.int64(math.floor((vv - rp) * inv))
        hi = np.int64(math.floor((vv + rp) * inv))
        if hi - lo + 1 >= n:
            return np.int64(0), n - 1, vv, True
        return lo, hi, vv, False
    flo = (v - rp - geom[a]) * inv
    fhi = (v + rp - geom[a]) * inv
    if not (fhi >= 0.0 and flo < n):
        return np.int64(1), np.int64(0), v, False
    lo = np.int64(0)
    if flo > 0.0:
        lo = np.int64(flo)
    hi = n - 1
    if fhi < n:
        hi = np.int64(fhi)
    return lo, hi, v, False


@njit(cache=True, inline="always")
def _gap(vv, c, a, geom, full):
    """Distance from ``vv`` to the slab of unwrapped cell ``c`` on axis ``a`` (0 inside)."""
    if full:
        return 0.0
    w = geom[3 + a]
    edge_lo = geom[a] + c * w if geom[9 + a] == 0.0 else c * w
    if vv < edge_lo:
        return edge_lo - vv
    edge_hi = edge_lo + w
    if vv > edge_hi:
        return vv - edge_hi
    return 0.0


@njit(cache=True, inline="always")
def _query_one_dense(
    i, px, py, pz, fx, fy, fz, thr, tpos, torder, start, geom, idim, box, r2, rp,
    sees_all, excl, k, out_index, out_distance,
):
    """All candidates of animal ``i`` in a dense grid, visited as x-row runs."""
    nx = idim[0]
    ny = idim[1]
    nz = idim[2]
    count = 0
    total = 0
    ylo, yhi, yv, yfull = _axis_range(py, rp, 1, geom, ny)
    zlo, zhi, zv, zfull = _axis_range(pz, rp, 2, geom, nz)
    if ylo > yhi or zlo > zhi:
        return count, total
    xring = geom[9] > 0.0
    rp2 = rp * rp
    for czu in range(zlo, zhi + 1):
        gz = _gap(zv, czu, 2, geom, zfull)
        rem_z = rp2 - gz * gz
        if rem_z < 0.0:
            continue
        cz = czu % nz
        for cyu in range(ylo, yhi + 1):
            gy = _gap(yv, cyu, 1, geom, yfull)
            rem = rem_z - gy * gy
            if rem < 0.0:
                continue
            cy = cyu % ny
            base = (cz * ny + cy) * nx
            xlo, xhi, xv, xfull = _axis_range(px, math.sqrt(rem), 0, geom, nx)
            if xlo > xhi:
                continue
            if xring and not xfull and (xlo < 0 or xhi >= nx):
                # The chord crosses the periodic seam: two runs.
                if xlo < 0:
                    a0 = xlo + nx
                    b0 = nx - 1
                    a1 = np.int64(0)
                    b1 = xhi
                else:
                    a0 = xlo
                    b0 = nx - 1
                    a1 = np.int64(0)
                    b1 = xhi - nx
                count, total = _scan_run(
                    start[base + a0], start[base + b0 + 1], px, py, pz, fx, fy, fz, thr,
                    tpos, torder, box, r2, sees_all, excl, k, out_index, out_distance,
                    i, count, total,
                )
                count, total = _scan_run(
                    start[base + a1], start[base + b1 + 1], px, py, pz, fx, fy, fz, thr,
                    tpos, torder, box, r2, sees_all, excl, k, out_index, out_distance,
                    i, count, total,
                )
            else:
                count, total = _scan_run(
                    start[base + xlo], start[base + xhi + 1], px, py, pz, fx, fy, fz, thr,
                    tpos, torder, box, r2, sees_all, excl, k, out_index, out_distance,
                    i, count, total,
                )
    return count, total


@njit(cache=True, inline="always")
def _query_one_hash(
    i, px, py, pz, fx, fy, fz, thr, tpos, torder, tkey, start, geom, idim, box, r2, rp,
    sees_all, excl, k, out_index, out_distance,
):
    """All candidates of animal ``i`` in a hashed grid, visited cell by cell.

    Slots whose stored key differs from the visited cell's key belong to another
    cell that shares the bucket and are skipped, so no target is seen twice.
    """
    nx = idim[0]
    ny = idim[1]
    nz = idim[2]
    mask = idim[4]
    shift = 64 - idim[6]
    count = 0
    total = 0
    xlo, xhi, xv, xfull = _axis_range(px, rp, 0, geom, nx)
    ylo, yhi, yv, yfull = _axis_range(py, rp, 1, geom, ny)
    zlo, zhi, zv, zfull = _axis_range(pz, rp, 2, geom, nz)
    if xlo > xhi or ylo > yhi or zlo > zhi:
        return count, total
    rp2 = rp * rp
    bx = box[0]
    by = box[1]
    bz = box[2]
    for czu in range(zlo, zhi + 1):
        gz = _gap(zv, czu, 2, geom, zfull)
        rem_z = rp2 - gz * gz
        if rem_z < 0.0:
            continue
        cz = czu % nz
        for cyu in range(ylo, yhi + 1):
            gy = _gap(yv, cyu, 1, geom, yfull)
            rem_y = rem_z - gy * gy
            if rem_y < 0.0:
                continue
            cy = cyu % ny
            for cxu in range(xlo, xhi + 1):
                gx = _gap(xv, cxu, 0, geom, xfull)
                if gx * gx > rem_y:
                    continue
                cx = cxu % nx
                key = cx | (cy << 21) | (cz << 42)
                b = _hash_bucket(key, mask, shift)
                for u in range(start[b], start[b + 1]):
                    if tkey[u] != key:
                        continue
                    ox = wrap_offset(tpos[u, 0] - px, bx)
                    oy = wrap_offset(tpos[u, 1] - py, by)
                    oz = wrap_offset(tpos[u, 2] - pz, bz)
                    d2 = ox * ox + oy * oy + oz * oz
                    if d2 <= r2:
                        j = torder[u]
                        if j == excl:
                            continue
                        dist = math.sqrt(d2)
                        if sees_all or fx * ox + fy * oy + fz * oz >= thr * dist:
                            total += 1
                            count = _offer(out_index, out_distance, i, count, k, dist, j)
    return count, total


@njit(cache=True, inline="always")
def _query_row(
    t, spos, sorder, sfwd, tpos, torder, tkey, start, geom, idim, box, r2, rp, cos_limit,
    sees_all, exclude_self, k, out_index, out_distance, out_count, out_overflow,
):
    """Answer the query of the ``t``-th animal in cell order; writes only its own row."""
    i = sorder[t]
    px = spos[t, 0]
    py = spos[t, 1]
    pz = spos[t, 2]
    fx = sfwd[i, 0]
    fy = sfwd[i, 1]
    fz = sfwd[i, 2]
    thr = _fov_threshold(fx, fy, fz, cos_limit)
    excl = i if exclude_self else -1
    if idim[3] == _MODE_DENSE:
        count, total = _query_one_dense(
            i, px, py, pz, fx, fy, fz, thr, tpos, torder, start, geom, idim, box, r2, rp,
            sees_all, excl, k, out_index, out_distance,
        )
    else:
        count, total = _query_one_hash(
            i, px, py, pz, fx, fy, fz, thr, tpos, torder, tkey, start, geom, idim, box, r2,
            rp, sees_all, excl, k, out_index, out_distance,
        )
    _finish_row(out_index, out_distance, out_count, out_overflow, i, count, total, k)


@njit(cache=True)
def _query_serial(
    spos, sorder, sfwd, tpos, torder, tkey, start, geom, idim, box, r2, rp, cos_limit,
    sees_all, exclude_self, k, out_index, out_distance, out_count, out_overflow,
):
    """Serial query loop over the animals in cell order (small populations)."""
    for t in range(spos.shape[0]):
        _query_row(
            t, spos, sorder, sfwd, tpos, torder, tkey, start, geom, idim, box, r2, rp,
            cos_limit, sees_all, exclude_self, k, out_index, out_distance, out_count,
            out_overflow,
        )


@njit(cache=True, parallel=True)
def _query_parallel(
    spos, sorder, sfwd, tpos, torder, tkey, start, geom, idim, box, r2, rp, cos_limit,
    sees_all, exclude_self, k, out_index, out_distance, out_count, out_overflow,
):
    """Parallel query loop; rows are independent so the result equals the serial one."""
    for t in prange(spos.shape[0]):
        _query_row(
            t, spos, sorder, sfwd, tpos, torder, tkey, start, geom, idim, box, r2, rp,
            cos_limit, sees_all, exclude_self, k, out_index, out_distance, out_count,
            out_overflow,
        )


def _grow(buf: np.ndarray, size: int, shape_tail: tuple = ()) -> np.ndarray:
    """Return ``buf`` if it holds ``size`` rows, else a new buffer with 1.5x headroom."""
    if buf.shape[0] >= size:
        return buf
    cap = max(size, int(buf.shape[0] * 1.5), 16)
    return np.empty((cap,) + shape_tail, dtype=buf.dtype)


class GridIndex:
    """A reusable uniform grid over one target population (thesis 5.3.2).

    ``build`` sorts the targets into cell order; ``query`` answers the
    neighbour query of a population of animals against them.  All buffers live
    on the object and grow by capacity, so repeated calls with unchanged sizes
    allocate nothing.  The grid is rebuilt from scratch on every ``build`` (see
    the module docstring for why).

    Typical use, as ``find_neighbors`` does it::

        grid = GridIndex()
        grid.build(target_position, max_distance, box=box32)
        grid.query(self_position, self_forward, max_distance, fov_deg, k, out..., exclude_self=...)
    """

    def __init__(self) -> None:
        self.geom = np.zeros(12, dtype=np.float64)
        self.idim = np.zeros(8, dtype=np.int64)
        self.start = np.zeros(16, dtype=np.int32)
        self.cursor = np.zeros(16, dtype=np.int32)
        self.cell_of = np.zeros(16, dtype=np.int64)
        self.order = np.zeros(16, dtype=np.int32)
        self.positions = np.zeros((16, 3), dtype=np.float32)
        self.keys = np.zeros(16, dtype=np.int64)
        self.self_order = np.zeros(16, dtype=np.int32)
        self.self_positions = np.zeros((16, 3), dtype=np.float32)
        self.self_keys = np.zeros(16, dtype=np.int64)
        self.self_start = np.zeros(16, dtype=np.int32)
        self._bbox = np.zeros(6, dtype=np.float64)
        self._bbox2 = np.zeros(6, dtype=np.float64)
        self._box = np.zeros(3, dtype=np.float32)
        self._targets: np.ndarray | None = None
        self._m = 0
        self._reach = 0.0
        self.cell_scale = CELL_SCALE

    @property
    def mode(self) -> str:
        """``"dense"`` or ``"hash"``: how the last ``build`` stored its cells."""
        return "dense" if self.idim[3] == _MODE_DENSE else "hash"

    @property
    def dims(self) -> tuple[int, int, int]:
        """Cells per axis of the last ``build``."""
        return int(self.idim[0]), int(self.idim[1]), int(self.idim[2])

    def build(
        self,
        target_position: np.ndarray,
        max_distance: float,
        box: np.ndarray | None = None,
        self_position: np.ndarray | None = None,
    ) -> None:
        """Sort ``target_position`` ((m, 3) float32, C order) into a grid for radius ``max_distance``.

        ``box`` is the normalised periodic box ((3,) float32, 0 for axes that
        do not wrap) or None.  ``self_position`` (optional, (n, 3) float32) is
        the population that will query: its extent decides whether a periodic
        axis can be gridded flat (when the animals occupy much less than the
        period no pair can reach around the seam, so the grid need not span the
        whole box, e.g. the constant y of a 2D simulation).
        """
        m = target_position.shape[0]
        self._m = m
        self._targets = target_position
        box32 = self._box
        if box is None:
            box32[:] = 0.0
        else:
            box32[:] = box
        # Pruning reach: inflated so float32 rounding of the exact test can never
        # accept a pair the grid did not visit.
        _bbox(target_position, self._bbox)
        lo_t = self._bbox[:3]
        hi_t = self._bbox[3:]
        lo_u = lo_t.copy()
        hi_u = hi_t.copy()
        if self_position is not None and self_position is not target_position and self_position.shape[0]:
            _bbox(self_position, self._bbox2)
            np.minimum(lo_u, self._bbox2[:3], out=lo_u)
            np.maximum(hi_u, self._bbox2[3:], out=hi_u)
        mag = 0.0
        for v in (lo_u, hi_u, box32):
            for x in v:
                if math.isfinite(x):
                    mag = max(mag, abs(float(x)))
        r = float(max_distance)
        reach = r * (1.0 + 2.0**-16) + mag * 2.0**-18 + 1e-30
        self._reach = reach
        w = max(r * self.cell_scale, reach * 0.5, 1e-30)
        geom = self.geom
        dims = [1, 1, 1]
        ring = [0.0, 0.0, 0.0]
        origin = [0.0, 0.0, 0.0]
        extent = [0.0, 0.0, 0.0]
        for a in range(3):
            L = float(box32[a])
            lo = float(lo_t[a]) if math.isfinite(lo_t[a]) else 0.0
            hi = float(hi_t[a]) if math.isfinite(hi_t[a]) else lo
            span_u = float(hi_u[a] - lo_u[a]) if math.isfinite(hi_u[a] - lo_u[a]) else 0.0
            if L > 0.0 and span_u >= L - 2.0 * reach:
                ring[a] = L
                extent[a] = L
            else:
                origin[a] = lo
                extent[a] = max(hi - lo, 0.0)

        def layout(width: float) -> tuple[list[int], list[float]]:
            d, ws = [], []
            for a in range(3):
                if ring[a] > 0.0:
                    n = max(1, int(ring[a] / width))
                    d.append(n)
                    ws.append(ring[a] / n)
                else:
                    d.append(int(extent[a] / width) + 1)
                    ws.append(width)
            return d, ws

        cap = min(max(_CELLS_PER_POINT * m, _MIN_CELL_CAP), _MAX_DENSE_CELLS)
        mode = _MODE_DENSE
        cells = 1.0
        for a in range(3):
            cells *= float(ring[a] / w if ring[a] > 0.0 else extent[a] / w + 1.0)
        width = w
        if cells > cap:
            # Enlarge cells a little if that fits; far-flung populations hash.
            ndim = sum(1 for a in range(3) if (ring[a] or extent[a]) > 2.0 * w)
            grow = (cells / cap) ** (1.0 / max(ndim, 1))
            if grow <= 2.0:
                width = w * grow * 1.01
                dims, widths = layout(width)
                while dims[0] * dims[1] * dims[2] > cap:
                    width *= 1.1
                    dims, widths = layout(width)
            else:
                mode = _MODE_HASH
        if mode == _MODE_DENSE:
            dims, widths = layout(width)
            ncells = dims[0] * dims[1] * dims[2]
            nbits = 0
            mask = 0
        else:
            dims, widths = [], []
            for a in range(3):
                if ring[a] > 0.0:
                    n = min(max(1, int(ring[a] / w)), _HASH_COORD_LIMIT)
                    dims.append(n)
                    widths.append(ring[a] / n)
                else:
                    n = int(extent[a] / w) + 1
                    if n > _HASH_COORD_LIMIT:
                        widths.append(extent[a] / (_HASH_COORD_LIMIT - 1))
                        n = _HASH_COORD_LIMIT
                    else:
                        widths.append(w)
                    dims.append(n)
            nbits = max(6, int(math.ceil(math.log2(max(2 * m, 64)))))
            ncells = 1 << nbits
            mask = ncells - 1
        for a in range(3):
            geom[a] = origin[a]
            geom[3 + a] = widths[a]
            geom[6 + a] = 1.0 / widths[a]
            geom[9 + a] = ring[a]
        idim = self.idim
        idim[0:3] = dims
        idim[3] = mode
        idim[4] = mask
        idim[5] = ncells
        idim[6] = nbits
        self.start = _grow(self.start, ncells + 1)
        self.cursor = _grow(self.cursor, ncells)
        self.cell_of = _grow(self.cell_of, m)
        self.order = _grow(self.order, m)
        self.positions = _grow(self.positions, m, (3,))
        self.keys = _grow(self.keys, m)
        sort = _counting_sort_parallel if m >= PARALLEL_BUILD_MIN else _counting_sort
        sort(target_position, geom, idim, self.start, self.cursor, self.cell_of, self.order,
             self.positions, self.keys)

    def query(
        self,
        self_position: np.ndarray,
        self_forward: np.ndarray,
        max_distance: float,
        fov_deg: float,
        k: int,
        out_index: np.ndarray,
        out_distance: np.ndarray,
        out_count: np.ndarray,
        out_overflow: np.ndarray,
        *,
        exclude_self: bool = False,
    ) -> None:
        """Neighbours of every animal in ``self_position`` among the built targets.

        ``self_position``/``self_forward``: (n, 3) float32, C order.
        ``max_distance`` must not exceed the radius given to ``build``.  Writes
        the (n, k) ``out_index`` (int32, -1 padded) and ``out_distance``
        (float32, +inf padded) rows sorted by (distance, index), and the (n,)
        int32 ``out_count`` and ``out_overflow``.  If ``self_position`` is the
        very array that was built, the build's cell order is reused for the
        query order; otherwise the animals are counting-sorted into the same
        grid first so that consecutive queries read neighbouring memory.
        """
        n = self_position.shape[0]
        if max_distance * (1.0 + 2.0**-17) > self._reach:
            raise ValueError("query radius exceeds the radius the grid was built for")
        r2, cos_limit, sees_all = query_thresholds(float(max_distance), float(fov_deg))
        if self_position is self._targets:
            spos = self.positions
            sorder = self.order
        else:
            self.self_order = _grow(self.self_order, n)
            self.self_positions = _grow(self.self_positions, n, (3,))
            self.self_keys = _grow(self.self_keys, n)
            self.self_start = _grow(self.self_start, int(self.idim[5]) + 1)
            self.cell_of = _grow(self.cell_of, n)
            sort = _counting_sort_parallel if n >= PARALLEL_BUILD_MIN else _counting_sort
            sort(self_position, self.geom, self.idim, self.self_start, self.cursor, self.cell_of,
                 self.self_order, self.self_positions, self.self_keys)
            spos = self.self_positions
            sorder = self.self_order
        kernel = _query_serial if n <= SERIAL_QUERY_MAX else _query_parallel
        kernel(
            spos[:n] if spos.shape[0] != n else spos, sorder, self_forward, self.positions,
            self.order, self.keys, self.start, self.geom, self.idim, self._box, r2,
            self._reach, cos_limit, sees_all, exclude_self, k, out_index, out_distance,
            out_count, out_overflow,
        )
