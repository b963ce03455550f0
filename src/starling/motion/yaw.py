"""The ``yaw`` mover: the savannah's 2.5D Unity integration (seed 001, listings A.1 and 4.3.2).

Animals walk on the ground (the x–z plane, y kept). Each step, with ``a`` the merged
steering acceleration (from the ``acceleration_sum`` merger: ``a = (desired − v) /
STEERING_HORIZON``) and ``v`` the velocity:

1. ``a.y = 0`` and ``|a|`` is cropped to ``max_acceleration`` (the seed's ``Crop``);
2. ``p += v · dt`` (the seed moves with the velocity of the previous frame);
3. ``v += a · dt``, its length clamped to the current top speed (``max_speed`` times the
   ecology's speed factor: brain state, stamina, age);
4. the yaw (forward) turns toward the velocity's direction by at most
   ``max_rotation_deg · dt`` (the seed's Face(velocity) under its ``maxRotation``), times
   the brain state's factor where a state sets its own ``max_rotation_deg``.

The velocity itself is not bound to the yaw: as in the seed, an animal can slide sideways
while its body turns, which is why a rotation limit of 5°/s (a lone zebra) slows the
turn of its body and not its escape.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numba import njit, prange
from pydantic import Field

from ..steering.mergers import STEERING_HORIZON
from ..steering.params import PerAnimalParams
from ..steering.registry import mover
from .movers import ParameterTable, _same

_NO_SCALE = np.zeros(0, np.float32)


class YawMoverParams(PerAnimalParams):
    """Ground animals: cropped acceleration, clamped speed, yaw turning toward the velocity at a bounded rate."""

    kind: Literal["yaw"] = "yaw"
    max_speed: float = Field(7.0, gt=0, description="ABS_MAX_SPEED: the velocity's length is clamped to it, m/s.")
    max_acceleration: float = Field(5.0, gt=0, description="maxLinearAcceleration: the crop of the summed "
                                    "steering, m/s².")
    max_rotation_deg: float = Field(45.0, gt=0, description="maxRotation: the largest yaw turn, degrees/s.")


def _radians(x):
    return np.radians(x)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def turn_toward(fx, fz, tx, tz, max_turn):
    """Unit yaw ``(fx, fz)`` turned toward unit ``(tx, tz)`` by at most ``max_turn`` radians."""
    current = math.atan2(fx, fz)
    target = math.atan2(tx, tz)
    delta = (target - current + math.pi) % (2.0 * math.pi) - math.pi
    if delta > max_turn:
        delta = max_turn
    elif delta < -max_turn:
        delta = -max_turn
    yaw = current + delta
    return math.sin(yaw), math.cos(yaw)


@njit(cache=True, no_cfunc_wrapper=True)
def _yaw_range(lo, hi, position, velocity, forward, up, desired, p, horizon, dt, sscale, ascale, rscale):
    """Move animals ``lo``..``hi``; ``p`` rows are (max_speed, max_acceleration, max_rotation rad/s)."""
    for i in range(lo, hi):
        r = i if p.shape[0] > 1 else 0
        top = p[r, 0] * (sscale[i] if sscale.shape[0] > 0 else 1.0)
        crop = p[r, 1] * (ascale[i] if ascale.shape[0] > 0 else 1.0)
        rotation = p[r, 2] * (rscale[i] if rscale.shape[0] > 0 else 1.0)
        vx = np.float64(velocity[i, 0])
        vz = np.float64(velocity[i, 2])
        # 1. the summed steering, vertical part dropped, cropped
        ax = (np.float64(desired[i, 0]) - vx) / horizon
        az = (np.float64(desired[i, 2]) - vz) / horizon
        al = math.sqrt(ax * ax + az * az)
        if al > crop:
            ax *= crop / al
            az *= crop / al
        # 2. move with the velocity of the previous step
        position[i, 0] = position[i, 0] + vx * dt
        position[i, 2] = position[i, 2] + vz * dt
        # 3. accelerate, clamp to the current top speed
        vx += ax * dt
        vz += az * dt
        speed = math.sqrt(vx * vx + vz * vz)
        if speed > top:
            vx *= top / speed
            vz *= top / speed
            speed = top
        velocity[i, 0] = vx
        velocity[i, 1] = 0.0
        velocity[i, 2] = vz
        # 4. the yaw turns toward the velocity, at most max_rotation · dt
        fx = np.float64(forward[i, 0])
        fz = np.float64(forward[i, 2])
        fl = math.sqrt(fx * fx + fz * fz)
        if fl < 1e-9:
            fx, fz, fl = 0.0, 1.0, 1.0
        fx /= fl
        fz /= fl
        if speed > 1e-6:
            fx, fz = turn_toward(fx, fz, vx / speed, vz / speed, rotation * dt)
        forward[i, 0] = fx
        forward[i, 1] = 0.0
        forward[i, 2] = fz
        up[i, 0] = 0.0
        up[i, 1] = 1.0
        up[i, 2] = 0.0


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _yaw_parallel(position, velocity, forward, up, desired, p, horizon, dt, sscale, ascale, rscale):
    n = position.shape[0]
    chunks = 64
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        lo = np.int64(c) * step
        _yaw_range(lo, min(n, lo + step), position, velocity, forward, up, desired, p, horizon, dt, sscale, ascale,
                   rscale)


class YawMover:
    """Applies :class:`YawMoverParams` to a population, in place."""

    planar = True

    def __init__(self, params: YawMoverParams):
        self.params = params
        self.table = ParameterTable(params, [("max_speed", _same), ("max_acceleration", _same),
                                             ("max_rotation_deg", _radians)])

    @property
    def max_speed(self) -> float:
        return self.params.max_speed

    def move(self, position, velocity, forward, up, desired, dt, *, wrap=None, parallel=False,
             speed_scale=None, accel_scale=None, drawn=None, turn_scale=None) -> None:
        """One step of ``dt`` (the world never wraps a savannah: ``wrap`` is ignored).

        ``turn_scale`` (n,): a factor on each animal's rotation limit (a brain state's
        ``max_rotation_deg``, e.g. a lone zebra's 5°/s)."""
        n = position.shape[0]
        if n == 0:
            return
        sscale = _NO_SCALE if speed_scale is None else np.ascontiguousarray(speed_scale, np.float32)
        ascale = _NO_SCALE if accel_scale is None else np.ascontiguousarray(accel_scale, np.float32)
        rscale = _NO_SCALE if turn_scale is None else np.ascontiguousarray(turn_scale, np.float32)
        args = (position, velocity, forward, up, desired, self.table.rows(n, drawn), float(STEERING_HORIZON),
                float(dt), sscale, ascale, rscale)
        if parallel:
            _yaw_parallel(*args)
        else:
            _yaw_range(0, n, *args)


@mover("yaw", params=YawMoverParams)
def yaw_mover(params: YawMoverParams) -> YawMover:
    """Seed 001's ground animals: |a| ≤ max_acceleration, |v| ≤ the current top speed, the yaw turning
    toward the velocity at ≤ max_rotation_deg per second."""
    return YawMover(params)
