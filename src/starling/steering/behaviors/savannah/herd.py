"""The seed's group steering (listings A.6, A.8–A.10) as neighbour behaviours.

Each sums over the neighbours its group found (the seed's trigger-sphere lists) within
``max_distance`` and returns one acceleration, m/s², in the horizontal plane:

* ``herd_separation``: ``Σ −min(decay / d², max_acceleration) · d̂`` over the neighbours
  closer than ``threshold`` (25 m; decay 20). The sum is not clamped (the species' crop is).
* ``herd_cohesion``: ``min(attraction · |c − p|, max_acceleration)`` toward the neighbours'
  centroid ``c`` (attraction 0.1).
* ``herd_velocity_matching``: ``a = mean(v) − v``; zero when ``|a| < tolerance`` (1 m/s),
  else ``a / time_to_target`` (0.1 s) clamped to ``max_acceleration``.
* ``flee_centroid``: ``min(repulsion / |p − c|², max_acceleration)`` away from the
  neighbours' centroid (repulsion 1000): zebras flee the lions they see, everyone keeps
  clear of elephants.
* ``regroup`` (not in the seed, which lists "herds split by obstacles do not regroup"
  among its weaknesses): the same pull as cohesion toward the centroid of the herd
  mates within a wide reach, but only for an animal farther than ``split_distance`` from
  it, so a compact herd feels nothing and a split one closes up.

The desire is ``factor`` times the acceleration's length (the seed's ``Steering.Add``
weight), so the ``acceleration_sum`` merger with ``acceleration = 1`` sums them as the seed.
"""
import math
from typing import Literal

from numba import njit, prange
from pydantic import Field

from ...params import NeighborBehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit, no_opinion


class _SeedParams(NeighborBehaviorParams):
    weight_direction: float = Field(1.0, ge=0, le=1, description="Unused by the seed's formulas (kept at 1).")
    factor: float = Field(1.0, ge=0, description="The seed's Steering.Add weight: desire = factor × |a|.")
    max_acceleration: float = Field(5.0, gt=0, description="maxLinearAcceleration of the species, m/s².")


class HerdSeparationParams(_SeedParams):
    """Push away from every neighbour closer than ``threshold``, by ``decay / d²``."""

    kind: Literal["herd_separation"] = "herd_separation"
    threshold: float = Field(25.0, gt=0, description="Neighbours closer than this push, m.")
    decay: float = Field(20.0, gt=0, description="decayCoefficient: strength = decay / d², m³/s².")


class HerdCohesionParams(_SeedParams):
    """Pull toward the neighbours' centroid, by ``attraction · distance``."""

    kind: Literal["herd_cohesion"] = "herd_cohesion"
    attraction: float = Field(0.1, gt=0, description="attractionCoefficient, 1/s².")


class HerdVelocityMatchingParams(_SeedParams):
    """Match the neighbours' mean velocity within ``time_to_target``."""

    kind: Literal["herd_velocity_matching"] = "herd_velocity_matching"
    time_to_target: float = Field(0.1, gt=0, description="timeToTarget, s.")
    tolerance: float = Field(1.0, ge=0, description="Differences below this are ignored, m/s.")


class RegroupParams(_SeedParams):
    """Pull toward the wide herd's centroid when it is farther than ``split_distance``."""

    kind: Literal["regroup"] = "regroup"
    attraction: float = Field(0.1, gt=0, description="Pull per metre of distance to the centroid, 1/s².")
    split_distance: float = Field(30.0, ge=0, description="No pull while the centroid is closer than this, m.")
    faithful: bool = Field(False, description="The seed's herd never regroups: true turns this off.")


class FleeCentroidParams(_SeedParams):
    """Push away from the neighbours' centroid, by ``repulsion / d²``."""

    kind: Literal["flee_centroid"] = "flee_centroid"
    repulsion: float = Field(1000.0, gt=0, description="repulsionCoefficient, m³/s².")


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _as_result(ax, az, factor):
    """Acceleration ``(ax, 0, az)`` as (unit x, unit z, desire ``factor · |a|``); all zero when ``a`` is."""
    length = math.sqrt(ax * ax + az * az)
    if length < 1e-12:
        return 0.0, 0.0, 0.0
    return ax / length, az / length, factor * length


