"""Seed 004's obstacle avoidance (Ménard, 1.4): probe ahead, then escape along the freest of eight.

Pair it with an ``eight_way`` ray query (:mod:`starling.steering.queries.rays`): ray 0 looks
along the heading (the *detection* raycast), then ``K`` rings of eight rays deflected from it by
``90° · k / K`` toward the eight *global avoidance directions* (left, right, up, down and the
diagonals; the *selection* raycasts).

* When the detection ray hits nothing within ``max_distance``: no opinion.
* Otherwise the *avoidance angle* grows as the obstacle gets closer, ``θ = 90° · (1 − d / r)``
  (``d`` the hit's distance, ``r`` = ``max_distance``): the ring ``k = round(K · θ / 90°)``,
  at least 1, is the one whose deflection is nearest to it.
* Of that ring's eight directions the one whose ray hits farthest away wins (``+∞`` when it
  hits nothing). ``horizontal_preference`` (≥ 1) multiplies the free distance of the two
  horizontal escapes (seed 004: sharks favour them); between equally free directions (two
  misses) the horizontal one wins when it is preferred, then the one most along the normal
  of the obstacle ahead, then the lower index.
* The result is that ray's direction with desire ``weight_direction``; no opinion on speed.
"""
import math
from typing import Literal

from numba import prange
from pydantic import Field

from ...params import RayBehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit, no_opinion


class EightWayAvoidanceParams(RayBehaviorParams):
    """Seed 004: when the ray ahead hits, turn toward the freest of eight deflected directions."""

    kind: Literal["eight_way_avoidance"] = "eight_way_avoidance"
    weight_direction: float = Field(0.9, ge=0, le=1)
    horizontal_preference: float = Field(
        1.0, ge=1.0, description="Factor on the free distance of the left and right escapes (1: no preference).")


@behavior("eight_way_avoidance", kind="ray", params=EightWayAvoidanceParams)
def eight_way_avoidance(agents, hits, p, time, dt, out):
    """Ring by closeness of the hit ahead, then the freest of its eight rays (see the module)."""
    hit = hits.hit
    dist = hits.distance
    nrm = hits.normal
    ray = hits.direction
    rays = hit.shape[1]
    rings = (rays - 1) // 8
    for i in prange(hit.shape[0]):
        r = at(p.max_distance, i)
        if rings < 1 or not hit[i, 0] or dist[i, 0] >= r:
            no_opinion(out, i)
            continue
        closeness = 1.0 - dist[i, 0] / r
        k = int(math.floor(rings * closeness + 0.5))
        if k < 1:
            k = 1
        if k > rings:
            k = rings
        prefer = at(p.horizontal_preference, i)
        best = -1
        best_free = -1.0
        best_pref = 0.0
        best_along = -2.0
        for j in range(8):
            q = 1 + 8 * (k - 1) + j
            pref = prefer if (j == 0 or j == 4) else 1.0
            free = math.inf
            if hit[i, q]:
                free = dist[i, q] * pref
            along = ray[i, q, 0] * nrm[i, 0, 0] + ray[i, q, 1] * nrm[i, 0, 1] + ray[i, q, 2] * nrm[i, 0, 2]
            better = False
            if free > best_free:
                better = True
            elif free == best_free:
                if pref > best_pref:
                    better = True
                elif pref == best_pref and along > best_along:
                    better = True
            if better:
                best = q
                best_free = free
                best_pref = pref
                best_along = along
        emit(out, i, ray[i, best, 0], ray[i, best, 1], ray[i, best, 2], at(p.weight_direction, i), 0.0, 0.0)
