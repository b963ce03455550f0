"""Uniform-grid neighbour search: the default method behind ``find_neighbors``.

Design notes (thesis 5.3.2 and 9.5.3, DESIGN.md section 7)
-----------------------------------------------------------

A step asks, for every animal *i*, "which animals *j* lie within ``max_distance``
of me, inside my field of view, and which *k* of those are nearest?".  The
answer must be exact (the brute-force oracle in ``brute.py`` is the definition)
and cheap enough for a million animals per frame.  This module answers it with
a uniform grid that is thrown away and rebuilt on every call.

*Why rebuild instead of update.*  Animals move every step, so an incremental
structure pays bookkeeping on every move.  A counting sort over cell ids is a
histogram and a scatter over memory in a predictable pattern, so rebuilding
costs less than maintaining, and nothing can go stale.

*Why a dense grid first.*  The thesis (5.3.2) prefers a hashed sparse grid so
that a user never has to declare a bounding box.  We get the same freedom by
sizing a dense grid from the bounding box of the targets at every call, so it
always fits, and keep the speed of indexing a flat array of cell starts.  Only
when that box is huge compared with the search radius (a straggler a hundred
kilometres from its flock) would a dense grid need too many cells; then the
cells are enlarged a little or, past that, the same counting sort runs over
the buckets of a spatial hash, where only occupied cells cost memory.

*Why cell order ("coherent" layout).*  The sort gathers every target's position
(and, for a population querying itself, its forward) into buffers ordered by
cell, so the animals of one cell are adjacent in memory, and so are the cells
of one x-row (cell ids grow fastest along x).  Queries run in the same order,
so consecutive queries read the same few stretches of memory while they are in
cache.  For large populations the rows are also written in that order and
moved to their animals afterwards in one pass, instead of being written at
random from the query loop.

*Rows, not cells.*  For a query point the grid visits the (y, z) rows of cells
whose slab can reach the search sphere; a row is contiguous, so the cells in
x reach form one run of targets (two across the seam of a periodic box).  The
classical 27-cell stencil becomes at most nine runs, and rows beyond the
sphere are skipped.  Cells one radius wide measured fastest at the benchmark
density (``CELL_SCALE``): narrower cells scan fewer animals but visit more rows.
In a crowd (at least ``DENSE_OCCUPANCY`` targets per cell on average) the
balance turns, and the grid is planned with half-radius cells instead.

*Branch-free inner loop.*  At flocking densities a query meets about thirty
candidates of which about five are in reach, spread over runs of three or four.
Measured, the cost was not the arithmetic but mispredicted branches: one per
run end and one per accepted candidate.  So the runs are listed first, then
walked as one flat sequence (the next run is selected arithmetically); every
candidate's offset, distance and field-of-view test are computed and its slot
appended to a per-thread buffer whose length only grows when it passes; and
the few accepted candidates are finally placed by rank (how many keys are
smaller), again without branches.  A neighbourhood too dense for the buffer
falls back to a sorted insertion into the row.

*Wrap-around for free.*  A periodic axis costs nothing in the interior: a run
that does not cross the seam holds no pair whose minimum image differs from
its plain offset, so the minimum image is only computed for queries near a
seam.

*Exactness.*  Pruning (which rows and cells to visit) is done in float64 with a
slightly inflated radius, so it can only visit too much, never too little.
Every visited candidate then goes through the one pair test defined here
(float32 offset, minimum image, squared distance against a threshold, the
cosine field-of-view test), which the k-d tree path also applies and
``brute.py`` restates in NumPy.  Rows are ordered by (distance, target index),
so the result does not depend on the order candidates were met in, nor on the
thread count.

*Threads.*  Each query writes only its own output row, so queries run in a
``prange`` without locks.  Small populations use a serial kernel
(``SERIAL_QUERY_MAX``, set where the measured start-up of the parallel region
stops paying).  The serial and parallel kernels compile from one function.
"""

from __future__ import annotations

import functools
import math
import types

import numba
import numpy as np
from numba import njit, prange

from starling.parallel import PARALLEL_MIN_ANIMALS

__all__ = [
    "CELL_SCALE",
    "SERIAL_QUERY_MAX",
    "GridIndex",
    "minimum_image",
    "query_thresholds",
    "wrap_offset",
]

