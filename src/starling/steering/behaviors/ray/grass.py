"""Find grass (seed 000, 11.2.7): a ray behaviour for grazers.

Chase food aims at the centre of a food item, which makes a flock crowd the middle of a
large meadow. Find grass instead looks at where its rays meet the ``grass`` layer (give
its ray group ``layers = ["grass"]``, e.g. a cone pointing forward and down):

* **above grass** — some ray met grass within ``eat_radius`` metres (horizontally) of
  the animal: a hungry animal slows down to graze (speed ``eat_speed`` with desire
  ``weight_speed · hunger^hunger_power``; no opinion on direction);
* **grass in sight** — otherwise it turns toward the nearest grass hit, horizontally,
  with direction desire ``weight_direction · hunger^hunger_power · ease(1 − d/r)``;
* not hungry (below ``min_hunger``) or no grass — no opinion.

The ecology's ``graze`` table lets an animal slow enough above the grass bite it.
"""
import math
from typing import Literal

from numba import prange
from pydantic import Field, field_validator

from ...params import RayBehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit, no_opinion
from ...shaping import ease, easing_code


class FindGrassParams(RayBehaviorParams):
    """Walk to grass seen by the rays; stop on it to graze when hungry (thesis 11.2.7)."""

    kind: Literal["find_grass"] = "find_grass"
    weight_direction: float = Field(0.7, ge=0, le=1)
    weight_speed: float = Field(0.7, ge=0, le=1)
    eat_radius: float = Field(1.0, gt=0, description="Grass this close (horizontally) is under the animal, m.")
    eat_speed: float = Field(0.0, ge=0, description="Speed while grazing, m/s.")
    min_hunger: float = Field(0.1, ge=0, le=1, description="Not interested in grass below this hunger.")
    hunger_power: float = Field(1.0, ge=0, description="Desires scale with hunger to this power (0: ignore hunger).")
    easing: str = Field("q4", description="Easing of the closeness of the nearest grass (6.4.3).")
    easing_power: float = Field(2.0, gt=0, description="Power l of the easing.")

    @field_validator("easing")
    @classmethod
    def _known_easing(cls, v):
        easing_code(v)
        return v

    kernel_converters = {"easing": easing_code}


@behavior("find_grass", kind="ray", params=FindGrassParams, components=("hunger",))
def find_grass(agents, hits, p, time, dt, out):
    """Slow down on grass when hungry; otherwise head for the nearest grass the rays see."""
    hit = hits.hit
    dist = hits.distance
    point = hits.point
    pos = agents.position
    hunger = agents.hunger
    rays = hit.shape[1]
    for i in prange(hit.shape[0]):
        r = at(p.max_distance, i)
        h = min(1.0, max(0.0, hunger[i]))
        px = pos[i, 0]
        pz = pos[i, 2]
        on = False
        best = math.inf
        bx = 0.0
        bz = 0.0
        for q in range(rays):
            if not hit[i, q]:
                continue
            dx = point[i, q, 0] - px
            dz = point[i, q, 2] - pz
            hd = math.sqrt(dx * dx + dz * dz)
            if hd <= at(p.eat_radius, i):
                on = True
            elif dist[i, q] < best and dist[i, q] < r:
                best = dist[i, q]
                bx = dx / hd
                bz = dz / hd
        if h < at(p.min_hunger, i) or h <= 0.0:
            no_opinion(out, i)
            continue
        hf = h ** at(p.hunger_power, i) if at(p.hunger_power, i) > 0.0 else 1.0
        if on:  # above grass: slow down to graze, no opinion on direction
            emit(out, i, 0.0, 0.0, 0.0, 0.0, at(p.eat_speed, i), at(p.weight_speed, i) * hf)
        elif best < math.inf:  # grass in sight: toward it, horizontally, no opinion on speed
            desire = at(p.weight_direction, i) * hf * ease(p.easing, 1.0 - best / r, at(p.easing_power, i))
            emit(out, i, bx, 0.0, bz, desire, 0.0, 0.0)
        else:
            no_opinion(out, i)
