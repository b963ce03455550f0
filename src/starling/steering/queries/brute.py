"""Brute-force neighbour query: the contract written out plainly (the test oracle).

Every animal is compared with every target, O(n m), one row at a time in
NumPy.  Nothing here is clever on purpose: this module *is* the definition
the grid and the k-d tree are tested against (thesis 5.1.1-5.1.3).

The arithmetic is the one the compiled kernels use, restated: float32 offset
``p_j - p_i``; minimum image ``o - L * rint(o * (1 / L))`` on wrapping axes; squared
distance ``(ox*ox + oy*oy) + oz*oz`` and its float32 square root; field of view
``forward . o >= c * |forward| * distance`` with
``c = float32(cos(fov / 2) - 2**-20)`` (the tiny slack keeps neighbours that lie
exactly on the edge of the view inside; see ``candidates.query_thresholds``).  The
distance test is stated literally, ``float(distance) <= max_distance``, in
float64, so it also checks the kernels' squared-distance threshold.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["query"]


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
    """Fill the (n, k) output rows by comparing every animal with every target.

    ``self_position``, ``self_forward``: (n, 3) float32; ``target_position``:
    (m, 3) float32; ``box``: None or (3,) float32 with 0 on axes that do not
    wrap.  Outputs as in ``neighbors.Neighbors``.
    """
    n = self_position.shape[0]
    sees_all = fov_deg >= 360.0
    c = np.float32(math.cos(math.radians(fov_deg / 2.0)) - 2.0**-20)
    target_index = np.arange(target_position.shape[0])
    # Non-finite positions give NaN or inf offsets; they fail the tests below.
    with np.errstate(invalid="ignore", over="ignore"):
        for i in range(n):
            o = target_position - self_position[i]
            if box is not None:
                for a in range(3):
                    L = box[a]
                    if L > 0:
                        inverse = np.float32(1) / L
                        o[:, a] = o[:, a] - L * np.rint(o[:, a] * inverse)
            d2 = o[:, 0] * o[:, 0] + o[:, 1] * o[:, 1] + o[:, 2] * o[:, 2]
            dist = np.sqrt(d2)
            ok = dist.astype(np.float64) <= max_distance
            if exclude_self:
                ok[i] = False
            if not sees_all:
                fx, fy, fz = self_forward[i]
                threshold = c * np.sqrt(fx * fx + fy * fy + fz * fz)
                dot = fx * o[:, 0] + fy * o[:, 1] + fz * o[:, 2]
                ok &= dot >= threshold * dist
            candidates = target_index[ok]
            ranked = candidates[np.lexsort((candidates, dist[candidates]))]
            kept = ranked[:k]
            count = kept.shape[0]
            out_index[i, :count] = kept
            out_index[i, count:] = -1
            out_distance[i, :count] = dist[kept]
            out_distance[i, count:] = np.inf
            out_count[i] = count
            out_overflow[i] = candidates.shape[0] - count
