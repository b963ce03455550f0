"""Seed 004's school (Ménard, 1.1): three zones blended smoothly inside an adaptive vision radius.

``reef_school`` reads the animal's own vision radius ``R`` (the component ``vision``, which the
``[species.vision]`` section adapts so that each fish sees about six others, seed 004, 1.5).
A neighbour counts when it is closer than ``R`` and inside ``fov_deg`` (seed 004: fish ignore
what is too far away or behind them). Its distance ``d`` puts it in the zones with weights

* repulsion ``w_r = 1 − S(d; ρ_r R − b R, ρ_r R + b R)``,
* cohesion ``w_c = S(d; ρ_a R − b R, ρ_a R + b R)``,
* alignment ``w_a = max(0, 1 − w_r − w_c)``,

with ``S`` the smoothstep from 0 to 1 between its two edges, ``ρ_r`` = ``repulsion_fraction``,
``ρ_a`` = ``alignment_fraction`` and ``b`` = ``blend`` (seed 004: "the separation between the
different zones is not abrupt … but rather continuous"). Then, as in the seed:

* cohesion: toward the ``w_c``-weighted barycentre of the neighbours;
* repulsion: away from the ``w_r``-weighted barycentre;
* alignment: along the ``w_a``-weighted mean of their forward vectors;
* the result is the weighted average ``(k_r r̂ + k_a â + k_c ĉ + k_p f̂) / |…|`` of these
  directions (each only when its zone holds some weight) and the animal's previous direction
  ``f̂`` (its forward vector), with ``k_*`` the ``*_weight`` parameters; desire
  ``weight_direction``. With no neighbour in view: no opinion.
"""
import math
from typing import Literal

from numba import njit, prange
from pydantic import Field

from ...params import NeighborBehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit, no_opinion


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def smoothstep(lo, hi, x):
    """0 below ``lo``, 1 above ``hi``, ``3t² − 2t³`` between (a step at ``lo`` when ``hi <= lo``)."""
    if hi <= lo:
        return 0.0 if x < lo else 1.0
    t = (x - lo) / (hi - lo)
    if t <= 0.0:
        return 0.0
    if t >= 1.0:
        return 1.0
    return t * t * (3.0 - 2.0 * t)


class ReefSchoolParams(NeighborBehaviorParams):
    """Seed 004: repulsion, alignment and cohesion zones, blended smoothly, inside the adaptive vision."""

    kind: Literal["reef_school"] = "reef_school"
    weight_direction: float = Field(0.6, ge=0, le=1)
    repulsion_fraction: float = Field(0.3, gt=0, lt=1, description="Repulsion zone's outer edge, fraction of the vision radius.")
    alignment_fraction: float = Field(0.7, gt=0, lt=1, description="Alignment zone's outer edge, fraction of the vision radius.")
    blend: float = Field(0.1, ge=0, lt=0.5, description="Half width of the blend across each zone edge, fraction of the vision radius.")
    repulsion_weight: float = Field(1.0, ge=0, description="k_r: weight of the away-from-the-close direction.")
    alignment_weight: float = Field(1.0, ge=0, description="k_a: weight of the mean heading.")
    cohesion_weight: float = Field(1.0, ge=0, description="k_c: weight of the toward-the-far direction.")
    previous_weight: float = Field(1.0, ge=0, description="k_p: weight of the animal's previous direction.")

    ordered = (("repulsion_fraction", "alignment_fraction", True),)


@behavior("reef_school", kind="neighbor", params=ReefSchoolParams, components=("vision",))
def reef_school(agents, others, neighbors, p, time, dt, out):
    """Weighted average of the three zone directions and the previous direction (see the module)."""
    count = neighbors.count
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    index = neighbors.index
    ofwd = others.forward
    fwd = agents.forward
    vision = agents.vision
    for i in prange(count.shape[0]):
        radius = min(vision[i], at(p.max_distance, i))
        half_fov = 0.5 * math.radians(at(p.fov_deg, i))
        edge_r = at(p.repulsion_fraction, i) * radius
        edge_a = at(p.alignment_fraction, i) * radius
        b = at(p.blend, i) * radius
        rx = ry = rz = wr_sum = 0.0
        cx = cy = cz = wc_sum = 0.0
        ax = ay = az = wa_sum = 0.0
        for q in range(count[i]):
            d = dist[i, q]
            if d >= radius or angle[i, q] > half_fov:
                continue
            wr = 1.0 - smoothstep(edge_r - b, edge_r + b, d)
            wc = smoothstep(edge_a - b, edge_a + b, d)
            wa = max(0.0, 1.0 - wr - wc)
            ox = unit[i, q, 0] * d
            oy = unit[i, q, 1] * d
            oz = unit[i, q, 2] * d
            rx += wr * ox
            ry += wr * oy
            rz += wr * oz
            wr_sum += wr
            cx += wc * ox
            cy += wc * oy
            cz += wc * oz
            wc_sum += wc
            j = index[i, q]
            ax += wa * ofwd[j, 0]
            ay += wa * ofwd[j, 1]
            az += wa * ofwd[j, 2]
            wa_sum += wa
        if wr_sum + wc_sum + wa_sum <= 0.0:
            no_opinion(out, i)
            continue
        tx = ty = tz = 0.0
        n = math.sqrt(rx * rx + ry * ry + rz * rz)
        if wr_sum > 1e-6 and n > 1e-9:
            k = at(p.repulsion_weight, i) / n
            tx -= k * rx
            ty -= k * ry
            tz -= k * rz
        n = math.sqrt(cx * cx + cy * cy + cz * cz)
        if wc_sum > 1e-6 and n > 1e-9:
            k = at(p.cohesion_weight, i) / n
            tx += k * cx
            ty += k * cy
            tz += k * cz
        n = math.sqrt(ax * ax + ay * ay + az * az)
        if wa_sum > 1e-6 and n > 1e-9:
            k = at(p.alignment_weight, i) / n
            tx += k * ax
            ty += k * ay
            tz += k * az
        n = math.sqrt(fwd[i, 0] * fwd[i, 0] + fwd[i, 1] * fwd[i, 1] + fwd[i, 2] * fwd[i, 2])
        if n > 1e-9:
            k = at(p.previous_weight, i) / n
            tx += k * fwd[i, 0]
            ty += k * fwd[i, 1]
            tz += k * fwd[i, 2]
        n = math.sqrt(tx * tx + ty * ty + tz * tz)
        if n < 1e-9:
            no_opinion(out, i)
            continue
        emit(out, i, tx / n, ty / n, tz / n, at(p.weight_direction, i), 0.0, 0.0)
