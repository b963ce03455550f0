"""What the ecology asks about neighbours: how many an animal sees, the nearest, what a mouth reaches.

Brains count animals in view (``{ count = … }`` conditions) and remember the nearest
threat; mouths bite the nearest food in reach. Both are neighbour queries with k of one
or two, asked of small groups (a few sharks, a school of fish, a handful of apples),
where building a grid costs more than testing every pair. So small queries run
brute force in one kernel and large ones go through the grid of
:func:`~starling.steering.queries.neighbors.find_neighbors`.

Both paths apply the one pair test of the neighbour queries (float32 offsets, the
squared distance against ``query_thresholds``' threshold, the cosine field-of-view test,
all in the same order of operations) and rank by (distance, index), so they give
bit-identical answers (``tests/ecology/test_perception.py`` checks it).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..kernel_calls import CallSite
from ..steering.queries.candidates import query_thresholds
from ..steering.queries.neighbors import NeighborQuerySpec, find_neighbors

#: queries with at most this many (animal, target) pairs are answered brute force
BRUTE_MAX_PAIRS = 1 << 16


@njit(cache=True, no_cfunc_wrapper=True)
def _columns(tpos, tx, ty, tz):
    """The targets' coordinates as three contiguous columns (so the distance pass vectorises)."""
    for j in range(tpos.shape[0]):
        tx[j] = tpos[j, 0]
        ty[j] = tpos[j, 1]
        tz[j] = tpos[j, 2]


@njit(cache=True, no_cfunc_wrapper=True)
def _count_nearest(spos, sfwd, tpos, self_index, r2, cos_limit, sees_all, total, nearest, distance, tx, ty, tz, d2):
    """For every animal of ``spos``/``sfwd``: targets it sees (itself excluded), nearest one's index and distance.

    ``self_index[i]`` is the animal's own index among the targets (-1: not a target).
    Writes ``total`` (int64), ``nearest`` (int64, -1 when none) and ``distance`` (float32,
    inf when none). The pair test is the grid's (``grid_query._query_body``), term for term; the
    squared distances to all targets are computed first, in one pass that vectorises,
    then only the targets within reach are tested further. ``tx``, ``ty``, ``tz``, ``d2``:
    scratch of at least ``m`` floats.
    """
    n = spos.shape[0]
    m = tpos.shape[0]
    _columns(tpos, tx, ty, tz)
    for i in range(n):
        px = spos[i, 0]
        py = spos[i, 1]
        pz = spos[i, 2]
        for j in range(m):
            ox = tx[j] - px
            oy = ty[j] - py
            oz = tz[j] - pz
            d2[j] = ox * ox + oy * oy + oz * oz
        fx = sfwd[i, 0]
        fy = sfwd[i, 1]
        fz = sfwd[i, 2]
        thr = cos_limit * math.sqrt(fx * fx + fy * fy + fz * fz)
        me = self_index[i]
        seen = 0
        best = -1
        best_d = np.float32(np.inf)
        for j in range(m):
            if not d2[j] <= r2 or j == me:
                continue
            dist = math.sqrt(d2[j])
            if not (sees_all or fx * (tx[j] - px) + fy * (ty[j] - py) + fz * (tz[j] - pz) >= thr * dist):
                continue
            seen += 1
            if best < 0 or dist < best_d:
                best = j
                best_d = dist
        total[i] = seen
        nearest[i] = best
        distance[i] = best_d


@njit(cache=True, no_cfunc_wrapper=True)
def _nearest_in_reach(points, use, tpos, r2, nearest, distance):
    """For every point with ``use[i]``: the nearest target with squared distance within ``r2`` (all round).

    Returns how many points found one (a caller acting on the few that did skips its loop on 0)."""
    n = points.shape[0]
    m = tpos.shape[0]
    found = 0
    for i in range(n):
        best = -1
        best_d = np.float32(np.inf)
        if use[i]:
            px = points[i, 0]
            py = points[i, 1]
            pz = points[i, 2]
            for j in range(m):
                ox = tpos[j, 0] - px
                oy = tpos[j, 1] - py
                oz = tpos[j, 2] - pz
                d2 = ox * ox + oy * oy + oz * oz
                if d2 <= r2:
                    dist = math.sqrt(d2)
                    if best < 0 or dist < best_d:
                        best = j
                        best_d = dist
        nearest[i] = best
        distance[i] = best_d
        found += best >= 0
    return found


