"""Flee and seek (seed 000, 9.5.2): predator–prey reactions.

Both grow with how close the nearest visible neighbour is: with closeness
``x = 1 − d_nearest / r`` in [0, 1] and activation ``a = ease(x)`` (an easing of 6.4.3,
``q4`` by default: a strong response already at a distance), the direction desire is
``weight_direction · a``, the desired speed rises from ``min_speed`` to ``max_speed``
with ``a`` and the speed desire is ``weight_speed · a``.

* flee: away from the threats, each weighted by its observability (two predators on
  either side push the prey out sideways, not into one of them);
* seek: toward the nearest visible target (a centroid of several prey is empty water).
"""
import math
from typing import Literal, Optional

from numba import prange
from pydantic import Field, field_validator

from ...params import NeighborBehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit
from ...shaping import ease, easing_code, observability


class _ReactionParams(NeighborBehaviorParams):
    weight_direction: float = Field(0.8, ge=0, le=1)
    weight_speed: float = Field(0.7, ge=0, le=1)
    min_speed: float = Field(0.0, ge=0, description="Desired speed when the neighbour is at the edge of vision, m/s.")
    max_speed: Optional[float] = Field(None, gt=0, description="Desired speed when it is touching (default: the mover's max_speed), m/s.")
    easing: str = Field("q4", description="Easing of the closeness (6.4.3: q1–q4, s1–s5, b1–b6).")
    easing_power: float = Field(2.0, gt=0, description="Power l of the easing.")

    @field_validator("easing")
    @classmethod
    def _known_easing(cls, v):
        easing_code(v)
        return v

    kernel_converters = {"easing": easing_code}


class FleeParams(_ReactionParams):
    """Run away from the neighbours (predators), faster the closer they are."""

    kind: Literal["flee"] = "flee"


class SeekParams(_ReactionParams):
    """Go for the nearest neighbour (prey), faster the closer it is."""

    kind: Literal["seek"] = "seek"
    weight_direction: float = Field(0.7, ge=0, le=1)
    weight_speed: float = Field(0.5, ge=0, le=1)


@behavior("flee", kind="neighbor", params=FleeParams, silent_alone=True)
def flee(agents, others, neighbors, p, time, dt, out):
    """Away from the observability-weighted threats; all desires grow with closeness."""
    count = neighbors.count
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    for i in prange(count.shape[0]):
        r = at(p.max_distance, i)
        fov = math.radians(at(p.fov_deg, i))
        ax = 0.0
        ay = 0.0
        az = 0.0
        nearest = r
        seen = False
        for q in range(count[i]):
            d = dist[i, q]
            o = observability(d, angle[i, q], r, fov, at(p.distance_power, i), at(p.angle_power, i))
            if o <= 0.0:
                continue
            seen = True
            nearest = min(nearest, d)
            ax -= o * unit[i, q, 0]
            ay -= o * unit[i, q, 1]
            az -= o * unit[i, q, 2]
        # finish: away at a closeness-driven speed, or no opinion (all zero); one emit below
        ux = uy = uz = a = speed = 0.0
        length = math.sqrt(ax * ax + ay * ay + az * az)
        if seen and length >= 1e-9:
            ux, uy, uz = ax / length, ay / length, az / length
            a = ease(p.easing, 1.0 - nearest / r, at(p.easing_power, i))
            speed = at(p.min_speed, i) + (at(p.max_speed, i) - at(p.min_speed, i)) * a
        emit(out, i, ux, uy, uz, at(p.weight_direction, i) * a, speed, at(p.weight_speed, i) * a)


@behavior("seek", kind="neighbor", params=SeekParams, silent_alone=True)
def seek(agents, others, neighbors, p, time, dt, out):
    """Toward the nearest visible neighbour; all desires grow with closeness."""
    count = neighbors.count
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    for i in prange(count.shape[0]):
        r = at(p.max_distance, i)
        fov = math.radians(at(p.fov_deg, i))
        best = -1
        for q in range(count[i]):
            # rows are sorted by distance: the first visible one is the nearest
            if dist[i, q] > 1e-9 and observability(dist[i, q], angle[i, q], r, fov, at(p.distance_power, i),
                                                   at(p.angle_power, i)) > 0.0:
                best = q
                break
        # finish: toward the nearest at a closeness-driven speed, or no opinion (all zero); one emit below
        ux = uy = uz = a = speed = 0.0
        if best >= 0:
            ux, uy, uz = unit[i, best, 0], unit[i, best, 1], unit[i, best, 2]
            a = ease(p.easing, 1.0 - dist[i, best] / r, at(p.easing_power, i))
            speed = at(p.min_speed, i) + (at(p.max_speed, i) - at(p.min_speed, i)) * a
        emit(out, i, ux, uy, uz, at(p.weight_direction, i) * a, speed, at(p.weight_speed, i) * a)
