"""The pair test and the row ranking that every neighbour query shares.

"Is animal *j* a neighbour of animal *i*, and how far is it?" has one compiled
answer, used by the grid (``grid_query``), the k-d tree (``kdtree``), the
all-pairs kernel (``small``) and the GPU query (``starling.cuda.neighbors``),
and restated in NumPy by the brute-force oracle (``brute.py``): the float32
offset, its minimum image on the wrapping axes, the squared distance against
the float32 threshold of ``query_thresholds``, the square root, and the cosine
field-of-view test.  Rows are ordered by (distance, target index), so a table
depends neither on the order candidates were met in nor on the thread count.
Because every method runs these same expressions in the same order, they all
produce bit-identical tables.

The pair-test helpers take and return scalars and are inlined into their callers
in Numba's IR. The two that write a row (``_insert_row``, ``_sort_into_row``) take
the table's arrays, so they are plain calls instead, which LLVM may still inline:
binding an array to an IR-inlined function's argument counts a reference, an atomic
increment and decrement per query row that Numba's pruning cannot pair across the
query's branches (measured: 1.7 pairs per bird and step in ``flock``, 15 % of its step).
``_serial_and_parallel`` compiles a kernel body twice, serially and with
``prange``, for the grid's sort and query and the k-d tree's selection.
"""

from __future__ import annotations

import functools
import math
import types

import numpy as np
from numba import njit

__all__ = [
    "NO_WRAP",
    "candidate_distance",
    "minimum_image",
    "query_thresholds",
    "wrap_offset",
]

#: the box a kernel takes when the world does not wrap: every period 0 (:func:`_wrap`
#: then leaves each offset as it is); shared, never written
NO_WRAP = np.zeros(3, np.float32)


# ---------------------------------------------------------------------------
# Pair primitives.  Only scalars go in and out; all arithmetic is float32 in a
# fixed order, so every method produces bit-identical results.
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
def _pair_test(ox, oy, oz, r2, sees_all, fx, fy, fz, thr):
    """:func:`candidate_distance` without branches, for offsets already wrapped:
    ``(passes, distance)``.

    The distance is computed for every candidate and the two tests are combined with
    ``&``, so a loop over candidates (the grid's runs, the all-pairs rows) has no
    branch that depends on the data; the expressions and their order are
    ``candidate_distance``'s, so the tables stay bit-identical.
    """
    d2 = ox * ox + oy * oy + oz * oz
    dist = math.sqrt(d2)
    return (d2 <= r2) & (sees_all | (fx * ox + fy * oy + fz * oz >= thr * dist)), dist


@njit(cache=True, no_cfunc_wrapper=True)
def _sort_into_row(out_index, out_distance, row, k, scratch_dist, scratch_slot, tid, nc):
    """Write the ``min(nc, k)`` smallest of the ``nc`` candidates buffered in thread ``tid``'s
    scratch rows into ``row``, in order; returns the count.

    Each candidate becomes one 64-bit key, the float32 distance's bits above the
    target index: a non-negative float's bits order as its value, so sorting the
    keys orders by (distance, index) as :func:`_insert_row` does, in O(m log m)
    instead of insertion's O(m²) shifts (a school of 100 in reach of each other).
    The scratch arrays come whole with the thread's row number: a row view made by
    the caller would count a reference there.
    """
    keys = np.empty(nc, np.uint64)
    bits = scratch_dist[tid, :nc].view(np.uint32)
    for a in range(nc):
        keys[a] = (np.uint64(bits[a]) << np.uint64(32)) | np.uint64(np.uint32(scratch_slot[tid, a]))
    keys.sort()
    count = min(nc, k)
    row_bits = out_distance[row].view(np.uint32)
    low = np.uint64(0xFFFFFFFF)
    for c in range(count):
        key = keys[c]
        out_index[row, c] = np.int32(key & low)
        row_bits[c] = np.uint32(key >> np.uint64(32))
    return count


@njit(cache=True, no_cfunc_wrapper=True, _nrt=False)
def _close_row(out_index, out_distance, out_count, out_overflow, row, count, overflow, k):
    """Finish ``row`` of a table whose first ``count`` entries are written: pad the rest with
    ``-1`` / ``inf`` and set its count and overflow (every query kernel ends a row so).

    The pad is indexed with unsigned integers: a signed index may be negative as far as
    the compiler knows, and its wrap-around turned the padding of Vicsek's 64-wide rows
    into scatter instructions (15 % of its query); unsigned, it is two plain fills."""
    r = np.uint64(row)
    for c in range(np.uint64(count), np.uint64(k)):
        out_index[r, c] = -1
        out_distance[r, c] = np.inf
    out_count[row] = count
    out_overflow[row] = overflow


@njit(cache=True, no_cfunc_wrapper=True, _nrt=False)
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


# ---------------------------------------------------------------------------
# Kernel factory.
# ---------------------------------------------------------------------------


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
