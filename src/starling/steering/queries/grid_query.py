"""The uniform grid's k-nearest query kernel, and the scatter of its rows to their animals.

*Rows, not cells.*  For a query point the kernel visits the (y, z) rows of
cells whose slab can reach the search sphere; a row is contiguous in the
cell-ordered targets (``grid_plan``), so the cells in x reach form one run of
targets (two across the seam of a periodic box).  The classical 27-cell
stencil becomes at most nine runs, and rows beyond the sphere are skipped.

*Branch-free inner loop.*  At flocking densities a query meets about thirty
candidates of which about five are in reach, spread over runs of three or four.
Measured, the cost was not the arithmetic but mispredicted branches: one per
run end and one per accepted candidate.  So the runs are listed first, then
walked as one flat sequence (the next run is selected arithmetically); every
candidate's offset, distance and field-of-view test are computed and its slot
appended to a per-thread buffer whose length only grows when it passes; and
the few accepted candidates are finally placed by rank (how many keys are
smaller), again without branches.  A neighbourhood too dense for the buffer
falls back to a sorted insertion into the row.  The test and the ranking are
the shared ones of ``candidates``, expression for expression.

*Wrap-around for free.*  A periodic axis costs nothing in the interior: a run
that does not cross the seam holds no pair whose minimum image differs from
its plain offset, so the minimum image is only computed for queries near a
seam.

*Stopping early.*  A topological query keeps the k nearest of perhaps a
hundred animals in reach.  Where the caller does not need ``overflow`` exactly,
the kernel first searches within last call's k-th distance (a little widened):
k neighbours found strictly inside that radius are the k nearest, whatever lies
beyond it, so the rest of the sphere is never visited.  The table is the one
the full search writes, bit for bit; a miss (a neighbour moved away, a new row)
runs the full search after the short first try.

Queries run in cell order, so consecutive queries read the same few stretches
of memory while they are in cache.  For large populations the rows are also
written in that order and moved to their animals afterwards by
``_scatter_rows``, instead of being written at random from the query loop.
Each query writes only its own output row, so the parallel kernel needs no
locks; the serial and parallel kernels compile from ``_query_body``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit, prange

from .candidates import _close_row, _fov_threshold, _insert_row, _pair_test, _serial_and_parallel, _sort_into_row, _wrap
from .grid_plan import _MODE_HASH, _REACH_REL, _axis_range, _gap, _hash_bucket, _wrap_cell

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
# A knn query that may stop early first tries last call's k-th distance times this as its
# radius: wide enough that a flock's k-th neighbour rarely moves out of it in one step
# (a miss costs the short first try, then the full search), narrow enough to visit few
# cells (the murmuration's query: 2.8 ms -> 0.8 ms with 1.25, tables identical).
_EARLY_WIDEN = np.float32(1.25)
# ... and only when that radius is under this share of the full one: a first try nearly as
# wide as the full search saves little and, when it misses, doubles the work (the flocking
# bench's sparse cloud, 5 in reach for k = 5, ran 4 % slower trying every full row)
_EARLY_MAX = np.float32(0.75)
_EXCLUDE_NONE = 0
_EXCLUDE_SLOT = 1  # queriers are the built targets: skip the querier's own slot
_EXCLUDE_INDEX = 2  # same population in another array: skip by original index


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _row_axis(vv, cu, origin, width, full, n, period, ring, skip):
    """One axis of a row of cells: its gap to the query point, its wrapped cell index, and
    whether offsets across it need the minimum image (a seam-free row on a ring does not,
    see grid_plan._plan)."""
    g = _gap(vv, cu, origin, width, full)
    c = _wrap_cell(cu, n)
    return g, c, period > 0 and ring > 0.0 and not (skip and cu == c and not full)


def _query_body(
    spos, sfwd, sorder, direct, tpos, torder, start, geom, idim, box, r2, rp,
    cos_limit, sees_all, exclude, k, early, any_order, out_index, out_distance, out_count, out_overflow,
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

    With ``early`` (a knn query whose caller reads no exact ``overflow``) the
    three phases first run with a radius of last call's k-th distance times
    ``_EARLY_WIDEN`` (read from the output row before it is rewritten, and only
    when that radius is under ``_EARLY_MAX`` of the full one); when
    that finds k neighbours all nearer than its radius they are the k nearest
    within ``r2`` too, and the row is kept, with ``overflow`` counting only the
    candidates met. In a murmuration, where a bird's 7 nearest lie within half
    its radius, this visits a quarter of the cells.

    With ``any_order`` (the caller only sums over each row) a full search that meets
    fewer than ``k`` candidates writes them in the order it met them (cell order),
    without phase 3's ranking. A row that is not full never seeds an early first try,
    so the ``early`` hint is always read from a sorted row.
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
    # the pair test's radius, and the pruning slack the reach ``rp`` adds to it (float32
    # rounding: see grid_plan); a first try of radius r1 prunes with reach r1 + slack
    rfull = np.float32(math.sqrt(r2))
    slack = rp - rfull
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
        # Early stop (``early``, knn groups): last call's k-th distance, a little widened, is
        # tried first as the radius. When that finds k neighbours all nearer than it, they
        # are the k nearest within the full radius (everything unvisited is farther), so the
        # search stops; otherwise it runs again over the full radius. A wrong or garbage
        # hint only costs the first try.
        first = 1
        r1 = zero
        if early and out_count[row] == k:
            r1 = np.float32(out_distance[row, k - 1] * _EARLY_WIDEN)
            if r1 > zero and r1 < _EARLY_MAX * rfull:
                first = 0
        for attempt in range(first, 2):
            if attempt == 0:
                rq2 = min(np.float32(r1 * r1), r2)
                reach = r1 * (1.0 + _REACH_REL) + slack
            else:
                rq2 = r2
                reach = rp
            reach2 = reach * reach
            total = 0
            count = 0
            nc = 0
            flushed = False
            ylo, yhi, yv, yfull = _axis_range(py, reach, gy, iy, ry, ny)
            zlo, zhi, zv, zfull = _axis_range(pz, reach, gz, iz, rz, nz)
            xlo, xhi, xv, xfull = _axis_range(px, reach, gx, ix, rx, nx)
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
            if not hashed and nruns == 1:
                # The common case, dense cells and no seam along x: one run per row and no
                # bucket to list once. A loop of its own, with fewer values live, takes about
                # 6-10 % off the whole query (thread time, the flocking bench's 1,000 and 10,000).
                for czu in range(zlo, zhi + 1):
                    dz, cz, wrap_z = _row_axis(zv, czu, gz, wz, zfull, nz, bz, rz, skip_z)
                    rem_z = reach2 - dz * dz
                    for cyu in range(ylo, yhi + 1):
                        dy, cy, wrap_y = _row_axis(yv, cyu, gy, wy, yfull, ny, by, ry, skip_y)
                        base = (cz * ny + cy) * nx
                        s = start[base + a0]
                        s1 = start[base + b0 + 1]
                        scratch_runs[tid, nr] = s
                        scratch_runs[tid, _RUN_MAX + nr] = s1
                        listed = (rem_z - dy * dy >= 0.0) & (s1 > s)
                        nr += listed
                        span += listed * (s1 - s)
                        wrap_any = wrap_any | (listed & (wrap_x | wrap_y | wrap_z))
            else:
                for czu in range(zlo, zhi + 1):
                    dz, cz, wrap_z = _row_axis(zv, czu, gz, wz, zfull, nz, bz, rz, skip_z)
                    rem_z = reach2 - dz * dz
                    for cyu in range(ylo, yhi + 1):
                        dy, cy, wrap_y = _row_axis(yv, cyu, gy, wy, yfull, ny, by, ry, skip_y)
                        in_reach = rem_z - dy * dy >= 0.0
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
                # the walk is written twice on purpose: the copy for queries that touch no
                # periodic seam (nearly all) pays no minimum image per candidate
                if wrap_any:
                    for _ in range(span):
                        ox = _wrap(tpos[u, 0] - px, lx, vx)
                        oy = _wrap(tpos[u, 1] - py, ly, vy)
                        oz = _wrap(tpos[u, 2] - pz, lz, vz)
                        ok, dist = _pair_test(ox, oy, oz, rq2, sees_all, fx, fy, fz, thr)
                        ok &= u != excl_slot
                        scratch_slot[tid, nc] = u
                        scratch_dist[tid, nc] = dist
                        nc += ok
                        u += 1
                        at_end = u == e
                        rr += at_end
                        u += at_end * (scratch_runs[tid, rr] - u)
                        e += at_end * (scratch_runs[tid, _RUN_MAX + rr] - e)
                elif sees_all:
                    # a full view tests the squared distance alone; the square roots of the few
                    # that pass are taken afterwards, in one vectorised pass (the same bits)
                    for _ in range(span):
                        ox = tpos[u, 0] - px
                        oy = tpos[u, 1] - py
                        oz = tpos[u, 2] - pz
                        d2 = ox * ox + oy * oy + oz * oz
                        ok = (d2 <= rq2) & (u != excl_slot)
                        scratch_slot[tid, nc] = u
                        scratch_dist[tid, nc] = d2
                        nc += ok
                        u += 1
                        at_end = u == e
                        rr += at_end
                        u += at_end * (scratch_runs[tid, rr] - u)
                        e += at_end * (scratch_runs[tid, _RUN_MAX + rr] - e)
                    for a in range(nc):
                        scratch_dist[tid, a] = math.sqrt(scratch_dist[tid, a])
                else:
                    for _ in range(span):
                        ox = tpos[u, 0] - px
                        oy = tpos[u, 1] - py
                        oz = tpos[u, 2] - pz
                        ok, dist = _pair_test(ox, oy, oz, rq2, sees_all, fx, fy, fz, thr)
                        ok &= u != excl_slot
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
                            ok, dist = _pair_test(ox, oy, oz, rq2, sees_all, fx, fy, fz, thr)
                            ok &= u != excl_slot
                            scratch_slot[tid, nc] = u
                            scratch_dist[tid, nc] = dist
                            nc += ok
                        s = e
            # the last try, nothing flushed, and nobody reads the order: fewer than k go in as met
            fits = any_order and attempt == 1 and not flushed
            if fits and nc < k and excl < 0:
                # nobody to drop by index: the slots go into the row as target indices, as met
                for a in range(nc):
                    out_index[row, a] = torder[scratch_slot[tid, a]]
                    out_distance[row, a] = scratch_dist[tid, a]
                total += nc
                count = nc
            else:
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
                if fits and nc < k:
                    # everyone fits, and nobody reads their order: the row is the buffer
                    for a in range(nc):
                        out_distance[row, a] = scratch_dist[tid, a]
                        out_index[row, a] = scratch_slot[tid, a]
                    count = nc
                elif not flushed and (nc <= _RANK_MAX or (nc <= _RANK_KEPT_MAX and 2 * k >= nc)):
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
                    count = _sort_into_row(out_index, out_distance, row, k, scratch_dist, scratch_slot, tid, nc)
                else:
                    for a in range(nc):
                        count = _insert_row(out_index, out_distance, row, count, k, scratch_dist[tid, a], scratch_slot[tid, a])
            # strictly nearer than the float32 distance of the try's radius: anything left out
            # (d2 > rq2) is at least that far, so it cannot tie with the k-th either
            if attempt == 0 and count == k and out_distance[row, k - 1] < np.float32(math.sqrt(rq2)):
                break  # the k nearest are certain: ``overflow`` counts only what this try met
        _close_row(out_index, out_distance, out_count, out_overflow, row, count, total - count, k)


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
