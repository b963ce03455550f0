"""The ``halfway`` mover: constant speed, the heading turns half-way toward the desire (seed 003).

The slides' ``BoidBlending`` sets, every fixed update, ``forward ← normalise((d̂ + forward) / 2)``
with ``d̂`` the unit desired direction, then moves ``forward · BoidSpeed · Δt``: between two
unit vectors, the normalised mean is the bisector, so the heading covers exactly half the
remaining angle per update ("avoid snapping"). The speed never changes, and an animal
with no desire (a zero desired velocity) keeps its heading.

Applied per step as written, that rule depends on the frame rate. Here the heading is
slerped toward ``d̂`` by the fraction ``1 − 0.5^(Δt / half_time)``: it covers half the
remaining angle every ``half_time`` seconds whatever the step, and exactly the slides'
half per step when ``Δt = half_time`` (the default 0.02 s is Unity's default fixed time
step, where ``FixedUpdate`` runs). With ``planar`` (default) the animal moves in the x–z
plane at its height and the desire's y part is ignored.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numba import njit, prange
from pydantic import Field

from ..steering.params import PerAnimalParams
from ..steering.registry import mover
from ..steering.vecmath import normalize3, slerp_unit
from .heading import EPS, HeadingMover, current_heading, move_along
from .movers import _same



class HalfwayMoverParams(PerAnimalParams):
    """Constant speed; the heading turns half-way toward the desired direction every ``half_time`` (seed 003)."""

    kind: Literal["halfway"] = "halfway"
    max_speed: float = Field(3.0, gt=0, description="The constant speed (the slides' BoidSpeed), m/s.")
    half_time: float = Field(
        0.02, gt=0, description="Time in which the heading covers half the angle to the desired direction, s.")
    planar: bool = Field(True, description="Move in the x–z plane at a fixed height (False: free 3D headings).")


@njit(cache=True, no_cfunc_wrapper=True)
def _halfway_range(lo, hi, planar, position, velocity, forward, up, desired, p, dt, wrap, bmin, size, sscale):
    """Move animals ``lo``..``hi``; ``p`` is the parameter table (one shared row, or one per animal)."""
    for i in range(lo, hi):
        r = i if p.shape[0] > 1 else 0
        speed = p[r, 0] * (sscale[i] if sscale.shape[0] > 0 else 1.0)
        t = 1.0 - math.pow(0.5, dt / p[r, 1])
        hx, hy, hz = current_heading(i, planar, velocity, forward)
        dy = 0.0 if planar else desired[i, 1]
        ux, uy, uz, dl = normalize3(desired[i, 0], dy, desired[i, 2])
        if dl > EPS:
            if planar and hx * ux + hz * uz < -0.9995:
                # straight behind: turn about y (a 3D slerp would pick a horizontal axis and leave the plane)
                a = math.pi * t
                ca = math.cos(a)
                sa = math.sin(a)
                hx, hz = hx * ca - hz * sa, hx * sa + hz * ca
            else:
                hx, hy, hz = slerp_unit(hx, hy, hz, ux, uy, uz, t)
            if planar:
                hx, hy, hz, hl = normalize3(hx, 0.0, hz)
        move_along(i, hx, hy, hz, speed, position, velocity, forward, up, dt, wrap, bmin, size)


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _halfway_parallel(planar, position, velocity, forward, up, desired, p, dt, wrap, bmin, size, sscale):
    n = position.shape[0]
    chunks = 64
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        lo = np.int64(c) * step
        _halfway_range(lo, min(n, lo + step), planar, position, velocity, forward, up, desired, p, dt,
                       wrap, bmin, size, sscale)


class HalfwayMover(HeadingMover):
    """Applies the halfway rule to a population, in place."""

    fields = (("max_speed", _same), ("half_time", _same))
    serial = staticmethod(_halfway_range)
    parallel = staticmethod(_halfway_parallel)


@mover("halfway", params=HalfwayMoverParams)
def halfway_mover(params: HalfwayMoverParams) -> HalfwayMover:
    """Constant speed; the heading covers half the angle to the desire every half_time (seed 003)."""
    return HalfwayMover(params)
