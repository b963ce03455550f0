"""All-pairs neighbour query for small groups: what the grid does, without building one.

A scene's queries are often small: three sharks looking at two hundred fish, a
school of two hundred looking at itself, fish looking at the one player, Couzin's
hundred in a periodic box. Building a grid for them (bounding box, plan, two
counting sorts, runs) costs more than testing every pair, and a school packed into
one cell leaves the grid testing every pair anyway. ``find_neighbors`` therefore
answers queries of at most ``SMALL_MAX_PAIRS`` (animal, target) pairs here, in a
wrapping world too.

Per animal, one pass over the targets (held as three contiguous coordinate
columns, so it vectorises) computes every float32 offset (its minimum image on the
wrapping axes), squared distance, square root and field-of-view test exactly as the
grid's kernel does (``grid_query._query_body``: the same expressions in the same
order; the grid skips the minimum image only where it is the plain offset bit for
bit). A second pass keeps the k nearest by (distance, index) with the grid's sorted
insertion (``candidates._insert_row``). It inserts the animal's row of the previous
call first: after a step that row is nearly in order, so most of its entries are
appended where they stand (a comparison with the last kept entry, no insertion
call: 18 % off Couzin's query) and the others shift an entry or two, where a school
all in reach of each other, inserted in index order, would shift O(m²) times; then
the remaining candidates, most of which a full row rejects with one comparison. The previous row only orders the work, so the table is
bit-identical to the grid's whatever the buffers held (``tests/steering/queries/test_small.py``).

Even nearly in order, ranking is most of the cost: Couzin's hundred, each with all
ninety-nine others in reach, reorder a few dozen entries a row every step, and each
moved entry is a mispredicted branch. A query whose behaviours only sum over their
rows (the spec's ``any_order``) skips it: the candidates are packed in index order,
branch free, and a row of fewer than k is left so (Couzin's step: 0.25 → 0.15 ms).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from starling.kernel_calls import CallSite

from .candidates import _close_row, _insert_row, _pair_test, _wrap

#: queries with at most this many (animal, target) pairs are answered by the all-pairs kernel
SMALL_MAX_PAIRS = 1 << 16


@njit(cache=True, no_cfunc_wrapper=True)
def query_small(spos, sfwd, tpos, box, r2, cos_limit, sees_all, exclude_self, k, any_order, out_index, out_distance,
                out_count, out_overflow, tx, ty, tz, dist, packed_distance, ok, packed_index):
    """Fill the (n, k) rows of ``out_*`` for animals ``spos``/``sfwd`` and targets ``tpos`` ((m, 3) float32).

    ``box``: (3,) float32 periods, 0 on an axis that does not wrap (all zeros: no wrap);
    ``r2``, ``cos_limit``, ``sees_all``: the thresholds of ``candidates.query_thresholds``;
    ``exclude_self``: row ``i`` skips target ``i`` (one population); ``any_order``: a row
    of fewer than ``k`` candidates is left in target-index order, unsorted. ``out_*`` hold
    the previous call's table, if any, which orders the insertions (any content is
    safe). Scratch of at least ``m + 1`` (:class:`SmallScratch`): ``tx``, ``ty``, ``tz``,
    ``dist``, ``packed_distance`` (float32), ``ok`` (bool), ``packed_index`` (int32).
    """
    n = spos.shape[0]
    m = tpos.shape[0]
    zero = np.float32(0.0)
    one = np.float32(1.0)
    bx, by, bz = box[0], box[1], box[2]
    vx = one / bx if bx > 0 else zero
    vy = one / by if by > 0 else zero
    vz = one / bz if bz > 0 else zero
    wraps = (bx > 0) | (by > 0) | (bz > 0)
    for j in range(m):
        tx[j] = tpos[j, 0]
        ty[j] = tpos[j, 1]
        tz[j] = tpos[j, 2]
    for i in range(n):
        px = spos[i, 0]
        py = spos[i, 1]
        pz = spos[i, 2]
        fx = sfwd[i, 0]
        fy = sfwd[i, 1]
        fz = sfwd[i, 2]
        thr = cos_limit * math.sqrt(fx * fx + fy * fy + fz * fz)
        if wraps:
            for j in range(m):  # every pair's minimum image and test, branch free
                ox = _wrap(tx[j] - px, bx, vx)
                oy = _wrap(ty[j] - py, by, vy)
                oz = _wrap(tz[j] - pz, bz, vz)
                ok[j], dist[j] = _pair_test(ox, oy, oz, r2, sees_all, fx, fy, fz, thr)
        else:
            for j in range(m):  # every pair's test, branch free
                ox = tx[j] - px
                oy = ty[j] - py
                oz = tz[j] - pz
                ok[j], dist[j] = _pair_test(ox, oy, oz, r2, sees_all, fx, fy, fz, thr)
        if exclude_self and i < m:
            ok[i] = False
        if any_order:
            # The caller sums over its neighbours: pack the candidates in index order, branch
            # free (every slot is written, the length grows only for a candidate), and when
            # fewer than k fit in the row, they are the row (a full row stays sorted, as the
            # grid's early first try reads its last entry as the k-th distance). Else: below.
            taken = 0
            for j in range(m):
                packed_index[taken] = j
                packed_distance[taken] = dist[j]
                taken += np.int64(ok[j])
            if taken < k:
                for c in range(taken):
                    out_index[i, c] = packed_index[c]
                    out_distance[i, c] = packed_distance[c]
                _close_row(out_index, out_distance, out_count, out_overflow, i, taken, 0, k)
                continue
        # Last call's row first: animals move little in a step, so it is nearly in order now
        # and each insertion shifts an entry or two (a school of 100 all in reach would shift
        # O(m²) times in index order). Any entry is only a hint: one that is out of range or
        # not a candidate now is skipped, and each candidate is taken once (``ok`` cleared).
        # The row is read at ``c`` before the ``c``-th insertion can write there.
        count = 0
        total = 0
        for c in range(min(out_count[i], k)):
            j = np.int64(out_index[i, c])
            if j < 0 or j >= m or not ok[j]:
                continue
            ok[j] = False
            total += 1
            d = dist[j]
            if count < k and (count == 0 or out_distance[i, count - 1] < d
                              or (out_distance[i, count - 1] == d and out_index[i, count - 1] < j)):
                out_distance[i, count] = d  # still in order: appended without the insertion's call
                out_index[i, count] = j
                count += 1
            else:
                count = _insert_row(out_index, out_distance, i, count, k, d, j)
        for j in range(m):  # the rest, in index order
            if not ok[j]:
                continue
            total += 1
            d = dist[j]
            if count == k and (d > out_distance[i, k - 1] or (d == out_distance[i, k - 1] and j > out_index[i, k - 1])):
                continue  # cannot enter the full row: what _insert_row would decide, without the call
            count = _insert_row(out_index, out_distance, i, count, k, d, j)
        _close_row(out_index, out_distance, out_count, out_overflow, i, count, total - count, k)


class SmallScratch:
    """The all-pairs kernel's per-target scratch, grown by capacity."""

    __slots__ = ("columns", "ok", "packed_index", "_arrays", "kernel_calls", "kept")

    def __init__(self) -> None:
        self._allocate(0)
        # the kernel's arguments are C-ordered float32 points, a Neighbors table's rows, this
        # scratch and fixed-type scalars: one call site skips Numba's typing of its 19 arguments
        self.kernel_calls = CallSite()

    def _allocate(self, cap: int) -> None:
        self.kept = None  # the all-pairs search's last arguments (neighbors._all_pairs_search), these buffers among them
        # one slot more than the targets: the branch-free packing writes one past its last candidate
        self.columns = np.zeros((5, cap + 1), np.float32)  # x, y, z, distance, packed distance
        self.ok = np.zeros(cap + 1, np.bool_)
        self.packed_index = np.zeros(cap + 1, np.int32)
        self._views()

    def _views(self) -> None:
        self._arrays = (*self.columns, self.ok, self.packed_index)

    def reserve(self, m: int) -> None:
        if self.columns.shape[1] < m + 1:
            self._allocate(max(m, int(self.columns.shape[1] * 1.5), 16))

    def arrays(self) -> tuple:
        """The kernel's scratch arguments, in its order (made once per size: a query a step per group)."""
        return self._arrays

    # the kept views would unpickle as copies of the columns: rebuild them instead
    def __getstate__(self):
        return self.columns, self.ok, self.packed_index

    def __setstate__(self, state):
        self.columns, self.ok, self.packed_index = state
        self.kept = None
        self.kernel_calls = CallSite()
        self._views()
