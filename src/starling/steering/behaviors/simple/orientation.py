"""Simple behaviours about heading and height (seed 000, 9.5.1).

* ``go_forward``: keep the current heading at a set speed (drives speed when nothing
  else does; handy for debugging).
* ``align_up``: discourage flying or swimming straight up or down — the direction is
  the current forward projected on the horizontal plane and its desire grows with the
  pitch (``f_q1`` of pitch / 90°).
* ``keep_height``: stay between ``min_height`` and ``max_height`` — straight up below
  the band, straight down above it, desire growing with the distance outside the band
  (``f_q1`` of the distance over ``margin``).
"""
import math
from typing import Literal

from numba import prange
from pydantic import Field

from ...params import BehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit, no_opinion
from ...shaping import f_q1, remap_input


class GoForwardParams(BehaviorParams):
    """Keep going the way the animal faces, at ``speed``."""

    kind: Literal["go_forward"] = "go_forward"
    weight_direction: float = Field(0.1, ge=0, le=1)
    weight_speed: float = Field(0.1, ge=0, le=1)
    speed: float = Field(3.0, ge=0, description="Desired speed, m/s.")


@behavior("go_forward", kind="simple", params=GoForwardParams)
def go_forward(agents, p, time, dt, out):
    """Current forward direction, configured speed, constant desires."""
    fwd = agents.forward
    for i in prange(fwd.shape[0]):
        emit(out, i, fwd[i, 0], fwd[i, 1], fwd[i, 2], at(p.weight_direction, i), at(p.speed, i),
             at(p.weight_speed, i))


class AlignUpParams(BehaviorParams):
    """Level out: prefer horizontal headings."""

    kind: Literal["align_up"] = "align_up"
    weight_direction: float = Field(0.2, ge=0, le=1)
    power: float = Field(2.0, gt=0, description="Power l of the f_q1 activation of the pitch.")


@behavior("align_up", kind="simple", params=AlignUpParams)
def align_up(agents, p, time, dt, out):
    """Forward projected on the x–z plane; desire ``weight * f_q1(|pitch| / 90°)``."""
    fwd = agents.forward
    for i in prange(fwd.shape[0]):
        fx = fwd[i, 0]
        fy = fwd[i, 1]
        fz = fwd[i, 2]
        horizontal = math.sqrt(fx * fx + fz * fz)
        if horizontal < 1e-6:
            # straight up or down: no horizontal heading to return to
            no_opinion(out, i)
            continue
        pitch = abs(math.atan2(fy, horizontal))
        desire = at(p.weight_direction, i) * f_q1(pitch / (0.5 * math.pi), at(p.power, i))
        emit(out, i, fx / horizontal, 0.0, fz / horizontal, desire, 0.0, 0.0)


class KeepHeightParams(BehaviorParams):
    """Stay within a band of heights."""

    kind: Literal["keep_height"] = "keep_height"
    weight_direction: float = Field(0.5, ge=0, le=1)
    min_height: float = Field(10.0, description="Bottom of the band, m.")
    max_height: float = Field(40.0, description="Top of the band, m.")
    margin: float = Field(5.0, gt=0, description="Distance outside the band at which the desire is full, m.")
    power: float = Field(2.0, gt=0, description="Power l of the f_q1 activation.")

    ordered = (("min_height", "max_height", False),)


@behavior("keep_height", kind="simple", params=KeepHeightParams)
def keep_height(agents, p, time, dt, out):
    """Up below the band, down above it; desire ``weight * f_q1(outside / margin)``."""
    pos = agents.position
    for i in prange(pos.shape[0]):
        y = pos[i, 1]
        if y < at(p.min_height, i):
            desire = at(p.weight_direction, i) * f_q1(
                remap_input(at(p.min_height, i) - y, 0.0, at(p.margin, i)), at(p.power, i)
            )
            emit(out, i, 0.0, 1.0, 0.0, desire, 0.0, 0.0)
        elif y > at(p.max_height, i):
            desire = at(p.weight_direction, i) * f_q1(
                remap_input(y - at(p.max_height, i), 0.0, at(p.margin, i)), at(p.power, i)
            )
            emit(out, i, 0.0, -1.0, 0.0, desire, 0.0, 0.0)
        else:
            no_opinion(out, i)
