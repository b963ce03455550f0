"""Cohesion, alignment and separation (seed 000, 6.4.5, eq. 6.9–6.14).

Each follows the accumulator pattern of 6.4.2: a loop over the neighbours accumulates
observability-weighted quantities (``q' = ⊕ g(self, neighbour)``), then the result is
finished from the accumulator (``q = f(self, q')``). Every neighbour is weighted by
o(d, α) = f_ip(d / r) · f_q2(2α / fov) so neighbours at the edge of vision have no
influence; every desire is ``weight × activation`` with the activation in [0, 1], so a
behaviour's maximum desire is its weight whatever the number of neighbours or radius.

The per-pair distance, angle and direction come precomputed from the group
(``neighbors.distance``/``angle``/``direction``), shared by every behaviour of the group.
Every parameter is read per animal with ``at(p.field, i)`` (it may be drawn per animal).
"""
import math
from typing import Literal, Optional

from numba import njit, prange
from pydantic import Field

from ...params import NeighborBehaviorParams
from ...per_animal import at, vision
from ...registry import behavior, fused
from ...results import emit
from ...shaping import f_q1, f_sep, observability
from ...vecmath import fast_acos


# Each behaviour's two halves of the accumulator pattern, one neighbour's term (``⊕ g``) and the finish
# (``f``), are functions of their own, shared by the behaviour's kernel and the fused kernel at the end of
# this module: the two compute each result with the same code. Inlined: as calls they made the fused
# kernel 7 % slower.
_part = njit(cache=True, no_cfunc_wrapper=True, inline="always")


@_part
def add_to_centroid(sw, ax, ay, az, o, d, ux, uy, uz):
    """Cohesion's term: a neighbour at distance ``d`` in unit direction ``u`` with observability ``o``
    adds ``o`` to the weights ``sw`` and ``o d u`` to the weighted offsets ``a``."""
    sw += o
    od = o * d
    return sw, ax + od * ux, ay + od * uy, az + od * uz


@_part
def add_heading(sw, sb, ax, ay, az, o, vx, vy, vz):
    """Alignment's term: a seen neighbour (``o > 0``) with velocity ``v`` adds ``o`` to the weights
    ``sw``, ``o |v|`` to the weighted speeds ``sb`` and ``o v̂`` to the weighted headings ``a``."""
    s = math.sqrt(vx * vx + vy * vy + vz * vz)
    sw += o
    sb += o * s
    if s > 1e-9:
        k = o / s
        ax += k * vx
        ay += k * vy
        az += k * vz
    return sw, sb, ax, ay, az


@_part
def add_away(u, ax, ay, az, o, ux, uy, uz):
    """Separation's term: a seen neighbour (``o > 0``) in unit direction ``u`` raises the largest
    observability ``u`` to ``o`` and subtracts ``o u`` from the directions away ``a``."""
    if o > u:
        u = o
    return u, ax - o * ux, ay - o * uy, az - o * uz


@_part
def toward_centroid(sw, ax, ay, az, r, weight, power):
    """Cohesion's finish: the unit offset to the weighted centroid ``a / sw`` and its desire
    ``weight f_q1(|a / sw| / r, power)``, or no opinion (zeros)."""
    ux = uy = uz = desire = 0.0
    if sw > 0.0:
        ax /= sw
        ay /= sw
        az /= sw
        length = math.sqrt(ax * ax + ay * ay + az * az)
        if length >= 1e-9:
            ux, uy, uz = ax / length, ay / length, az / length
            desire = weight * f_q1(length / r, power)
    return ux, uy, uz, desire


@_part
def heading_and_speed(sw, sb, ax, ay, az, vx, vy, vz, fx, fy, fz, weight, weight_speed, max_speed, power):
    """Alignment's finish: the unit mean heading ``a`` with its desire (the angle to the animal's own
    heading: its velocity ``v``, or its forward ``f`` at rest) and the mean speed ``sb / sw`` with
    its desire; no opinion (zeros) without weight."""
    ux = uy = uz = desire = b = speed_desire = 0.0
    length = math.sqrt(ax * ax + ay * ay + az * az)
    cs = 0.0
    if sw > 0.0:
        b = sb / sw
        cs = math.sqrt(vx * vx + vy * vy + vz * vz)
        speed_desire = weight_speed * f_q1(min(1.0, abs(b - cs) / max_speed), power)
    if sw > 0.0 and length >= 1e-9:
        ux = ax / length
        uy = ay / length
        uz = az / length
        # heading of the animal: its velocity, or its forward vector when at rest
        hx, hy, hz, hs = vx, vy, vz, cs
        if hs < 1e-9:
            hx, hy, hz = fx, fy, fz
            hs = math.sqrt(hx * hx + hy * hy + hz * hz)
        theta = 0.0
        if hs > 1e-9:
            theta = fast_acos((hx * ux + hy * uy + hz * uz) / hs)
        desire = weight * f_q1(theta / math.pi, power)
    return ux, uy, uz, desire, b, speed_desire


