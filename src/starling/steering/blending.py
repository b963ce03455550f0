"""``priority_blend``: blending inside priority groups, the first non-zero group wins (seed 003).

Seed 003 ("Behaviour blending: priorities") arranges behaviours in *groups* with ordinary
blending weights and orders the groups by priority. Each group in turn is blended; a
group whose blended result is (nearly) zero is skipped, and the first group with a
result above zero steers the animal alone. A low-priority fallback group (wandering,
noise) then only acts when nothing more important has an opinion, which breaks stable
equilibria.

Here a group is the set of behaviours with the same ``priority`` (highest first). A
group blends exactly like the ``weighted_sum`` merger — ``Σ direction · desire · speed``
with no normalisation, a behaviour without an opinion on speed counting at the current
speed — and it is *non-zero* when the length of its weighted direction sum
``|Σ direction · desire|`` exceeds ``epsilon``. So two behaviours of one group that
cancel out (a boid exactly between two walls) leave the decision to the next group,
which the ``first_non_zero`` merger would not do (it tests the group's summed desires
and normalises the group's direction). When no group is non-zero the animal keeps its
current velocity.

It registers with ``@starling.merger`` like every merger; ``starling.steering.mergers``
(the built-in mergers' entry point) imports this module.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numba import njit, prange
from pydantic import Field

from .params import MergerParams
from .registry import merger


@njit(cache=True, no_cfunc_wrapper=True)
def _blend_range(lo, hi, epsilon, direction, ddes, speed, sdes, prio, velocity, desired):
    """Blend animals ``lo``..``hi`` (the body is inline: array-passing calls cost reference counting)."""
    m = ddes.shape[0]
    order = np.empty(m, np.int64)
    for i in range(lo, hi):
        vx = velocity[i, 0]
        vy = velocity[i, 1]
        vz = velocity[i, 2]
        current_speed = math.sqrt(vx * vx + vy * vy + vz * vz)
        # behaviours by priority, highest first; ties keep the configured order (insertion sort, m is small)
        for j in range(m):
            order[j] = j
        for j in range(1, m):
            key = order[j]
            p = prio[key, i]
            k = j - 1
            while k >= 0 and prio[order[k], i] < p:
                order[k + 1] = order[k]
                k -= 1
            order[k + 1] = key
        # no group with an opinion: keep the current velocity
        desired[i, 0] = vx
        desired[i, 1] = vy
        desired[i, 2] = vz
        start = 0
        while start < m:
            level = prio[order[start], i]
            end = start
            wx = 0.0  # Σ direction · desire: decides whether the group is non-zero
            wy = 0.0
            wz = 0.0
            ax = 0.0  # Σ direction · desire · speed: the group's blended velocity
            ay = 0.0
            az = 0.0
            while end < m and prio[order[end], i] == level:
                j = order[end]
                d = ddes[j, i]
                s = speed[j, i] if sdes[j, i] > 0.0 else current_speed
                wx += direction[j, i, 0] * d
                wy += direction[j, i, 1] * d
                wz += direction[j, i, 2] * d
                ax += direction[j, i, 0] * d * s
                ay += direction[j, i, 1] * d * s
                az += direction[j, i, 2] * d * s
                end += 1
            if math.sqrt(wx * wx + wy * wy + wz * wz) > epsilon:
                desired[i, 0] = ax
                desired[i, 1] = ay
                desired[i, 2] = az
                break
            start = end


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _blend_parallel(n, epsilon, direction, ddes, speed, sdes, prio, velocity, desired):
    chunks = 64
    size = (n + chunks - 1) // chunks
    for c in prange(chunks):
        lo = np.int64(c) * size
        _blend_range(lo, min(n, lo + size), epsilon, direction, ddes, speed, sdes, prio, velocity, desired)


def _whole(view: np.ndarray) -> np.ndarray:
    """The C-contiguous buffer behind a ``buffer[:, :n]`` view (as the other mergers do), else a copy.

    The merger reads columns below ``n`` only; handing it the whole buffer keeps one
    compiled layout and no per-step copy.
    """
    if view.flags.c_contiguous:
        return view
    base = view.base
    if (isinstance(base, np.ndarray) and base.flags.c_contiguous and base.dtype == view.dtype
            and base.ndim == view.ndim and base.shape[0] == view.shape[0] and base.shape[2:] == view.shape[2:]
            and base.strides == view.strides and base.ctypes.data == view.ctypes.data):
        return base
    return np.ascontiguousarray(view)


def priority_blend_merge(stacked, velocity, desired, *, epsilon: float = 1e-3, parallel: bool = False) -> None:
    """Merge stacked results into ``desired`` (n,3): the first non-zero priority group's weighted sum."""
    direction, ddes, speed, sdes, prio = stacked
    n = ddes.shape[1]
    if n == 0:
        return
    if ddes.shape[0] == 0:
        desired[:n] = velocity[:n]
        return
    args = (float(epsilon), _whole(direction), _whole(ddes), _whole(speed), _whole(sdes),
            _whole(prio), velocity, desired)
    if parallel:
        _blend_parallel(n, *args)
    else:
        _blend_range(0, n, *args)


class PriorityBlendParams(MergerParams):
    """Seed 003's priority groups: equal priorities blend by weighted sum; the first non-zero group decides alone."""

    kind: Literal["priority_blend"] = "priority_blend"
    epsilon: float = Field(1e-3, ge=0, description="A group whose |Σ direction · desire| is at most this counts as zero.")


@merger("priority_blend", params=PriorityBlendParams, accepts=("velocity",))
def merge_priority_blend(stacked, velocity, forward, desired, p, parallel):
    """Seed 003's priority groups: equal priorities blend by weighted sum; the first non-zero group decides alone."""
    priority_blend_merge(stacked, velocity, desired, epsilon=p.epsilon, parallel=parallel)
