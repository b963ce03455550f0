"""Mergers: many behaviour results in, one desired velocity out (seed 000, ch. 4).

All mergers read the stacked results of one species
(``direction (m,n,3)``, ``direction_desire (m,n)``, ``speed (m,n)``,
``speed_desire (m,n)``, ``priority (m,n)``) and the animals' current velocity, and
write ``desired (n,3)``. When no behaviour has an opinion on the direction, the
animal keeps its current direction; with no opinion on the speed it keeps its
current speed: a merger never produces NaN.

* ``priority_desire`` (default): eq. 4.2 with the priority allocation of Alg. 4.
  Results of equal priority are first merged into one level (their directions by a
  desire-weighted mean, their desire the sum), then levels are admitted from the
  highest priority down until the desire budget ``max_desire`` (1 in the thesis) is
  spent; the last admitted level is trimmed to the remaining budget. Direction and
  speed have separate budgets (4.4.2): a behaviour with no opinion on speed does not
  use up the speed budget.
* ``weighted_mean``: eq. 4.2 without allocation.
* ``weighted_sum``: Reynolds' weighted sum (4.3.2, seed 003): the sum of
  ``direction * desire * speed`` vectors, with no normalisation.
* ``first_non_zero``: Reynolds' priority arbitration (4.3.1, seed 003): the highest
  priority level with a non-zero direction desire decides alone.
* ``acceleration_sum``: the Intel/Unreal fish school (seed 002): every result is a
  steering acceleration ``acceleration * direction_desire * direction`` and they add
  up (priorities and speeds ignored). A merger hands on a desired velocity, so the
  sum ``a`` is handed on as ``velocity + a * STEERING_HORIZON`` (the velocity one
  second of ``a`` would give); a mover that works in accelerations (``reversal``)
  reads ``a = (desired - velocity) / STEERING_HORIZON`` back.
* ``priority_blend`` (:mod:`starling.steering.blending`): seed 003's priority groups, each
  a weighted sum; the first group whose blended result is non-zero decides alone.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numba import njit, prange

from pydantic import Field

from .params import MergerParams
from .registry import merger
from .vecmath import normalize3

MergerKind = Literal["priority_desire", "weighted_mean", "weighted_sum", "first_non_zero"]
MERGERS: tuple[str, ...] = ("priority_desire", "weighted_mean", "weighted_sum", "first_non_zero")

_PRIORITY_DESIRE = 0
_WEIGHTED_MEAN = 1
_WEIGHTED_SUM = 2
_FIRST_NON_ZERO = 3
_CODES = {"priority_desire": 0, "weighted_mean": 1, "weighted_sum": 2, "first_non_zero": 3}
_DESIRE_EPS = 1e-7


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _fallback_direction(vx, vy, vz, fx, fy, fz):
    """Current heading: the velocity's direction, else the forward vector."""
    ux, uy, uz, length = normalize3(vx, vy, vz)
    if length > 0.0:
        return ux, uy, uz
    return fx, fy, fz


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _desired_velocity(ax, ay, az, s_num, s_den, vx, vy, vz, current_speed, fx, fy, fz):
    """An animal's merged desire as a velocity: the unit of the summed directions ``a`` (the
    current heading when they sum to nothing) times the weighted mean speed ``s_num / s_den``
    (the current speed when no behaviour has an opinion on speed)."""
    ux, uy, uz, length = normalize3(ax, ay, az)
    if length <= _DESIRE_EPS:
        ux, uy, uz = _fallback_direction(vx, vy, vz, fx, fy, fz)
    s = s_num / s_den if s_den > _DESIRE_EPS else current_speed
    return ux * s, uy * s, uz * s


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _keep_levels(prio, col, ordered, order, level_end, last):
    """Animal ``col``'s behaviours in priority order, highest first, in ``order``, with
    ``level_end[q]`` one past the last position of ``order[q]``'s priority level and ``last``
    the priorities they were ordered for (``ordered``: whether the arrays hold an order yet).

    Priorities are a behaviour's, the same for every animal in the pipeline's results, so
    while ``col``'s priorities are ``last`` the order is kept as it is. Else an insertion sort
    (m is small; ties keep the configured order, so the result is deterministic). Inlined: a
    call passing arrays would count references per animal.
    """
    m = prio.shape[0]  # (not the scratch's length: on a GPU it is a fixed-size local array)
    same = ordered
    for j in range(m if ordered else 0):
        if prio[j, col] != last[j]:
            same = False
            break
    if same:
        return
    for j in range(m):
        order[j] = j
        last[j] = prio[j, col]
    for j in range(1, m):
        key = order[j]
        p = last[key]
        k = j - 1
        while k >= 0 and last[order[k]] < p:
            order[k + 1] = order[k]
            k -= 1
        order[k + 1] = key
    end = m
    for q in range(m - 1, -1, -1):
        if q < m - 1 and last[order[q]] != last[order[q + 1]]:
            end = q + 1
        level_end[q] = end