# Cell width as a multiple of the search radius.  With row runs the width
# mostly sets how far a run overshoots the sphere along x and how many rows
# are visited; see ``benchmarks/neighbor_queries.py`` for the measurement.
CELL_SCALE = 1.0
# A grid whose cells hold this many targets on average is rebuilt with cells of
# DENSE_CELL_SCALE radii: in the murmuration (10 birds per cell) the query then takes
# 20 % less time, in Vicsek's dense bands (4 per cell) 10 % less; at 1.4 per cell (the
# fish tank, the flocking bench) wider cells are faster.
DENSE_OCCUPANCY = 3.0
DENSE_CELL_SCALE = 0.5
# Queries of up to this many animals run in a serial kernel. On an idle machine
# the parallel region pays from 32-64 animals (it starts in about 3 us), but
# when the cores are shared each region can stall for a time slice; the
# project-wide policy is in starling.parallel.
SERIAL_QUERY_MAX = PARALLEL_MIN_ANIMALS - 1
# Counting sorts of at least this many points spread their passes over threads.
PARALLEL_BUILD_MIN = 100_000
# Up to this many animals, query rows are written straight to their animals'
# rows; beyond it they are written in cell order and scattered afterwards
# (random row writes from the query loop stall on cache misses at large n).
DIRECT_ROWS_MAX = 32_768
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

# The query kernels index per-thread scratch with ``numba.get_thread_id()``.
# Numba binds that symbol when it starts its thread pool, which compiling such a
# kernel does but loading it from the on-disk cache does not; asking for the
# thread count starts the pool, so cached kernels find the symbol. A grid index
# does so when it is made, not this module when it is imported: a process that
# never steps a simulation (a sweep's driver) keeps the choice of threading layer
# open, and forks its workers (starling.experiments.backends).
# Relative and absolute (per unit of coordinate magnitude) inflation of the
# pruning radius; float32 rounding of the exact pair test is far below both.
_REACH_REL = 2.0**-16
_REACH_ABS = 2.0**-18


# ---------------------------------------------------------------------------
# Pair primitives.  The compiled definition of "j is a neighbour of i", shared
# by the grid and the k-d tree kernels.  Only scalars go in and out (array
# arguments would cost reference counting in the hot loop).  All arithmetic is
# float32 in a fixed order, so every method produces bit-identical results.
# ---------------------------------------------------------------------------


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _wrap(offset, length, inverse):
    """Minimum image of one offset component given ``inverse = float32(1) / length``."""
    if length > 0:
        return offset - length * np.rint(offset * inverse)
    return offset


@njit(cache=True, no_cfunc_wrapper=True)
def wrap_offset(offset, length):
    """Minimum-image version of one offset component (allocation free).

    ``offset`` is ``p_j - p_i`` along one axis and ``length`` that axis' period
    (0 or ``inf``: the axis does not wrap, the offset is returned unchanged).
    Computes ``offset - length * rint(offset * (1 / length))``, exact when both
    points lie in ``[0, length)`` and still right for points outside it.  With
    float32 arguments the result is bit-identical to the offsets the neighbour
    queries measure.
    """
    if length > 0 and length < np.inf:
        return _wrap(offset, length, np.float32(1) / length)
    return offset