@_part
def away(u, ax, ay, az, weight, k, power):
    """Separation's finish: the unit direction ``a`` away from the neighbours and its desire
    ``weight f_sep(u, k, power)`` (``u`` the largest observability), or no opinion (zeros)."""
    ux = uy = uz = desire = 0.0
    length = math.sqrt(ax * ax + ay * ay + az * az)
    if u > 0.0 and length >= 1e-9:
        ux, uy, uz = ax / length, ay / length, az / length
        desire = weight * f_sep(u, k, power)
    return ux, uy, uz, desire


class CohesionParams(NeighborBehaviorParams):
    """Toward the observability-weighted centroid of the neighbours."""

    kind: Literal["cohesion"] = "cohesion"
    weight_direction: float = Field(0.3, ge=0, le=1)
    activation_power: float = Field(2.0, gt=0, description="Power l of the f_q1 activation of the centroid distance.")


@behavior("cohesion", kind="neighbor", params=CohesionParams, silent_alone=True)
def cohesion(agents, others, neighbors, p, time, dt, out):
    """dir = â, des = w f_q1(|a| / r) with a the offset to the weighted centroid (6.9–6.10)."""
    count = neighbors.count
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    for i in prange(count.shape[0]):
        r, fov, dpow, apow = vision(p, i)
        sw = 0.0
        ax = 0.0
        ay = 0.0
        az = 0.0
        for q in range(count[i]):
            d = dist[i, q]
            o = observability(d, angle[i, q], r, fov, dpow, apow)
            sw, ax, ay, az = add_to_centroid(sw, ax, ay, az, o, d, unit[i, q, 0], unit[i, q, 1], unit[i, q, 2])
        ux, uy, uz, desire = toward_centroid(sw, ax, ay, az, r, at(p.weight_direction, i), at(p.activation_power, i))
        emit(out, i, ux, uy, uz, desire, 0.0, 0.0)


class AlignmentParams(NeighborBehaviorParams):
    """Match the neighbours' mean heading and mean speed."""

    kind: Literal["alignment"] = "alignment"
    weight_direction: float = Field(0.4, ge=0, le=1)
    weight_speed: float = Field(0.2, ge=0, le=1)
    max_speed: Optional[float] = Field(None, gt=0, description="s_max normalising the speed difference (default: the mover's max_speed), m/s.")
    activation_power: float = Field(2.0, gt=0, description="Power l of both f_q1 activations.")


@behavior("alignment", kind="neighbor", params=AlignmentParams, silent_alone=True)
def alignment(agents, others, neighbors, p, time, dt, out):
    """dir = Σ o v̂_j normalised, spd = Σ o |v_j| / Σ o (6.11–6.12)."""
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    angle = neighbors.angle
    ovel = others.velocity
    avel = agents.velocity
    afwd = agents.forward
    for i in prange(count.shape[0]):
        r, fov, dpow, apow = vision(p, i)
        sw = 0.0
        ax = 0.0
        ay = 0.0
        az = 0.0
        sb = 0.0
        for q in range(count[i]):
            o = observability(dist[i, q], angle[i, q], r, fov, dpow, apow)
            if o <= 0.0:
                continue
            j = index[i, q]
            sw, sb, ax, ay, az = add_heading(sw, sb, ax, ay, az, o, ovel[j, 0], ovel[j, 1], ovel[j, 2])
        ux, uy, uz, desire, b, speed_desire = heading_and_speed(
            sw, sb, ax, ay, az, avel[i, 0], avel[i, 1], avel[i, 2], afwd[i, 0], afwd[i, 1], afwd[i, 2],
            at(p.weight_direction, i), at(p.weight_speed, i), at(p.max_speed, i), at(p.activation_power, i))
        emit(out, i, ux, uy, uz, desire, b, speed_desire)


class SeparationParams(NeighborBehaviorParams):
    """Away from neighbours, urgently when one is close and in front."""

    kind: Literal["separation"] = "separation"
    weight_direction: float = Field(0.6, ge=0, le=1)
    sep_k: float = Field(0.01, gt=0, description="k of f_sep (vertical squash).")
    sep_power: float = Field(2.0, gt=0, description="l of f_sep (growth).")


