"""The neighbour query on the GPU: a uniform grid by counting sort, then k nearest per thread.

The table is the CPU query's (``starling.steering.queries.neighbors``): each row the
``k`` nearest targets within radius and field of view, sorted by (distance, index),
``-1``/``inf`` padded, with ``count`` and ``overflow``. The arithmetic is the CPU grid's
— float32 offsets, the minimum image ``o - L rint(o / L)``, the float32 squared-distance
threshold and field-of-view slack of ``query_thresholds`` — so both backends find the
same neighbours (``tests/gpu`` checks it against the brute-force oracle).

The build is three device kernels: each target's cell and an atomic count per cell, an
exclusive scan of the counts (cell starts), and a scatter of the targets into cell order
(the slot within a cell is taken atomically, so the order inside a cell varies from run
to run; the table does not, because every row is ranked by distance then index). The
query itself is :func:`knn_range`, a plain range kernel: one thread per querier walks
the 3 × 3 × 3 cells around it (fewer on an axis with under three cells) and inserts each
candidate into its own row with the CPU query's ``_insert_row``. Because it is an
ordinary Starling kernel, the same source runs on the CPU (where the tests compare it with
the brute-force query) and, through :mod:`starling.cuda.translate`, on the GPU.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit

from ..steering.queries.candidates import _insert_row, candidate_distance
from .runtime import simulated
from .translate import device_function

__all__ = ["DeviceGrid", "grid_shape", "knn_range"]

#: threads per block of the grid kernels (and of the scan's blocks); the simulator runs each
#: thread as a Python thread, so it gets small blocks
BLOCK = 32 if simulated() else 256
#: grids of at most this many cells are scanned by one thread (``scan_serial``)
SERIAL_SCAN_CELLS = 1024
#: the grid has at most this many cells per target (wider cells beyond it)
CELLS_PER_TARGET = 4


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def cell_coordinate(v, origin, inverse, cells):
    """The cell along one axis of coordinate ``v`` (clamped: an animal outside the box shares the edge cell)."""
    c = int(math.floor((v - origin) * inverse))
    if c < 0:
        return 0
    if c >= cells:
        return cells - 1
    return c


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def axis_first(c, cells, wraps):
    """First cell offset of the stencil along an axis (and so where the walk starts)."""
    if cells < 3:
        return -c  # visit every cell of the axis once
    if wraps:
        return -1
    return -1 if c > 0 else 0


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def axis_last(c, cells, wraps):
    if cells < 3:
        return cells - 1 - c
    if wraps:
        return 1
    return 1 if c < cells - 1 else 0


def knn_range(lo, hi, qpos, qfwd, tpos, torder, start, origin, inverse, dims, box, r2, cos_limit, sees_all,
              exclude_self, k, out_index, out_distance, out_count, out_overflow):
    """Rows ``lo``..``hi`` of the neighbour table of queriers ``qpos``/``qfwd`` ((n, 3) float32).

    ``tpos``/``torder``: the targets' positions in cell order and their indices;
    ``start`` (cells + 1): each cell's first slot; ``origin``/``inverse`` (3,) float64 and
    ``dims`` (3,) int64: the grid; ``box`` (3,) float32 periodic sides, 0 where an axis
    does not wrap; ``r2``/``cos_limit``/``sees_all`` from ``query_thresholds``.
    """
    nx = dims[0]
    ny = dims[1]
    nz = dims[2]
    bx = box[0]
    by = box[1]
    bz = box[2]
    one = np.float32(1.0)
    zero = np.float32(0.0)
    vx = one / bx if bx > 0 else zero
    vy = one / by if by > 0 else zero
    vz = one / bz if bz > 0 else zero
    for i in range(lo, hi):
        px = qpos[i, 0]
        py = qpos[i, 1]
        pz = qpos[i, 2]
        fx = qfwd[i, 0]
        fy = qfwd[i, 1]
        fz = qfwd[i, 2]
        thr = cos_limit * math.sqrt(fx * fx + fy * fy + fz * fz)
        cx = cell_coordinate(px, origin[0], inverse[0], nx)
        cy = cell_coordinate(py, origin[1], inverse[1], ny)
        cz = cell_coordinate(pz, origin[2], inverse[2], nz)
        count = 0
        total = 0
        for oz in range(axis_first(cz, nz, bz > 0), axis_last(cz, nz, bz > 0) + 1):
            zz = (cz + oz + nz) % nz
            for oy in range(axis_first(cy, ny, by > 0), axis_last(cy, ny, by > 0) + 1):
                yy = (cy + oy + ny) % ny
                for ox_ in range(axis_first(cx, nx, bx > 0), axis_last(cx, nx, bx > 0) + 1):
                    xx = (cx + ox_ + nx) % nx
                    cell = (zz * ny + yy) * nx + xx
                    for s in range(start[cell], start[cell + 1]):
                        j = torder[s]
                        if exclude_self and j == i:
                            continue
                        dist = candidate_distance(tpos[s, 0] - px, tpos[s, 1] - py, tpos[s, 2] - pz, bx, by, bz,
                                                  vx, vy, vz, r2, sees_all, fx, fy, fz, thr)
                        if dist < 0.0:
                            continue
                        total += 1
                        count = _insert_row(out_index, out_distance, i, count, k, dist, j)
        for c in range(count, k):
            out_index[i, c] = -1
            out_distance[i, c] = np.inf
        out_count[i] = count
        out_overflow[i] = total - count


def grid_shape(radius: float, bounds_min, bounds_max, box, targets: int):
    """``(origin (3,) float64, inverse cell width (3,) float64, cells per axis (3,) int64)``.

    Cells are at least ``radius`` wide, so a neighbour is always in the 3 × 3 × 3 cells
    around; on a wrapping axis they divide the period exactly. Wider cells keep the grid
    within :data:`CELLS_PER_TARGET` cells per target.
    """
    lo = np.asarray(bounds_min, np.float64)
    size = np.maximum(np.asarray(bounds_max, np.float64) - lo, 1e-9)
    width = float(radius) * (1.0 + 2.0**-16)  # a pair exactly ``radius`` apart never lands two cells apart by rounding
    limit = max(64, CELLS_PER_TARGET * int(targets))
    while True:
        dims = np.maximum(1, np.floor(size / width)).astype(np.int64)
        if int(np.prod(dims)) <= limit:
            break
        width *= 1.26
    return lo, dims / size, dims


# The grid build's device kernels: compiled on first launch (defining them needs no GPU).
_cell_of = device_function(cell_coordinate)


@cuda.jit
def count_cells(pos, origin, inverse, dims, cell, counts):
    i = cuda.grid(1)
    if i < pos.shape[0]:
        cx = _cell_of(pos[i, 0], origin[0], inverse[0], dims[0])
        cy = _cell_of(pos[i, 1], origin[1], inverse[1], dims[1])
        cz = _cell_of(pos[i, 2], origin[2], inverse[2], dims[2])
        c = (cz * dims[1] + cy) * dims[0] + cx
        cell[i] = c
        cuda.atomic.add(counts, c, 1)


@cuda.jit(device=True)
def _scan_shared(shared, t):
    """Inclusive scan of the block's ``shared`` values in place (Hillis and Steele); ``t`` is this thread."""
    step = 1
    while step < BLOCK:
        x = shared[t - step] if t >= step else 0
        cuda.syncthreads()
        shared[t] += x
        cuda.syncthreads()
        step *= 2


