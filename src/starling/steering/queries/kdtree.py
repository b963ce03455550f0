"""k-d tree neighbour query: ``scipy.spatial.cKDTree`` candidates, exact selection.

The thesis' alternative to the grid (5.3.3, 9.5.3): a balanced k-d tree, built
in O(m log m), answering k-nearest queries in O(k log m).  Here it is the
second method and a second oracle, so correctness comes first:

1. The tree (float64, ``boxsize`` for the wrap-around axes) proposes
   candidates: for each animal the ``kk`` nearest targets within a radius
   slightly larger than ``max_distance``.  A row whose ``kk``-th candidate was
   found may have more, so those rows are asked again with ``kk`` doubled until
   every row has all of its in-radius targets.  All of them are needed: the
   field of view must filter *before* the k nearest are chosen (thesis 5.1.3,
   Figure 5.4) and ``overflow`` must count every animal that passed.
2. A compiled kernel applies the exact float32 pair test of the grid kernel
   (``grid._wrap`` and friends) and keeps the k best by (distance, index)
   in the same insertion-sorted buffer, so the output is bit-identical to the
   grid's and independent of the tree's internal order and thread count.

Non-finite positions can never pass the pair test, so they are left out of the
tree (targets) or not queried (animals).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange
from scipy.spatial import cKDTree

from starling.steering.queries.grid import (
    SERIAL_QUERY_MAX,
    _fov_threshold,
    _insert_at,
    _serial_and_parallel,
    _wrap,
    query_thresholds,
)

__all__ = ["query"]


def _select_body(
    rows, candidates, spos, sfwd, tpos, box, r2, cos_limit, sees_all, exclude_self, k,
    out_index, out_distance, out_count, out_overflow,
):
    """Exact selection for animals ``rows[r]`` among their candidate targets ``candidates[r]``.

    ``candidates`` is (len(rows), kk) int64 with -1 for "no candidate".  The
    pair test and the sorted insertion are the grid kernel's, step for step
    (float32 offset, minimum image, ``d2 <= r2``, self test, square root, field
    of view, insertion by (distance, index)), so both methods agree bit for bit.
    """
    bx, by, bz = box[0], box[1], box[2]
    one = np.float32(1.0)
    vx = one / bx if bx > 0 else np.float32(0.0)
    vy = one / by if by > 0 else np.float32(0.0)
    vz = one / bz if bz > 0 else np.float32(0.0)
    for r in prange(rows.shape[0]):
        i = rows[r]
        px = spos[i, 0]
        py = spos[i, 1]
        pz = spos[i, 2]
        fx = sfwd[i, 0]
        fy = sfwd[i, 1]
        fz = sfwd[i, 2]
        thr = _fov_threshold(fx, fy, fz, cos_limit)
        count = 0
        total = 0
        for c in range(candidates.shape[1]):
            j = candidates[r, c]
            if j < 0 or (exclude_self and j == i):
                continue
            ox = _wrap(tpos[j, 0] - px, bx, vx)
            oy = _wrap(tpos[j, 1] - py, by, vy)
            oz = _wrap(tpos[j, 2] - pz, bz, vz)
            d2 = ox * ox + oy * oy + oz * oz
            if d2 > r2:
                continue
            dist = math.sqrt(d2)
            if not (sees_all or fx * ox + fy * oy + fz * oz >= thr * dist):
                continue
            total += 1
            pos = _insert_at(count, k, dist, j, out_distance[i, k - 1], out_index[i, k - 1])
            if pos < 0:
                continue
            if count < k:
                count += 1
            while pos > 0:
                prev = out_distance[i, pos - 1]
                if prev > dist or (prev == dist and out_index[i, pos - 1] > j):
                    out_distance[i, pos] = prev
                    out_index[i, pos] = out_index[i, pos - 1]
                    pos -= 1
                else:
                    break
            out_distance[i, pos] = dist
            out_index[i, pos] = j
        for s in range(count, k):
            out_index[i, s] = -1
            out_distance[i, s] = np.inf
        out_count[i] = count
        out_overflow[i] = total - count


_select_serial, _select_parallel = _serial_and_parallel(_select_body, "_kdtree_select")


def _wrap_into_box(x: np.ndarray, length: float) -> np.ndarray:
    """Coordinates wrapped into ``[0, length)``, as ``cKDTree(boxsize=...)`` requires."""
    y = x - length * np.floor(x / length)
    y[y >= length] = 0.0
    return y


def query(
    self_position: np.ndarray,
    self_forward: np.ndarray,
    target_position: np.ndarray,
    max_distance: float,
    fov_deg: float,
    k: int,
    box: np.ndarray | None,
    exclude_self: bool,
    out_index: np.ndarray,
    out_distance: np.ndarray,
    out_count: np.ndarray,
    out_overflow: np.ndarray,
) -> None:
    """Fill the (n, k) output rows using a k-d tree over the targets.

    ``self_position``, ``self_forward``: (n, 3) float32; ``target_position``:
    (m, 3) float32, m >= 1; ``box``: None or (3,) float32 with 0 on axes that
    do not wrap.  Outputs as in ``neighbors.Neighbors``.
    """
    r2, cos_limit, sees_all = query_thresholds(float(max_distance), float(fov_deg))
    box32 = np.zeros(3, dtype=np.float32) if box is None else box
    out_index.fill(-1)
    out_distance.fill(np.inf)
    out_count.fill(0)
    out_overflow.fill(0)

    targets_ok = np.flatnonzero(np.isfinite(target_position).all(axis=1))
    queries_ok = np.flatnonzero(np.isfinite(self_position).all(axis=1))
    if targets_ok.size == 0 or queries_ok.size == 0:
        return
    data = target_position[targets_ok].astype(np.float64)
    points = self_position[queries_ok].astype(np.float64)
    boxsize = None
    if box32.any():
        boxsize = np.zeros(3)
        for a in range(3):
            L = float(box32[a])
            if L > 0.0:
                boxsize[a] = L
                data[:, a] = _wrap_into_box(data[:, a], L)
                points[:, a] = _wrap_into_box(points[:, a], L)
    # Candidate radius: inflated like the grid's pruning radius so that float64
    # tree distances can never drop a pair the float32 test would accept.
    magnitude = max(float(np.abs(data).max()), float(np.abs(points).max()), float(box32.max()))
    reach = max_distance * (1.0 + 2.0**-16) + magnitude * 2.0**-18
    tree = cKDTree(data, boxsize=boxsize)
    m_ok = data.shape[0]
    # Tree slot -> original target index; the tree's "missing" slot maps to -1.
    to_target = np.append(targets_ok, -1).astype(np.int64)

    rows = queries_ok
    todo = np.arange(rows.shape[0])
    kk = min(m_ok, max(2 * k + 2, 8))
    while todo.size:
        dist, slot = tree.query(points[todo], k=kk, distance_upper_bound=reach, workers=-1)
        if kk == 1:
            dist = dist[:, None]
            slot = slot[:, None]
        if kk >= m_ok:
            complete = np.ones(todo.shape[0], dtype=bool)
        else:
            complete = ~np.isfinite(dist[:, -1])
        candidates = to_target[slot[complete]]
        done_rows = rows[todo[complete]].astype(np.int64)
        select = _select_serial if done_rows.shape[0] <= SERIAL_QUERY_MAX else _select_parallel
        select(
            done_rows, np.ascontiguousarray(candidates), self_position, self_forward,
            target_position, box32, r2, cos_limit, sees_all, exclude_self, k,
            out_index, out_distance, out_count, out_overflow,
        )
        todo = todo[~complete]
        kk = min(m_ok, 2 * kk)