@njit(cache=True, no_cfunc_wrapper=True)
def _merge_range(lo, hi, code, max_desire, direction, ddes, speed, sdes, prio, velocity, forward, desired):
    """Merge animals ``lo``..``hi``.

    The loop body is written out here rather than in a per-animal helper: a Numba
    call that passes arrays pays reference counting on every call, which costs more
    than merging the animal.
    """
    m = ddes.shape[0]
    order = np.empty(m, np.int64)
    level_end = np.empty(m, np.int64)
    last = np.empty(m, np.int64)
    ordered = False  # order, level_end and last hold the order for priorities ``last``
    for i in range(lo, hi):
        vx = velocity[i, 0]
        vy = velocity[i, 1]
        vz = velocity[i, 2]
        current_speed = math.sqrt(vx * vx + vy * vy + vz * vz)
        ax = 0.0
        ay = 0.0
        az = 0.0
        s_num = 0.0
        s_den = 0.0
        if code == _WEIGHTED_SUM:
            total = 0.0
            for j in range(m):
                d = ddes[j, i]
                total += d
                s = speed[j, i] if sdes[j, i] > _DESIRE_EPS else current_speed
                ax += direction[j, i, 0] * d * s
                ay += direction[j, i, 1] * d * s
                az += direction[j, i, 2] * d * s
            if total <= _DESIRE_EPS:
                ax = vx
                ay = vy
                az = vz
            desired[i, 0] = ax
            desired[i, 1] = ay
            desired[i, 2] = az
            continue
        if code == _WEIGHTED_MEAN:
            for j in range(m):
                d = ddes[j, i]
                ax += direction[j, i, 0] * d
                ay += direction[j, i, 1] * d
                az += direction[j, i, 2] * d
                s_num += speed[j, i] * sdes[j, i]
                s_den += sdes[j, i]
        else:
            # the behaviours by priority, highest first (kept from the animal before while its priorities are the same)
            _keep_levels(prio, i, ordered, order, level_end, last)
            ordered = True
            budget_d = max_desire
            budget_s = max_desire
            start = 0
            while start < m:
                end = level_end[start]
                level_d = 0.0
                level_s = 0.0
                for q in range(start, end):
                    level_d += ddes[order[q], i]
                    level_s += sdes[order[q], i]
                if code == _FIRST_NON_ZERO:
                    if level_d > _DESIRE_EPS:
                        for q in range(start, end):
                            j = order[q]
                            d = ddes[j, i]
                            ax += direction[j, i, 0] * d
                            ay += direction[j, i, 1] * d
                            az += direction[j, i, 2] * d
                            s_num += speed[j, i] * sdes[j, i]
                            s_den += sdes[j, i]
                        break
                    start = end
                    continue
                scale_d = 0.0
                if level_d > _DESIRE_EPS and budget_d > 0.0:
                    scale_d = 1.0 if level_d <= budget_d else budget_d / level_d
                scale_s = 0.0
                if level_s > _DESIRE_EPS and budget_s > 0.0:
                    scale_s = 1.0 if level_s <= budget_s else budget_s / level_s
                for q in range(start, end):
                    j = order[q]
                    d = ddes[j, i] * scale_d
                    ax += direction[j, i, 0] * d
                    ay += direction[j, i, 1] * d
                    az += direction[j, i, 2] * d
                    sd = sdes[j, i] * scale_s
                    s_num += speed[j, i] * sd
                    s_den += sd
                budget_d -= level_d * scale_d
                budget_s -= level_s * scale_s
                if budget_d <= _DESIRE_EPS and budget_s <= _DESIRE_EPS:
                    break
                start = end
        desired[i, 0], desired[i, 1], desired[i, 2] = _desired_velocity(
            ax, ay, az, s_num, s_den, vx, vy, vz, current_speed, forward[i, 0], forward[i, 1], forward[i, 2])


