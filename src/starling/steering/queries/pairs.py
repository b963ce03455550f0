"""Per-pair geometry of a neighbour group, computed once and shared by its behaviours.

Every neighbour behaviour needs, for each (animal, neighbour) pair, the direction to
the neighbour, its distance and the angle between the animal's forward vector and
that direction (the inputs of the observability o(d, α), seed 000, 6.4.4). Computing
them once per group instead of once per behaviour is PySPH's precomputed-symbols idea:
with three flocking behaviours it halves the per-pair work.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..vecmath import fast_acos


@njit(cache=True, no_cfunc_wrapper=True)
def _geometry_range(lo, hi, position, forward, target, index, count, box, direction, distance, angle):
    b0 = box[0]
    b1 = box[1]
    b2 = box[2]
    i0 = 1.0 / b0 if b0 > 0.0 else 0.0
    i1 = 1.0 / b1 if b1 > 0.0 else 0.0
    i2 = 1.0 / b2 if b2 > 0.0 else 0.0
    for i in range(lo, hi):
        px = position[i, 0]
        py = position[i, 1]
        pz = position[i, 2]
        fx = forward[i, 0]
        fy = forward[i, 1]
        fz = forward[i, 2]
        fl = math.sqrt(fx * fx + fy * fy + fz * fz)
        if fl > 1e-9:
            fx /= fl
            fy /= fl
            fz /= fl
        for q in range(count[i]):
            j = index[i, q]
            dx = target[j, 0] - px
            dy = target[j, 1] - py
            dz = target[j, 2] - pz
            if b0 > 0.0:
                dx -= b0 * math.floor(dx * i0 + 0.5)
            if b1 > 0.0:
                dy -= b1 * math.floor(dy * i1 + 0.5)
            if b2 > 0.0:
                dz -= b2 * math.floor(dz * i2 + 0.5)
            d = math.sqrt(dx * dx + dy * dy + dz * dz)
            distance[i, q] = d
            if d < 1e-9:
                direction[i, q, 0] = 0.0
                direction[i, q, 1] = 0.0
                direction[i, q, 2] = 0.0
                angle[i, q] = 0.0
                continue
            inv = 1.0 / d
            ux = dx * inv
            uy = dy * inv
            uz = dz * inv
            direction[i, q, 0] = ux
            direction[i, q, 1] = uy
            direction[i, q, 2] = uz
            angle[i, q] = fast_acos(ux * fx + uy * fy + uz * fz) if fl > 1e-9 else 0.0


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _geometry_parallel(position, forward, target, index, count, box, direction, distance, angle):
    n = position.shape[0]
    chunks = 64
    size = (n + chunks - 1) // chunks
    for c in prange(chunks):
        _geometry_range(c * size, min(n, (c + 1) * size), position, forward, target, index, count, box,
                        direction, distance, angle)


class PairGeometry:
    """Reusable ``(n, k)`` buffers: ``direction`` (unit, minimum image), ``distance``, ``angle`` (rad)."""

    def __init__(self):
        self.direction = np.zeros((0, 1, 3), np.float32)
        self.distance = np.zeros((0, 1), np.float32)
        self.angle = np.zeros((0, 1), np.float32)

    def compute(self, position, forward, target, index, count, box, *, parallel: bool = False):
        n, k = index.shape
        if self.distance.shape[0] < n or self.distance.shape[1] != k:
            cap = max(n, int(self.distance.shape[0] * 1.5))
            self.direction = np.zeros((cap, k, 3), np.float32)
            self.distance = np.zeros((cap, k), np.float32)
            self.angle = np.zeros((cap, k), np.float32)
        direction = self.direction[:n]
        distance = self.distance[:n]
        angle = self.angle[:n]
        if n:
            args = (position, forward, target, index, count, box, direction, distance, angle)
            if parallel:
                _geometry_parallel(*args)
            else:
                _geometry_range(0, n, *args)
        return direction, distance, angle
