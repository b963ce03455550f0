"""``avoid_collisions``: steer out of a collision that is coming, not one that has come.

Separation (6.4.5) pushes away from neighbours that are already close. That keeps a flock's
spacing, but two birds meeting head-on at 12 m/s cross a 2 m separation range in a sixth of a
second, less than a bird needs to swerve: the thesis found the same in 2D ("collision avoidance
with neighbors was difficult to achieve using only our separation behavior", seed 000, 12.2)
and names dynamic avoidance, RVO or ORCA, as what it would try. This behaviour is the simplest
member of that family, the *closest point of approach* test: each neighbour is assumed to keep
its velocity, and so is the animal.

For a neighbour at offset ``p`` (from the animal to it) with relative velocity
``w = v_neighbour − v_self``, the two are closest after

    t* = −(p · w) / |w|²

and then ``c = p + w t*`` apart. The neighbour is a threat when it is approaching (``t* > 0``),
the meeting comes within ``horizon`` seconds and ``|c| < clearance``. Its urgency is

    u = f_q1(1 − t* / horizon, power) · (1 − |c| / clearance)

(soonest and nearest miss first; ``f_q1`` the power ease-in of 6.4.3). The animal steers
along ``−c``, away from where the neighbour will be, summed over the threats weighted by their
urgency; a dead-on approach (``c`` almost zero) swerves to the animal's own right, so two
animals meeting head-on pass each other on the left, as both swerve. The desire is
``weight · max u``. Neighbours count where the behaviour's own vision sees them (closer than
``max_distance`` and within ``fov_deg``: where their observability is above zero); speed has
no opinion.
"""
import math
from typing import Literal

from numba import njit, prange
from pydantic import Field

from ...params import NeighborBehaviorParams
from ...per_animal import at, vision
from ...registry import behavior
from ...results import emit
from ...shaping import f_q1
from ...vecmath import EPS, norm3


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def closest_approach(px, py, pz, wx, wy, wz):
    """Time ``t*`` to the closest approach of offset ``p`` moving at ``w``, and the offset ``c``
    then; ``t* = 0`` and ``c = p`` when ``w`` is zero (not approaching)."""
    ww = wx * wx + wy * wy + wz * wz
    if ww <= EPS:
        return 0.0, px, py, pz
    t = -(px * wx + py * wy + pz * wz) / ww
    return t, px + wx * t, py + wy * t, pz + wz * t


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def threat(t, miss, horizon, clearance, power):
    """Urgency in [0, 1] of a closest approach ``miss`` metres apart in ``t`` seconds; 0 when
    receding, too late (past ``horizon``) or a clear miss (``clearance`` or more)."""
    if t <= 0.0 or t >= horizon or miss >= clearance:
        return 0.0
    return f_q1(1.0 - t / horizon, power) * (1.0 - miss / clearance)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def swerve(cx, cy, cz, miss, fx, fy, fz):
    """Unit direction away from the closest-approach offset ``c`` (of length ``miss``); for a
    dead-on approach, the animal's right: forward × world up (y), or +x when forward is vertical."""
    if miss > 1e-3:
        return -cx / miss, -cy / miss, -cz / miss
    rx, rz = -fz, fx  # forward × (0, 1, 0) = (−f_z, 0, f_x)
    h = math.sqrt(rx * rx + rz * rz)
    if h <= EPS:
        return 1.0, 0.0, 0.0
    return rx / h, 0.0, rz / h


class AvoidCollisionsParams(NeighborBehaviorParams):
    """Away from where a neighbour will be at the closest approach, when that is soon and near."""

    kind: Literal["avoid_collisions"] = "avoid_collisions"
    weight_direction: float = Field(1.0, ge=0, le=1)
    horizon: float = Field(1.0, gt=0, description="Look-ahead, s: approaches later than this are ignored.")
    clearance: float = Field(2.0, gt=0, description="A closest approach nearer than this is a threat, m.")
    activation_power: float = Field(1.0, gt=0, description="Power l of f_q1 on the time left, 1 − t*/horizon.")


@behavior("avoid_collisions", kind="neighbor", params=AvoidCollisionsParams, silent_alone=True)
def avoid_collisions(agents, others, neighbors, p, time, dt, out):
    """dir = −Σ u ĉ normalised, des = w max u over neighbours closing within the horizon."""
    count = neighbors.count
    index = neighbors.index
    dist = neighbors.distance
    angle = neighbors.angle
    unit = neighbors.direction
    ovel = others.velocity
    avel = agents.velocity
    afwd = agents.forward
    for i in prange(count.shape[0]):
        r, fov, _, _ = vision(p, i)  # (the observability's powers do not matter: only where it is 0)
        horizon = at(p.horizon, i)
        clearance = at(p.clearance, i)
        power = at(p.activation_power, i)
        vx = avel[i, 0]
        vy = avel[i, 1]
        vz = avel[i, 2]
        fx = afwd[i, 0]
        fy = afwd[i, 1]
        fz = afwd[i, 2]
        most = 0.0
        ax = ay = az = 0.0
        # every neighbour through the same arithmetic: one that is unseen, receding or a clear miss
        # adds an urgency of 0 (which neighbour threatens changes from one to the next, so a branch
        # on it would be mispredicted; 6 % faster than skipping it, the same results)
        for q in range(count[i]):
            d = dist[i, q]
            seen = d < r and 2.0 * abs(angle[i, q]) < fov  # where its observability is above zero
            j = index[i, q]
            t, cx, cy, cz = closest_approach(d * unit[i, q, 0], d * unit[i, q, 1], d * unit[i, q, 2],
                                             ovel[j, 0] - vx, ovel[j, 1] - vy, ovel[j, 2] - vz)
            miss = norm3(cx, cy, cz)
            u = threat(t, miss, horizon, clearance, power) if seen else 0.0
            sx, sy, sz = swerve(cx, cy, cz, miss, fx, fy, fz)
            ax += u * sx
            ay += u * sy
            az += u * sz
            most = max(most, u)
        ux = uy = uz = desire = 0.0
        length = norm3(ax, ay, az)
        if most > 0.0 and length >= EPS:
            ux, uy, uz = ax / length, ay / length, az / length
            desire = at(p.weight_direction, i) * most
        emit(out, i, ux, uy, uz, desire, 0.0, 0.0)