class Perception:
    """Reusable buffers for one kind of question asked every step (no allocation once warm)."""

    def __init__(self):
        self.total = np.zeros(0, np.int64)
        self.nearest = np.zeros(0, np.int64)
        self.distance = np.zeros(0, np.float32)
        self.scratch = np.zeros((4, 0), np.float32)
        self._table = None
        self._counting = None  # see count
        self._kernel_calls = CallSite()  # each question is asked with the same kinds of arrays every step
        self._reach = (None, None)  # (the radius nearest_in_reach was last asked with, its squared threshold)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_counting": None}  # kept views would unpickle as copies

    def _reserve(self, n: int) -> None:
        if self.total.shape[0] < n:
            cap = max(n, int(self.total.shape[0] * 1.5), 16)
            self.total = np.zeros(cap, np.int64)
            self.nearest = np.zeros(cap, np.int64)
            self.distance = np.zeros(cap, np.float32)

    def count(self, position, forward, targets, self_index, radius: float, fov_deg: float):
        """``(total, nearest, distance)`` views for the first n animals (see :func:`_count_nearest`)."""
        kept = self._counting  # the last brute-force call's arguments, kept while they are the same objects
        if (kept is not None and kept[0] is position and kept[1] is forward and kept[2] is targets
                and kept[3] is self_index and kept[4] == radius and kept[5] == fov_deg):
            self._kernel_calls(_count_nearest, position.shape[0], *kept[6])
            return kept[7]
        n = position.shape[0]
        m = targets.shape[0]
        self._reserve(n)
        total, nearest, distance = self.total[:n], self.nearest[:n], self.distance[:n]
        if n * m <= BRUTE_MAX_PAIRS:
            if self.scratch.shape[1] < m:
                self.scratch = np.zeros((4, max(m, int(self.scratch.shape[1] * 1.5), 16)), np.float32)
            r2, cos_limit, sees_all = query_thresholds(float(radius), float(fov_deg))
            args = (position, forward, targets, self_index, r2, cos_limit, sees_all, total, nearest, distance,
                    *self.scratch)
            self._counting = (position, forward, targets, self_index, radius, fov_deg, args, (total, nearest, distance))
            self._kernel_calls(_count_nearest, n, *args)
            return total, nearest, distance
        self._counting = None
        # the grid: k = 2 leaves room for the animal itself, which it always sees at distance 0
        spec = NeighborQuerySpec(max_distance=float(radius), k=2, fov_deg=float(fov_deg))
        nb = self._table = find_neighbors(position, forward, targets, spec, out=self._table)
        total[:] = nb.count[:n] + nb.overflow[:n] - (self_index >= 0)
        np.maximum(total, 0, out=total)
        first = nb.index[:n, 0].astype(np.int64)
        skip = (first == self_index) & (first >= 0)
        nearest[:] = np.where(skip, nb.index[:n, 1], first)
        distance[:] = np.where(skip, nb.distance[:n, 1], nb.distance[:n, 0])
        return total, nearest, distance

    def nearest_in_reach(self, points, use, targets, radius: float):
        """``(nearest, distance, found)``: the nearest target within ``radius`` of each used point
        (-1, inf if none), and how many points found one."""
        n = points.shape[0]
        m = targets.shape[0]
        self._reserve(n)
        nearest, distance = self.nearest[:n], self.distance[:n]
        if m == 0 or radius <= 0:
            nearest[:] = -1
            distance[:] = np.inf
            return nearest, distance, 0
        if n * m <= BRUTE_MAX_PAIRS:
            if self._reach[0] != radius:  # (a mouth's reach is one number for a species' life, mostly)
                self._reach = (radius, query_thresholds(float(radius), 360.0)[0])
            found = self._kernel_calls(_nearest_in_reach, n, points, use, targets, self._reach[1], nearest, distance)
            return nearest, distance, int(found)
        # only the nearest is read, never how many more were in reach: the grid may stop early
        spec = NeighborQuerySpec(max_distance=float(radius), k=1, fov_deg=360.0, early_stop=True)
        nb = self._table = find_neighbors(points, np.zeros_like(points), targets, spec, out=self._table)
        nearest[:] = np.where(use, nb.index[:n, 0], -1)
        distance[:] = np.where(use, nb.distance[:n, 0], np.inf)
        return nearest, distance, int(np.count_nonzero(nearest >= 0))