@cuda.jit
def scan_blocks(counts, start, sums):
    """``start[c + 1]`` = inclusive sum of ``counts`` within the block; ``sums[b]`` = the block's total."""
    shared = cuda.shared.array(BLOCK, np.int32)
    t = cuda.threadIdx.x
    c = cuda.blockIdx.x * BLOCK + t
    shared[t] = counts[c] if c < counts.shape[0] else 0
    cuda.syncthreads()
    _scan_shared(shared, t)
    if c < counts.shape[0]:
        start[c + 1] = shared[t]
    if t == BLOCK - 1:
        sums[cuda.blockIdx.x] = shared[t]


@cuda.jit
def scan_sums(sums):
    """Exclusive scan of the block totals in place, by one block (each thread a run of them)."""
    shared = cuda.shared.array(BLOCK, np.int32)
    t = cuda.threadIdx.x
    n = sums.shape[0]
    per = (n + BLOCK - 1) // BLOCK
    a = t * per
    b = min(n, a + per)
    total = 0
    for q in range(a, b):
        total += sums[q]
    shared[t] = total
    cuda.syncthreads()
    _scan_shared(shared, t)
    run = shared[t] - total  # what the runs before this thread's add up to
    for q in range(a, b):
        v = sums[q]
        sums[q] = run
        run += v


