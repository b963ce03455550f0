"""Couzin's zones (Couzin, Krause, James, Ruxton & Franks 2002, J. theor. Biol. 218: 1–11).

Around each animal three nested zones: repulsion (radius ``r_repulsion``), then a ring of
orientation (width ``dr_orientation``), then a ring of attraction (width
``dr_attraction``). Neighbours in the blind cone behind the animal are not perceived
(``fov_deg``, the field of perception; the paper's α, 270° by default). The desired
direction is

* ``d = −Σ r̂_ij`` over the neighbours in the zone of repulsion, if there are any: avoiding
  collisions has absolute priority;
* otherwise ``d_o = Σ v̂_j`` over the zone of orientation (including the animal itself when
  ``orientation_includes_self``, as in the paper's sum) and ``d_a = Σ r̂_ij`` over the zone
  of attraction; ``d = d_o`` or ``d = d_a`` when only one zone holds neighbours and
  ``d = (d̂_o + d̂_a) / 2`` when both do;
* with nobody perceived, the current heading.

``r̂_ij`` is the unit vector from the animal to neighbour j. The result is then turned by a
random angle drawn from a Gaussian of standard deviation ``noise_sd`` (radians; about a
random axis perpendicular to it in 3D, about the vertical in the x–z plane with
``horizontal``), from the kernel random stream: reproducible, independent of threads.
The paper's turning rate and constant speed belong to the mover; this behaviour only
says where to go, with desire ``weight_direction``.
"""
import math
from typing import Literal

from numba import njit, prange
from pydantic import Field

from ...params import NeighborBehaviorParams
from ...per_animal import at
from ...random import normal, step_index
from ...registry import behavior
from ...results import emit


class CouzinZonesParams(NeighborBehaviorParams):
    """Repulsion first, else orientation and attraction rings, with Gaussian angular noise."""

    kind: Literal["couzin_zones"] = "couzin_zones"
    weight_direction: float = Field(1.0, ge=0, le=1)
    r_repulsion: float = Field(1.0, gt=0, description="Radius of the zone of repulsion r_r, m.")
    dr_orientation: float = Field(2.0, ge=0, description="Width of the ring of orientation Δr_o, m.")
    dr_attraction: float = Field(12.0, ge=0, description="Width of the ring of attraction Δr_a, m.")
    blind_angle_deg: float = Field(90.0, ge=0, lt=360, description="Full angle of the unseen cone behind, degrees (360 − α).")
    orientation_includes_self: bool = Field(True, description="The animal's own heading counts in d_o.")
    noise_sd: float = Field(0.05, ge=0, description="Standard deviation of the angular noise σ, radians.")
    horizontal: bool = Field(False, description="Noise turns about the vertical only (animals in the x–z plane).")


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _unit(x, y, z):
    n = math.sqrt(x * x + y * y + z * z)
    if n < 1e-12:
        return 0.0, 0.0, 0.0, 0.0
    return x / n, y / n, z / n, n


@behavior("couzin_zones", kind="neighbor", params=CouzinZonesParams, order_free=True)  # sums over each zone
def couzin_zones(agents, others, neighbors, p, time, dt, out):
    """Couzin et al. 2002's desired direction (eq. 1–3), turned by Gaussian noise."""
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    ovel = others.velocity
    avel = agents.velocity
    afwd = agents.forward
    uid = agents.uid
    step = step_index(time, dt)
    for i in prange(count.shape[0]):
        rr = at(p.r_repulsion, i)
        ro = rr + at(p.dr_orientation, i)
        ra = ro + at(p.dr_attraction, i)
        half = math.pi - 0.5 * math.radians(at(p.blind_angle_deg, i))  # half the field of perception
        rx = ry = rz = 0.0
        ox = oy = oz = 0.0
        ax = ay = az = 0.0
        nr = no = na = 0
        for q in range(count[i]):
            if half < math.pi and angle[i, q] > half:  # in the blind cone behind (none when 0°)
                continue
            d = dist[i, q]
            if d < rr:
                rx -= unit[i, q, 0]
                ry -= unit[i, q, 1]
                rz -= unit[i, q, 2]
                nr += 1
            elif d < ro:
                j = index[i, q]
                vx, vy, vz, s = _unit(ovel[j, 0], ovel[j, 1], ovel[j, 2])
                ox += vx
                oy += vy
                oz += vz
                no += 1
            elif d < ra:
                ax += unit[i, q, 0]
                ay += unit[i, q, 1]
                az += unit[i, q, 2]
                na += 1
        # the animal's own heading: its velocity, or its forward vector at rest
        hx, hy, hz, hs = _unit(avel[i, 0], avel[i, 1], avel[i, 2])
        if hs == 0.0:
            hx, hy, hz, hs = _unit(afwd[i, 0], afwd[i, 1], afwd[i, 2])
        if nr > 0:
            dx, dy, dz = rx, ry, rz
        elif no > 0 or na > 0:
            if no > 0 and p.orientation_includes_self:
                ox += hx
                oy += hy
                oz += hz
            ux, uy, uz, lo = _unit(ox, oy, oz)
            vx, vy, vz, la = _unit(ax, ay, az)
            if no > 0 and na > 0:
                dx, dy, dz = 0.5 * (ux + vx), 0.5 * (uy + vy), 0.5 * (uz + vz)
            elif no > 0:
                dx, dy, dz = ux, uy, uz
            else:
                dx, dy, dz = vx, vy, vz
        else:
            dx, dy, dz = hx, hy, hz
        dx, dy, dz, dn = _unit(dx, dy, dz)
        if dn == 0.0:  # opposite pulls cancelled exactly: keep the heading
            dx, dy, dz = hx, hy, hz
        sd = at(p.noise_sd, i)
        if sd > 0.0 and (dx != 0.0 or dy != 0.0 or dz != 0.0):
            phi = sd * normal(p.key, uid[i], step, 0)
            c = math.cos(phi)
            s = math.sin(phi)
            if p.horizontal:
                # rotation by phi about the vertical (y) axis
                dx, dz = c * dx + s * dz, -s * dx + c * dz
            else:
                # about a random axis perpendicular to d: e = the normalised part of g across d
                gx = normal(p.key, uid[i], step, 1)
                gy = normal(p.key, uid[i], step, 2)
                gz = normal(p.key, uid[i], step, 3)
                g_d = gx * dx + gy * dy + gz * dz
                ex, ey, ez, en = _unit(gx - g_d * dx, gy - g_d * dy, gz - g_d * dz)
                if en > 0.0:
                    dx, dy, dz = c * dx + s * ex, c * dy + s * ey, c * dz + s * ez
        emit(out, i, dx, dy, dz, at(p.weight_direction, i), 0.0, 0.0)