@njit(cache=True, no_cfunc_wrapper=True)
def minimum_image(offset, box):
    """Minimum-image copy of a 3-vector offset in a periodic box.

    ``offset``: (3,) array ``p_j - p_i``; ``box``: (3,) side lengths of the
    wrap-around box over ``[0, L)``, 0 or ``inf`` on an axis that does not wrap.
    Returns a new (3,) array of ``offset``'s dtype.  Behaviours use this (or
    ``wrap_offset`` per component, which allocates nothing inside a kernel) so
    that their offsets agree with the neighbour query; with float32 ``offset``
    and ``box`` the result is bit-identical to the query's.
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
      ``<= max_distance``.  A correctly rounded square root is monotone, so
      ``d2 <= r2`` holds exactly when the reported distance satisfies
      ``distance <= max_distance``: the cheap squared test of thesis eq. 5.1,
      yet consistent with the distance we report.
    * ``cos_limit`` is ``cos(fov / 2)`` lowered by 2**-20, so a neighbour lying
      exactly on the edge of the view (45 degrees on a lattice) is inside
      despite float32 rounding; the test is
      ``forward . offset >= cos_limit * |forward| * |offset|`` (thesis eq. 5.2
      without arccos).  The slack widens the half-angle by about 1e-6 rad
      (more for very narrow views: 1 % of the angle at fov = 1 degree).
    * ``sees_all`` is true for ``fov_deg >= 360``; the test is then skipped.
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


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _fov_threshold(fx, fy, fz, cos_limit):
    """Per-animal field of view threshold ``cos_limit * |forward|`` (0 for a zero forward)."""
    return cos_limit * math.sqrt(fx * fx + fy * fy + fz * fz)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def candidate_distance(ox, oy, oz, bx, by, bz, vx, vy, vz, r2, sees_all, fx, fy, fz, thr):
    """The contract's test of one candidate at float32 offset ``(ox, oy, oz)`` from the animal:
    its distance, or -1 when it is out of reach or out of view.

    Minimum image on the wrapping axes (``bx``.. the periods, ``vx``.. their float32
    inverses, 0 where an axis does not wrap), the float32 squared-radius test against
    ``r2`` and the field of view against ``thr = cos_limit * |forward|``
    (``query_thresholds``). Shared by the k-d tree's selection and the GPU's query, so both
    measure exactly as the brute-force oracle does.
    """
    ox = _wrap(ox, bx, vx)
    oy = _wrap(oy, by, vy)
    oz = _wrap(oz, bz, vz)
    d2 = ox * ox + oy * oy + oz * oz
    if d2 > r2:
        return np.float32(-1.0)
    dist = math.sqrt(d2)
    if not (sees_all or fx * ox + fy * oy + fz * oz >= thr * dist):
        return np.float32(-1.0)
    return dist


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _sort_into_row(out_index, out_distance, row, k, cd, cs, nc):
    """Write the ``min(nc, k)`` smallest of ``nc`` buffered candidates into ``row``, in order; returns the count.

    Each candidate becomes one 64-bit key, the float32 distance's bits above the
    target index: a non-negative float's bits order as its value, so sorting the
    keys orders by (distance, index) as :func:`_insert_row` does, in O(m log m)
    instead of insertion's O(m²) shifts (a school of 100 in reach of each other).
    """
    keys = np.empty(nc, np.uint64)
    bits = cd[:nc].view(np.uint32)
    for a in range(nc):
        keys[a] = (np.uint64(bits[a]) << np.uint64(32)) | np.uint64(np.uint32(cs[a]))
    keys.sort()
    count = min(nc, k)
    row_bits = out_distance[row].view(np.uint32)
    low = np.uint64(0xFFFFFFFF)
    for c in range(count):
        key = keys[c]
        out_index[row, c] = np.int32(key & low)
        row_bits[c] = np.uint32(key >> np.uint64(32))
    return count


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _insert_row(out_index, out_distance, row, count, k, dist, j):
    """Insert candidate ``(dist, j)`` into the sorted top-k ``row``; returns the new count.

    Rows are ordered by (distance, target index).  While the row has room the
    candidate is placed by shifting larger entries right; once it is full the
    candidate must beat the last entry, which it evicts.  Used by the k-d tree
    path and by the grid's dense-neighbourhood path (the grid's common path
    ranks its few candidates without branches instead).
    """
    if count < k:
        pos = count
        count += 1
    else:
        last = out_distance[row, k - 1]
        if dist > last or (dist == last and j > out_index[row, k - 1]):
            return count
        pos = k - 1
    while pos > 0:
        prev = out_distance[row, pos - 1]
        if prev > dist or (prev == dist and out_index[row, pos - 1] > j):
            out_distance[row, pos] = prev
            out_index[row, pos] = out_index[row, pos - 1]
            pos -= 1
        else:
            break
    out_distance[row, pos] = dist
    out_index[row, pos] = j
    return count


def _serial_and_parallel(body, name):
    """Compile ``body`` twice: a serial kernel (``prange`` runs as ``range``) and a parallel one.

    Both are cached under their own names, so the on-disk caches never mix.
    """
    kernels = []
    for suffix, parallel in (("serial", False), ("parallel", True)):
        fn = types.FunctionType(body.__code__, body.__globals__, f"{name}_{suffix}")
        fn.__qualname__ = f"{name}_{suffix}"
        fn.__doc__ = body.__doc__
        kernels.append(njit(cache=True, no_cfunc_wrapper=True, parallel=parallel)(fn))
    return tuple(kernels)


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


# ---------------------------------------------------------------------------
# Query.
# ---------------------------------------------------------------------------

# Candidates found by a query are buffered per thread; up to _RANK_MAX are
# ranked with the branch-free all-pairs count, and so are up to _RANK_KEPT_MAX
# when most of them are kept (a school in reach of each other: the count's
# O(m²) compares vectorise and beat a sort's mispredicted branches there, 220
# against 280 µs for Couzin's 100). More are sorted by key (when most are
# kept) or inserted into the row (when few are: early rejection is cheapest).
_RANK_MAX = 32
_RANK_KEPT_MAX = 128
# Runs of targets one query can list: cells are at least half the reach wide,
# so at most 5 x 5 rows of 2 runs (dense) or 5 x 5 x 5 buckets (hash).
_RUN_MAX = 128
_EXCLUDE_NONE = 0
_EXCLUDE_SLOT = 1  # queriers are the built targets: skip the querier's own slot
_EXCLUDE_INDEX = 2  # same population in another array: skip by original index


def _query_body(
    spos, sfwd, sorder, direct, tpos, torder, start, geom, idim, box, r2, rp,
    cos_limit, sees_all, exclude, k, out_index, out_distance, out_count, out_overflow,
    scratch_slot, scratch_dist, scratch_runs,
):
    """Neighbours of the cell-ordered animals ``spos`` / ``sfwd`` ((n, 3) float32).

    ``sorder`` maps a query slot to the animal's original index; the output row
    is that index when ``direct`` and the slot otherwise (``_scatter_rows`` then
    moves rows home, cheaper at large n than writing rows at random).  Targets
    are the cell-ordered ``tpos`` / ``torder`` with cell (or bucket) starts
    ``start`` and geometry ``geom`` / ``idim``.  ``exclude`` skips the querier
    itself by slot (queriers are the built targets) or by index.  The scratch
    arrays are per thread (row ``numba.get_thread_id()``): ``scratch_slot`` /
    ``scratch_dist`` buffer candidates, ``scratch_runs`` lists runs.

    Per animal, phase 1 lists the runs of targets in reach: the (y, z) rows
    whose slab the sphere touches, each contributing the cells of the x range
    as one run (two across a periodic seam; in hash mode one bucket per cell,
    each bucket once).  Phase 2 walks all runs as one flat sequence, branch
    free: every candidate's float32 offset, squared distance, square root and
    field of view test are computed, and its slot and distance are appended to
    the buffer, whose length grows only when the candidate passes.  Phase 3
    turns slots into target indices and places the few candidates by rank (the
    number of smaller (distance, index) keys), also branch free.  A
    neighbourhood too dense for the buffer is walked run by run instead and the
    buffer emptied into the row by insertion whenever it fills up.
    """
    n = spos.shape[0]
    cap = scratch_slot.shape[1]
    gx, gy, gz = geom[0], geom[1], geom[2]
    wy, wz = geom[4], geom[5]
    ix, iy, iz = geom[6], geom[7], geom[8]
    rx, ry, rz = geom[9], geom[10], geom[11]
    nx, ny, nz = idim[0], idim[1], idim[2]
    hashed = idim[3] == _MODE_HASH
    mask = idim[4]
    shift = 64 - idim[6]
    skip_x, skip_y, skip_z = idim[7] == 1, idim[8] == 1, idim[9] == 1
    bx, by, bz = box[0], box[1], box[2]
    zero = np.float32(0.0)
    one = np.float32(1.0)
    vx = one / bx if bx > 0 else zero
    vy = one / by if by > 0 else zero
    vz = one / bz if bz > 0 else zero
    rp2 = rp * rp
    for tp in prange(n):
        # prange may type its index unsigned; mixing that with signed values
        # would promote to float, so take a signed copy.
        t = np.int64(tp)
        tid = numba.get_thread_id()
        # the scratch rows are indexed in place (scratch_slot[tid, c]), never taken as row
        # views: a view costs two reference-count updates per animal
        i = np.int64(sorder[t])
        row = i if direct else t
        px = spos[t, 0]
        py = spos[t, 1]
        pz = spos[t, 2]
        fx = sfwd[t, 0]
        fy = sfwd[t, 1]
        fz = sfwd[t, 2]
        thr = _fov_threshold(fx, fy, fz, cos_limit)
        excl_slot = t if exclude == _EXCLUDE_SLOT else -1
        excl = i if exclude == _EXCLUDE_INDEX else -1
        total = 0
        count = 0
        nc = 0
        flushed = False
        ylo, yhi, yv, yfull = _axis_range(py, rp, gy, iy, ry, ny)
        zlo, zhi, zv, zfull = _axis_range(pz, rp, gz, iz, rz, nz)
        xlo, xhi, xv, xfull = _axis_range(px, rp, gx, ix, rx, nx)
        if ylo > yhi or xlo > xhi:
            zhi = zlo - 1
        # The x range is the same for every row: one run, or two across a seam.
        seam = rx > 0.0 and not xfull and (xlo < 0 or xhi >= nx)
        wrap_x = bx > 0 and rx > 0.0 and not (skip_x and not seam)
        a0 = xlo
        b0 = xhi
        a1 = np.int64(0)
        b1 = np.int64(-1)
        nruns = 1
        if hashed:
            nruns = xhi - xlo + 1
        elif seam:
            nruns = 2
            if xlo < 0:
                a0 = xlo + nx
                b0 = nx - 1
                b1 = xhi
            else:
                b0 = nx - 1
                b1 = xhi - nx
        # Phase 1: list the runs of targets in reach (no candidate touched yet).
        # Rows beyond the sphere and empty runs are written but not counted,
        # which keeps this loop free of unpredictable branches.
        nr = 0
        span = 0
        wrap_any = False
        for czu in range(zlo, zhi + 1):
            dz = _gap(zv, czu, gz, wz, zfull)
            rem_z = rp2 - dz * dz
            cz = _wrap_cell(czu, nz)
            # Seam-free rows on a ring need no minimum image (see _plan).
            wrap_z = bz > 0 and rz > 0.0 and not (skip_z and czu == cz and not zfull)
            for cyu in range(ylo, yhi + 1):
                dy = _gap(yv, cyu, gy, wy, yfull)
                in_reach = rem_z - dy * dy >= 0.0
                cy = _wrap_cell(cyu, ny)
                wrap_y = by > 0 and ry > 0.0 and not (skip_y and cyu == cy and not yfull)
                wrap_row = wrap_x | wrap_y | wrap_z
                base = (cz * ny + cy) * nx
                for q in range(nruns):
                    if hashed:
                        # Distinct cells may share a bucket: list each bucket
                        # once; its other cells' animals fail the exact test.
                        key = (cy << 21) | (cz << 42) | _wrap_cell(xlo + q, nx)
                        b = _hash_bucket(key, mask, shift)
                        for v in range(nr):
                            if scratch_runs[tid, 2 * _RUN_MAX + v] == b:
                                b = -1
                        if b < 0:
                            continue
                        s = start[b]
                        s1 = start[b + 1]
                    elif q == 0:
                        b = base + a0
                        s = start[b]
                        s1 = start[base + b0 + 1]
                    else:
                        b = base + a1
                        s = start[b]
                        s1 = start[base + b1 + 1]
                    scratch_runs[tid, nr] = s
                    scratch_runs[tid, _RUN_MAX + nr] = s1
                    scratch_runs[tid, 2 * _RUN_MAX + nr] = b
                    listed = in_reach & (s1 > s)
                    nr += listed
                    span += listed * (s1 - s)
                    wrap_any = wrap_any | (listed & wrap_row)
        # Phase 2: test every candidate.  The runs are walked as one flat
        # sequence: at the end of a run the next one is selected arithmetically,
        # so the loop has a single, predictable exit instead of one per run.
        # Where the minimum image is needed at all, it is applied on every axis
        # (on a seam-free axis it returns the plain offset bit for bit).
        lx = bx if wrap_any else zero
        ly = by if wrap_any else zero
        lz = bz if wrap_any else zero
        if nr > 0 and span <= cap - nc:
            scratch_runs[tid, nr] = 0
            scratch_runs[tid, _RUN_MAX + nr] = 0
            rr = 0
            u = scratch_runs[tid, 0]
            e = scratch_runs[tid, _RUN_MAX]
            if wrap_any:
                for _ in range(span):
                    ox = _wrap(tpos[u, 0] - px, lx, vx)
                    oy = _wrap(tpos[u, 1] - py, ly, vy)
                    oz = _wrap(tpos[u, 2] - pz, lz, vz)
                    d2 = ox * ox + oy * oy + oz * oz
                    dist = math.sqrt(d2)
                    ok = (
                        (d2 <= r2)
                        & (u != excl_slot)
                        & (sees_all | (fx * ox + fy * oy + fz * oz >= thr * dist))
                    )
                    scratch_slot[tid, nc] = u
                    scratch_dist[tid, nc] = dist
                    nc += ok
                    u += 1
                    at_end = u == e
                    rr += at_end
                    u += at_end * (scratch_runs[tid, rr] - u)
                    e += at_end * (scratch_runs[tid, _RUN_MAX + rr] - e)
            else:
                for _ in range(span):
                    ox = tpos[u, 0] - px
                    oy = tpos[u, 1] - py
                    oz = tpos[u, 2] - pz
                    d2 = ox * ox + oy * oy + oz * oz
                    dist = math.sqrt(d2)
                    ok = (
                        (d2 <= r2)
                        & (u != excl_slot)
                        & (sees_all | (fx * ox + fy * oy + fz * oz >= thr * dist))
                    )
                    scratch_slot[tid, nc] = u
                    scratch_dist[tid, nc] = dist
                    nc += ok
                    u += 1
                    at_end = u == e
                    rr += at_end
                    u += at_end * (scratch_runs[tid, rr] - u)
                    e += at_end * (scratch_runs[tid, _RUN_MAX + rr] - e)
        else:
            # A dense neighbourhood: more candidates than the buffer holds.
            # Walk the runs in buffer-sized pieces, emptying the buffer into
            # the row by insertion whenever it fills up.
            for q in range(nr):
                s = scratch_runs[tid, q]
                s1 = scratch_runs[tid, _RUN_MAX + q]
                while s < s1:
                    e = min(s1, s + (cap - nc))
                    if e <= s:
                        for a in range(nc):
                            j = torder[scratch_slot[tid, a]]
                            if j != excl:
                                total += 1
                                count = _insert_row(
                                    out_index, out_distance, row, count, k, scratch_dist[tid, a], j
                                )
                        nc = 0
                        flushed = True
                        continue
                    for u in range(s, e):
                        ox = _wrap(tpos[u, 0] - px, lx, vx)
                        oy = _wrap(tpos[u, 1] - py, ly, vy)
                        oz = _wrap(tpos[u, 2] - pz, lz, vz)
                        d2 = ox * ox + oy * oy + oz * oz
                        dist = math.sqrt(d2)
                        ok = (
                            (d2 <= r2)
                            & (u != excl_slot)
                            & (sees_all | (fx * ox + fy * oy + fz * oz >= thr * dist))
                        )
                        scratch_slot[tid, nc] = u
                        scratch_dist[tid, nc] = dist
                        nc += ok
                    s = e
        # Buffered slots -> target indices, dropping the querier itself when
        # it is recognised by index.
        kept = 0
        for a in range(nc):
            j = torder[scratch_slot[tid, a]]
            scratch_slot[tid, kept] = j
            scratch_dist[tid, kept] = scratch_dist[tid, a]
            kept += j != excl
        nc = kept
        total += kept
        if not flushed and (nc <= _RANK_MAX or (nc <= _RANK_KEPT_MAX and 2 * k >= nc)):
            for a in range(nc):
                da = scratch_dist[tid, a]
                ja = scratch_slot[tid, a]
                rank = np.int32(0)  # 32-bit lanes: twice as many compares per vector as int64
                for b in range(nc):
                    db = scratch_dist[tid, b]
                    rank = np.int32(rank + np.int32((db < da) | ((db == da) & (scratch_slot[tid, b] < ja))))
                if rank < k:
                    out_distance[row, rank] = da
                    out_index[row, rank] = ja
            count = min(nc, k)
        elif not flushed and 2 * k >= nc:
            # most candidates are kept: insertion would shift O(nc²) times, a sort is O(nc log nc);
            # when few are kept, insertion rejects most candidates with one comparison instead
            count = _sort_into_row(out_index, out_distance, row, k, scratch_dist[tid], scratch_slot[tid], nc)
        else:
            for a in range(nc):
                count = _insert_row(out_index, out_distance, row, count, k, scratch_dist[tid, a], scratch_slot[tid, a])
        for c in range(count, k):
            out_index[row, c] = -1
            out_distance[row, c] = np.inf
        out_count[row] = count
        out_overflow[row] = total - count


_query_serial, _query_parallel = _serial_and_parallel(_query_body, "_query")


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _scatter_rows(sorder, src_index, src_distance, src_count, src_overflow,
                  out_index, out_distance, out_count, out_overflow):
    """Move rows written in query (cell) order to their animals' rows."""
    k = src_index.shape[1]
    for t in prange(sorder.shape[0]):
        i = sorder[t]
        for c in range(k):
            out_index[i, c] = src_index[t, c]
            out_distance[i, c] = src_distance[t, c]
        out_count[i] = src_count[t]
        out_overflow[i] = src_overflow[t]