@cuda.jit
def scan_serial(counts, start, fill):
    """The whole exclusive scan by one thread: cheaper than three launches for a small grid."""
    if cuda.grid(1) == 0:
        run = 0
        start[0] = 0
        for c in range(counts.shape[0]):
            run += counts[c]
            start[c + 1] = run
            fill[c] = 0


@cuda.jit
def add_block_offsets(start, sums, fill):
    c = cuda.grid(1)
    if c < fill.shape[0]:
        start[c + 1] += sums[c // BLOCK]
        fill[c] = 0
    if c == 0:
        start[0] = 0


@cuda.jit
def scatter(pos, cell, start, fill, order, tpos):
    i = cuda.grid(1)
    if i < pos.shape[0]:
        c = cell[i]
        s = start[c] + cuda.atomic.add(fill, c, 1)
        order[s] = i
        tpos[s, 0] = pos[i, 0]
        tpos[s, 1] = pos[i, 1]
        tpos[s, 2] = pos[i, 2]


@cuda.jit
def clear(counts):
    c = cuda.grid(1)
    if c < counts.shape[0]:
        counts[c] = 0



def _blocks(n: int) -> int:
    return max(1, (n + BLOCK - 1) // BLOCK)


class DeviceGrid:
    """One target population's grid on the device, rebuilt every step; buffers kept between steps."""

    def __init__(self, box):
        self.box = box  # the periodic box on the device, (3,) float32, 0 where an axis does not wrap
        self.capacity = -1
        self.cells = -1
        self.shape = None

    def _ensure(self, m: int, cells: int) -> None:
        if m > self.capacity:
            self.capacity = max(m, 16)
            self.cell = cuda.device_array(self.capacity, np.int32)
            self.order = cuda.device_array(self.capacity, np.int32)
            self.positions = cuda.device_array((self.capacity, 3), np.float32)
        if cells != self.cells:
            self.cells = cells
            self.counts = cuda.to_device(np.zeros(cells, np.int32))
            self.fill = cuda.device_array(cells, np.int32)
            self.start = cuda.device_array(cells + 1, np.int32)
            self.sums = cuda.device_array(_blocks(cells), np.int32)

    def build(self, position, radius: float, bounds_min, bounds_max, box) -> None:
        """Sort the device array ``position`` ((m, 3) float32) into cell order for ``radius``."""
        m = position.shape[0]
        origin, inverse, dims = grid_shape(radius, bounds_min, bounds_max, box, m)
        cells = int(np.prod(dims))
        self._ensure(m, cells)
        if self.shape is None or not (np.array_equal(self.shape[2], dims) and np.array_equal(self.shape[1], inverse)):
            self.shape = (origin, inverse, dims, cuda.to_device(origin), cuda.to_device(inverse), cuda.to_device(dims))
        d_origin, d_inverse, d_dims = self.shape[3:]
        if m:
            count_cells[_blocks(m), BLOCK](position, d_origin, d_inverse, d_dims, self.cell, self.counts)
        if cells <= SERIAL_SCAN_CELLS:
            scan_serial[1, 1](self.counts, self.start, self.fill)
        else:
            scan_blocks[_blocks(cells), BLOCK](self.counts, self.start, self.sums)
            scan_sums[1, BLOCK](self.sums)
            add_block_offsets[_blocks(cells), BLOCK](self.start, self.sums, self.fill)
        if m:
            scatter[_blocks(m), BLOCK](position, self.cell, self.start, self.fill, self.order, self.positions)
        clear[_blocks(cells), BLOCK](self.counts)  # ready for the next build

    def query_args(self) -> tuple:
        """The grid's part of :func:`knn_range`'s arguments (``tpos`` to ``box``), after :meth:`build`."""
        return self.positions, self.order, self.start, self.shape[3], self.shape[4], self.shape[5], self.box
