"""k-d tree neighbour query: ``scipy.spatial.cKDTree`` candidates, exact selection.

The thesis' alternative to the grid (5.3.3, 9.5.3): a balanced k-d tree, built
in O(m log m), answering radius queries in about O(log m + found).  Here it is
the second method and a second oracle, so correctness comes first:

1. The trees (float64, ``boxsize`` on the wrap-around axes) list every
   (animal, target) pair within a radius slightly larger than
   ``max_distance``: ``query_pairs`` when the animals query their own
   population (each pair found once, used both ways), else
   ``sparse_distance_matrix`` between a tree of the animals and one of the
   targets.  All pairs in reach are needed, not just the k nearest: the field
   of view filters *before* the k nearest are chosen (thesis 5.1.3, Figure
   5.4) and ``overflow`` counts every animal that passed.
2. The pairs are grouped by animal, and a compiled kernel applies the grid's
   float32 pair test (``candidates.candidate_distance``) and keeps the k best by
   (distance, index) with the same insertion, so the output is bit-identical
   to the grid's and independent of the tree's order and of the thread count.

Non-finite positions can never pass the pair test, so they are left out of the
trees.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from starling.steering.queries.candidates import (
    _fov_threshold,
    _insert_row,
    _serial_and_parallel,
    candidate_distance,
    query_thresholds,
)
from starling.parallel import threads_from

__all__ = ["query"]


def _select_body(
    offsets, candidates, spos, sfwd, tpos, box, r2, cos_limit, sees_all, exclude_self, k,
    out_index, out_distance, out_count, out_overflow,
):
    """Exact selection for every animal ``i`` among ``candidates[offsets[i]:offsets[i + 1]]``.

    ``candidates`` holds target indices grouped by animal (CSR layout).  The
    pair test and the insertion are the grid kernel's, step for step (float32
    offset, minimum image, ``d2 <= r2``, square root, field of view, insertion
    by (distance, index)), so both methods agree bit for bit.
    """
    bx, by, bz = box[0], box[1], box[2]
    one = np.float32(1.0)
    vx = one / bx if bx > 0 else np.float32(0.0)
    vy = one / by if by > 0 else np.float32(0.0)
    vz = one / bz if bz > 0 else np.float32(0.0)
    for ip in prange(spos.shape[0]):
        i = np.int64(ip)
        px = spos[i, 0]
        py = spos[i, 1]
        pz = spos[i, 2]
        fx = sfwd[i, 0]
        fy = sfwd[i, 1]
        fz = sfwd[i, 2]
        thr = _fov_threshold(fx, fy, fz, cos_limit)
        count = 0
        total = 0
        for c in range(offsets[i], offsets[i + 1]):
            j = candidates[c]
            if exclude_self and j == i:
                continue
            dist = candidate_distance(tpos[j, 0] - px, tpos[j, 1] - py, tpos[j, 2] - pz, bx, by, bz, vx, vy, vz,
                                      r2, sees_all, fx, fy, fz, thr)
            if dist < 0.0:
                continue
            total += 1
            count = _insert_row(out_index, out_distance, i, count, k, dist, j)
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


def _tree_points(position: np.ndarray, box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Finite rows of ``position`` as float64 tree input (wrapped into the box), and their rows."""
    ok = np.flatnonzero(np.isfinite(position).all(axis=1))
    data = position[ok].astype(np.float64)
    for a in range(3):
        if box[a] > 0:
            data[:, a] = _wrap_into_box(data[:, a], float(box[a]))
    return data, ok


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
    """Fill the (n, k) output rows using k-d trees.

    ``self_position``, ``self_forward``: (n, 3) float32; ``target_position``:
    (m, 3) float32 (the very same array when the animals query their own
    population); ``box``: None or (3,) float32 with 0 on axes that do not
    wrap.  Outputs as in ``neighbors.Neighbors``.
    """
    from scipy.spatial import cKDTree  # imported by the method that uses it: SciPy's trees take 0.3 s to import

    n = self_position.shape[0]
    r2, cos_limit, sees_all = query_thresholds(float(max_distance), float(fov_deg))
    box32 = np.zeros(3, dtype=np.float32) if box is None else box
    boxsize = np.where(box32 > 0, box32, 0).astype(np.float64) if box32.any() else None
    same = self_position is target_position
    targets, target_ok = _tree_points(target_position, box32)
    if same:
        points, point_ok = targets, target_ok
    else:
        points, point_ok = _tree_points(self_position, box32)
    # Candidate radius: inflated like the grid's pruning radius so that float64
    # tree distances can never drop a pair the float32 test would accept (its
    # rounding grows with the raw coordinates, wherever they lie).
    magnitude = float(box32.max())
    for raw, ok in ((target_position, target_ok), (self_position, point_ok)):
        if ok.size:
            magnitude = max(magnitude, float(np.abs(raw[ok]).max()))
    reach = max_distance * (1.0 + 2.0**-16) + magnitude * 2.0**-18
    if targets.shape[0] == 0 or points.shape[0] == 0:
        rows = cols = np.zeros(0, dtype=np.int64)
    elif same:
        pairs = cKDTree(targets, boxsize=boxsize).query_pairs(reach, output_type="ndarray")
        first = target_ok[pairs[:, 0]]
        second = target_ok[pairs[:, 1]]
        rows = np.concatenate([first, second, target_ok])
        cols = np.concatenate([second, first, target_ok])
    else:
        found = cKDTree(points, boxsize=boxsize).sparse_distance_matrix(
            cKDTree(targets, boxsize=boxsize), reach, output_type="ndarray"
        )
        rows = point_ok[found["i"]]
        cols = target_ok[found["j"]]
    order = np.argsort(rows, kind="stable")
    candidates = np.ascontiguousarray(cols[order], dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=offsets[1:])
    select = _select_serial if n < threads_from() else _select_parallel
    select(
        offsets, candidates, self_position, self_forward, target_position, box32, r2, cos_limit,
        sees_all, exclude_self, k, out_index, out_distance, out_count, out_overflow,
    )
