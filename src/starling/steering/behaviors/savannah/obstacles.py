"""Ray obstacle avoidance (listing A.7), with the seed's blind sides fixed.

The seed casts ``lookAhead`` (30 m) rays forward, 45° left and 45° right, in that order,
and the first that hits decides: the animal seeks ``hit.point + hit.normal · avoidDistance``
(20 m) with the seed's seek (:mod:`.goals`: nothing within 10 m, else
``min(100 d², max_acceleration)``). The author lists "side and rear obstacles handled
poorly" among its weaknesses: an obstacle 5 m to the side is ignored while a far one
ahead is avoided. So by default every ray of the group counts and the **nearest hit**
decides; the savannah casts five rays over 180° (``query = { shape = "cone2d", count = 5,
fov_deg = 180, max_distance = 30 }``). With ``faithful = true`` only the rays within 45° of
forward count and the one closest to forward wins (forward before the sides, of two
equally close sides the left, cast first): the seed's three rays in its order.
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

_COS_45 = math.cos(math.radians(45.0))


class AvoidObstaclesAheadParams(RayBehaviorParams):
    """Seek a point ``avoid_distance`` off the nearest obstacle the rays hit (faithful: the seed's first of three)."""

    kind: Literal["avoid_obstacles_ahead"] = "avoid_obstacles_ahead"
    weight_direction: float = Field(1.0, ge=0, le=1, description="Unused by the seed's formulas (kept at 1).")
    factor: float = Field(2.0, ge=0, description="The seed's Steering.Add weight: desire = factor × |a|.")
    max_acceleration: float = Field(5.0, gt=0, description="maxLinearAcceleration of the species, m/s².")
    avoid_distance: float = Field(20.0, gt=0, description="avoidDistance: how far off the hit point to aim, m.")
    attraction: float = Field(100.0, gt=0, description="The seek's attractionCoefficient, 1/s².")
    arrive_threshold: float = Field(10.0, ge=0, description="The seek's arrive radius, m.")
    faithful: bool = Field(False, description="The seed's rule: only the rays within 45° of forward, the one "
                           "closest to forward wins (default: every ray, the nearest hit wins).")


@behavior("avoid_obstacles_ahead", kind="ray", params=AvoidObstaclesAheadParams)
def avoid_obstacles_ahead(agents, hits, p, time, dt, out):
    pos = agents.position
    fwd = agents.forward
    hit = hits.hit
    point = hits.point
    normal = hits.normal
    ray = hits.direction
    distance = hits.distance
    faithful = p.faithful
    for i in prange(pos.shape[0]):
        best = -1
        best_key = -math.inf
        for r in range(hit.shape[1]):
            if hit[i, r]:
                dot = ray[i, r, 0] * fwd[i, 0] + ray[i, r, 2] * fwd[i, 2]
                if faithful:
                    if dot < _COS_45 - 1e-4:
                        continue  # the seed casts no ray beyond 45° of forward
                    key = dot
                else:
                    key = -distance[i, r]
                if key > best_key + 1e-6:
                    best = r
                    best_key = key
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
