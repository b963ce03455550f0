"""Memory layout: keep animals that are near in space near in memory.

Neighbour behaviours read every neighbour's position and velocity. If rows are in
random order each read is a cache miss once a population outgrows the cache; sorted by
grid cell, an animal's neighbours sit in a few contiguous runs. The simulation
re-sorts large populations every few steps (animals drift slowly relative to a cell),
so the cost of the permutation is amortised.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, no_cfunc_wrapper=True)
def _cell_order(position, cell):
    n = position.shape[0]
    lo0 = np.inf
    lo1 = np.inf
    lo2 = np.inf
    hi0 = -np.inf
    hi2 = -np.inf
    for i in range(n):
        lo0 = min(lo0, position[i, 0])
        lo1 = min(lo1, position[i, 1])
        lo2 = min(lo2, position[i, 2])
        hi0 = max(hi0, position[i, 0])
        hi2 = max(hi2, position[i, 2])
    nx = min(int((hi0 - lo0) / cell) + 1, 1 << 10)
    nz = min(int((hi2 - lo2) / cell) + 1, 1 << 10)
    keys = np.empty(n, np.int64)
    for i in range(n):
        cx = min(int((position[i, 0] - lo0) / cell), nx - 1)
        cy = int((position[i, 1] - lo1) / cell)
        cz = min(int((position[i, 2] - lo2) / cell), nz - 1)
        keys[i] = (cy * nz + cz) * nx + cx
    return np.argsort(keys, kind="mergesort")


def spatial_order(position: np.ndarray, cell_size: float) -> np.ndarray:
    """Row order that groups animals by grid cell (stable: ties keep their order)."""
    if len(position) == 0:
        return np.zeros(0, np.int64)
    return _cell_order(position, float(cell_size))