#: animals merged together by :func:`_allocate_blocks` (its scratch, 12 rows of them, stays in L1)
BLOCK = 64


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy")
def _allocate_blocks(lo, hi, max_desire, direction, ddes, speed, sdes, prio, velocity, forward, desired):
    """``priority_desire`` for animals ``lo``..``hi``: :func:`_merge_range`'s arithmetic, bit for bit,
    a block of :data:`BLOCK` animals at a time.

    The pipeline's priorities are a behaviour's, the same for every animal, so a block has one
    order of levels. Each level then runs as loops over the block's animals, with the per-animal
    branches (a level's trim, the budget running out) written as selects: LLVM vectorises them,
    where the one-animal loop runs a chain of divisions and branches per animal (the bench's
    merger 50 → 35 ns an animal). Where priorities differ from animal to animal, a block is one
    animal.
    """
    m = ddes.shape[0]
    order = np.empty(m, np.int64)
    level_end = np.empty(m, np.int64)
    last = np.empty(m, np.int64)
    ordered = False  # order, level_end and last hold the order for priorities ``last``
    # per animal of the block: the direction and speed sums, the level's desires and their trims,
    # the budgets left, and whether its allocation is still going (not yet spent)
    ax = np.empty(BLOCK)
    ay = np.empty(BLOCK)
    az = np.empty(BLOCK)
    s_num = np.empty(BLOCK)
    s_den = np.empty(BLOCK)
    ld = np.empty(BLOCK)
    ls = np.empty(BLOCK)
    scd = np.empty(BLOCK)
    scs = np.empty(BLOCK)
    bd = np.empty(BLOCK)
    bs = np.empty(BLOCK)
    act = np.empty(BLOCK, np.bool_)
    first = lo
    while first < hi:
        stop = min(hi, first + BLOCK)
        # one order of priorities for the whole block? (else a block of one animal)
        uniform = True
        for j in range(m):
            p0 = prio[j, first]
            for i in range(first + 1, stop):
                uniform &= prio[j, i] == p0
        if not uniform:
            stop = first + 1
        nb = stop - first
        # the block's order and levels, kept from the block before while its priorities are the same
        _keep_levels(prio, first, ordered, order, level_end, last)
        ordered = True
        for k in range(nb):
            ax[k] = 0.0
            ay[k] = 0.0
            az[k] = 0.0
            s_num[k] = 0.0
            s_den[k] = 0.0
            bd[k] = max_desire
            bs[k] = max_desire
            act[k] = True
        start = 0
        while start < m:
            end = level_end[start]
            for k in range(nb):
                ld[k] = 0.0
                ls[k] = 0.0
            for q in range(start, end):
                j = order[q]
                for k in range(nb):
                    ld[k] += ddes[j, first + k]
                    ls[k] += sdes[j, first + k]
            for k in range(nb):  # each level's trim to the budget left (0 without desire or budget)
                a = ld[k]
                b = bd[k]
                s1 = 1.0 if a <= b else b / a
                scd[k] = s1 if (a > _DESIRE_EPS and b > 0.0) else 0.0
                a = ls[k]
                b = bs[k]
                s2 = 1.0 if a <= b else b / a
                scs[k] = s2 if (a > _DESIRE_EPS and b > 0.0) else 0.0
            for q in range(start, end):  # the level's results, trimmed, added where the budget lasts
                j = order[q]
                for k in range(nb):
                    i = first + k
                    d = ddes[j, i] * scd[k]
                    x = ax[k] + direction[j, i, 0] * d
                    y = ay[k] + direction[j, i, 1] * d
                    z = az[k] + direction[j, i, 2] * d
                    e = sdes[j, i] * scs[k]
                    u = s_num[k] + speed[j, i] * e
                    w = s_den[k] + e
                    on = act[k]
                    ax[k] = x if on else ax[k]
                    ay[k] = y if on else ay[k]
                    az[k] = z if on else az[k]
                    s_num[k] = u if on else s_num[k]
                    s_den[k] = w if on else s_den[k]
            for k in range(nb):  # what the level spent; an animal whose budgets are both spent stops
                on = act[k]
                b1 = bd[k] - ld[k] * scd[k]
                b2 = bs[k] - ls[k] * scs[k]
                bd[k] = b1 if on else bd[k]
                bs[k] = b2 if on else bs[k]
                act[k] = on and not (b1 <= _DESIRE_EPS and b2 <= _DESIRE_EPS)
            start = end
        for k in range(nb):  # the desired velocity, as the one-animal code finishes it
            i = first + k
            vx = velocity[i, 0]
            vy = velocity[i, 1]
            vz = velocity[i, 2]
            current_speed = math.sqrt(vx * vx + vy * vy + vz * vz)
            desired[i, 0], desired[i, 1], desired[i, 2] = _desired_velocity(
                ax[k], ay[k], az[k], s_num[k], s_den[k], vx, vy, vz, current_speed,
                forward[i, 0], forward[i, 1], forward[i, 2])
        first = stop


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _merge_parallel(n, code, max_desire, direction, ddes, speed, sdes, prio, velocity, forward, desired):
    chunks = 64
    size = (n + chunks - 1) // chunks
    for c in prange(chunks):
        lo = np.int64(c) * size  # (prange counts unsigned: int64 keeps _merge_range at the serial signature)
        if code == _PRIORITY_DESIRE:
            _allocate_blocks(lo, min(n, lo + size), max_desire, direction, ddes, speed, sdes, prio, velocity,
                             forward, desired)
        else:
            _merge_range(lo, min(n, lo + size), code, max_desire, direction, ddes, speed, sdes, prio, velocity,
                         forward, desired)


