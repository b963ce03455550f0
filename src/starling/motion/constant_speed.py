"""The ``constant_speed`` mover: a fixed speed, the heading turned to the desire at once or at a bounded rate.

Self-propelled-particle models (Vicsek et al. 1995) move every particle at one speed
``v0`` along a heading that *becomes* the new direction each step:
``x ← x + v0 Δt (cos θ, sin θ)``. This mover does exactly that: the new heading is the
desired direction ``d̂`` (the merged desire), the velocity is ``max_speed · d̂`` and the
position moves by ``velocity · Δt``. With ``turn_rate_deg`` = ω set, the heading instead
turns toward ``d̂`` by at most ``ω Δt`` per step (a slerp by that angle; the whole way
when the remaining angle is smaller), which is frame-rate independent: the turn covers
ω degrees per second of simulated time whatever the step.

An animal with no desire (a zero desired velocity) keeps its heading. With ``planar``
(default) the animal moves in the x–z plane at its height and the desire's y part is
ignored; a desire exactly behind the heading turns about y. Differs from ``halfway``
(seed 003), which covers a *fraction* of the remaining angle per ``half_time`` and never
arrives in finite time.
"""
from __future__ import annotations

import math
from typing import Literal, Optional

import numpy as np
from numba import njit, prange
from pydantic import Field

from ..steering.params import PerAnimalParams
from ..steering.registry import mover
from ..steering.vecmath import normalize3, slerp_unit
from .heading import EPS, HeadingMover, current_heading, move_along
from .movers import _same



class ConstantSpeedMoverParams(PerAnimalParams):
    """Constant speed; the heading becomes the desired direction (or turns toward it at ``turn_rate_deg``)."""

    kind: Literal["constant_speed"] = "constant_speed"
    max_speed: float = Field(1.0, gt=0, description="The constant speed v0, m/s.")
    turn_rate_deg: Optional[float] = Field(
        None, gt=0, description="Largest turn per second, degrees/s (unset: the heading becomes the desire at once).")
    planar: bool = Field(True, description="Move in the x–z plane at a fixed height (False: free 3D headings).")


def _rate(value) -> float:
    """A turn rate in rad/s for the parameter table; 0 means "turn at once"."""
    return 0.0 if value is None else np.radians(value)


@njit(cache=True, no_cfunc_wrapper=True)
def _constant_range(lo, hi, planar, position, velocity, forward, up, desired, p, dt, wrap, bmin, size, sscale):
    """Move animals ``lo``..``hi``; ``p`` rows are (speed, turn rate rad/s or 0)."""
    for i in range(lo, hi):
        r = i if p.shape[0] > 1 else 0
        speed = p[r, 0] * (sscale[i] if sscale.shape[0] > 0 else 1.0)
        rate = p[r, 1]
        dy = 0.0 if planar else desired[i, 1]
        ux, uy, uz, dl = normalize3(desired[i, 0], dy, desired[i, 2])
        if dl > EPS and rate <= 0.0:  # the heading becomes the desire: the current one is not needed
            hx, hy, hz = ux, uy, uz
        else:
            hx, hy, hz = current_heading(i, planar, velocity, forward)
        if dl > EPS:
            if rate > 0.0:
                c = min(1.0, max(-1.0, hx * ux + hy * uy + hz * uz))
                angle = math.acos(c)
                step = rate * dt
                if angle <= step:
                    hx, hy, hz = ux, uy, uz
                elif planar and c < -0.9995:
                    # straight behind: turn about y by the allowed angle
                    ca = math.cos(step)
                    sa = math.sin(step)
                    hx, hz = hx * ca - hz * sa, hx * sa + hz * ca
                else:
                    hx, hy, hz = slerp_unit(hx, hy, hz, ux, uy, uz, step / angle)
            if planar:
                hx, hy, hz, hl = normalize3(hx, 0.0, hz)
        move_along(i, hx, hy, hz, speed, position, velocity, forward, up, dt, wrap, bmin, size)


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _constant_parallel(planar, position, velocity, forward, up, desired, p, dt, wrap, bmin, size, sscale):
    n = position.shape[0]
    chunks = 64
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        lo = np.int64(c) * step
        _constant_range(lo, min(n, lo + step), planar, position, velocity, forward, up, desired, p, dt,
                        wrap, bmin, size, sscale)


class ConstantSpeedMover(HeadingMover):
    """Applies the constant-speed rule to a population, in place."""

    fields = (("max_speed", _same), ("turn_rate_deg", _rate))
    serial = staticmethod(_constant_range)
    parallel = staticmethod(_constant_parallel)


@mover("constant_speed", params=ConstantSpeedMoverParams)
def constant_speed_mover(params: ConstantSpeedMoverParams) -> ConstantSpeedMover:
    """Constant speed; the heading becomes the desire at once, or turns toward it at turn_rate_deg (Vicsek 1995)."""
    return ConstantSpeedMover(params)
