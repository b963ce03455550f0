"""Reynolds' three boid rules as the course slides of seed 003 compute them, with "breathing".

Seed 003 ("Flocking and Combining Steering Behaviors") writes each rule as a component
that returns a *unit* direction scaled by a global weight; the components are then added
without normalisation (weighted blending, the ``weighted_sum`` and ``priority_blend``
mergers). Unlike the thesis' ``cohesion``/``alignment``/``separation`` (seed 000, 6.4.5),
whose desire grows with an activation, every neighbour inside the view counts fully and
the desire is the weight itself whenever there is a neighbour to react to:

* ``boid_cohesion``: toward the mean position of the neighbours (the "geometric centre").
* ``boid_alignment``: along the sum of the neighbours' forward vectors ("average forward").
* ``boid_separation``: along ``Σ (p − q) / |p − q| / (|p − q| + 1e-4)`` over the
  neighbours ``q``: the closer a neighbour, the stronger its push.

A neighbour counts when it is within ``max_distance`` and inside ``fov_deg`` (the slides'
spherical view, ``Physics.OverlapSphere``; 360° is the sphere itself). The animal itself
is never its own neighbour.

**Breathing** (the slides' "How to make a swarm more realistic", item 1): with
``breathing_period`` T > 0 the desire is multiplied by

    b(t) = 1 − A · (1 + cos(2π t / T + φ)) / 2,        A = ``breathing_amplitude``, φ = ``breathing_phase_deg``

in simulated time ``t``, so it swings between ``weight · (1 − A)`` and ``weight`` once
every T seconds and never exceeds the weight. The slides drive cohesion with the cosine
(φ = 0) and separation with the sine (φ = −90°, since sin x = cos(x − 90°)).
"""
import math
from typing import ClassVar, Literal, Optional

from numba import njit, prange
from pydantic import Field

from ...params import NeighborBehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit

_SEPARATION_EPS = 1e-4  # the slides' "+ 0.0001" that keeps 1 / distance finite


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def breath(time, period, amplitude, phase_deg):
    """The breathing factor ``b(t)`` in [1 − amplitude, 1]; exactly 1 when ``period`` ≤ 0 (off)."""
    if period <= 0.0:
        return 1.0
    x = 2.0 * math.pi * time / period + math.radians(phase_deg)
    return 1.0 - amplitude * 0.5 * (1.0 + math.cos(x))


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _sees(distance, angle, max_distance, fov_rad):
    """Inside the spherical view: closer than ``max_distance`` and within half the field of view."""
    return distance < max_distance and 2.0 * abs(angle) <= fov_rad


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _breathing_unit(ax, ay, az, per, weight, time, period, amplitude, phase_deg):
    """The unit vector of ``a`` with desire ``weight · b(t)``; no opinion (all zero) when ``|a| / per``
    is below 1e-9 or ``per`` is 0 (nobody in view)."""
    length = math.sqrt(ax * ax + ay * ay + az * az)
    if per > 0 and length / per >= 1e-9:
        return ax / length, ay / length, az / length, weight * breath(time, period, amplitude, phase_deg)
    return 0.0, 0.0, 0.0, 0.0


class BoidParams(NeighborBehaviorParams):
    """A slides-style boid rule: unit direction × weight, optionally breathing in time.

    ``max_distance`` and ``fov_deg`` bound the view (a neighbour inside counts fully);
    the observability powers ``distance_power``/``angle_power`` it inherits are not used.
    """

    kind: str
    breathing_period: float = Field(
        0.0, ge=0, description="Period T of the breathing weight, s of simulated time (0: no breathing).")
    breathing_amplitude: float = Field(
        0.5, ge=0, le=1, description="Amplitude A: the desire swings between weight·(1 − A) and weight.")
    breathing_phase_deg: float = Field(
        0.0, ge=-360, le=360, description="Phase φ of the breathing cosine, degrees (−90 gives the slides' sine).")

    kernel_fields: ClassVar[Optional[tuple[str, ...]]] = (
        "weight_direction", "weight_speed", "max_distance", "fov_deg",
        "breathing_period", "breathing_amplitude", "breathing_phase_deg")