_WHOLE: dict = {}  # id(view) -> (view, its whole array): the pipeline hands the same stacked views every step


def _whole(view: np.ndarray) -> np.ndarray:
    cached = _WHOLE.get(id(view))
    if cached is not None and cached[0] is view:
        return cached[1]
    whole = _whole_of(view)
    if whole is view.base:  # the live buffer itself (a copy must never be kept: it would go stale)
        if len(_WHOLE) > 256:
            _WHOLE.clear()
        _WHOLE[id(view)] = (view, whole)
    return whole


def _whole_of(view: np.ndarray) -> np.ndarray:
    """A C-contiguous array whose first ``view.shape[1]`` columns are ``view``.

    The results of the first ``n`` animals are views ``buffer[:, :n]`` of a species' stacked
    buffers: C-contiguous when ``n`` fills the buffer (or one behaviour), strided otherwise,
    and Numba compiles the merger once per layout. The merger reads columns below ``n``
    only, so it is handed the buffer itself (a copy when ``view`` is not such a view).
    """
    if view.flags.c_contiguous:
        return view
    base = view.base
    if (isinstance(base, np.ndarray) and base.flags.c_contiguous and base.dtype == view.dtype
            and base.ndim == view.ndim and base.shape[0] == view.shape[0] and base.shape[2:] == view.shape[2:]
            and base.strides == view.strides and base.ctypes.data == view.ctypes.data):
        return base
    return np.ascontiguousarray(view)


def merge(kind: str, stacked, velocity, forward, desired, *, max_desire: float = 1.0, parallel: bool = False) -> None:
    """Merge stacked results into ``desired`` (n,3) for the animals' current ``velocity``."""
    direction, ddes, speed, sdes, prio = stacked
    n = ddes.shape[1]
    if n == 0:
        return
    if ddes.shape[0] == 0:
        desired[:n] = velocity[:n]
        return
    code = _CODES[kind]
    arrays = (_whole(direction), _whole(ddes), _whole(speed), _whole(sdes), _whole(prio), velocity, forward, desired)
    if parallel:
        _merge_parallel(n, code, float(max_desire), *arrays)
    elif code == _PRIORITY_DESIRE:
        _allocate_blocks(0, n, float(max_desire), *arrays)
    else:
        _merge_range(0, n, code, float(max_desire), *arrays)


