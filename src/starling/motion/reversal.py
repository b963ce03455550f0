"""The ``reversal`` mover: seed 002's fish physics in a closed tank.

Seed 002 ("The four behaviors of the Unreal Engine flocking algorithm", the CPU listing
after "Based on the weight coefficients …") integrates each fish per frame as:

1. ``a = clamp_length(Σ k_b · b̂, maxAccel)`` (the behaviours' sum; here it arrives from the
   ``acceleration_sum`` merger as ``desired = v + a · STEERING_HORIZON``, and any other
   merger's desired velocity becomes the acceleration toward it over that horizon);
2. ``a.Z = 0``: Unreal's Z is up. Starling's up axis is **y** (x–z is the ground plane),
   so the *y* component is zeroed (``lock_vertical``): the school turns in horizontal
   planes and never accelerates up or down;
3. ``v = clamp_length(v + a dt, maxVel)``; ``p = p + v dt``;
4. **reversal**: on every axis where the new position lies outside the tank, the velocity
   component along that axis is reversed.

Two deliberate differences, both about the walls (step 4). The seed flips the component
whenever the fish is outside, so a fish still outside on the next frame flips back
outward and can hover beyond the wall; here the component is set to point *into* the
tank (its magnitude kept: the same flip at the frame the fish crosses, never a flip
back). And the seed leaves the fish where it crossed, up to ``maxVel · dt`` outside;
here the position is mirrored back through the wall (a billiard bounce), so every fish
is inside the tank after every step. The seed's CPU listing clamps lengths
(``GetClampedToMaxSize``); its compute shader clamps each component instead: the CPU
version is the one followed.

Forward is the velocity's direction (the seed turns the mesh to it every frame), kept
when the fish stops; up is world up made perpendicular to forward.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numba import njit, prange
from pydantic import Field, model_validator

from ..steering.mergers import STEERING_HORIZON
from ..steering.params import PerAnimalParams, Vec3
from ..steering.registry import mover
from ..steering.vecmath import normalize3
from .movers import ParameterTable, _orthonormal_up, _same


class ReversalMoverParams(PerAnimalParams):
    """Seed 002's fish: clamped acceleration, clamped speed, velocity reversed at the tank's walls."""

    kind: Literal["reversal"] = "reversal"
    max_speed: float = Field(5.0, gt=0, description="maxVel: the velocity's length is clamped to it, m/s.")
    max_acceleration: float = Field(5.0, gt=0, description="maxAccel: the acceleration's length is clamped to it, m/s².")
    lock_vertical: bool = Field(True, description="Zero the acceleration's up (y) component (the seed's a.Z = 0; "
                                "Unreal's Z is Starling's y).")
    bounds_min: Vec3 = Field((-40.0, 0.0, -40.0), description="Lowest corner of the tank, m.")
    bounds_max: Vec3 = Field((40.0, 30.0, 40.0), description="Highest corner of the tank, m.")

    @model_validator(mode="after")
    def _ordered(self):
        for axis, lo, hi in zip("xyz", self.bounds_min, self.bounds_max):
            if hi <= lo:
                raise ValueError(f"bounds_max.{axis} must be greater than bounds_min.{axis}")
        return self


@njit(cache=True, no_cfunc_wrapper=True)
def _reversal_range(lo, hi, position, velocity, forward, up, desired, p, lock, bmin, bmax, horizon, dt):
    """Move fish ``lo``..``hi``; ``p`` is the (rows, 2) table of max_speed, max_acceleration."""
    for i in range(lo, hi):
        r = i if p.shape[0] > 1 else 0
        max_speed = p[r, 0]
        max_accel = p[r, 1]
        vx = np.float64(velocity[i, 0])
        vy = np.float64(velocity[i, 1])
        vz = np.float64(velocity[i, 2])
        # 1. the steering acceleration, its length clamped
        ax = (np.float64(desired[i, 0]) - vx) / horizon
        ay = (np.float64(desired[i, 1]) - vy) / horizon
        az = (np.float64(desired[i, 2]) - vz) / horizon
        al = math.sqrt(ax * ax + ay * ay + az * az)
        if al > max_accel:
            s = max_accel / al
            ax *= s
            ay *= s
            az *= s
        # 2. no vertical acceleration (after the clamp, as in the seed)
        if lock:
            ay = 0.0
        # 3. velocity, its length clamped, then position
        vx += ax * dt
        vy += ay * dt
        vz += az * dt
        vl = math.sqrt(vx * vx + vy * vy + vz * vz)
        if vl > max_speed:
            s = max_speed / vl
            vx *= s
            vy *= s
            vz *= s
        px = position[i, 0] + vx * dt
        py = position[i, 1] + vy * dt
        pz = position[i, 2] + vz * dt
        # 4. reversal: outside on an axis -> that velocity component points back in, the position mirrored
        if px > bmax[0]:
            px = max(bmin[0], 2.0 * bmax[0] - px)
            vx = -abs(vx)
        elif px < bmin[0]:
            px = min(bmax[0], 2.0 * bmin[0] - px)
            vx = abs(vx)
        if py > bmax[1]:
            py = max(bmin[1], 2.0 * bmax[1] - py)
            vy = -abs(vy)
        elif py < bmin[1]:
            py = min(bmax[1], 2.0 * bmin[1] - py)
            vy = abs(vy)
        if pz > bmax[2]:
            pz = max(bmin[2], 2.0 * bmax[2] - pz)
            vz = -abs(vz)
        elif pz < bmin[2]:
            pz = min(bmax[2], 2.0 * bmin[2] - pz)
            vz = abs(vz)
        velocity[i, 0] = vx
        velocity[i, 1] = vy
        velocity[i, 2] = vz
        position[i, 0] = px
        position[i, 1] = py
        position[i, 2] = pz
        # forward along the velocity (kept at rest), up = world up made perpendicular to it
        tx, ty, tz, speed = normalize3(vx, vy, vz)
        if speed > 1e-6:
            forward[i, 0] = tx
            forward[i, 1] = ty
            forward[i, 2] = tz
        ux, uy, uz = _orthonormal_up(0.0, 1.0, 0.0, np.float64(forward[i, 0]), np.float64(forward[i, 1]),
                                     np.float64(forward[i, 2]))
        up[i, 0] = ux
        up[i, 1] = uy
        up[i, 2] = uz


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _reversal_parallel(position, velocity, forward, up, desired, p, lock, bmin, bmax, horizon, dt):
    n = position.shape[0]
    chunks = 64
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        lo = np.int64(c) * step
        _reversal_range(lo, min(n, lo + step), position, velocity, forward, up, desired, p, lock, bmin, bmax,
                        horizon, dt)


class ReversalMover:
    """Applies :class:`ReversalMoverParams` to a population, in place."""

    planar = False

    def __init__(self, params: ReversalMoverParams):
        self.params = params
        self.table = ParameterTable(params, [("max_speed", _same), ("max_acceleration", _same)])
        self.bmin = np.asarray(params.bounds_min, np.float64)
        self.bmax = np.asarray(params.bounds_max, np.float64)

    @property
    def max_speed(self) -> float:
        return self.params.max_speed

    def move(self, position, velocity, forward, up, desired, dt, *, wrap=None, parallel=False,
             speed_scale=None, accel_scale=None, drawn=None) -> None:
        """One step of ``dt``. The tank's walls replace any world wrap; speed/acceleration
        scales (fatigue) multiply ``max_speed``/``max_acceleration``."""
        n = position.shape[0]
        if n == 0:
            return
        kernel, args = self.range_call(position, velocity, forward, up, desired, dt, speed_scale=speed_scale,
                                       accel_scale=accel_scale, drawn=drawn)
        if parallel:
            _reversal_parallel(*args)
        else:
            kernel(0, n, *args)

    def range_call(self, position, velocity, forward, up, desired, dt, *, wrap=None, speed_scale=None,
                   accel_scale=None, drawn=None):
        """``(kernel, args)``: ``kernel(lo, hi, *args)`` moves rows ``lo``..``hi``. The arrays given are
        passed through as they are (another backend passes its own); the rest are NumPy arrays."""
        n = position.shape[0]
        table = self.table.rows(n, drawn)
        if speed_scale is not None or accel_scale is not None:
            table = np.array(np.broadcast_to(table, (n, 2)), np.float64)
            if speed_scale is not None:
                table[:, 0] *= np.asarray(speed_scale[:n], np.float64)
            if accel_scale is not None:
                table[:, 1] *= np.asarray(accel_scale[:n], np.float64)
        return _reversal_range, (position, velocity, forward, up, desired, table, bool(self.params.lock_vertical),
                                 self.bmin, self.bmax, float(STEERING_HORIZON), float(dt))


@mover("reversal", params=ReversalMoverParams)
def reversal_mover(params: ReversalMoverParams) -> ReversalMover:
    """Seed 002's fish: |a| ≤ max_acceleration, no vertical acceleration, |v| ≤ max_speed,
    velocity reversed (and position mirrored) at the tank's walls."""
    return ReversalMover(params)
