"""Apples and carcasses: food items that fall, float or lie, and go away.

Both are populations created by the ecology system (``apple`` and ``carcass``) with the
components of food (``food``, ``nutrition``) and of a loose object (``floats`` 1/0,
``item_age``, ``item_lifetime`` with −1 for "forever"). Each step they move under simple
ballistics until they rest:

* in the air they fall with gravity (``gravity`` m/s²);
* below the water surface (``water_level``) a floating item rises to the surface and
  stays there, drifting to a stop; a sinking one sinks at ``sink_speed`` to the bottom;
* on the ground (``ground_height``) they stop.

The ground is the environment's surfaces under the item (a ray cast down) when the
scenario has an ``[environment]``, otherwise the plane ``ground_height``; the water is the
plane ``water_level`` of ``[ecology]``.
"""
from typing import Literal, Optional

import numpy as np
from numba import njit
from pydantic import Field

from ..kernel_calls import CallSite
from ..steering.params import StrictModel
from .variation import num

APPLE = "apple"
CARCASS = "carcass"
COMPONENTS = {"food": 1.0, "nutrition": 1.0, "floats": 1.0, "item_age": 0.0, "item_lifetime": -1.0}


class ApplesConfig(StrictModel):
    """Thrown apples (thesis 11.1.2): food for fish, sheep and sharks."""

    food: num(gt=0) = Field(1.0, description="Food in one apple, food units.")
    nutrition: num(ge=0) = Field(1.0, description="Worth of one unit of apple.")
    buoyancy: Literal["float", "sink"] = Field("float", description="Apples float on water or sink.")
    lifetime: Optional[float] = Field(None, gt=0, description="Seconds until an uneaten apple rots away (none: never).")


class PhysicsConfig(StrictModel):
    """Ballistics of loose items (apples, carcasses)."""

    gravity: float = Field(9.81, ge=0, description="Downward acceleration in the air, m/s².")
    sink_speed: float = Field(0.6, gt=0, description="Speed at which sinking items go down in water, m/s.")
    rise_speed: float = Field(1.5, gt=0, description="Speed at which floating items come up, m/s.")
    water_drag: float = Field(2.0, ge=0, description="Rate at which water stops an item's drift, 1/s.")


def step_items(pop, ground, water: Optional[float], phys: PhysicsConfig, lo, hi, dt: float) -> np.ndarray:
    """Move every item one step; returns the uids whose lifetime is over.

    ``ground``: the ground height, one number or one per item; ``lo``/``hi``: the world
    box (items stay inside it horizontally). A system that moves the same items every step
    keeps an :class:`ItemSteps` instead, which keeps the kernel's arguments.
    """
    return ItemSteps().step(pop, ground, water, phys, lo, hi, dt)


class ItemSteps:
    """:func:`step_items` for one population of items, step after step: the kernel's arguments are
    kept while the population's layout and ``dt`` hold (the settings hold for the system's life: a
    reconfiguration builds new systems), and its call skips Numba's typing (a call site)."""

    def __init__(self):
        self._kept = None  # (layout, dt, the expired flags' buffer, the arguments before and after the ground)
        self._calls = CallSite()

    def step(self, pop, ground, water: Optional[float], phys: PhysicsConfig, lo, hi, dt: float) -> np.ndarray:
        """Move every item of ``pop`` one step (see :func:`step_items`); the uids whose lifetime is over."""
        n = pop.n
        if n == 0:
            return np.zeros(0, np.int64)
        kept = self._kept
        if kept is None or kept[0] != pop.layout or kept[1] != dt:
            kept = self._kept = (pop.layout, dt, np.zeros(n, np.bool_), *_item_args(pop, water, phys, lo, hi, dt))
        expired = kept[2]  # (every row is written)
        heights = np.asarray(ground, np.float32).reshape(-1)  # one for all, or one per item
        over = self._calls(_step_items, n, *kept[3], heights, *kept[4], expired)
        return pop.uid[expired].copy() if over else np.zeros(0, np.int64)


def _item_args(pop, water: Optional[float], phys: PhysicsConfig, lo, hi, dt: float) -> tuple:
    """``_step_items``' arguments before the ground and after it (the expired flags excepted)."""
    wet = water is not None
    w = 0.0 if water is None else float(water)
    # numbers go in as NumPy would combine them with the float32 arrays (a Python number takes their type)
    head = (pop.position, pop.velocity, pop.component("floats"), pop.component("item_age"),
            pop.component("item_lifetime"))
    tail = (wet, np.float32(w + 1e-6), np.float32(w), np.float32(phys.gravity * dt),
            np.float32(np.exp(-phys.water_drag * dt)), np.float32(phys.rise_speed), np.float32(-phys.sink_speed),
            np.float32(dt), float(lo[0]), float(lo[2]), float(hi[0]), float(hi[2]))
    return head, tail


@njit(cache=True, no_cfunc_wrapper=True)
def _step_items(pos, vel, floats, age, life, ground, wet, water_reach, water, fall, damp, rise, sink, dt,
                lo_x, lo_z, hi_x, hi_z, expired):
    """One step of ballistics per item (float32 throughout, the world box in float64); how many expired.

    ``ground`` holds one height for every item, or one per item."""
    over = 0
    shared = ground.shape[0] == 1
    for i in range(pos.shape[0]):
        floor = ground[0] if shared else ground[i]
        floating = floats[i] > 0.5
        in_water = wet and pos[i, 1] <= water_reach
        if in_water:  # the vertical motion is buoyancy, the drift fades
            vel[i, 0] *= damp
            vel[i, 2] *= damp
            if floating:
                depth = water - pos[i, 1]
                vel[i, 1] = min(rise, depth / dt)
            else:
                vel[i, 1] = sink
        else:  # in the air: gravity
            vel[i, 1] = vel[i, 1] - fall
        for a in range(3):
            pos[i, a] = pos[i, a] + vel[i, a] * dt
        if wet and not in_water and floating and pos[i, 1] < water:  # it floats: the surface stops its fall
            pos[i, 1] = water
            vel[i, 1] = 0.0
        if pos[i, 1] <= floor:  # the ground stops everything
            pos[i, 1] = floor
            vel[i, 0] = 0.0
            vel[i, 1] = 0.0
            vel[i, 2] = 0.0
        x = np.float64(pos[i, 0])
        if x < lo_x or x > hi_x:  # stay inside the world box horizontally
            pos[i, 0] = np.float32(lo_x if x < lo_x else hi_x)
            vel[i, 0] = 0.0
        z = np.float64(pos[i, 2])
        if z < lo_z or z > hi_z:
            pos[i, 2] = np.float32(lo_z if z < lo_z else hi_z)
            vel[i, 2] = 0.0
        age[i] += dt
        expired[i] = life[i] > 0 and age[i] >= life[i]
        over += expired[i]
    return over


def throw_velocity(origin, target, flight_time: float, gravity: float) -> np.ndarray:
    """Initial velocity that carries a thrown item from ``origin`` to ``target`` in ``flight_time`` s."""
    o = np.asarray(origin, np.float64)
    t = np.asarray(target, np.float64)
    v = (t - o) / flight_time
    v[1] += 0.5 * gravity * flight_time
    return v
