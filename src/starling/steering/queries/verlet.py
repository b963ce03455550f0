"""Neighbour lists kept over steps (Verlet lists with a skin) for a population that queries itself.

A grid query meets about thirty candidates to keep the five animals in reach of a sparse
flock, and lists the grid's rows of cells before it meets any. Animals move a few
centimetres a step, so the answer hardly changes between two steps. A Verlet list
(molecular dynamics' standard trick) keeps, for each row, every row that was within
``r + skin`` when it was built; while no animal has moved more than ``skin / 2`` since,
any two animals within ``r`` now were within ``r + skin`` then, so each step only tests
the rows in the lists: about nine candidates instead of thirty, with no cells to list.
The list is rebuilt (one grid query of radius ``r + skin``) when an animal has moved
too far, when rows were added or removed, or when the radius or box changed.

*The table is the grid's, bit for bit.* Each listed candidate goes through the pair
test every query shares (``candidates``), expression for expression, and the row is
ranked by (distance, index), so the result does not depend on when the list was built:
a restored or reconfigured simulation that rebuilds its lists steps exactly as the one
that kept them. Only ``overflow`` may differ from an early-stopping grid query, which
counts just the candidates it met (a lower bound by contract); here it is exact.

*Rows, not animals.* The argument needs only that every row has stayed within
``skin / 2`` of where that row was at the build: a reordering that keeps each row where it
was (the population's cell ordering of neighbours that swap places) leaves the lists valid,
and one that moves rows far is caught by the same displacement test.

*When it does not pay.* In a crowd (a murmuration: eighty birds in reach, seven kept) the
list is nearly twice the sphere, while the grid's early stop visits a quarter of it; where
animals cross the skin in a few steps (Vicsek's particles) the builds cost more than the
checks save. A list whose rows average more than :func:`dense_limit` entries is dropped at
once, and one that cost more per call than the grid is not rebuilt: the grid answers for a
while, then a list is tried again (:class:`VerletLists`). The table is the same either way.
"""
from __future__ import annotations

import struct
import time

import numba
import numpy as np
from numba import njit, prange

from starling.kernel_calls import CallSite
from starling.parallel import threads_from

from .candidates import (
    NO_WRAP,
    _close_row,
    _fov_threshold,
    _insert_row,
    _pair_test,
    _sort_into_row,
    _wrap,
    query_thresholds,
)
from .grid_query import _RANK_KEPT_MAX, _RANK_MAX  # rows ranked as the grid ranks them

__all__ = ["FIRST_GRID_CALLS", "RETRY_AFTER", "SKIN", "VerletLists", "dense_limit"]

#: the skin as a share of the query radius: the list holds the rows within 1.2 r, about
#: 1.7 times the sphere, and lasts until some animal has moved 0.1 r (five steps of a
#: 6 m/s bird at 60 Hz for r = 5 m)
SKIN = 0.2
#: calls the grid answers alone after a list lost to it (see VerletLists), doubled after each loss up to RETRY_MAX
RETRY_AFTER = 64
RETRY_MAX = 1024
#: calls the grid answers first, to know its cost (the first may compile or load its kernel)
FIRST_GRID_CALLS = 3
#: the build's padded table (rows × its width, index and distance, and its grid's buffers) is kept
#: between builds up to this many entries (rows × width: about 1 GB with the grid's copy); past it
#: only the lists are kept, and the table is made again at each build, which costs its first touch
#: of memory again (a million boids, were they past it: 1.13 → 0.73 GB between builds, the same
#: peak, 6 % slower)
KEEP_BUILD_TABLE = 64_000_000
# float32 positions: the slack kept between the displacement limit and skin / 2, relative to
# the largest coordinate or period (a float32 offset of coordinates near X is off by ~X·2⁻²⁴)
_SLACK_ULPS = 16.0 * 2.0**-23


