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
from pydantic import Field

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

    ``ground``: the ground height, one number or one per item.
    """
    n = pop.n
    if n == 0:
        return np.zeros(0, np.int64)
    pos = pop.position
    vel = pop.velocity
    floats = pop.component("floats") > 0.5
    in_water = np.zeros(n, bool) if water is None else pos[:, 1] <= water + 1e-6
    air = ~in_water
    # air: gravity
    vel[air, 1] -= phys.gravity * dt
    # water: the vertical motion is buoyancy, the drift fades
    if in_water.any():
        damp = np.float32(np.exp(-phys.water_drag * dt))
        vel[in_water, 0] *= damp
        vel[in_water, 2] *= damp
        depth = water - pos[in_water, 1]
        rise = np.where(floats[in_water], np.minimum(phys.rise_speed, depth / dt), -phys.sink_speed)
        vel[in_water, 1] = rise
    pos += vel * dt
    # an item falling into the water stops its fall at the surface if it floats
    if water is not None:
        crossed = air & floats & (pos[:, 1] < water)
        pos[crossed, 1] = water
        vel[crossed, 1] = 0.0
    # the ground stops everything
    ground = np.broadcast_to(np.asarray(ground, np.float32), (n,))
    below = pos[:, 1] <= ground
    pos[below, 1] = ground[below]
    vel[below] = 0.0
    # stay inside the world box horizontally
    for axis in (0, 2):
        out = (pos[:, axis] < lo[axis]) | (pos[:, axis] > hi[axis])
        pos[:, axis] = np.clip(pos[:, axis], lo[axis], hi[axis])
        vel[out, axis] = 0.0
    age = pop.component("item_age")
    age += dt
    life = pop.component("item_lifetime")
    return pop.uid[(life > 0) & (age >= life)].copy()


def throw_velocity(origin, target, flight_time: float, gravity: float) -> np.ndarray:
    """Initial velocity that carries a thrown item from ``origin`` to ``target`` in ``flight_time`` s."""
    o = np.asarray(origin, np.float64)
    t = np.asarray(target, np.float64)
    v = (t - o) / flight_time
    v[1] += 0.5 * gravity * flight_time
    return v