@behavior("herd_separation", kind="neighbor", params=HerdSeparationParams)
def herd_separation(agents, others, neighbors, p, time, dt, out):
    count = neighbors.count
    dist = neighbors.distance
    unit = neighbors.direction
    for i in prange(count.shape[0]):
        reach = min(at(p.max_distance, i), at(p.threshold, i))
        cap = at(p.max_acceleration, i)
        decay = at(p.decay, i)
        ax = 0.0
        az = 0.0
        for j in range(count[i]):
            d = dist[i, j]
            if d < reach and d > 1e-9:
                strength = min(decay / (d * d), cap)
                ax -= strength * unit[i, j, 0]
                az -= strength * unit[i, j, 2]
        ux, uz, desire = _as_result(ax, az, at(p.factor, i))
        emit(out, i, ux, 0.0, uz, desire, 0.0, 0.0)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _mean_xz(values, index, dist, n, i, reach):
    """Mean x and z of ``values`` over animal ``i``'s first ``n`` neighbours closer than ``reach``,
    and how many there were (cohesion averages positions, velocity matching velocities)."""
    sx = 0.0
    sz = 0.0
    m = 0
    for j in range(n):
        if dist[i, j] < reach:
            sx += values[index[i, j], 0]
            sz += values[index[i, j], 2]
            m += 1
    if m == 0:
        return 0.0, 0.0, 0
    return sx / m, sz / m, m


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _pull(cx, cz, px, pz, attraction, cap, factor, nearer):
    """``min(attraction · d, cap)`` from ``(px, pz)`` toward ``(cx, cz)`` as (unit x, unit z, desire,
    ok); not ok when the point is closer than ``nearer`` (or on the animal)."""
    dx = cx - px
    dz = cz - pz
    length = math.sqrt(dx * dx + dz * dz)
    if length < nearer or length < 1e-9:
        return 0.0, 0.0, 0.0, False
    strength = min(attraction * length, cap)
    ux, uz, desire = _as_result(strength * dx / length, strength * dz / length, factor)
    return ux, uz, desire, True


@behavior("herd_cohesion", kind="neighbor", params=HerdCohesionParams)
def herd_cohesion(agents, others, neighbors, p, time, dt, out):
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    pos = agents.position
    opos = others.position
    for i in prange(count.shape[0]):
        cx, cz, m = _mean_xz(opos, index, dist, count[i], i, at(p.max_distance, i))
        if m == 0:
            no_opinion(out, i)
            continue
        ux, uz, desire, ok = _pull(cx, cz, pos[i, 0], pos[i, 2], at(p.attraction, i), at(p.max_acceleration, i),
                                   at(p.factor, i), 0.0)
        if not ok:
            no_opinion(out, i)
            continue
        emit(out, i, ux, 0.0, uz, desire, 0.0, 0.0)


@behavior("regroup", kind="neighbor", params=RegroupParams)
def regroup(agents, others, neighbors, p, time, dt, out):
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    pos = agents.position
    opos = others.position
    faithful = p.faithful
    for i in prange(count.shape[0]):
        cx, cz, m = _mean_xz(opos, index, dist, count[i], i, at(p.max_distance, i))
        if m == 0 or faithful:
            no_opinion(out, i)
            continue
        ux, uz, desire, ok = _pull(cx, cz, pos[i, 0], pos[i, 2], at(p.attraction, i), at(p.max_acceleration, i),
                                   at(p.factor, i), at(p.split_distance, i))
        if not ok:
            no_opinion(out, i)
            continue
        emit(out, i, ux, 0.0, uz, desire, 0.0, 0.0)


@behavior("herd_velocity_matching", kind="neighbor", params=HerdVelocityMatchingParams)
def herd_velocity_matching(agents, others, neighbors, p, time, dt, out):
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    vel = agents.velocity
    ovel = others.velocity
    for i in prange(count.shape[0]):
        vx, vz, m = _mean_xz(ovel, index, dist, count[i], i, at(p.max_distance, i))
        if m == 0:
            no_opinion(out, i)
            continue
        ax = vx - vel[i, 0]
        az = vz - vel[i, 2]
        if math.sqrt(ax * ax + az * az) < at(p.tolerance, i):
            no_opinion(out, i)
            continue
        ax /= at(p.time_to_target, i)
        az /= at(p.time_to_target, i)
        length = math.sqrt(ax * ax + az * az)
        cap = at(p.max_acceleration, i)
        if length > cap:
            ax *= cap / length
            az *= cap / length
        ux, uz, desire = _as_result(ax, az, at(p.factor, i))
        emit(out, i, ux, 0.0, uz, desire, 0.0, 0.0)


@behavior("flee_centroid", kind="neighbor", params=FleeCentroidParams)
def flee_centroid(agents, others, neighbors, p, time, dt, out):
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    pos = agents.position
    opos = others.position
    for i in prange(count.shape[0]):
        cx, cz, m = _mean_xz(opos, index, dist, count[i], i, at(p.max_distance, i))
        if m == 0:
            no_opinion(out, i)
            continue
        dx = pos[i, 0] - cx
        dz = pos[i, 2] - cz
        d2 = dx * dx + dz * dz
        if d2 < 1e-18:
            no_opinion(out, i)
            continue
        length = math.sqrt(d2)
        strength = min(at(p.repulsion, i) / d2, at(p.max_acceleration, i))
        ux, uz, desire = _as_result(strength * dx / length, strength * dz / length, at(p.factor, i))
        emit(out, i, ux, 0.0, uz, desire, 0.0, 0.0)