def _grow(buf: np.ndarray, size: int) -> np.ndarray:
    """``buf`` if it holds ``size`` rows, else a new buffer with 1.5x headroom."""
    if buf.shape[0] >= size:
        return buf
    cap = max(size, int(buf.shape[0] * 1.5), 16)
    return np.empty((cap,) + buf.shape[1:], dtype=buf.dtype)


class GridIndex:
    """A reusable uniform grid over one target population (thesis 5.3.2).

    ``build`` sorts the targets into cell order; ``query`` answers the
    neighbour query of a population of animals against them.  All buffers live
    on the object and grow by capacity, so repeated calls with unchanged sizes
    allocate nothing.  See the module docstring for the design.

    Use, as ``find_neighbors`` does::

        grid = GridIndex()
        grid.build(target_position, max_distance, box32, target_forward=fwd)
        grid.query(target_position, fwd, max_distance, fov_deg, k,
                   out_index, out_distance, out_count, out_overflow, exclude_self=True)

    Positions and forwards are (n, 3) float32 C-ordered arrays; ``box32`` is
    None or the (3,) float32 periodic box with 0 on axes that do not wrap
    (``neighbors.normalize_box``).
    """

    def __init__(self, cell_scale: float = CELL_SCALE) -> None:
        numba.get_num_threads()  # starts the thread pool the cached query kernels need (see the module)
        self.cell_scale = float(cell_scale)
        self.geom = np.zeros(12, dtype=np.float64)
        self.idim = np.zeros(10, dtype=np.int64)
        self.start = np.zeros(16, dtype=np.int32)
        self.counts = np.zeros((1, 16), dtype=np.int32)
        self.cell_of = np.zeros(16, dtype=np.int32)
        self.order = np.zeros(16, dtype=np.int32)
        self.positions = np.zeros((16, 3), dtype=np.float32)
        self.forwards = np.zeros((16, 3), dtype=np.float32)
        self.self_order = np.zeros(16, dtype=np.int32)
        self.self_positions = np.zeros((16, 3), dtype=np.float32)
        self.self_forwards = np.zeros((16, 3), dtype=np.float32)
        self.self_start = np.zeros(16, dtype=np.int32)
        self.rows_index = np.zeros((16, 1), dtype=np.int32)
        self.rows_distance = np.zeros((16, 1), dtype=np.float32)
        self.rows_count = np.zeros(16, dtype=np.int32)
        self.rows_overflow = np.zeros(16, dtype=np.int32)
        self.scratch_slot = np.zeros((1, 1), dtype=np.int32)
        self.scratch_dist = np.zeros((1, 1), dtype=np.float32)
        self.scratch_runs = np.zeros((1, 3 * _RUN_MAX + 1), dtype=np.int64)
        self._bbox = np.zeros(30, dtype=np.float64)
        self._box = np.zeros(3, dtype=np.float32)
        self._no_forward = np.zeros((0, 3), dtype=np.float32)
        self._targets: np.ndarray | None = None
        self._forwards_of: np.ndarray | None = None
        self._m = 0
        self._reach = 0.0

    @property
    def mode(self) -> str:
        """``"dense"`` or ``"hash"``: how the last ``build`` stored its cells."""
        return "dense" if self.idim[3] == _MODE_DENSE else "hash"

    @property
    def dims(self) -> tuple[int, int, int]:
        """Cells per axis of the last ``build``."""
        return int(self.idim[0]), int(self.idim[1]), int(self.idim[2])

    @property
    def cell_width(self) -> tuple[float, float, float]:
        """Cell widths per axis (metres) of the last ``build``."""
        return float(self.geom[3]), float(self.geom[4]), float(self.geom[5])

    def _sort(self, pos, fwd, start, order, sorted_pos, sorted_fwd) -> None:
        """Counting-sort ``pos`` (and ``fwd``) into the given cell-ordered buffers."""
        m = pos.shape[0]
        ncells = int(self.idim[5])
        if self.cell_of.shape[0] < m:
            self.cell_of = _grow(self.cell_of, m)
        parallel = m >= PARALLEL_BUILD_MIN
        chunks = numba.get_num_threads() if parallel else 1
        if self.counts.shape[0] < chunks or self.counts.shape[1] < ncells:
            self.counts = np.zeros(
                (max(chunks, self.counts.shape[0]), max(ncells, int(self.counts.shape[1] * 1.5))),
                dtype=np.int32,
            )
        counts = self.counts[:chunks]
        sort = _counting_sort_parallel if parallel else _counting_sort_serial
        sort(pos, fwd, self.geom, self.idim, start, counts, self.cell_of, order, sorted_pos,
             sorted_fwd)

    def build(
        self,
        target_position: np.ndarray,
        max_distance: float,
        box: np.ndarray | None = None,
        self_position: np.ndarray | None = None,
        target_forward: np.ndarray | None = None,
    ) -> None:
        """Sort ``target_position`` ((m, 3) float32) into a grid for radius ``max_distance``.

        ``box``: None or the normalised (3,) float32 periodic box.
        ``self_position`` (optional (n, 3) float32): the animals that will
        query, when they are not the targets; their extent decides whether a
        wrapping axis can be gridded flat (``_plan``).  ``target_forward``
        (optional (m, 3) float32): when the targets will also be the queriers,
        their forwards are gathered into cell order along with the positions.
        """
        m = target_position.shape[0]
        box32 = self._box
        if box is None:
            box32[:] = 0.0
        else:
            box32[:] = box
        use_spos = self_position is not None and self_position is not target_position
        spos = self_position if use_spos else target_position
        self._reach = _plan(
            target_position, spos, use_spos, box32, float(max_distance), self.cell_scale,
            self._bbox, self.geom, self.idim,
        )
        ncells = int(self.idim[5])
        if self.start.shape[0] < ncells + 1:
            self.start = _grow(self.start, ncells + 1)
        if self.order.shape[0] < m:
            self.order = _grow(self.order, m)
            self.positions = _grow(self.positions, m)
            self.forwards = _grow(self.forwards, m)
        fwd = self._no_forward if target_forward is None else target_forward
        self._sort(target_position, fwd, self.start, self.order, self.positions, self.forwards)
        self._targets = target_position
        self._forwards_of = target_forward
        self._m = m

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

        ``self_position``, ``self_forward``: (n, 3) float32, C order.
        ``max_distance`` must not exceed the radius given to ``build``.  Writes
        ``out_index`` ((n, k) int32, -1 padded) and ``out_distance`` ((n, k)
        float32, +inf padded) sorted by (distance, index), and the (n,) int32
        ``out_count`` and ``out_overflow``.  When ``self_position`` is the array
        that was built (and its forwards were given to ``build``), the build's
        cell order is the query order; otherwise the animals are first
        counting-sorted into the same grid so that consecutive queries read
        neighbouring memory.  ``exclude_self`` skips target ``i`` in row ``i``.
        """
        n = self_position.shape[0]
        if max_distance * (1.0 + _REACH_REL / 2) > self._reach:
            raise ValueError("query radius exceeds the radius the grid was built for")
        r2, cos_limit, sees_all = query_thresholds(float(max_distance), float(fov_deg))
        if self_position is self._targets and self_forward is self._forwards_of:
            spos, sfwd, sorder = self.positions, self.forwards, self.order
            exclude = _EXCLUDE_SLOT if exclude_self else _EXCLUDE_NONE
        else:
            if self.self_order.shape[0] < n:
                self.self_order = _grow(self.self_order, n)
                self.self_positions = _grow(self.self_positions, n)
                self.self_forwards = _grow(self.self_forwards, n)
            ncells = int(self.idim[5])
            if self.self_start.shape[0] < ncells + 1:
                self.self_start = _grow(self.self_start, ncells + 1)
            self._sort(self_position, self_forward, self.self_start, self.self_order,
                       self.self_positions, self.self_forwards)
            spos, sfwd, sorder = self.self_positions, self.self_forwards, self.self_order
            exclude = _EXCLUDE_INDEX if exclude_self else _EXCLUDE_NONE
        if spos.shape[0] != n:
            spos = spos[:n]
            sfwd = sfwd[:n]
        threads = numba.config.NUMBA_NUM_THREADS
        width = 4 * k + 256
        if self.scratch_slot.shape[0] < threads or self.scratch_slot.shape[1] < width:
            self.scratch_slot = np.zeros((threads, width), dtype=np.int32)
            self.scratch_dist = np.zeros((threads, width), dtype=np.float32)
            self.scratch_runs = np.zeros((threads, 3 * _RUN_MAX + 1), dtype=np.int64)
        direct = n <= DIRECT_ROWS_MAX
        if direct:
            rows = (out_index, out_distance, out_count, out_overflow)
        else:
            if self.rows_count.shape[0] < n or self.rows_index.shape[1] != k:
                cap = max(n, self.rows_count.shape[0])
                self.rows_index = np.empty((cap, k), dtype=np.int32)
                self.rows_distance = np.empty((cap, k), dtype=np.float32)
                self.rows_count = np.empty(cap, dtype=np.int32)
                self.rows_overflow = np.empty(cap, dtype=np.int32)
            rows = (self.rows_index, self.rows_distance, self.rows_count, self.rows_overflow)
        kernel = _query_serial if n <= SERIAL_QUERY_MAX else _query_parallel
        kernel(
            spos, sfwd, sorder, direct, self.positions, self.order, self.start,
            self.geom, self.idim, self._box, r2, self._reach, cos_limit, sees_all, exclude, k,
            rows[0], rows[1], rows[2], rows[3], self.scratch_slot, self.scratch_dist,
            self.scratch_runs,
        )
        if not direct:
            _scatter_rows(sorder[:n] if sorder.shape[0] != n else sorder, *rows,
                          out_index, out_distance, out_count, out_overflow)
