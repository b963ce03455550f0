"""Avoiding the environment with ray hits (seed 000, 7.1.4 eq. 7.1–7.2, 9.5.4).

All three read the hits of their ray group (``hits.hit``, ``distance``, ``normal``,
``direction``, each ``(n, r)``) and never have an opinion on speed:

* ``environment_avoidance`` — the ray version of separation (7.1.4). Each hit is weighed
  by its observability ``o(d, α) = f_ip(d / r) · f_q2(2α / fov)`` (α: angle between the
  ray and the animal's forward vector); the direction is the normalised sum of the
  weighted hit normals, ``â = Σ o·n̂``, and the desire ``w · f_sep(u)`` with ``u`` the
  largest observability of any hit (eq. 7.1). Normals face the ray's origin, so they
  point away from the obstacle.
* ``avoid_verticals`` — the same with every normal projected on the horizontal x–z plane
  (and renormalised), so a sloped wall never pushes the animal up or down (fish kept in a
  pond are not lifted to the surface by the banks). Hits on surfaces flatter than
  ``min_slope_deg`` are ignored: their normals have (almost) no horizontal part.
* ``avoid_ground`` — straight up, with a desire that grows as the nearest hit gets
  closer: ``w · f_q1(1 − d_min / r, l)``. Pair it with a query that looks down (a
  ``single`` ray or a ``cone3d`` with ``direction = [0, -1, 0]`` in ``world_space``).
"""
import math
from typing import Literal

from numba import prange
from pydantic import Field

from ...params import RayBehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit, no_opinion
from ...shaping import f_q1, f_sep, observability
from ...vecmath import fast_acos


class EnvironmentAvoidanceParams(RayBehaviorParams):
    """Turn away from the surfaces the rays hit, urgently when a hit is close and ahead."""

    kind: Literal["environment_avoidance"] = "environment_avoidance"
    weight_direction: float = Field(0.7, ge=0, le=1)
    sep_k: float = Field(0.5, gt=0, description="k of f_sep (horizontal stretch of the activation).")
    sep_power: float = Field(2.0, gt=0, description="l of f_sep (how fast the activation rises).")


@behavior("environment_avoidance", kind="ray", params=EnvironmentAvoidanceParams)
def environment_avoidance(agents, hits, p, time, dt, out):
    """dir = Σ o·n̂ normalised, des = w f_sep(max o) (7.1–7.2)."""
    hit = hits.hit
    dist = hits.distance
    nrm = hits.normal
    ray = hits.direction
    fwd = agents.forward
    rays = hit.shape[1]
    for i in prange(hit.shape[0]):
        r = at(p.max_distance, i)
        fov = math.radians(at(p.fov_deg, i))
        fx = fwd[i, 0]
        fy = fwd[i, 1]
        fz = fwd[i, 2]
        fl = math.sqrt(fx * fx + fy * fy + fz * fz)
        if fl > 1e-9:
            fx /= fl
            fy /= fl
            fz /= fl
        u = 0.0
        ax = 0.0
        ay = 0.0
        az = 0.0
        for q in range(rays):
            if not hit[i, q]:
                continue
            angle = 0.0
            if fl > 1e-9:
                angle = fast_acos(ray[i, q, 0] * fx + ray[i, q, 1] * fy + ray[i, q, 2] * fz)
            o = observability(dist[i, q], angle, r, fov, at(p.distance_power, i), at(p.angle_power, i))
            if o <= 0.0:
                continue
            if o > u:
                u = o
            ax += o * nrm[i, q, 0]
            ay += o * nrm[i, q, 1]
            az += o * nrm[i, q, 2]
        length = math.sqrt(ax * ax + ay * ay + az * az)
        if u <= 0.0 or length < 1e-9:
            no_opinion(out, i)
        else:
            desire = at(p.weight_direction, i) * f_sep(u, at(p.sep_k, i), at(p.sep_power, i))
            emit(out, i, ax / length, ay / length, az / length, desire, 0.0, 0.0)


