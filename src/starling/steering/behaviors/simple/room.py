"""Staying inside a room, and plain steering noise (seed 003).

* ``room_walls``: separation from the walls of an axis-aligned box room, computed from
  the *closest point* of each wall, as the slides' ``BoidSeparation`` does with
  ``ClosestPointOnBounds`` ("a large wall [would otherwise be] repulsing us from its
  geometric centre"). For an animal at ``p`` inside the room, each wall within
  ``max_distance`` pushes along ``(p − c) / |p − c| / (|p − c| + 1e-4)`` with ``c`` the
  wall's closest point; the sum is normalised and its desire is the weight. The slides
  suggest giving wall separation its own weight, apart from separation from other boids
  ("Beware of the parameters"): this is that separate behaviour. An animal found outside
  the room steers straight back toward its closest point inside.
* ``jitter``: a fresh random direction every step from the kernel random stream
  (``starling.steering.random``), desire the weight: the slides' "add some noise",
  reproducible by seed at any thread count.
"""
import math
from typing import Literal

from numba import njit, prange
from pydantic import Field, model_validator

from ...params import BehaviorParams, Vec3
from ...per_animal import at
from ...registry import behavior
from ...results import emit, no_opinion
from ...random import normal, step_index, uniform

_EPS = 1e-4  # the slides' "+ 0.0001"


class RoomWallsParams(BehaviorParams):
    """Away from the closest points of the walls of the box ``room_min``–``room_max``."""

    kind: Literal["room_walls"] = "room_walls"
    weight_direction: float = Field(1.0, ge=0, le=1)
    room_min: Vec3 = Field((-10.0, 0.0, -10.0), description="Lowest corner of the room, m.")
    room_max: Vec3 = Field((10.0, 3.0, 10.0), description="Highest corner of the room, m.")
    max_distance: float = Field(2.0, gt=0, description="Walls closer than this push the animal away, m.")
    floor_and_ceiling: bool = Field(
        False, description="Also push away from the floor and the ceiling (off for animals moving in the x–z plane).")

    @model_validator(mode="after")
    def _room_is_a_box(self):
        if any(hi <= lo for lo, hi in zip(self.room_min, self.room_max)):
            raise ValueError("room_max must exceed room_min on every axis")
        return self


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _push(gap, r):
    """How hard a wall ``gap`` metres away pushes: 1 / (gap + 1e-4) inside ``r``, else 0."""
    if gap < r:
        return 1.0 / (max(gap, 0.0) + _EPS)
    return 0.0


@behavior("room_walls", kind="simple", params=RoomWallsParams)
def room_walls(agents, p, time, dt, out):
    """Σ over walls of (p − closest) / |p − closest| / (|p − closest| + 1e-4), normalised; des = w."""
    pos = agents.position
    for i in prange(pos.shape[0]):
        r = at(p.max_distance, i)
        x = pos[i, 0]
        y = pos[i, 1]
        z = pos[i, 2]
        lo_x = p.room_min[0]
        lo_y = p.room_min[1]
        lo_z = p.room_min[2]
        hi_x = p.room_max[0]
        hi_y = p.room_max[1]
        hi_z = p.room_max[2]
        # the closest point inside the room; an animal that is outside goes straight back to it
        cx = min(max(x, lo_x), hi_x)
        cy = min(max(y, lo_y), hi_y) if p.floor_and_ceiling else y
        cz = min(max(z, lo_z), hi_z)
        ox = cx - x
        oy = cy - y
        oz = cz - z
        outside = math.sqrt(ox * ox + oy * oy + oz * oz)
        if outside > 0.0:
            emit(out, i, ox / outside, oy / outside, oz / outside, at(p.weight_direction, i), 0.0, 0.0)
            continue
        # inside: the closest point of the wall x = lo_x is (lo_x, y, z), so p − c = (x − lo_x) · +x, etc.
        ax = _push(x - lo_x, r) - _push(hi_x - x, r)
        az = _push(z - lo_z, r) - _push(hi_z - z, r)
        ay = 0.0
        if p.floor_and_ceiling:
            ay = _push(y - lo_y, r) - _push(hi_y - y, r)
        length = math.sqrt(ax * ax + ay * ay + az * az)
        if length < 1e-9:
            no_opinion(out, i)
            continue
        emit(out, i, ax / length, ay / length, az / length, at(p.weight_direction, i), 0.0, 0.0)


class JitterParams(BehaviorParams):
    """A random direction each step (seed 003's "add some noise"), drawn from the kernel random stream."""

    kind: Literal["jitter"] = "jitter"
    weight_direction: float = Field(0.1, ge=0, le=1)
    horizontal: bool = Field(True, description="Draw directions in the x–z plane only (for planar movers).")


@behavior("jitter", kind="simple", params=JitterParams)
def jitter(agents, p, time, dt, out):
    """A uniformly random unit direction per animal and step; des = w."""
    uid = agents.uid
    step = step_index(time, dt)
    for i in prange(uid.shape[0]):
        if p.horizontal:
            a = 2.0 * math.pi * uniform(p.key, uid[i], step, 0)
            emit(out, i, math.cos(a), 0.0, math.sin(a), at(p.weight_direction, i), 0.0, 0.0)
            continue
        # an isotropic 3D direction: three standard normals (lanes 0–2), normalised
        gx = normal(p.key, uid[i], step, 0)
        gy = normal(p.key, uid[i], step, 1)
        gz = normal(p.key, uid[i], step, 2)
        g = math.sqrt(gx * gx + gy * gy + gz * gz)
        if g < 1e-12:
            no_opinion(out, i)
            continue
        emit(out, i, gx / g, gy / g, gz / g, at(p.weight_direction, i), 0.0, 0.0)
