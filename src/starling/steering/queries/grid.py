"""Uniform-grid neighbour search: the default method behind ``find_neighbors``.

Design notes (thesis 5.3.2 and 9.5.3, DESIGN.md section 7)
-----------------------------------------------------------

A step asks, for every animal *i*, "which animals *j* lie within ``max_distance``
of me, inside my field of view, and which *k* of those are nearest?".  The
answer must be exact (the brute-force oracle in ``brute.py`` is the definition)
and cheap enough for a million animals per frame.  This module answers it with
a uniform grid that is thrown away and rebuilt on every call.  It holds the
tuning constants and ``GridIndex``, which owns the buffers and calls the
compiled parts:

* ``grid_plan``: the grid's geometry (dense or hashed cells, rings on the
  wrapping axes) and the counting sort of the animals into cell order;
* ``grid_query``: the k-nearest query kernel over that order, and the scatter
  of its rows back to their animals;
* ``candidates``: the pair test and the row ranking the query shares with the
  k-d tree, the all-pairs kernel and the GPU query.

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

*Rows, not cells.*  The query visits the (y, z) rows of cells whose slab can
reach the search sphere, each as one run of targets (``grid_query``).  Cells
one radius wide measured fastest at the benchmark density (``CELL_SCALE``):
narrower cells scan fewer animals but visit more rows.  In a crowd (at least
``DENSE_OCCUPANCY`` targets per cell on average) the balance turns, and the
grid is planned with half-radius cells instead.

*Exactness.*  Pruning (which rows and cells to visit) is done in float64 with a
slightly inflated radius, so it can only visit too much, never too little.
Every visited candidate then goes through the one pair test of ``candidates``
(float32 offset, minimum image, squared distance against a threshold, the
cosine field-of-view test), which the k-d tree path also applies and
``brute.py`` restates in NumPy.  Rows are ordered by (distance, target index),
so the result does not depend on the order candidates were met in, nor on the
thread count.

*Threads.*  Each query writes only its own output row, so queries run in a
``prange`` without locks.  Small populations use a serial kernel (below
``starling.parallel.threads_from()``, by default where the measured start-up of the
parallel region stops paying).  The serial and parallel kernels compile from one function.
"""

from __future__ import annotations

import numba
import numpy as np

from starling.kernel_calls import CallSite
from starling.parallel import threads_from

from .candidates import minimum_image, query_thresholds, wrap_offset
from .grid_plan import (
    DENSE_CELL_SCALE as DENSE_CELL_SCALE,
    DENSE_OCCUPANCY as DENSE_OCCUPANCY,
    _MODE_DENSE,
    _REACH_REL,
    _counting_sort_parallel,
    _counting_sort_serial,
    _plan,
)
from .grid_query import (
    _EXCLUDE_INDEX,
    _EXCLUDE_NONE,
    _EXCLUDE_SLOT,
    _RUN_MAX,
    _query_parallel,
    _query_serial,
    _scatter_rows,
)

__all__ = [
    "CELL_SCALE",
    "GridIndex",
    "minimum_image",
    "query_thresholds",
    "wrap_offset",
]

# Cell width as a multiple of the search radius.  With row runs the width
# mostly sets how far a run overshoots the sphere along x and how many rows
# are visited; see ``benchmarks/neighbor_queries.py`` for the measurement.
CELL_SCALE = 1.0
# DENSE_OCCUPANCY and DENSE_CELL_SCALE (imported above), the crowd's cell width,
# live in ``grid_plan``, whose compiled ``_plan`` reads them.

# Counting sorts of at least this many points spread their passes over threads.
PARALLEL_BUILD_MIN = 100_000
# Up to this many animals, query rows are written straight to their animals'
# rows; beyond it they are written in cell order and scattered afterwards
# (random row writes from the query loop stall on cache misses at large n).
DIRECT_ROWS_MAX = 32_768

# The query kernels index per-thread scratch with ``numba.get_thread_id()``.
# Numba binds that symbol when it starts its thread pool, which compiling such a
# kernel does but loading it from the on-disk cache does not; asking for the
# thread count starts the pool, so cached kernels find the symbol. A grid index
# does so when it is made, not this module when it is imported: a process that
# never steps a simulation (a sweep's driver) keeps the choice of threading layer
# open, and forks its workers (starling.experiments.backends).


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
        # the query kernel's arguments are this object's own buffers and fixed-type scalars, except
        # the output rows (the caller's, or this object's for many animals), which the site watches
        self._kernel_calls = CallSite()

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
        early_stop: bool = False,
        any_order: bool = False,
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
        ``early_stop`` lets each query stop once its k nearest are certain, trying
        the k-th distance the output rows hold from the last call first (the rows
        are the same; ``out_overflow`` then counts only the candidates met).
        ``any_order`` leaves a row of fewer than ``k`` neighbours in the order the
        search met them (see ``grid_query._query_body``).
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
        self._kernel_calls.watch(*rows)
        kernel = _query_serial if n < threads_from() else _query_parallel
        self._kernel_calls(
            kernel, n,
            spos, sfwd, sorder, direct, self.positions, self.order, self.start,
            self.geom, self.idim, self._box, r2, float(self._reach), cos_limit, sees_all, exclude, int(k),
            bool(early_stop), bool(any_order), rows[0], rows[1], rows[2], rows[3], self.scratch_slot,
            self.scratch_dist, self.scratch_runs,
        )
        if not direct:
            _scatter_rows(sorder[:n] if sorder.shape[0] != n else sorder, *rows,
                          out_index, out_distance, out_count, out_overflow)
