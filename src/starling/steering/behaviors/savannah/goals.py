"""Seek and flee a point an animal carries (listings A.5 and A.6).

The pride's coordination (``starling.ecology.pack``) writes each lion's point: the attack
position while preparing, the nearest zebra while attacking, the carcass while eating
(``goal_x``, ``goal_z``, ``goal_on``), and the centre of the herd it sees (``herd_x``,
``herd_z``, ``herd_on``). These behaviours only read them:

* ``seek_goal``: zero inside ``arrive_threshold`` (10 m), else
  ``min(attraction · d², max_acceleration)`` toward the point (attraction 100). Since
  ``100 d²`` exceeds 5 m/s² beyond 0.23 m, the seed's seek is a constant full push
  outside the arrive radius.
* ``flee_herd``: ``min(repulsion / d², max_acceleration)`` away from the herd centre
  (repulsion 1000): the stalking lion keeps its distance.

Both act in the horizontal plane (the seed zeroes ``direction.y``); the desire is
``factor`` times the acceleration's length, as in :mod:`.herd`.
"""
import math
from typing import Literal

from numba import njit, prange
from pydantic import Field

from ...params import BehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit, no_opinion


class _PointParams(BehaviorParams):
    weight_direction: float = Field(1.0, ge=0, le=1, description="Unused by the seed's formulas (kept at 1).")
    factor: float = Field(1.0, ge=0, description="The seed's Steering.Add weight: desire = factor × |a|.")
    max_acceleration: float = Field(5.0, gt=0, description="maxLinearAcceleration of the species, m/s².")


class SeekGoalParams(_PointParams):
    """Steer toward the animal's goal point; nothing within ``arrive_threshold``."""

    kind: Literal["seek_goal"] = "seek_goal"
    attraction: float = Field(100.0, gt=0, description="attractionCoefficient: strength = attraction · d², 1/s².")
    arrive_threshold: float = Field(10.0, ge=0, description="No steering closer than this, m.")


class FleeHerdParams(_PointParams):
    """Steer away from the centre of the herd the animal sees."""

    kind: Literal["flee_herd"] = "flee_herd"
    repulsion: float = Field(1000.0, gt=0, description="repulsionCoefficient: strength = repulsion / d², m³/s².")


def seek_strength(distance: float, attraction: float, arrive: float, cap: float) -> float:
    """The seed's seek magnitude, m/s² (0 inside the arrive radius)."""
    return 0.0 if distance < arrive else min(attraction * distance * distance, cap)


def flee_strength(distance: float, repulsion: float, cap: float) -> float:
    """The seed's flee magnitude, m/s²."""
    return min(repulsion / (distance * distance), cap)


_seek = njit(cache=True, no_cfunc_wrapper=True, inline="always")(seek_strength)
_flee = njit(cache=True, no_cfunc_wrapper=True, inline="always")(flee_strength)


@behavior("seek_goal", kind="simple", params=SeekGoalParams, components=("goal_x", "goal_z", "goal_on"))
def seek_goal(agents, p, time, dt, out):
    pos = agents.position
    gx = agents.goal_x
    gz = agents.goal_z
    on = agents.goal_on
    for i in prange(pos.shape[0]):
        if on[i] < 0.5:
            no_opinion(out, i)
            continue
        dx = gx[i] - pos[i, 0]
        dz = gz[i] - pos[i, 2]
        d = math.sqrt(dx * dx + dz * dz)
        s = _seek(d, at(p.attraction, i), at(p.arrive_threshold, i), at(p.max_acceleration, i))
        if s <= 0.0 or d < 1e-9:
            no_opinion(out, i)
            continue
        emit(out, i, dx / d, 0.0, dz / d, at(p.factor, i) * s, 0.0, 0.0)


@behavior("flee_herd", kind="simple", params=FleeHerdParams, components=("herd_x", "herd_z", "herd_on"))
def flee_herd(agents, p, time, dt, out):
    pos = agents.position
    hx = agents.herd_x
    hz = agents.herd_z
    on = agents.herd_on
    for i in prange(pos.shape[0]):
        if on[i] < 0.5:
            no_opinion(out, i)
            continue
        dx = pos[i, 0] - hx[i]
        dz = pos[i, 2] - hz[i]
        d = math.sqrt(dx * dx + dz * dz)
        if d < 1e-9:
            no_opinion(out, i)
            continue
        s = _flee(d, at(p.repulsion, i), at(p.max_acceleration, i))
        emit(out, i, dx / d, 0.0, dz / d, at(p.factor, i) * s, 0.0, 0.0)