@behavior("separation", kind="neighbor", params=SeparationParams, silent_alone=True)
def separation(agents, others, neighbors, p, time, dt, out):
    """dir = Σ o (p_c − p_j)/|p_c − p_j| normalised, des = w f_sep(max o) (6.13–6.14)."""
    count = neighbors.count
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    for i in prange(count.shape[0]):
        r, fov, dpow, apow = vision(p, i)
        u = 0.0
        ax = 0.0
        ay = 0.0
        az = 0.0
        for q in range(count[i]):
            o = observability(dist[i, q], angle[i, q], r, fov, dpow, apow)
            if o <= 0.0:
                continue
            u, ax, ay, az = add_away(u, ax, ay, az, o, unit[i, q, 0], unit[i, q, 1], unit[i, q, 2])
        ux, uy, uz, desire = away(u, ax, ay, az, at(p.weight_direction, i), at(p.sep_k, i), at(p.sep_power, i))
        emit(out, i, ux, uy, uz, desire, 0.0, 0.0)


@fused("cohesion", "alignment", "separation")
def cohesion_alignment_separation(agents, others, neighbors, pc, pa, ps, time, dt, out_c, out_a, out_s):
    """Cohesion, alignment and separation of one group in one pass over its pairs.

    Each pair's distance, angle and direction are read once instead of three times, and its
    observability is computed once when the three see alike (the same radius, field of view
    and powers for the animal: the usual case, where each takes its vision from the query).
    Each neighbour's terms and each finish are the functions the three kernels above call, in the
    same order, so each result row is that kernel's bit for bit (``tests/steering/test_fused.py``);
    what this kernel has of its own is the loop, and which observability each term gets.
    """
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    ovel = others.velocity
    avel = agents.velocity
    afwd = agents.forward
    for i in prange(count.shape[0]):
        rc, fc, dc, ac = vision(pc, i)
        ra, fa, da, aa = vision(pa, i)
        rs, fs, ds, as_ = vision(ps, i)
        alike_a = ra == rc and fa == fc and da == dc and aa == ac
        alike_s = rs == rc and fs == fc and ds == dc and as_ == ac
        c_sw = c_x = c_y = c_z = 0.0  # cohesion: weights, weighted offsets
        a_sw = a_x = a_y = a_z = a_sb = 0.0  # alignment: weights, weighted headings, weighted speeds
        s_u = s_x = s_y = s_z = 0.0  # separation: the largest weight, weighted directions away
        for q in range(count[i]):
            d = dist[i, q]
            ux = unit[i, q, 0]
            uy = unit[i, q, 1]
            uz = unit[i, q, 2]
            o = observability(d, angle[i, q], rc, fc, dc, ac)
            c_sw, c_x, c_y, c_z = add_to_centroid(c_sw, c_x, c_y, c_z, o, d, ux, uy, uz)
            o_a = o if alike_a else observability(d, angle[i, q], ra, fa, da, aa)
            if o_a > 0.0:
                j = index[i, q]
                a_sw, a_sb, a_x, a_y, a_z = add_heading(a_sw, a_sb, a_x, a_y, a_z, o_a, ovel[j, 0], ovel[j, 1],
                                                        ovel[j, 2])
            o_s = o if alike_s else observability(d, angle[i, q], rs, fs, ds, as_)
            if o_s > 0.0:
                s_u, s_x, s_y, s_z = add_away(s_u, s_x, s_y, s_z, o_s, ux, uy, uz)
        ux, uy, uz, desire = toward_centroid(c_sw, c_x, c_y, c_z, rc, at(pc.weight_direction, i),
                                             at(pc.activation_power, i))
        emit(out_c, i, ux, uy, uz, desire, 0.0, 0.0)
        ux, uy, uz, desire, b, speed_desire = heading_and_speed(
            a_sw, a_sb, a_x, a_y, a_z, avel[i, 0], avel[i, 1], avel[i, 2], afwd[i, 0], afwd[i, 1], afwd[i, 2],
            at(pa.weight_direction, i), at(pa.weight_speed, i), at(pa.max_speed, i), at(pa.activation_power, i))
        emit(out_a, i, ux, uy, uz, desire, b, speed_desire)
        ux, uy, uz, desire = away(s_u, s_x, s_y, s_z, at(ps.weight_direction, i), at(ps.sep_k, i),
                                  at(ps.sep_power, i))
        emit(out_s, i, ux, uy, uz, desire, 0.0, 0.0)