class AvoidVerticalsParams(RayBehaviorParams):
    """Turn away horizontally from walls and steep slopes; flat ground is ignored."""

    kind: Literal["avoid_verticals"] = "avoid_verticals"
    weight_direction: float = Field(0.7, ge=0, le=1)
    sep_k: float = Field(0.5, gt=0, description="k of f_sep (horizontal stretch of the activation).")
    sep_power: float = Field(2.0, gt=0, description="l of f_sep (how fast the activation rises).")
    min_slope_deg: float = Field(
        30.0, ge=0, lt=90, description="Hits on surfaces flatter than this (angle from horizontal) are ignored, degrees."
    )


@behavior("avoid_verticals", kind="ray", params=AvoidVerticalsParams)
def avoid_verticals(agents, hits, p, time, dt, out):
    """Like environment avoidance with normals projected on the x–z plane (9.5.4)."""
    # a surface's slope is the angle of its normal from vertical: tan(slope) = |n_xz| / |n_y|
    hit = hits.hit
    dist = hits.distance
    nrm = hits.normal
    ray = hits.direction
    fwd = agents.forward
    rays = hit.shape[1]
    for i in prange(hit.shape[0]):
        r = at(p.max_distance, i)
        fov = math.radians(at(p.fov_deg, i))
        tan_min = math.tan(math.radians(at(p.min_slope_deg, i)))
        fx = fwd[i, 0]
        fy = fwd[i, 1]
        fz = fwd[i, 2]
        fl = math.sqrt(fx * fx + fy * fy + fz * fz)
        if fl > 1e-9:
            fx /= fl
            fy /= fl
            fz /= fl
        u = 0.0
        ax = 0.0
        az = 0.0
        for q in range(rays):
            if not hit[i, q]:
                continue
            nx = nrm[i, q, 0]
            nz = nrm[i, q, 2]
            h = math.sqrt(nx * nx + nz * nz)
            if h < 1e-6 or h < tan_min * abs(nrm[i, q, 1]):
                continue
            angle = 0.0
            if fl > 1e-9:
                angle = fast_acos(ray[i, q, 0] * fx + ray[i, q, 1] * fy + ray[i, q, 2] * fz)
            o = observability(dist[i, q], angle, r, fov, at(p.distance_power, i), at(p.angle_power, i))
            if o <= 0.0:
                continue
            if o > u:
                u = o
            ax += o * nx / h
            az += o * nz / h
        length = math.sqrt(ax * ax + az * az)
        if u <= 0.0 or length < 1e-9:
            no_opinion(out, i)
        else:
            desire = at(p.weight_direction, i) * f_sep(u, at(p.sep_k, i), at(p.sep_power, i))
            emit(out, i, ax / length, 0.0, az / length, desire, 0.0, 0.0)


class AvoidGroundParams(RayBehaviorParams):
    """Straight up, more urgently the closer the ground below."""

    kind: Literal["avoid_ground"] = "avoid_ground"
    weight_direction: float = Field(0.5, ge=0, le=1)
    power: float = Field(2.0, gt=0, description="Power l of the f_q1 activation of 1 − d_min / max_distance.")


@behavior("avoid_ground", kind="ray", params=AvoidGroundParams)
def avoid_ground(agents, hits, p, time, dt, out):
    """dir = up, des = w f_q1(1 − d_min / r) over the group's hits (9.5.4)."""
    hit = hits.hit
    dist = hits.distance
    rays = hit.shape[1]
    for i in prange(hit.shape[0]):
        r = at(p.max_distance, i)
        nearest = r
        found = False
        for q in range(rays):
            if hit[i, q] and dist[i, q] < nearest:
                nearest = dist[i, q]
                found = True
        if found:
            emit(out, i, 0.0, 1.0, 0.0, at(p.weight_direction, i) * f_q1(1.0 - nearest / r, at(p.power, i)), 0.0, 0.0)
        else:
            no_opinion(out, i)
