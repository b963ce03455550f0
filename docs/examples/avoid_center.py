"""A new behaviour from zero: keep out of a circular no-fly zone.

Used by docs/extending.md and run by the test suite.
"""
import math
from typing import Literal

from numba import prange
from pydantic import Field

import starling
from starling.steering.per_animal import at
from starling.steering.results import emit, no_opinion
from starling.steering.shaping import f_q3


class AvoidZoneParams(starling.BehaviorParams):
    """Stay out of a sphere around ``center``; desire grows toward its middle."""

    kind: Literal["avoid_zone"] = "avoid_zone"
    center: tuple[float, float, float] = Field((0.0, 30.0, 0.0), description="Zone centre, m.")
    radius: float = Field(10.0, gt=0, description="Zone radius, m.")
    power: float = Field(2.0, gt=0, description="Steepness of the desire near the edge.")


@starling.behavior("avoid_zone", kind="simple", params=AvoidZoneParams)
def avoid_zone(agents, p, time, dt, out):
    """Straight out of the zone; desire weight * f_q3(d / radius) (1 at the centre, 0 at the edge)."""
    pos = agents.position
    for i in prange(pos.shape[0]):
        radius = at(p.radius, i)  # this animal's radius (a scenario may draw one per animal)
        dx = pos[i, 0] - p.center[0]
        dy = pos[i, 1] - p.center[1]
        dz = pos[i, 2] - p.center[2]
        d = math.sqrt(dx * dx + dy * dy + dz * dz)
        if d >= radius or d < 1e-9:
            no_opinion(out, i)  # outside the zone (or at its very centre): zeros
            continue
        desire = at(p.weight_direction, i) * f_q3(d / radius, at(p.power, i))
        # unit direction away from the centre, its desire; speed 0 with desire 0: no opinion on speed
        emit(out, i, dx / d, dy / d, dz / d, desire, 0.0, 0.0)
