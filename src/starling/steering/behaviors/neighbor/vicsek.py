"""Vicsek alignment: the plain mean heading of every particle in a radius, plus angular noise.

Vicsek, Czirók, Ben-Jacob, Cohen and Shochet (1995), "Novel type of phase transition in a
system of self-driven particles", Phys. Rev. Lett. 75, 1226. Each step every particle
takes the mean direction of the particles within radius ``r`` *including itself*, all
with equal weight, turned by a random angle:

    θ_i(t + Δt) = atan2(Σ_j sin θ_j, Σ_j cos θ_j) + Δθ_i,      Δθ_i ~ U[−η/2, η/2],

the sum over ``j`` with ``|x_j − x_i| < r`` (``i`` itself when ``include_self``). The mean
of the angles is the direction of the sum of the unit headings ``ĥ_j`` (the velocity's
direction, or the forward vector of an animal at rest). Unlike ``alignment`` (thesis
6.4.5) nothing is weighted by distance or angle and the desire does not grow with the
misalignment: every neighbour within ``max_distance`` and ``fov_deg`` counts once, and the
desire is ``weight_direction`` whenever there is a heading to follow.

**The noise is part of this behaviour**, not of the mover: it needs the kernel random
stream (:mod:`starling.steering.random`, keyed by scenario seed, species, behaviour row,
animal uid and step, so it is reproducible and independent of the thread count), which
behaviours receive and movers do not; and a mover that adds noise would perturb every
scene's heading, not just this rule's. Paired with the ``constant_speed`` mover (which
takes the desired direction as its new heading) as the only behaviour of a species, the
noisy direction returned here *is* the heading the particle takes, as in the paper.

* ``planar`` (default, 2D in Starling's x–z ground plane): the headings are projected on
  x–z and the mean direction is turned about the vertical y axis by ``Δθ = η (u − ½)``,
  ``u`` uniform in [0, 1) (lane 0): with ``θ = atan2(z, x)``, ``θ' = θ + Δθ``.
* 3D (``planar = false``): the mean direction ``m̂`` is turned by the exponential map of a
  Gaussian tangent vector: ``g`` = three standard normals (lanes 0–2), ``t = σ (g − (g·m̂) m̂)``,
  ``m̂' = cos|t| m̂ + sin|t| t̂`` (each tangent component has standard deviation ``σ``).

An animal that sees nobody and does not count itself has no opinion. When the headings
cancel (their sum is shorter than 10⁻⁶ per heading: the neighbours' unit headings are
float32, so opposite ones leave rounding, not a direction), the animal's own heading
stands in for the mean.
"""
import math
from typing import ClassVar, Literal, Optional

import numpy as np
from numba import prange
from pydantic import Field

from ...params import NeighborBehaviorParams
from ...per_animal import at
from ...random import normal, step_index, uniform
from ...registry import behavior
from ...results import emit, no_opinion

_EPS = 1e-9
# the neighbours' headings are normalised in float32 (their velocities are float32; the sum is
# float64): a float32 square root and division take half the time of float64's, per pair
_F0 = np.float32(0.0)
_F1 = np.float32(1.0)
_EPS2 = np.float32(_EPS * _EPS)
# a sum of ``seen`` unit headings shorter than this times ``seen`` is float32 rounding: they cancel
_CANCEL = 1e-6


class VicsekAlignmentParams(NeighborBehaviorParams):
    """Vicsek (1995): the equal-weight mean heading within ``max_distance`` (and the animal's own), plus angular noise."""

    kind: Literal["vicsek_alignment"] = "vicsek_alignment"
    weight_direction: float = Field(1.0, ge=0, le=1)
    include_self: bool = Field(True, description="Count the animal's own heading in the mean (Vicsek 1995 does).")
    eta: float = Field(0.0, ge=0, le=2 * math.pi, description=(
        "Width η of the uniform angular noise of planar headings, radians (Vicsek's η: the noise is in [−η/2, η/2])."))
    sigma: float = Field(0.0, ge=0, le=math.pi, description=(
        "Standard deviation σ of the Gaussian angular noise of 3D headings (planar = false), radians."))
    planar: bool = Field(True, description="Headings in the x–z plane, noise about the vertical axis (False: 3D).")

    kernel_fields: ClassVar[Optional[tuple[str, ...]]] = (
        "weight_direction", "max_distance", "fov_deg", "include_self", "eta", "sigma", "planar")


