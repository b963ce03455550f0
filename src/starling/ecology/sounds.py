"""Sounds (thesis 11.2.5): short-lived entities that animals hear and avoid.

A sound is spawned at a point with a ``loudness`` (1 = a gunshot at the muzzle). It is
a sphere whose radius grows at ``speed`` m/s up to ``range · loudness`` metres; after
``lifetime`` seconds it is gone. An animal *hears* it while the animal is inside the
sphere: the ``avoid_sound`` behaviour steers away (the louder and the closer, the
more), and brains see the ``heard_sound`` event.

Sounds live in the ``sound`` population (components ``loudness``, ``sound_radius``,
``sound_age``, ``sound_lifetime``) so that neighbour groups target them like any
species: ``query = { targets = ["sound"], max_distance = 15 }``.

:class:`SoundsSystem` keeps them: after the movers it grows every sphere, removes the
expired sounds and marks who hears one (``event_heard``, what brains see as
``heard_sound`` in the next step).
"""
import numpy as np
from numba import njit
from pydantic import Field

from ..steering.params import StrictModel
from ..systems import Access, ComponentSpec, System, specs
from .player import point

SOUND = "sound"
COMPONENTS = {"loudness": 1.0, "sound_radius": 0.0, "sound_age": 0.0, "sound_lifetime": 1.0, "sound_range": 1.0}
HEARD = ComponentSpec("event_heard", default=0.0)


class SoundsConfig(StrictModel):
    """How sounds spread and fade."""

    speed: float = Field(60.0, gt=0, description="Speed at which the sphere grows, m/s.")
    range: float = Field(40.0, gt=0, description="Largest radius of a sound of loudness 1, m.")
    lifetime: float = Field(1.5, gt=0, description="Seconds until a sound is gone.")


def spawn_sound(commands, position, loudness: float, cfg: SoundsConfig, lifetime=None) -> None:
    """Queue one sound at ``position`` (it appears when the command buffer is applied)."""
    life = cfg.lifetime if lifetime is None else float(lifetime)
    if not life > 0:
        raise ValueError(f"lifetime: a sound must live a positive time, not {life}")
    if not loudness > 0:
        raise ValueError(f"loudness: must be > 0, not {loudness}")
    commands.spawn(SOUND, np.asarray(position, np.float32).reshape(1, 3), components={
        "loudness": np.float32([loudness]),
        "sound_radius": np.float32([0.0]),
        "sound_age": np.float32([0.0]),
        "sound_lifetime": np.float32([life]),
        "sound_range": np.float32([cfg.range * loudness]),
    })


def advance(pop, speed: float, dt: float) -> np.ndarray:
    """Age every sound by ``dt``, grow its sphere; returns the uids whose lifetime is over."""
    if pop.n == 0:
        return np.zeros(0, np.int64)
    expired = np.zeros(pop.n, np.bool_)
    _advance(pop.component("sound_age"), pop.component("sound_radius"), pop.component("sound_range"),
             pop.component("sound_lifetime"), np.float32(speed), np.float32(dt), expired)
    return pop.uid[expired].copy()


@njit(cache=True, no_cfunc_wrapper=True)
def _advance(age, radius, reach, lifetime, speed, dt, expired):
    for i in range(age.shape[0]):
        age[i] += dt
        radius[i] = min(speed * age[i], reach[i])
        expired[i] = age[i] >= lifetime[i] - np.float32(1e-9)


def heard(position: np.ndarray, pop, out=None) -> np.ndarray:
    """Which of ``position`` are inside at least one sound's sphere (bool per point)."""
    n = len(position)
    out = np.zeros(n, np.bool_) if out is None else out
    if pop.n == 0 or n == 0:
        out[:] = False
        return out
    _heard(position, pop.position, pop.component("sound_radius"), out)
    return out


@njit(cache=True, no_cfunc_wrapper=True)
def _heard_flag(position, centres, radius, flag):
    """``flag[i]`` = 1.0 where point ``i`` hears a sound, else 0.0."""
    for i in range(position.shape[0]):
        flag[i] = 1.0 if _hears(position, i, centres, radius) else 0.0


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _hears(position, i, centres, radius):
    px = np.float64(position[i, 0])
    py = np.float64(position[i, 1])
    pz = np.float64(position[i, 2])
    for s in range(centres.shape[0]):
        r = np.float64(radius[s])
        if r <= 0.0:
            continue
        dx = px - np.float64(centres[s, 0])
        dy = py - np.float64(centres[s, 1])
        dz = pz - np.float64(centres[s, 2])
        if dx * dx + dy * dy + dz * dz <= r * r:
            return True
    return False


@njit(cache=True, no_cfunc_wrapper=True)
def _heard(position, centres, radius, out):
    """``out[i]``: point ``i`` lies within a sound's sphere (float64 distances)."""
    for i in range(position.shape[0]):
        out[i] = _hears(position, i, centres, radius)


class SoundsSystem(System):
    """Sounds grow, expire and are heard (see the module)."""

    name = "sounds"

    def __init__(self, ctx):
        self.ctx = ctx
        self.cfg = ctx.cfg.sounds
        self.pop = ctx.world.population(SOUND)
        for spec in specs(COMPONENTS):
            self.pop.add_component(spec)
        self.listeners = [v for v in ctx.species if v.kit]
        for v in self.listeners:
            v.pop.add_component(HEARD)

    def components(self) -> dict[str, Access]:
        out = {SOUND: Access(owns=specs(COMPONENTS))}
        for v in self.listeners:
            out[v.name] = Access(owns=(HEARD,))
        return out

    def make_sound(self, position, loudness: float = 1.0, lifetime=None) -> None:
        """A sound at ``position`` (it appears at the end of the step)."""
        spawn_sound(self.ctx.world.commands, point(position, "position"), loudness, self.cfg, lifetime)

    def after_move(self, sim, dt: float) -> None:
        sounds = self.pop
        expired = advance(sounds, self.cfg.speed, dt)
        if expired.size:
            self.ctx.lifecycle.despawn(SOUND, expired)
        for v in self.listeners:
            if v.pop.n:
                flag = v.pop.component("event_heard")
                if sounds.n:
                    _heard_flag(v.pop.position, sounds.position, sounds.component("sound_radius"), flag)
                else:
                    flag[:] = 0.0

    def born(self, view, rows, rng) -> None:
        view.pop.component("event_heard")[rows] = 0.0
