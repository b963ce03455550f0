"""The uniform grid's plan and build: cell geometry, and the counting sort into cell order.

``_plan`` sizes a grid from the bounding box of the animals at every call, so
it always fits: a dense grid of cells about one search radius wide (half a
radius in a crowd); cells enlarged a little when the box is huge compared
with the radius; past that, a spatial hash whose buckets only cost memory
where animals are.  A wrapping axis becomes a ring of cells, or is gridded
flat when no pair can reach across its seam.  The pruning radius (the
"reach") is inflated slightly (``_REACH_REL``, ``_REACH_ABS``), so pruning can
only visit too much, never too little, of what the float32 pair test accepts.

The counting sort then gathers positions (and forwards) into cell (or
bucket) order, so the animals of one cell, and the cells of one x-row, are
adjacent in memory.  The inlined cell helpers (``_axis_cell``,
``_hash_bucket``, ``_axis_range``, ``_gap``, ``_wrap_cell``) are shared with
the query kernel in ``grid_query``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .candidates import _serial_and_parallel

# A grid whose cells hold this many targets on average is rebuilt with cells of
# DENSE_CELL_SCALE radii: in the murmuration (10 birds per cell) the query then takes
# 20 % less time, in Vicsek's dense bands (4 per cell) 10 % less; at 1.4 per cell (the
# fish tank, the flocking bench) wider cells are faster.  ``_plan`` reads both when it
# compiles; ``grid`` re-exports them with its other tuning constants.
DENSE_OCCUPANCY = 3.0
DENSE_CELL_SCALE = 0.5
# A dense grid may have this many cells per target (plus a floor) before the
# grid switches to larger cells or to hashing.
_CELLS_PER_POINT = 8
_MIN_CELL_CAP = 1 << 15
_MAX_DENSE_CELLS = 1 << 26
# Hash mode packs the three cell coordinates into one int64, 21 bits each.
_HASH_COORD_LIMIT = (1 << 21) - 1
_HASH_MULT = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15, Fibonacci hashing
_MODE_DENSE = 0
_MODE_HASH = 1
# Relative and absolute (per unit of coordinate magnitude) inflation of the
# pruning radius; float32 rounding of the exact pair test is far below both.
_REACH_REL = 2.0**-16
_REACH_ABS = 2.0**-18


# ---------------------------------------------------------------------------
# Grid geometry.  ``geom`` (float64, 12): per axis origin [0:3], cell width
# [3:6], inverse width [6:9], ring length [9:12] (0: the grid does not wrap on
# that axis).  ``idim`` (int64, 10): cells per axis [0:3], mode [3], hash mask
# [4], number of cells or buckets [5], hash bits [6], and per axis [7:10]
# whether a seam-free run may skip the minimum image (see ``_plan``).
# ---------------------------------------------------------------------------

# An axis along which every animal lies within this share of the period (a planar
# world's height) is gridded as a plain axis, though the world wraps there: no
# pair's offset along it reaches half a period, so its minimum image is the offset
# itself (bit for bit: the rounded quotient is 0), and rows skip the image code.
_FLAT_SPAN = 0.45


@njit(cache=True, no_cfunc_wrapper=True)
def _bbox(pos, out, at):
    """Bounding box of the finite coordinates of ``pos`` into ``out[at:at+6]`` (lo, then hi)."""
    for a in range(3):
        out[at + a] = np.inf
        out[at + 3 + a] = -np.inf
    for j in range(pos.shape[0]):
        for a in range(3):
            v = pos[j, a]
            if v < out[at + a] and v > -np.inf:
                out[at + a] = v
            if v > out[at + 3 + a] and v < np.inf:
                out[at + 3 + a] = v


@njit(cache=True, no_cfunc_wrapper=True)
def _dense_cells(width, ring, extent):
    """Number of cells (as a float, it may be astronomically large) of a dense grid."""
    cells = 1.0
    for a in range(3):
        if ring[a] > 0.0:
            cells *= max(1.0, np.floor(ring[a] / width))
        else:
            cells *= np.floor(extent[a] / width) + 1.0
    return cells


@njit(cache=True, no_cfunc_wrapper=True)
def _plan(tpos, spos, use_spos, box, r, scale, bbox, geom, idim):
    """Choose the grid for targets ``tpos`` queried by ``spos`` at radius ``r``; returns the reach.

    Writes ``geom`` and ``idim`` (layout above).  Decisions, per axis:

    * a wrapping axis whose animals (targets and, if ``use_spos``, queriers)
      span less than the period minus twice the reach can never produce a pair
      across the seam; it is gridded flat over the targets' extent, which keeps
      e.g. the constant y of a 2D world to one cell;
    * otherwise a wrapping axis is a ring of ``floor(L / w)`` cells of width
      ``L / dims >= w``, starting at the animals' minimum coordinate;
    * a non-wrapping axis spans the targets' extent from their minimum.

    Cells are ``scale`` radii wide, or ``DENSE_CELL_SCALE`` radii when the
    targets would average ``DENSE_OCCUPANCY`` or more per cell (a crowd).
    When the dense cell count would exceed about ``8 m`` the cells grow (up to
    twice) or, for extents far larger than the flock, the grid hashes.  The
    reach is the radius inflated by ``_REACH_REL`` and by ``_REACH_ABS`` times
    the largest coordinate, so pruning can never miss a pair the float32 test
    accepts.
    """
    m = tpos.shape[0]
    _bbox(tpos, bbox, 0)
    for a in range(6):
        bbox[12 + a] = bbox[a]
    if use_spos:
        _bbox(spos, bbox, 6)
        for a in range(3):
            bbox[12 + a] = min(bbox[12 + a], bbox[6 + a])
            bbox[15 + a] = max(bbox[15 + a], bbox[9 + a])
    mag = 0.0
    for a in range(3):
        for v in (bbox[12 + a], bbox[15 + a], np.float64(box[a])):
            if abs(v) < np.inf:
                mag = max(mag, abs(v))
    reach = r * (1.0 + _REACH_REL) + mag * _REACH_ABS + 1e-30
    w = max(r * scale, reach * 0.5)
    # Scratch views of ``bbox`` (no allocation): ring lengths, origins, extents.
    ring = bbox[18:21]
    origin = bbox[21:24]
    extent = bbox[24:27]
    inside = bbox[27:30]
    for a in range(3):
        ring[a] = 0.0
        origin[a] = 0.0
        inside[a] = 0.0
        L = np.float64(box[a])
        lo = bbox[a] if abs(bbox[a]) < np.inf else 0.0
        hi = bbox[3 + a] if abs(bbox[3 + a]) < np.inf else lo
        ulo = bbox[12 + a]
        uhi = bbox[15 + a]
        span = uhi - ulo if (abs(ulo) < np.inf and abs(uhi) < np.inf) else 0.0
        if L > 0.0 and span >= L - 2.0 * reach and span > _FLAT_SPAN * L:
            # The ring's frame starts at the animals' minimum, so a world whose
            # box is [b, b + L) rather than [0, L) keeps the seam-free fast path.
            ring[a] = L
            extent[a] = L
            origin[a] = ulo if abs(ulo) < np.inf else 0.0
            inside[a] = 1.0 if span < L else 0.0
        else:
            origin[a] = lo
            extent[a] = max(hi - lo, 0.0)
    cap = min(max(_CELLS_PER_POINT * m, _MIN_CELL_CAP), _MAX_DENSE_CELLS)
    mode = _MODE_DENSE
    width = w
    cells = _dense_cells(width, ring, extent)
    if scale >= 2.0 * DENSE_CELL_SCALE and m >= DENSE_OCCUPANCY * cells:
        # a crowd (a murmuration, a school): narrower cells scan fewer candidates
        # than they add rows to visit
        w = max(r * DENSE_CELL_SCALE, reach * 0.5)
        width = w
        cells = _dense_cells(width, ring, extent)
    if cells > cap:
        ndim = 0
        for a in range(3):
            if extent[a] > 2.0 * w:
                ndim += 1
        grow = (cells / cap) ** (1.0 / max(ndim, 1))
        if grow <= 2.0:
            width = w * grow * 1.01
            while _dense_cells(width, ring, extent) > cap:
                width *= 1.1
        else:
            mode = _MODE_HASH
    limit = np.inf if mode == _MODE_DENSE else np.float64(_HASH_COORD_LIMIT)
    ncells = 1
    for a in range(3):
        if ring[a] > 0.0:
            n = min(max(1.0, np.floor(ring[a] / width)), limit)
            wa = ring[a] / n
        else:
            n = np.floor(extent[a] / width) + 1.0
            wa = width
            if n > limit:
                n = limit
                wa = extent[a] / (limit - 1.0)
        idim[a] = np.int64(n)
        ncells *= idim[a]
        geom[a] = origin[a]
        geom[3 + a] = wa
        geom[6 + a] = 1.0 / wa
        geom[9 + a] = ring[a]
        # A run that does not cross the seam may skip the minimum image when
        # every coordinate is already inside [0, L) and the reach is well under
        # half a period (then no visited pair can have a shorter image).
        skip = ring[a] > 0.0 and inside[a] > 0.0 and 4.0 * (reach + wa) < ring[a]
        idim[7 + a] = 1 if skip else 0
    idim[3] = mode
    if mode == _MODE_HASH:
        bits = 6
        while (1 << bits) < 2 * m:
            bits += 1
        idim[4] = (1 << bits) - 1
        idim[5] = 1 << bits
        idim[6] = bits
    else:
        idim[4] = 0
        idim[5] = ncells
        idim[6] = 0
    return reach


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _axis_cell(v, origin, inv, ring, n):
    """Cell coordinate of coordinate ``v``: wrapped on a ring, clamped otherwise (NaN -> 0)."""
    v = v - origin
    if ring > 0.0:
        v = v - ring * np.floor(v / ring)
    f = v * inv
    if f >= 0.0:
        if f < n:
            return np.int64(f)
        return n - 1
    return np.int64(0)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _hash_bucket(key, mask, shift):
    """Fibonacci hash of a packed cell key into ``[0, mask]``."""
    return ((key * _HASH_MULT) >> shift) & mask


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _axis_range(v, rp, origin, inv, ring, n):
    """Cells of one axis that a sphere of radius ``rp`` around coordinate ``v`` can touch.

    Returns ``(lo, hi, vv, full)``: unwrapped cell indices ``lo..hi`` (on a ring
    they may leave ``0..n-1`` by at most one period and are wrapped by the
    caller), the coordinate ``vv`` in the frame of the cell edges, and ``full``
    when the range is the whole ring (each cell then visited once, no pruning).
    ``lo > hi`` means nothing is in reach (also for non-finite ``v``).
    """
    v = np.float64(v)
    if ring > 0.0:
        if not (v > -np.inf and v < np.inf):
            return np.int64(1), np.int64(0), v, False
        if 2.0 * rp >= ring:
            return np.int64(0), n - 1, v, True
        d = v - origin
        d = d - ring * np.floor(d / ring)
        lo = np.int64(math.floor((d - rp) * inv))
        hi = np.int64(math.floor((d + rp) * inv))
        if hi - lo + 1 >= n:
            return np.int64(0), n - 1, v, True
        return lo, hi, d + origin, False
    flo = (v - rp - origin) * inv
    fhi = (v + rp - origin) * inv
    if not (fhi >= 0.0 and flo < n):
        return np.int64(1), np.int64(0), v, False
    lo = np.int64(0)
    if flo > 0.0:
        lo = np.int64(flo)
    hi = n - 1
    if fhi < n:
        hi = np.int64(fhi)
    return lo, hi, v, False


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _gap(vv, c, origin, width, full):
    """Distance from ``vv`` to the slab of unwrapped cell ``c`` (0 inside it, or for a full ring).

    Written with ``max`` so that it compiles without branches.
    """
    edge = origin + c * width
    g = max(edge - vv, vv - (edge + width), 0.0)
    return 0.0 if full else g


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _wrap_cell(c, n):
    """Unwrapped ring index (at most one period outside) to ``0..n-1``, without a division."""
    if c < 0:
        return c + n
    if c >= n:
        return c - n
    return c


# ---------------------------------------------------------------------------
# Build: counting sort into cell (or bucket) order.
# ---------------------------------------------------------------------------


def _counting_sort_body(
    pos, fwd, geom, idim, start, counts, cell_of, order, sorted_pos, sorted_fwd,
):
    """Stable counting sort of ``pos`` ((m, 3) float32) into cell order, in chunks.

    Writes ``start`` (prefix sums, cells + 1), ``order`` (sorted slot ->
    original index), ``sorted_pos`` (positions gathered into cell order) and
    ``sorted_fwd`` (``fwd`` gathered the same way, when ``fwd`` has rows).  In
    hash mode the "cells" are the buckets of the packed cell keys.  ``counts``
    is (chunks, cells) scratch: each chunk of consecutive points is
    histogrammed and scattered by its own thread, writing behind the earlier
    chunks in every cell, so the order is the stable one whatever the number
    of chunks or threads.
    """
    m = pos.shape[0]
    nc = idim[5]
    chunks = counts.shape[0]
    size = (m + chunks - 1) // chunks
    hashed = idim[3] == _MODE_HASH
    mask = idim[4]
    shift = 64 - idim[6]
    ox, oy, oz = geom[0], geom[1], geom[2]
    ix, iy, iz = geom[6], geom[7], geom[8]
    rx, ry, rz = geom[9], geom[10], geom[11]
    nx, ny, nz = idim[0], idim[1], idim[2]
    for j in prange(m):
        cx = _axis_cell(np.float64(pos[j, 0]), ox, ix, rx, nx)
        cy = _axis_cell(np.float64(pos[j, 1]), oy, iy, ry, ny)
        cz = _axis_cell(np.float64(pos[j, 2]), oz, iz, rz, nz)
        if hashed:
            cell_of[j] = _hash_bucket(cx | (cy << 21) | (cz << 42), mask, shift)
        else:
            cell_of[j] = (cz * ny + cy) * nx + cx
    for p in prange(chunks):
        for c in range(nc):
            counts[p, c] = 0
        for j in range(p * size, min(m, (p + 1) * size)):
            counts[p, cell_of[j]] += 1
    # Cell starts, and each chunk's first slot in every cell.
    acc = 0
    for c in range(nc):
        start[c] = acc
        for p in range(chunks):
            v = counts[p, c]
            counts[p, c] = acc
            acc += v
    start[nc] = acc
    for p in prange(chunks):
        for j in range(p * size, min(m, (p + 1) * size)):
            c = cell_of[j]
            u = counts[p, c]
            counts[p, c] = u + 1
            order[u] = j
    gather_fwd = fwd.shape[0] == m
    for u in prange(m):
        j = order[u]
        sorted_pos[u, 0] = pos[j, 0]
        sorted_pos[u, 1] = pos[j, 1]
        sorted_pos[u, 2] = pos[j, 2]
        if gather_fwd:
            sorted_fwd[u, 0] = fwd[j, 0]
            sorted_fwd[u, 1] = fwd[j, 1]
            sorted_fwd[u, 2] = fwd[j, 2]


_counting_sort_serial, _counting_sort_parallel = _serial_and_parallel(
    _counting_sort_body, "_counting_sort"
)
