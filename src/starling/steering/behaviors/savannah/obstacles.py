"""Three-ray obstacle avoidance (listing A.7).

The seed casts ``lookAhead`` (30 m) rays forward, 45° left and 45° right, in that order,
and the first that hits decides: the animal seeks ``hit.point + hit.normal · avoidDistance``
(20 m) with the seed's seek (:mod:`.goals`: nothing within 10 m, else
``min(100 d², max_acceleration)``). Use it in a ray group with
``query = { shape = "cone2d", count = 3, fov_deg = 90, max_distance = 30 }``; of the rays
that hit, the one closest to the animal's forward wins (forward before the sides), and
of two equally close sides the left (cast first).
"""
import math
from typing import Literal

from numba import prange
from pydantic import Field

from ...params import RayBehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit, no_opinion
from .goals import _seek


class AvoidObstaclesAheadParams(RayBehaviorParams):
    """Seek a point ``avoid_distance`` off the first obstacle the three rays hit."""

    kind: Literal["avoid_obstacles_ahead"] = "avoid_obstacles_ahead"
    weight_direction: float = Field(1.0, ge=0, le=1, description="Unused by the seed's formulas (kept at 1).")
    factor: float = Field(2.0, ge=0, description="The seed's Steering.Add weight: desire = factor × |a|.")
    max_acceleration: float = Field(5.0, gt=0, description="maxLinearAcceleration of the species, m/s².")
    avoid_distance: float = Field(20.0, gt=0, description="avoidDistance: how far off the hit point to aim, m.")
    attraction: float = Field(100.0, gt=0, description="The seek's attractionCoefficient, 1/s².")
    arrive_threshold: float = Field(10.0, ge=0, description="The seek's arrive radius, m.")


@behavior("avoid_obstacles_ahead", kind="ray", params=AvoidObstaclesAheadParams)
def avoid_obstacles_ahead(agents, hits, p, time, dt, out):
    pos = agents.position
    fwd = agents.forward
    hit = hits.hit
    point = hits.point
    normal = hits.normal
    ray = hits.direction
    for i in prange(pos.shape[0]):
        best = -1
        best_dot = -2.0
        for r in range(hit.shape[1]):
            if hit[i, r]:
                dot = ray[i, r, 0] * fwd[i, 0] + ray[i, r, 2] * fwd[i, 2]
                if dot > best_dot + 1e-6:
                    best = r
                    best_dot = dot
        if best < 0:
            no_opinion(out, i)
            continue
        reach = at(p.avoid_distance, i)
        tx = point[i, best, 0] + normal[i, best, 0] * reach
        tz = point[i, best, 2] + normal[i, best, 2] * reach
        dx = tx - pos[i, 0]
        dz = tz - pos[i, 2]
        d = math.sqrt(dx * dx + dz * dz)
        s = _seek(d, at(p.attraction, i), at(p.arrive_threshold, i), at(p.max_acceleration, i))
        if s <= 0.0 or d < 1e-9:
            no_opinion(out, i)
            continue
        emit(out, i, dx / d, 0.0, dz / d, at(p.factor, i) * s, 0.0, 0.0)
