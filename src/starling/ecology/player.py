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

:class:`PlayerSystem` walks the player after the movers (``after_move``) and carries out
its actions; it exists in every scenario with an ecology, with or without a player
(``has_player`` says which, and is what ``Simulation.fire`` and friends look for).
"""
import math
from typing import Optional

import numpy as np
from pydantic import Field

from ..steering.params import StrictModel, Vec3
from ..systems import Access, ComponentSpec, System

PLAYER = "player"
COMPONENTS = {"still_time": 0.0}
STILL = ComponentSpec("still_time", default=0.0)


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


class PlayerSystem(System):
    """The player: its walks, shots and throws (see the module)."""

    name = "player"

    def __init__(self, ctx):
        self.ctx = ctx
        self.world = ctx.world
        self.cfg = ctx.cfg
        self.pop = ctx.world.population(PLAYER)
        self.pop.add_component(STILL)
        self.shots = 0
        self.apples_thrown = 0
        self._walk_to: Optional[np.ndarray] = None
        self._player_moved = 0.0
        player = self.cfg.player
        if player is None:
            self.pop.remove_rows(np.arange(self.pop.n))
        elif self.pop.n == 0:
            look = unit(player.look, "look")
            self.pop.append(self.world.new_uids(1), np.float32([player.position]), np.zeros((1, 3), np.float32),
                            forward=np.float32([look]))

    def components(self) -> dict[str, Access]:
        return {PLAYER: Access(owns=(STILL,))}

    @property
    def has_player(self) -> bool:
        return self.cfg.player is not None

    def position(self) -> np.ndarray:
        return self.pop.position[0].astype(np.float64)

    def hand(self) -> np.ndarray:
        """The muzzle and the throwing hand: the feet plus the eye height."""
        return self.position() + np.array([0.0, self.cfg.player.eye_height, 0.0])

    # ------------------------------------------------------------------ moving
    def after_move(self, sim, dt: float) -> None:
        if not self.has_player:
            return
        pop = self.pop
        if self._walk_to is not None:
            here = pop.position[0].astype(np.float64)
            offset = self._walk_to - here
            dist = math.sqrt(float(offset.dot(offset)))  # what np.linalg.norm computes, without its wrapper
            step = self.cfg.player.walk_speed * dt
            if dist <= step:
                pop.position[0] = self._walk_to
                pop.velocity[0] = offset / dt
                self._walk_to = None
            else:
                pop.position[0] = here + offset / dist * step
                pop.velocity[0] = offset / dist * self.cfg.player.walk_speed
                pop.forward[0] = offset / dist
            self._player_moved += min(dist, step)
        still = pop.component("still_time")
        if self._player_moved > self.cfg.player.still_after:
            still[0] = 0.0
        else:
            still[0] += dt
            if self._walk_to is None:
                pop.velocity[0] = 0.0
        self._player_moved = 0.0

    def move_player(self, position, look=None) -> None:
        if not self.has_player:
            raise ValueError("move_player is not available in this scenario")
        pop = self.pop
        new = point(position, "position")
        old = pop.position[0].astype(np.float64)
        self._player_moved += float(np.linalg.norm(new - old))
        pop.position[0] = new
        pop.velocity[0] = (new - old) / self.ctx.sim.dt
        if look is not None:
            pop.forward[0] = unit(look, "direction")
        self._walk_to = None

    def walk_player(self, target) -> None:
        if not self.has_player:
            raise ValueError("move_player is not available in this scenario")
        self._walk_to = point(target, "to")

    # ------------------------------------------------------------------ acting
    def fire(self, origin, direction) -> dict:
        """A shot: the first animal along the ray dies; sounds at the muzzle and where the bullet stops."""
        ctx = self.ctx
        o = point(origin, "origin")
        d = unit(direction, "direction")
        gun = self.cfg.player.gun if self.cfg.player is not None else None
        reach = gun.range if gun else 120.0
        ground = ctx.feeding.ground
        t_ground = plane_hit(o, d, ground, reach)
        depth = gun.water_penetration if gun else 1.0
        if self.cfg.water_level is not None:  # bullets do not get far in water
            t_ground = min(t_ground, plane_hit(o, d, self.cfg.water_level - depth, reach))
        env = ctx.environment
        if env is not None:  # walls, rocks, terrain; and the environment's water
            t_ground = min(t_ground, _env_stop(env, o, d, reach, gun, depth))
        best = (None, -1, min(reach, t_ground))
        lifecycle = ctx.lifecycle
        for v in ctx.species:
            pop = v.pop
            if pop.n == 0:
                continue
            alive = np.ones(pop.n, bool)
            dying = lifecycle.dying(v.name)
            if dying:
                alive &= ~np.isin(pop.uid, list(dying))
            rows = np.flatnonzero(alive)
            j, t = first_hit(o, d, best[2], pop.position[rows], body_radius(v))
            if j >= 0 and t < best[2]:
                best = (v, int(pop.uid[rows[j]]), t)
        ctx.sounds.make_sound(o, gun.muzzle_loudness if gun else 1.0)
        self.shots += 1
        hit = None
        impact = None
        if best[0] is not None:
            v, uid, t = best
            lifecycle.kill(v.name, [uid], cause="shot")
            impact = o + d * t
            hit = {"species": v.name, "uid": uid}
        elif np.isfinite(t_ground):
            impact = o + d * t_ground
        if impact is not None:
            ctx.sounds.make_sound(impact, gun.impact_loudness if gun else 0.6)
        return {"hit": hit, "impact": None if impact is None else [float(x) for x in impact]}

    def throw_apple(self, origin, velocity) -> None:
        """An apple leaves ``origin`` with ``velocity`` (zero: dropped); it appears at the end of the step."""
        self.ctx.feeding.spawn_apple(point(origin, "origin"), point(velocity, "velocity"))
        self.apples_thrown += 1

    # ------------------------------------------------------------------ state
    def state(self, sim) -> dict:
        return {
            "shots": self.shots,
            "apples_thrown": self.apples_thrown,
            "walk_to": None if self._walk_to is None else [float(x) for x in self._walk_to],
            "player_moved": self._player_moved,
        }

    def load_state(self, sim, state: dict) -> None:
        self.shots = int(state["shots"])
        self.apples_thrown = int(state["apples_thrown"])
        self._walk_to = None if state["walk_to"] is None else np.asarray(state["walk_to"], np.float64)
        self._player_moved = float(state["player_moved"])


def body_radius(view) -> float:
    """What a bullet must pass within: ``body_radius``, or half the drawn scale (at least 0.1 m)."""
    if view.eco is not None and view.eco.body_radius is not None:
        return float(view.eco.body_radius)
    return max(0.1, 0.5 * float(view.cfg.appearance.scale))


def _env_stop(env, o, d, reach: float, gun, depth: float) -> float:
    """Distance along the ray to where the environment stops a bullet (inf: nowhere in range)."""
    from ..environment.raycast import cast_rays

    origin = np.float32([o])
    direction = np.float32([d])
    stops = gun.stopped_by if gun else ["terrain", "ground", "environment"]
    t = np.inf
    known = [name for name in stops if name in env.layers]
    if known:
        hit = cast_rays(env, origin, direction, reach, mask=env.mask(known))
        if hit.hit[0]:
            t = float(hit.distance[0])
    if "water" in env.layers:
        hit = cast_rays(env, origin, direction, reach, mask=env.mask(["water"]))
        if hit.hit[0]:
            t = min(t, float(hit.distance[0]) + depth / max(abs(float(d[1])), 0.05))
    return t
