"""Homing (seed 000, 6.4.6, eq. 6.17–6.18): stay within a home area.

The direction is toward the home; its desire is zero inside ``min_radius`` and grows
as ``weight * f_q1(d)`` with ``d`` the distance remapped from
[``min_radius``, ``max_radius``] to [0, 1] (eq. 6.8). No opinion on speed.
"""
import math
from collections import namedtuple
from typing import Literal

from numba import prange
from pydantic import Field, model_validator

from ...params import BehaviorParams, StrictModel, Vec3
from ...per_animal import at
from ...registry import behavior
from ...results import emit, no_opinion
from ...shaping import f_q1, remap_input


class HomingParams(BehaviorParams):
    """Pull toward a home point that grows from ``min_radius`` to ``max_radius``."""

    kind: Literal["homing"] = "homing"
    home: Vec3 = Field((0.0, 0.0, 0.0), description="Home centre, m.")
    min_radius: float = Field(10.0, ge=0, description="Inside this distance there is no pull, m.")
    max_radius: float = Field(50.0, gt=0, description="At this distance the pull is the full weight, m.")
    power: float = Field(2.0, gt=0, description="Power l of the f_q1 activation.")

    ordered = (("min_radius", "max_radius", True),)


@behavior("homing", kind="simple", params=HomingParams)
def homing(agents, p, time, dt, out):
    """Toward ``home`` with desire ``weight * f_q1(remap(|a|))``."""
    pos = agents.position
    for i in prange(pos.shape[0]):
        ax = p.home[0] - pos[i, 0]
        ay = p.home[1] - pos[i, 1]
        az = p.home[2] - pos[i, 2]
        dist = math.sqrt(ax * ax + ay * ay + az * az)
        if dist < 1e-9:
            no_opinion(out, i)
            continue
        desire = at(p.weight_direction, i) * f_q1(
            remap_input(dist, at(p.min_radius, i), at(p.max_radius, i)), at(p.power, i)
        )
        emit(out, i, ax / dist, ay / dist, az / dist, desire, 0.0, 0.0)


class Home(StrictModel):
    """One home area of multi-homing."""

    center: Vec3 = Field(..., description="Home centre, m.")
    min_radius: float = Field(..., ge=0, description="No pull inside this distance, m.")
    max_radius: float = Field(..., gt=0, description="The home is noticed within this distance, m.")

    @model_validator(mode="after")
    def _radii_ordered(self):
        if self.max_radius <= self.min_radius:
            raise ValueError("max_radius must be greater than min_radius")
        return self


class MultiHomingParams(BehaviorParams):
    """Homing with several homes: go to the smallest home whose ``max_radius`` contains the animal.

    Small homes scattered in a large one keep animals in favourite spots while the
    large one keeps them in the area (seed 000, 9.5.2 "Multi Homing"). The homes are
    static points, so no neighbour query is needed: they are parameters.
    """

    kind: Literal["multi_homing"] = "multi_homing"
    homes: list[Home] = Field(..., min_length=1, description="Home areas.")
    power: float = Field(2.0, gt=0, description="Power l of the f_q1 activation.")

    def kernel_params(self):
        import numpy as np

        homes = np.array([[*h.center, h.min_radius, h.max_radius] for h in self.homes], np.float64)
        return MultiHomingKernel(np.float64(self.weight_direction), np.float64(self.weight_speed), homes,
                                  np.float64(self.power), np.uint64(0))


# one class for every instance: a new class per call would be a new Numba type per species,
# and the dispatcher would then take its slow path on every call
# (``key``: the random stream key every behaviour's tuple ends with, see starling.steering.random)
MultiHomingKernel = namedtuple("MultiHomingKernel", ["weight_direction", "weight_speed", "homes", "power", "key"])


@behavior("multi_homing", kind="simple", params=MultiHomingParams)
def multi_homing(agents, p, time, dt, out):
    """Homing toward the smallest containing home; no opinion outside every home."""
    pos = agents.position
    homes = p.homes
    for i in prange(pos.shape[0]):
        best = -1
        for h in range(homes.shape[0]):
            dx = homes[h, 0] - pos[i, 0]
            dy = homes[h, 1] - pos[i, 1]
            dz = homes[h, 2] - pos[i, 2]
            if dx * dx + dy * dy + dz * dz < homes[h, 4] * homes[h, 4]:
                if best < 0 or homes[h, 4] < homes[best, 4]:
                    best = h
        if best < 0:
            no_opinion(out, i)
            continue
        ax = homes[best, 0] - pos[i, 0]
        ay = homes[best, 1] - pos[i, 1]
        az = homes[best, 2] - pos[i, 2]
        dist = math.sqrt(ax * ax + ay * ay + az * az)
        if dist < 1e-9:
            no_opinion(out, i)
            continue
        desire = at(p.weight_direction, i) * f_q1(remap_input(dist, homes[best, 3], homes[best, 4]), at(p.power, i))
        emit(out, i, ax / dist, ay / dist, az / dist, desire, 0.0, 0.0)