class BoidCohesionParams(BoidParams):
    """Toward the mean position of the neighbours in view (seed 003, BoidCohesion)."""

    kind: Literal["boid_cohesion"] = "boid_cohesion"
    weight_direction: float = Field(0.5, ge=0, le=1)


class BoidAlignmentParams(BoidParams):
    """Along the summed forward vectors of the neighbours in view (seed 003, BoidAlign)."""

    kind: Literal["boid_alignment"] = "boid_alignment"
    weight_direction: float = Field(0.3, ge=0, le=1)


class BoidSeparationParams(BoidParams):
    """Away from the neighbours in view, each pushing by 1 / (distance + 1e-4) (seed 003, BoidSeparation)."""

    kind: Literal["boid_separation"] = "boid_separation"
    weight_direction: float = Field(0.7, ge=0, le=1)


@behavior("boid_cohesion", kind="neighbor", params=BoidCohesionParams)
def boid_cohesion(agents, others, neighbors, p, time, dt, out):
    """dir = (mean of the neighbours' positions − p) normalised, des = w · b(t)."""
    count = neighbors.count
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    for i in prange(count.shape[0]):
        r = at(p.max_distance, i)
        fov = math.radians(at(p.fov_deg, i))
        seen = 0
        ax = 0.0
        ay = 0.0
        az = 0.0
        for q in range(count[i]):
            d = dist[i, q]
            if not _sees(d, angle[i, q], r, fov):
                continue
            seen += 1
            ax += d * unit[i, q, 0]
            ay += d * unit[i, q, 1]
            az += d * unit[i, q, 2]
        # finish: the mean offset (centroid − self); its direction only matters
        ux, uy, uz, desire = _breathing_unit(ax, ay, az, seen, at(p.weight_direction, i), time,
                                             at(p.breathing_period, i), at(p.breathing_amplitude, i),
                                             at(p.breathing_phase_deg, i))
        emit(out, i, ux, uy, uz, desire, 0.0, 0.0)


@behavior("boid_alignment", kind="neighbor", params=BoidAlignmentParams)
def boid_alignment(agents, others, neighbors, p, time, dt, out):
    """dir = Σ forward_j normalised, des = w · b(t)."""
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    angle = neighbors.angle
    ofwd = others.forward
    for i in prange(count.shape[0]):
        r = at(p.max_distance, i)
        fov = math.radians(at(p.fov_deg, i))
        ax = 0.0
        ay = 0.0
        az = 0.0
        for q in range(count[i]):
            if not _sees(dist[i, q], angle[i, q], r, fov):
                continue
            j = index[i, q]
            ax += ofwd[j, 0]
            ay += ofwd[j, 1]
            az += ofwd[j, 2]
        ux, uy, uz, desire = _breathing_unit(ax, ay, az, 1, at(p.weight_direction, i), time,
                                             at(p.breathing_period, i), at(p.breathing_amplitude, i),
                                             at(p.breathing_phase_deg, i))
        emit(out, i, ux, uy, uz, desire, 0.0, 0.0)


@behavior("boid_separation", kind="neighbor", params=BoidSeparationParams)
def boid_separation(agents, others, neighbors, p, time, dt, out):
    """dir = Σ −û_j / (d_j + 1e-4) normalised (û_j toward neighbour j), des = w · b(t)."""
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
        for q in range(count[i]):
            d = dist[i, q]
            if not _sees(d, angle[i, q], r, fov):
                continue
            k = 1.0 / (d + _SEPARATION_EPS)
            ax -= k * unit[i, q, 0]
            ay -= k * unit[i, q, 1]
            az -= k * unit[i, q, 2]
        ux, uy, uz, desire = _breathing_unit(ax, ay, az, 1, at(p.weight_direction, i), time,
                                             at(p.breathing_period, i), at(p.breathing_amplitude, i),
                                             at(p.breathing_phase_deg, i))
        emit(out, i, ux, uy, uz, desire, 0.0, 0.0)
