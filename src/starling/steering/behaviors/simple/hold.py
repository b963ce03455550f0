"""Seed 004's staggered direction updates (Ménard, 1.5): between its updates an animal holds its course.

``hold_course`` reads what the ``[species.stagger]`` section keeps: the velocity the species'
merger chose at the animal's last update (``held_x``, ``held_y``, ``held_z``) and whether to
hold it this step (``stagger_hold``: 1 on the ``N − 1`` steps between updates, 0 on the update
step itself and before the first one). While holding it asks for that direction with desire
``weight_direction`` and that speed with desire ``weight_speed`` (both 1 by default: at the
highest priority it fills the merger's budget, so the animal steers toward the last chosen
velocity, and the mover's turn rate and accelerations make the change gradual, as the seed's
fish turn between ``FixedUpdate`` n and n + N − 1). Otherwise: no opinion.
"""
import math
from typing import Literal

from numba import prange
from pydantic import Field

from ...params import BehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit, no_opinion


class HoldCourseParams(BehaviorParams):
    """Seed 004: keep steering toward the velocity chosen at the last staggered update."""

    kind: Literal["hold_course"] = "hold_course"
    priority: int = Field(255, ge=0, le=255, description="Higher is merged first (255: before everything).")
    weight_direction: float = Field(1.0, ge=0, le=1)
    weight_speed: float = Field(1.0, ge=0, le=1)


@behavior("hold_course", kind="simple", params=HoldCourseParams,
          components=("stagger_hold", "held_x", "held_y", "held_z"))
def hold_course(agents, p, time, dt, out):
    """The held velocity between updates, no opinion on update steps."""
    hold = agents.stagger_hold
    hx = agents.held_x
    hy = agents.held_y
    hz = agents.held_z
    for i in prange(hold.shape[0]):
        speed = math.sqrt(hx[i] * hx[i] + hy[i] * hy[i] + hz[i] * hz[i])
        if hold[i] < 0.5 or speed < 1e-9:
            no_opinion(out, i)
            continue
        emit(out, i, hx[i] / speed, hy[i] / speed, hz[i] / speed, at(p.weight_direction, i), speed,
             at(p.weight_speed, i))
