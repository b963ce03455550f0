"""The fish school of the Intel/Unreal Engine flocking sample (seed 002): plain averages in radii.

Seed 002 ("The four behaviors of the Unreal Engine flocking algorithm", its "General
Description" and the CPU and compute-shader listings) steers each fish by three unit
vectors, each computed from the neighbours strictly closer than the behaviour's own
radius, every neighbour counting the same (no observability weighting, unlike
``cohesion``/``alignment``/``separation`` of seed 000):

* ``school_cohesion``:   ĉ = normalise(mean(p_j) − p_i)          (neighbours with d < R_coh)
* ``school_separation``: ŝ = normalise(−mean(p_j − p_i))         (neighbours with d < R_sep)
* ``school_alignment``:  â = normalise(mean(v_j))                (neighbours with d < R_ali)

With no neighbour in the radius (or a zero-length mean) the vector is zero: no opinion.
Each emits its unit vector with desire ``weight_direction`` (the seed's weight k, divided
by the acceleration scale of the ``acceleration_sum`` merger that adds them up as the
seed does) and no opinion on speed.

``max_distance`` is the behaviour's radius (it defaults to the group's query radius, so
the query must reach the largest of the three); the test is strict (``d < R``) as in the
seed. ``mean(p_j) − p_i`` is computed as the mean of the offsets ``p_j − p_i`` (the
group's precomputed ``direction × distance``), the same vector without adding up
absolute positions, and correct across a wrapping world's edge. The field of view is the
group query's (the seed's fish see all around: use ``fov_deg = 360`` there);
``distance_power``/``angle_power`` are inherited and unused.
"""
import math
from typing import Literal

from numba import njit, prange
from pydantic import Field

from ...params import NeighborBehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit

_TINY = 1e-9


class SchoolCohesionParams(NeighborBehaviorParams):
    """Toward the plain centroid of the neighbours within the radius (seed 002, "Cohesion")."""

    kind: Literal["school_cohesion"] = "school_cohesion"
    weight_direction: float = Field(0.5, ge=0, le=1, description="Constant desire of the unit vector (the seed's k_coh / scale).")


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _mean_offset(i, r, count, dist, unit):
    """Mean offset from animal ``i`` to its neighbours strictly within ``r``, and how many there are."""
    n = 0
    ax = 0.0
    ay = 0.0
    az = 0.0
    for q in range(count[i]):
        d = dist[i, q]
        if d < r:
            n += 1
            ax += d * unit[i, q, 0]
            ay += d * unit[i, q, 1]
            az += d * unit[i, q, 2]
    if n > 0:
        ax /= n
        ay /= n
        az /= n
    return ax, ay, az, n


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _unit_desire(ax, ay, az, n, weight):
    """The unit vector of ``a`` and desire ``weight``; all zero (no opinion) without neighbours or for a zero ``a``."""
    if n > 0:
        length = math.sqrt(ax * ax + ay * ay + az * az)
        if length > _TINY:
            return ax / length, ay / length, az / length, weight
    return 0.0, 0.0, 0.0, 0.0


@behavior("school_cohesion", kind="neighbor", params=SchoolCohesionParams)
def school_cohesion(agents, others, neighbors, p, time, dt, out):
    """dir = normalise(mean(p_j) − p_i) over d < R, des = w (seed 002, cohesion)."""
    count = neighbors.count
    dist = neighbors.distance
    unit = neighbors.direction
    for i in prange(count.shape[0]):
        ax, ay, az, n = _mean_offset(i, at(p.max_distance, i), count, dist, unit)
        ux, uy, uz, desire = _unit_desire(ax, ay, az, n, at(p.weight_direction, i))
        emit(out, i, ux, uy, uz, desire, 0.0, 0.0)


class SchoolSeparationParams(NeighborBehaviorParams):
    """Away from the plain centroid of the neighbours within the radius (seed 002, "Separation")."""

    kind: Literal["school_separation"] = "school_separation"
    weight_direction: float = Field(0.5, ge=0, le=1, description="Constant desire of the unit vector (the seed's k_sep / scale).")


@behavior("school_separation", kind="neighbor", params=SchoolSeparationParams)
def school_separation(agents, others, neighbors, p, time, dt, out):
    """dir = normalise(−mean(p_j − p_i)) over d < R, des = w (seed 002, separation)."""
    count = neighbors.count
    dist = neighbors.distance
    unit = neighbors.direction
    for i in prange(count.shape[0]):
        ax, ay, az, n = _mean_offset(i, at(p.max_distance, i), count, dist, unit)
        ux, uy, uz, desire = _unit_desire(-ax, -ay, -az, n, at(p.weight_direction, i))
        emit(out, i, ux, uy, uz, desire, 0.0, 0.0)


class SchoolAlignmentParams(NeighborBehaviorParams):
    """Along the plain mean velocity of the neighbours within the radius (seed 002, "Alignment")."""

    kind: Literal["school_alignment"] = "school_alignment"
    weight_direction: float = Field(0.5, ge=0, le=1, description="Constant desire of the unit vector (the seed's k_align / scale).")


@behavior("school_alignment", kind="neighbor", params=SchoolAlignmentParams)
def school_alignment(agents, others, neighbors, p, time, dt, out):
    """dir = normalise(mean(v_j)) over d < R, des = w (seed 002, alignment)."""
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    ovel = others.velocity
    for i in prange(count.shape[0]):
        r = at(p.max_distance, i)
        n = 0
        ax = 0.0
        ay = 0.0
        az = 0.0
        for q in range(count[i]):
            if dist[i, q] < r:
                j = index[i, q]
                n += 1
                ax += ovel[j, 0]
                ay += ovel[j, 1]
                az += ovel[j, 2]
        if n > 0:
            ax /= n
            ay /= n
            az /= n
        ux, uy, uz, desire = _unit_desire(ax, ay, az, n, at(p.weight_direction, i))
        emit(out, i, ux, uy, uz, desire, 0.0, 0.0)