def dense_limit(k: int) -> float:
    """The mean list length above which a knn query is left to the grid (its early stop
    visits fewer candidates once many more are in reach than it keeps)."""
    return max(4.0 * k, 16.0)


@njit(cache=True, no_cfunc_wrapper=True)
def _largest_magnitude(position, lo, hi):
    """The largest coordinate magnitude of rows ``lo``..``hi``, as its float32 bits with the sign
    cleared: a maximum of integers vectorises, one of floats does not without fast-math. The bits
    of non-negative floats order as the floats do; a NaN's are above any number's."""
    bits = position.view(np.int32)
    m = 0
    for i in range(lo, hi):
        for a in range(3):
            m = max(m, bits[i, a] & 0x7FFFFFFF)
    return m


@njit(cache=True, no_cfunc_wrapper=True)
def _moved_past(position, built, box, lo, hi, limit2):
    """How many of rows ``lo``..``hi`` have moved more than ``sqrt(limit2)`` since ``built`` (the
    minimum image on a periodic axis), in float64; a NaN counts as moved. A count, not the
    largest move, so that the loop vectorises. The image multiplies by the period's reciprocal
    (0 on an open axis: no image), with no division or branch in the loop; for a move shorter
    than half the period it is the move itself, exactly, and a longer one fails any limit."""
    bx = np.float64(box[0])
    by = np.float64(box[1])
    bz = np.float64(box[2])
    ix = 1.0 / bx if bx > 0.0 else 0.0
    iy = 1.0 / by if by > 0.0 else 0.0
    iz = 1.0 / bz if bz > 0.0 else 0.0
    count = 0
    for i in range(lo, hi):
        dx = np.float64(position[i, 0]) - np.float64(built[i, 0])
        dy = np.float64(position[i, 1]) - np.float64(built[i, 1])
        dz = np.float64(position[i, 2]) - np.float64(built[i, 2])
        dx -= bx * np.rint(dx * ix)
        dy -= by * np.rint(dy * iy)
        dz -= bz * np.rint(dz * iz)
        count += not (dx * dx + dy * dy + dz * dz <= limit2)
    return count


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _largest_magnitude_parallel(position, chunks):
    """:func:`_largest_magnitude` of all rows, over ``chunks`` threads' shares of them."""
    n = position.shape[0]
    each = np.zeros(chunks, np.int64)
    for c in prange(chunks):
        each[c] = _largest_magnitude(position, n * c // chunks, n * (c + 1) // chunks)
    return each.max()


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _moved_past_parallel(position, built, box, limit2, chunks):
    """:func:`_moved_past` of all rows, over ``chunks`` threads' shares of them."""
    n = position.shape[0]
    each = np.zeros(chunks, np.int64)
    for c in prange(chunks):
        each[c] = _moved_past(position, built, box, n * c // chunks, n * (c + 1) // chunks, limit2)
    return each.sum()


#: rows whose listed candidates are laid end to end and tested in one pass (see :func:`_check_range`)
BLOCK = 32


@njit(cache=True, no_cfunc_wrapper=True)
def _check_range(lo, hi, pos, fwd, lists, lengths, box, r2, cos_limit, sees_all, k,
                 out_index, out_distance, out_count, out_overflow):
    """Rows ``lo``..``hi``' neighbours among their listed rows: the grid's pair test, ranked by
    (distance, index).

    ``lists`` ((n, L) int32) holds each row's candidate rows, ``lengths`` how many. Writes the
    table the grid would. A block of :data:`BLOCK` rows at a time: the block's candidates are
    gathered end to end (the offset, and the row's forward vector and view threshold per
    candidate), then the minimum image and the pair test run as loops over all of them, which
    vectorise (about nine candidates a row, where a loop of its own is mostly its set-up and
    tail), and each row's passing candidates are ranked.
    """
    bx, by, bz = box[0], box[1], box[2]
    zero = np.float32(0.0)
    one = np.float32(1.0)
    vx = one / bx if bx > 0 else zero
    vy = one / by if by > 0 else zero
    vz = one / bz if bz > 0 else zero
    wraps = bx > 0 or by > 0 or bz > 0
    width = lists.shape[1]
    room = BLOCK * width
    # per candidate of the block: its offset; its row's forward vector and view threshold; whether
    # it passes and its distance
    ox = np.empty(room, np.float32)
    oy = np.empty(room, np.float32)
    oz = np.empty(room, np.float32)
    fxs = np.empty(room, np.float32)
    fys = np.empty(room, np.float32)
    fzs = np.empty(room, np.float32)
    thresholds = np.empty(room, np.float32)
    passes = np.empty(room, np.bool_)
    dist = np.empty(room, np.float32)
    scratch_slot = np.empty((1, width), np.int32)  # one row's passing candidates (the rankings' layout)
    scratch_dist = np.empty((1, width), np.float32)
    for first in range(lo, hi, BLOCK):
        last = min(hi, first + BLOCK)
        m = 0
        for i in range(first, last):  # gather
            px = pos[i, 0]
            py = pos[i, 1]
            pz = pos[i, 2]
            fx = fwd[i, 0]
            fy = fwd[i, 1]
            fz = fwd[i, 2]
            thr = _fov_threshold(fx, fy, fz, cos_limit)
            for u in range(lengths[i]):
                j = lists[i, u]
                ox[m] = pos[j, 0] - px
                oy[m] = pos[j, 1] - py
                oz[m] = pos[j, 2] - pz
                fxs[m] = fx
                fys[m] = fy
                fzs[m] = fz
                thresholds[m] = thr
                m += 1
        if wraps:
            for u in range(m):
                ox[u] = _wrap(ox[u], bx, vx)
                oy[u] = _wrap(oy[u], by, vy)
                oz[u] = _wrap(oz[u], bz, vz)
        for u in range(m):  # the test, over the block's candidates end to end (vectorised)
            passes[u], dist[u] = _pair_test(ox[u], oy[u], oz[u], r2, sees_all, fxs[u], fys[u], fzs[u], thresholds[u])
        m = 0
        for i in range(first, last):
            nc = 0
            for u in range(lengths[i]):
                scratch_slot[0, nc] = lists[i, u]
                scratch_dist[0, nc] = dist[m]
                nc += passes[m]
                m += 1
            # ranked as the grid ranks its buffer (grid_query._query_body), written out here as there: a
            # helper taking the arrays is not inlined by LLVM, and cost the grid 2-10 % (docs/performance.md)
            count = 0
            if nc <= _RANK_MAX or (nc <= _RANK_KEPT_MAX and 2 * k >= nc):
                for a in range(nc):
                    da = scratch_dist[0, a]
                    ja = scratch_slot[0, a]
                    rank = np.int32(0)
                    for b in range(nc):
                        db = scratch_dist[0, b]
                        rank = np.int32(rank + np.int32((db < da) | ((db == da) & (scratch_slot[0, b] < ja))))
                    if rank < k:
                        out_distance[i, rank] = da
                        out_index[i, rank] = ja
                count = min(nc, k)
            elif 2 * k >= nc:
                count = _sort_into_row(out_index, out_distance, i, k, scratch_dist, scratch_slot, 0, nc)
            else:
                for a in range(nc):
                    count = _insert_row(out_index, out_distance, i, count, k, scratch_dist[0, a], scratch_slot[0, a])
            _close_row(out_index, out_distance, out_count, out_overflow, i, count, nc - count, k)


@njit(cache=True, no_cfunc_wrapper=True)
def _check_serial(pos, fwd, lists, lengths, box, r2, cos_limit, sees_all, k,
                  out_index, out_distance, out_count, out_overflow):
    _check_range(0, pos.shape[0], pos, fwd, lists, lengths, box, r2, cos_limit, sees_all, k,
                 out_index, out_distance, out_count, out_overflow)


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _check_parallel(pos, fwd, lists, lengths, box, r2, cos_limit, sees_all, k,
                    out_index, out_distance, out_count, out_overflow):
    n = pos.shape[0]
    chunks = 64
    size = (n + chunks - 1) // chunks
    for c in prange(chunks):
        lo = np.int64(c) * size  # (prange counts unsigned: int64 keeps _check_range at the serial signature)
        _check_range(lo, min(n, lo + size), pos, fwd, lists, lengths, box, r2, cos_limit, sees_all, k,
                     out_index, out_distance, out_count, out_overflow)


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _permute_lists(order, lists, lengths, built, new_lists, new_lengths, new_built):
    """The lists of rows reordered so that new row ``a`` is old row ``order[a]``."""
    n = order.shape[0]
    where = np.empty(n, np.int32)  # old row -> new row
    for a in range(n):
        where[order[a]] = a
    for a in prange(n):
        b = order[a]
        length = lengths[b]
        for u in range(length):
            new_lists[a, u] = where[lists[b, u]]
        new_lengths[a] = length
        for c in range(3):
            new_built[a, c] = built[b, c]


class VerletLists:
    """One self-query's lists, where its rows were when they were built, and what each way of
    answering has cost (kept in the query's
    :class:`~starling.steering.queries.neighbors.Neighbors` table between calls).

    *Which answers.* Both answers write the same table, so the choice only decides the cost,
    and it is made on measured times: when a list has to be rebuilt, its cost per call (its
    build shared over its calls, plus a typical check) is compared with the grid's (the
    median call of the last stretch the grid answered alone). A list that lost hands over to
    the grid for :data:`RETRY_AFTER` calls, twice as many after each further loss (up to
    :data:`RETRY_MAX`); a list too long to pay (:func:`dense_limit`) hands over at once. The
    first few calls go to the grid, to know its cost.
    """

    __slots__ = ("built", "radius", "box", "box_side", "n", "lists", "lengths", "table", "wait", "backoff",
                 "rebuilds", "calls", "grid_calls", "grid_cost", "_grid_times", "_list_build", "_list_checks",
                 "_kernel_calls", "call_times")

    def __init__(self) -> None:
        self.built = np.zeros((0, 3), np.float32)  # each row's position at the last build
        self.radius = -1.0  # the query radius the lists were built for
        self.box = None  # and the periodic box
        self.box_side = 0.0  # its longest side
        self.n = -1  # rows at the build; -1: no valid lists
        self.lists, self.lengths = _NO_LISTS  # each row's candidate rows (n, the longest list), padded; how many
        self.table = None  # the build's own Neighbors table, kept between builds for small populations
        self.wait = FIRST_GRID_CALLS  # calls left to the grid alone
        self.backoff = RETRY_AFTER
        self.rebuilds = 0
        self.calls = 0  # calls answered, either way
        self.grid_calls = 0  # of which the grid answered
        self.grid_cost = None  # the grid's median call over its last stretch, s
        self._grid_times: list = []
        self._list_build = None  # the current list's build time, s (None: not a fair price, see _rebuild)
        self._list_checks: list = []  # and its checks' times
        self._kernel_calls = CallSite()
        self.call_times = None  # a list to append each call's wall time to (starling bench), or None

    def search(self, spos, sfwd, spec, box32, out, grid_search) -> None:
        """Fill ``out`` with the neighbours of ``spos`` among themselves (self excluded), from the
        lists or from ``grid_search(spos, sfwd, tpos, spec, box32, exclude_self, out, any_order=)``."""
        t0 = time.perf_counter()
        by_lists = self.wait == 0 and self._answer(spos, sfwd, spec, box32, out, grid_search)
        if not by_lists:
            self.wait = max(self.wait - 1, 0)
            grid_search(spos, sfwd, spos, spec, box32, True, out, any_order=False)
        spent = time.perf_counter() - t0
        self.calls += 1
        if not by_lists:
            self.grid_calls += 1
            self._grid_times.append(spent)
            if self.wait == 0:  # the end of the grid's stretch: its cost, for the next list to beat
                self.grid_cost = float(np.median(self._grid_times))
                self._grid_times.clear()
        if self.call_times is not None:
            self.call_times.append(spent)

    def _answer(self, spos, sfwd, spec, box32, out, grid_search) -> bool:
        """Answer from the lists (rebuilt if needed); False when the grid should answer instead."""
        n = spos.shape[0]
        r = spec.max_distance
        skin = SKIN * r
        if not self._valid(spos, r, skin, box32):
            if self._lost() or self._crowded(spec, out):
                return False
            if not self._rebuild(spos, sfwd, spec, r + skin, box32, out, grid_search):
                return False
            self._list_checks.clear()
        t1 = time.perf_counter()
        lists = self.lists
        lengths = self.lengths
        r2, cos_limit, sees_all = query_thresholds(r, spec.fov_deg)
        box = NO_WRAP if box32 is None else box32
        rows = (out.index, out.distance, out.count, out.overflow)
        self._kernel_calls.watch(*rows)
        kernel = _check_serial if n < threads_from() else _check_parallel
        self._kernel_calls(kernel, n, spos, sfwd, lists, lengths, box, r2, cos_limit, sees_all, int(spec.k), *rows)
        self._list_checks.append(time.perf_counter() - t1)
        return True

    def _lost(self) -> bool:
        """Whether the list that just ran out cost more per call than the grid (then the grid
        answers for a while, longer after each loss)."""
        checks = self._list_checks
        if not checks or self.grid_cost is None or self._list_build is None:
            return False
        cost = self._list_build / len(checks) + float(np.median(checks))
        self._list_checks = []
        if cost <= self.grid_cost:
            self.backoff = RETRY_AFTER
            return False
        self._hand_over()
        return True

    def _crowded(self, spec, out) -> bool:
        """Whether the last table already says the lists would be too long: as many animals at
        least were in reach (an early stop counts fewer), and the lists reach (1 + SKIN)³ as far."""
        if spec.mode != "knn" or out.count.shape[0] == 0:
            return False
        met = float(out.count.mean()) + float(out.overflow.mean())
        if met * (1.0 + SKIN) ** 3 <= dense_limit(spec.k):
            return False
        self._hand_over()
        return True

    def _hand_over(self) -> None:
        """Let the grid answer for a while, longer each time."""
        self.n = -1
        self.wait = self.backoff
        self.backoff = min(2 * self.backoff, RETRY_MAX)

    def permute(self, order: np.ndarray) -> None:
        """Follow a reordering of the rows (new row ``a`` is old row ``order[a]``, as
        ``Population.permute``), so that sorting a population into cell order costs no rebuild."""
        n = order.shape[0]
        if n != self.n:
            return
        lists = np.empty_like(self.lists)
        lengths = np.empty_like(self.lengths)
        built = np.empty((n, 3), np.float32)
        _permute_lists(np.ascontiguousarray(order, np.int64), self.lists, self.lengths, self.built[:n],
                       lists, lengths, built)
        self.lists[:] = lists  # in place: below the table's size limit the lists are the table's rows
        self.lengths[:] = lengths
        self.built = built

    def _valid(self, spos, r: float, skin: float, box32) -> bool:
        n = spos.shape[0]
        if n != self.n or r != self.radius or not (box32 is self.box or _same_box(box32, self.box)):
            return False
        box = NO_WRAP if box32 is None else box32
        parallel = n >= threads_from()  # (a parallel region of one chunk would still wake the pool: 15-20 µs)
        threads = numba.get_num_threads()
        bits = _largest_magnitude_parallel(spos, threads) if parallel else _largest_magnitude(spos, 0, n)
        scale = _float32_of_bits(bits)  # (nan or inf: no limit below)
        # float32 offsets of coordinates near ``scale`` are off by ~scale·2⁻²⁴: stay that much inside
        limit = 0.5 * skin - _SLACK_ULPS * (scale + self.box_side)
        if not limit > 0.0:
            return False
        built = self.built[:n]
        moved = (_moved_past_parallel(spos, built, box, limit * limit, threads) if parallel
                 else _moved_past(spos, built, box, 0, n, limit * limit))
        return moved == 0

    def _rebuild(self, spos, sfwd, spec, reach: float, box32, out, grid_search) -> bool:
        """Every row within ``reach`` of each row, its own left out; False (and the grid for a
        while) when the lists would be too long to pay. ``spec`` and ``out`` are the query's
        (their classes make the build's own)."""
        n = spos.shape[0]
        self.rebuilds += 1
        longest = self.lists.shape[1] if self.lists.shape[0] else 0
        self.lists, self.lengths = _NO_LISTS  # the old lists go before the new are built (memory)
        # the first build, or more rows than the kept table holds (a table let go for its size is
        # made again at every build: that is a price of each build, and is judged)
        grew = self.rebuilds == 1 or (self.table is not None and self.table.count.shape[0] < n)
        made = 0.0  # making a table let go at the last build: part of this build's price
        if self.table is None:  # one of its own, as wide as the last build needed
            started = time.perf_counter()
            self.table = type(out)(n, max(longest + longest // 4 + 1, 2 * spec.k, 8))
            made = time.perf_counter() - started
        width = self.table.k
        while True:
            # every row in reach, in the order met (the check ranks them): any_order skips the sort
            wide = type(spec)(max_distance=reach, k=width, fov_deg=360.0, mode="all_in_radius", any_order=True)
            self.table.reserve(n, width)
            t0 = time.perf_counter()
            grid_search(spos, sfwd, spos, wide, box32, True, self.table)
            longest = int((self.table.count + self.table.overflow).max())
            if longest <= width:
                break
            width = longest + longest // 4 + 1  # rows too narrow (a first build): again, wider
            grew = True
        # what the build costs, for the choice between lists and grid. A build whose table or the
        # grid's buffers had to grow paid once for memory the next builds reuse (at 100,000 boids
        # its grid call took 2-3x a later build's, and its table ~40 ms more): it is not judged
        # (None), and the list's next life is
        self._list_build = None if grew else time.perf_counter() - t0 + made
        table = self.table
        mean = float(table.count.mean())
        if spec.mode == "knn" and mean > dense_limit(spec.k):
            self._hand_over()
            return False
        if n * width <= KEEP_BUILD_TABLE:  # the lists are the table's own rows
            self.lists, self.lengths = table.index, table.count
        else:
            # a big population: keep only the lists, as wide as the longest (the table's distances,
            # its slack and its grid's buffers would double the population's memory), and let the
            # table go; the next build makes one again
            longest = max(int(table.count.max()), 1)
            self.lists = np.ascontiguousarray(table.index[:, :longest])
            self.lengths = table.count.copy()
            self.table = None
        if self.built.shape[0] < n:
            self.built = np.empty((max(n, int(self.built.shape[0] * 1.5)), 3), np.float32)
        self.built[:n] = spos
        self.n = n
        self.radius = spec.max_distance
        self.box = box32  # normalize_box's arrays are shared and read-only: kept, not copied
        self.box_side = 0.0 if box32 is None else float(np.max(box32))
        return True


_NO_LISTS = (np.zeros((0, 1), np.int32), np.zeros(0, np.int32))


_BITS = struct.Struct("=i")
_FLOAT32 = struct.Struct("=f")


def _float32_of_bits(bits: int) -> float:
    """The float32 whose bits are ``bits`` (:func:`_largest_magnitude`'s answer), without making an array at every call."""
    return _FLOAT32.unpack(_BITS.pack(bits))[0]


def _same_box(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(np.array_equal(a, b))