# a plain sum, filtered by its own radius and view only: order_free, geometry="filter"
@behavior("vicsek_alignment", kind="neighbor", params=VicsekAlignmentParams, order_free=True, geometry="filter")
def vicsek_alignment(agents, others, neighbors, p, time, dt, out):
    """dir = Σ_j ĥ_j normalised (j within r, and the animal itself), turned by noise; des = w (Vicsek 1995)."""
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    angle = neighbors.angle
    ovel = others.velocity
    ofwd = others.forward
    avel = agents.velocity
    afwd = agents.forward
    uid = agents.uid
    planar = p.planar
    step = step_index(time, dt)
    for i in prange(count.shape[0]):
        r = at(p.max_distance, i)
        half_fov = 0.5 * math.radians(at(p.fov_deg, i))
        # a 360° view sees everyone: the float32 angle of a neighbour right behind may round above π
        sees_all = half_fov >= math.pi
        # the animal's own heading (velocity, else forward), in the plane when planar
        hx = avel[i, 0]
        hy = 0.0 if planar else avel[i, 1]
        hz = avel[i, 2]
        hl = math.sqrt(hx * hx + hy * hy + hz * hz)
        if hl < _EPS:
            hx = afwd[i, 0]
            hy = 0.0 if planar else afwd[i, 1]
            hz = afwd[i, 2]
            hl = math.sqrt(hx * hx + hy * hy + hz * hz)
        if hl >= _EPS:
            hx /= hl
            hy /= hl
            hz /= hl
        seen = 0
        sx = 0.0
        sy = 0.0
        sz = 0.0
        if p.include_self and hl >= _EPS:
            sx, sy, sz = hx, hy, hz
            seen = 1
        for q in range(count[i]):
            if dist[i, q] >= r or (not sees_all and abs(angle[i, q]) > half_fov):
                continue
            j = index[i, q]
            vx = ovel[j, 0]
            vy = _F0 if planar else ovel[j, 1]
            vz = ovel[j, 2]
            s2 = vx * vx + vy * vy + vz * vz
            if s2 < _EPS2:
                vx = ofwd[j, 0]
                vy = _F0 if planar else ofwd[j, 1]
                vz = ofwd[j, 2]
                s2 = vx * vx + vy * vy + vz * vz
                if s2 < _EPS2:
                    continue
            inv = _F1 / np.float32(math.sqrt(s2))  # one division, not three
            sx += vx * inv
            sy += vy * inv
            sz += vz * inv
            seen += 1
        if seen == 0:
            no_opinion(out, i)
            continue
        length = math.sqrt(sx * sx + sy * sy + sz * sz)
        if length >= _CANCEL * seen:
            mx, my, mz = sx / length, sy / length, sz / length
        elif hl >= _EPS:
            mx, my, mz = hx, hy, hz  # the headings cancel: keep one's own
        else:
            no_opinion(out, i)
            continue
        if planar:
            eta = at(p.eta, i)
            if eta > 0.0:
                a = eta * (uniform(p.key, uid[i], step, 0) - 0.5)
                ca = math.cos(a)
                sa = math.sin(a)
                mx, mz = mx * ca - mz * sa, mx * sa + mz * ca
        else:
            sigma = at(p.sigma, i)
            if sigma > 0.0:
                gx = normal(p.key, uid[i], step, 0)
                gy = normal(p.key, uid[i], step, 1)
                gz = normal(p.key, uid[i], step, 2)
                gm = gx * mx + gy * my + gz * mz
                tx = sigma * (gx - gm * mx)
                ty = sigma * (gy - gm * my)
                tz = sigma * (gz - gm * mz)
                t = math.sqrt(tx * tx + ty * ty + tz * tz)
                if t > _EPS:
                    ct = math.cos(t)
                    st = math.sin(t) / t
                    mx, my, mz = ct * mx + st * tx, ct * my + st * ty, ct * mz + st * tz
                    ml = math.sqrt(mx * mx + my * my + mz * mz)
                    mx /= ml
                    my /= ml
                    mz /= ml
        emit(out, i, mx, my, mz, at(p.weight_direction, i), 0.0, 0.0)
