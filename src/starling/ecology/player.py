"""The player (thesis 11.1.2): a walker with a gun and a bag of apples.

The player is the single entity of the ``player`` population, so animals avoid it with a
neighbour group (``targets = ["player"]``, behaviour ``avoid_player``). Its
``still_time`` component counts the seconds since it last moved: ``avoid_player``
shrinks its radius while the player stands still (11.2.8).

It moves when told (``Simulation.move_player`` from the API or the browser, or a
``move_player`` event that walks it to a point at ``walk_speed``), fires a gun and
throws apples:

* **fire**: a ray from the muzzle; the first animal whose body (a sphere of
  ``body_radius``) the ray passes through within ``range`` dies. The ray also stops at
  the ground, and ``water_penetration`` metres below the water surface; with an
  ``[environment]`` also at the first surface of the ``stopped_by`` layers (walls, rocks,
  terrain) and under its water. A sound of ``muzzle_loudness`` starts at the muzzle and one of
  ``impact_loudness`` where the bullet stops (the animal hit, or the ground).
* **throw_apple**: an apple appears at the hand with the given velocity and then falls.

Without an ``[environment]`` the ground and the water are the planes of ``[ecology]``.
"""
from typing import Optional

import numpy as np
from pydantic import Field

from ..steering.params import StrictModel, Vec3

PLAYER = "player"
COMPONENTS = {"still_time": 0.0}


class GunConfig(StrictModel):
    """The player's gun."""

    range: float = Field(120.0, gt=0, description="Farthest a bullet flies, m.")
    muzzle_loudness: float = Field(1.0, gt=0, description="Loudness of the shot at the muzzle.")
    impact_loudness: float = Field(0.6, gt=0, description="Loudness of the bullet's impact.")
    water_penetration: float = Field(1.0, ge=0, description="A bullet stops this far below the water surface, m.")
    stopped_by: list[str] = Field(default_factory=lambda: ["terrain", "ground", "environment"],
                                  description="Environment layers a bullet cannot pass (with an [environment]).")


class PlayerConfig(StrictModel):
    """Where the player starts and what it carries."""

    position: Vec3 = Field((0.0, 0.0, 0.0), description="Start position (feet), m.")
    look: Vec3 = Field((0.0, 0.0, 1.0), description="Start viewing direction.")
    eye_height: float = Field(1.6, ge=0, description="Muzzle and hand height above the feet, m.")
    walk_speed: float = Field(3.0, gt=0, description="Speed of scripted walks, m/s.")
    still_after: float = Field(0.05, ge=0, description="Moving less than this distance in a step counts as standing still, m.")
    gun: GunConfig = Field(default_factory=GunConfig)


def first_hit(origin, direction, max_distance: float, centres: np.ndarray, radii) -> tuple[int, float]:
    """The first sphere (centre, radius) a ray passes through: (index, distance along the ray) or (−1, inf).

    ``direction`` must be a unit vector. A sphere containing the origin is hit at 0.
    """
    if len(centres) == 0:
        return -1, np.inf
    o = np.asarray(origin, np.float64)
    d = np.asarray(direction, np.float64)
    rel = centres.astype(np.float64) - o
    t = rel @ d
    r = np.broadcast_to(np.asarray(radii, np.float64), t.shape)
    perp2 = np.einsum("ij,ij->i", rel, rel) - t * t
    inside = perp2 <= r * r
    # entry distance of the ray into each sphere (0 when the origin is inside)
    entry = t - np.sqrt(np.maximum(r * r - perp2, 0.0))
    entry = np.maximum(entry, 0.0)
    ok = inside & (t + r >= 0.0) & (entry <= max_distance)
    if not ok.any():
        return -1, np.inf
    candidates = np.flatnonzero(ok)
    best = candidates[np.argmin(entry[candidates])]
    return int(best), float(entry[best])


def plane_hit(origin, direction, height: Optional[float], max_distance: float) -> float:
    """Distance along a ray to the horizontal plane ``y = height`` (inf if it is not hit going down)."""
    if height is None or direction[1] >= -1e-12:
        return np.inf
    t = (height - origin[1]) / direction[1]
    return float(t) if 0.0 <= t <= max_distance else np.inf


def unit(vector, what: str) -> np.ndarray:
    v = np.asarray(vector, np.float64).reshape(3)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{what}: must be three finite numbers")
    length = float(np.linalg.norm(v))
    if length < 1e-12:
        raise ValueError(f"{what}: must not be the zero vector")
    return v / length


def point(vector, what: str) -> np.ndarray:
    v = np.asarray(vector, np.float64).reshape(3)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{what}: must be three finite numbers")
    return v
