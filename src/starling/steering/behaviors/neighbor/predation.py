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
from ...registry import behavior
from ...shaping import ease, easing_code, observability
from .common import pair


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


@behavior("flee", kind="neighbor", params=FleeParams)
def flee(agents, others, neighbors, box, p, time, dt, out):
    """Away from the observability-weighted threats; all desires grow with closeness."""
    r = p.max_distance
    fov = math.radians(p.fov_deg)
    for i in prange(neighbors.count.shape[0]):
        px = agents.position[i, 0]
        py = agents.position[i, 1]
        pz = agents.position[i, 2]
        fx = agents.forward[i, 0]
        fy = agents.forward[i, 1]
        fz = agents.forward[i, 2]
        ax = 0.0
        ay = 0.0
        az = 0.0
        nearest = r
        seen = False
        for q in range(neighbors.count[i]):
            j = neighbors.index[i, q]
            dx, dy, dz, d, alpha = pair(px, py, pz, fx, fy, fz, others.position[j, 0], others.position[j, 1],
                                         others.position[j, 2], box[0], box[1], box[2])
            o = observability(d, alpha, r, fov, p.distance_power, p.angle_power)
            if o <= 0.0:
                continue
            seen = True
            nearest = min(nearest, d)
            if d > 1e-9:
                ax -= o * dx / d
                ay -= o * dy / d
                az -= o * dz / d
        length = math.sqrt(ax * ax + ay * ay + az * az)
        if not seen or length < 1e-9:
            out.direction[i, 0] = 0.0
            out.direction[i, 1] = 0.0
            out.direction[i, 2] = 0.0
            out.direction_desire[i] = 0.0
            out.speed[i] = 0.0
            out.speed_desire[i] = 0.0
            continue
        a = ease(p.easing, 1.0 - nearest / r, p.easing_power)
        out.direction[i, 0] = ax / length
        out.direction[i, 1] = ay / length
        out.direction[i, 2] = az / length
        out.direction_desire[i] = p.weight_direction * a
        out.speed[i] = p.min_speed + (p.max_speed - p.min_speed) * a
        out.speed_desire[i] = p.weight_speed * a


@behavior("seek", kind="neighbor", params=SeekParams)
def seek(agents, others, neighbors, box, p, time, dt, out):
    """Toward the nearest visible neighbour; all desires grow with closeness."""
    r = p.max_distance
    fov = math.radians(p.fov_deg)
    for i in prange(neighbors.count.shape[0]):
        px = agents.position[i, 0]
        py = agents.position[i, 1]
        pz = agents.position[i, 2]
        fx = agents.forward[i, 0]
        fy = agents.forward[i, 1]
        fz = agents.forward[i, 2]
        best = -1.0
        bx = 0.0
        by = 0.0
        bz = 0.0
        for q in range(neighbors.count[i]):
            j = neighbors.index[i, q]
            dx, dy, dz, d, alpha = pair(px, py, pz, fx, fy, fz, others.position[j, 0], others.position[j, 1],
                                         others.position[j, 2], box[0], box[1], box[2])
            if observability(d, alpha, r, fov, p.distance_power, p.angle_power) <= 0.0:
                continue
            if best < 0.0 or d < best:
                best = d
                bx, by, bz = dx, dy, dz
        if best < 1e-9:
            out.direction[i, 0] = 0.0
            out.direction[i, 1] = 0.0
            out.direction[i, 2] = 0.0
            out.direction_desire[i] = 0.0
            out.speed[i] = 0.0
            out.speed_desire[i] = 0.0
            continue
        a = ease(p.easing, 1.0 - best / r, p.easing_power)
        out.direction[i, 0] = bx / best
        out.direction[i, 1] = by / best
        out.direction[i, 2] = bz / best
        out.direction_desire[i] = p.weight_direction * a
        out.speed[i] = p.min_speed + (p.max_speed - p.min_speed) * a
        out.speed_desire[i] = p.weight_speed * a