# ---- the built-in mergers, registered like a user's (``@starling.merger``) -----------------------

class PriorityDesireParams(MergerParams):
    """Eq. 4.2 with the priority allocation of Alg. 4 (the thesis' merger, the default)."""

    kind: Literal["priority_desire"] = "priority_desire"
    max_desire: float = Field(1.0, gt=0, description="Desire budget of the priority allocation.")


class WeightedMeanParams(MergerParams):
    """Eq. 4.2 without allocation: the desire-weighted mean of every result."""

    kind: Literal["weighted_mean"] = "weighted_mean"


class WeightedSumParams(MergerParams):
    """Reynolds' weighted sum (4.3.2, seed 003): direction × desire × speed summed, not normalised."""

    kind: Literal["weighted_sum"] = "weighted_sum"


class FirstNonZeroParams(MergerParams):
    """Reynolds' priority arbitration (4.3.1, seed 003): the highest priority with an opinion decides alone."""

    kind: Literal["first_non_zero"] = "first_non_zero"


#: seconds of steering acceleration carried in a desired velocity (``acceleration_sum`` → ``reversal``)
STEERING_HORIZON = 1.0


class AccelerationSumParams(MergerParams):
    """Seed 002's sum of weighted steering vectors: acceleration × Σ desire·direction, added to the velocity."""

    kind: Literal["acceleration_sum"] = "acceleration_sum"
    acceleration: float = Field(10.0, gt=0, description="m/s² of a result with desire 1: the seed's weight k "
                                "of a behaviour is this times its weight_direction.")


@njit(cache=True, no_cfunc_wrapper=True)
def _acceleration_sum_range(lo, hi, gain, direction, ddes, velocity, desired):
    m = ddes.shape[0]
    for i in range(lo, hi):
        ax = 0.0
        ay = 0.0
        az = 0.0
        for j in range(m):
            d = ddes[j, i]
            ax += direction[j, i, 0] * d
            ay += direction[j, i, 1] * d
            az += direction[j, i, 2] * d
        desired[i, 0] = velocity[i, 0] + gain * ax * STEERING_HORIZON
        desired[i, 1] = velocity[i, 1] + gain * ay * STEERING_HORIZON
        desired[i, 2] = velocity[i, 2] + gain * az * STEERING_HORIZON


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _acceleration_sum_parallel(n, gain, direction, ddes, velocity, desired):
    chunks = 64
    size = (n + chunks - 1) // chunks
    for c in prange(chunks):
        lo = np.int64(c) * size
        _acceleration_sum_range(lo, min(n, lo + size), gain, direction, ddes, velocity, desired)


@merger("acceleration_sum", params=AccelerationSumParams, accepts=("velocity",))
def acceleration_sum(stacked, velocity, forward, desired, p, parallel):
    """Seed 002: a = acceleration · Σ direction_desire · direction; desired = velocity + a · 1 s."""
    direction, ddes = stacked[0], stacked[1]
    n = ddes.shape[1]
    if n == 0:
        return
    if ddes.shape[0] == 0:
        desired[:n] = velocity[:n]
        return
    args = (float(p.acceleration), _whole(direction), _whole(ddes), velocity, desired)
    if parallel:
        _acceleration_sum_parallel(n, *args)
    else:
        _acceleration_sum_range(0, n, *args)


def _register(name: str, params: type) -> None:
    def run(stacked, velocity, forward, desired, p, parallel):
        merge(name, stacked, velocity, forward, desired, max_desire=getattr(p, "max_desire", 1.0), parallel=parallel)

    run.__name__ = run.__qualname__ = f"merge_{name}"
    run.__doc__ = params.__doc__
    merger(name, params=params, accepts=("velocity",))(run)


for _name, _params in (("priority_desire", PriorityDesireParams), ("weighted_mean", WeightedMeanParams),
                       ("weighted_sum", WeightedSumParams), ("first_non_zero", FirstNonZeroParams)):
    _register(_name, _params)


# seed 003's priority groups of weighted sums live in their own module (own kernels, own cache file)
from . import blending  # noqa: E402,F401  (registers "priority_blend")
