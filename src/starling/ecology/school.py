"""Seed 004's two optimisations (Ménard, 1.5) as species sections: adaptive vision, staggered updates.

``[species.vision]`` — **a vision distance that adapts** so that each animal sees about ``target``
others (six in the seed, after Ballerini et al.: each starling heeds its six or seven nearest).
The system owns two components: ``vision`` (the animal's vision radius, m; ``initial`` at
birth) and ``neighbors_seen`` (how many animals of ``targets`` were within it at its last
probe). An animal probes on its update steps (every ``every`` steps, staggered by uid like
``[species.stagger]``: step + uid ≡ 0 mod ``every``): before the behaviours it counts the
animals of ``targets`` closer than its radius (itself excluded; all around, as the seed's
``Physics.OverlapSphere``), the behaviours of this step see with that radius, and after the
move the radius is multiplied by ``1 + rate`` when it saw fewer than ``target``, by ``1 − rate``
when it saw more, and kept when it saw exactly ``target``; always within [``min``, ``max``].
Behaviours read ``vision`` (``reef_school`` does) by declaring the component.

``[species.stagger]`` — **direction updates staggered over ``every`` steps** (the seed's N = 10):
an animal takes a new decision only on the steps where step + uid ≡ 0 (mod ``every``), so each
step about 1/N of the species decides. After the move the system keeps the velocity the
merger chose on that step (components ``held_x``, ``held_y``, ``held_z``) and sets
``stagger_hold`` to 1 for the N − 1 steps that follow; the ``hold_course`` behaviour (highest
priority, full desire) steers toward the kept velocity on those steps, so the mover turns the
animal toward it gradually, as the seed's fish do between ``FixedUpdate`` n and n + N − 1.
The other behaviours still run every step (their results are then outweighed): the seed's
saving of CPU time is not reproduced, only the motion it gives.
"""
from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from ..errors import ConfigError, Problem
from ..steering import registry
from ..steering.params import StrictModel
from ..systems import Access, ComponentSpec, System


class VisionConfig(StrictModel):
    """Seed 004, 1.5: a vision radius per animal that adapts so that it sees about ``target`` others."""

    targets: list[str] = Field(default_factory=list, description="Species counted (default: the species itself).")
    target: int = Field(6, ge=1, description="Neighbours each animal tries to see (seed 004: six).")
    initial: float = Field(3.0, gt=0, description="Vision radius at birth, m.")
    min: float = Field(0.5, gt=0, description="Smallest vision radius, m.")
    max: float = Field(10.0, gt=0, description="Largest vision radius, m.")
    rate: float = Field(0.1, gt=0, lt=1, description="Relative change of the radius per probe.")
    every: int = Field(1, ge=1, description="Probe every this many steps (staggered by uid; seed 004: N = 10).")

    @model_validator(mode="after")
    def _ordered(self):
        if not self.min <= self.initial <= self.max:
            raise ValueError("need min <= initial <= max")
        return self

    @classmethod
    def provided_components(cls, species) -> set:
        """Components a species with this section gets (the component cross-check reads it)."""
        return {"vision", "neighbors_seen"} if getattr(species, "vision", None) is not None else set()


class StaggerConfig(StrictModel):
    """Seed 004, 1.5: each animal decides a new velocity every ``every`` steps and holds it between."""

    every: int = Field(10, ge=1, description="Steps between two decisions of one animal (seed 004: N = 10).")

    @classmethod
    def provided_components(cls, species) -> set:
        """Components a species with this section gets (the component cross-check reads it)."""
        return set(HELD) if getattr(species, "stagger", None) is not None else set()


def turn_mask(uid: np.ndarray, step: int, every: int) -> np.ndarray:
    """Which animals decide (probe) this step: ``(step + uid) % every == 0``."""
    return (uid.astype(np.int64) + int(step)) % int(every) == 0


def adapt(radius: np.ndarray, seen: np.ndarray, target: int, rate: float, lo: float, hi: float) -> np.ndarray:
    """The next vision radius: larger after seeing fewer than ``target``, smaller after more, clamped."""
    factor = np.where(seen < target, 1.0 + rate, np.where(seen > target, 1.0 - rate, 1.0))
    return np.clip(radius * factor, lo, hi).astype(np.float32)


VISION = (ComponentSpec("vision"), ComponentSpec("neighbors_seen"))
HELD = ("held_x", "held_y", "held_z", "stagger_hold")


class VisionSystem(System):
    """Counts each probing animal's neighbours within its radius and adapts the radius (see the module)."""

    name = "vision"

    def __init__(self, sim):
        self.entries = []
        names = [sp.name for sp in sim.scenario.species]
        for i, sp in enumerate(sim.scenario.species):
            cfg = getattr(sp, "vision", None)
            if cfg is None:
                continue
            targets = cfg.targets or [sp.name]
            unknown = [t for t in targets if t not in names]
            if unknown:
                raise ConfigError([Problem(f"species.{i}.vision.targets", f"unknown species {unknown[0]!r}")])
            if cfg.max < cfg.min:
                raise ConfigError([Problem(f"species.{i}.vision", "max must be at least min")])
            pop = sim.world.population(sp.name)
            pop.add_component(ComponentSpec("vision", default=cfg.initial))
            pop.add_component(ComponentSpec("neighbors_seen"))
            self.entries.append((sp.name, cfg, targets))
        self._probing: dict[str, np.ndarray] = {}

    def components(self) -> dict[str, Access]:
        return {name: Access(owns=(ComponentSpec("vision", default=cfg.initial), ComponentSpec("neighbors_seen")))
                for name, cfg, _ in self.entries}

    def before_behaviors(self, sim, dt: float) -> None:
        step = sim.world.clock.step
        for name, cfg, targets in self.entries:
            pop = sim.world.population(name)
            n = pop.n
            self._probing[name] = rows = np.flatnonzero(turn_mask(pop.uid[:n], step, cfg.every))
            if n == 0 or len(rows) == 0:
                continue
            points = [sim.world.population(t).position[: sim.world.population(t).n] for t in targets]
            points = np.concatenate(points).astype(np.float64) if points else np.zeros((0, 3))
            radius = pop.component("vision")[rows].astype(np.float64)
            if len(points):
                from scipy.spatial import cKDTree  # SciPy's trees take 0.3 s to import: only a school that probes pays

                found = cKDTree(points).query_ball_point(pop.position[rows].astype(np.float64), radius,
                                                         return_length=True)
            else:
                found = np.zeros(len(rows), np.int64)
            if name in targets:
                found = found - 1  # itself
            pop.component("neighbors_seen")[rows] = np.maximum(found, 0)

    def after_move(self, sim, dt: float) -> None:
        for name, cfg, _ in self.entries:
            rows = self._probing.get(name)
            pop = sim.world.population(name)
            if rows is None or len(rows) == 0 or pop.n == 0:
                continue
            rows = rows[rows < pop.n]
            vision = pop.component("vision")
            vision[rows] = adapt(vision[rows], pop.component("neighbors_seen")[rows], cfg.target, cfg.rate,
                                 cfg.min, cfg.max)

    def species_summary(self, sim, species: str) -> dict:
        for name, _, _ in self.entries:
            if name == species:
                pop = sim.world.population(name)
                if pop.n:
                    return {"mean_vision": float(pop.component("vision")[: pop.n].mean()),
                            "mean_neighbors_seen": float(pop.component("neighbors_seen")[: pop.n].mean())}
        return {}


class StaggerSystem(System):
    """Keeps each animal's last decided velocity and says when to hold it (see the module)."""

    name = "stagger"

    def __init__(self, sim):
        self.entries = []
        for sp in sim.scenario.species:
            cfg = getattr(sp, "stagger", None)
            if cfg is None:
                continue
            pop = sim.world.population(sp.name)
            for c in HELD:
                pop.add_component(ComponentSpec(c))
            self.entries.append((sp.name, cfg))
        self._turning: dict[str, np.ndarray] = {}

    def components(self) -> dict[str, Access]:
        return {name: Access(owns=tuple(ComponentSpec(c) for c in HELD)) for name, _ in self.entries}

    def before_behaviors(self, sim, dt: float) -> None:
        step = sim.world.clock.step
        for name, cfg in self.entries:
            pop = sim.world.population(name)
            n = pop.n
            turning = turn_mask(pop.uid[:n], step, cfg.every)
            self._turning[name] = turning
            held = (pop.component("held_x")[:n] != 0) | (pop.component("held_y")[:n] != 0) \
                | (pop.component("held_z")[:n] != 0)
            pop.component("stagger_hold")[:n] = (~turning & held).astype(np.float32)

    def after_move(self, sim, dt: float) -> None:
        pipelines = {p.name: p for p in sim.pipelines}
        for name, _ in self.entries:
            pop = sim.world.population(name)
            turning = self._turning.get(name)
            if turning is None or pop.n == 0:
                continue
            rows = np.flatnonzero(turning[: pop.n])
            desired = pipelines[name].desired
            for axis, c in enumerate(("held_x", "held_y", "held_z")):
                pop.component(c)[rows] = desired[rows, axis]


ORDER = 90  # before the brains (100): nothing of theirs is read, but the order is fixed


@registry.section("vision", model=VisionConfig, scope="species", order=ORDER)
def _vision(sim):
    """Seed 004: each animal's vision radius adapts so that it sees about six others."""
    return VisionSystem(sim)


@registry.section("stagger", model=StaggerConfig, scope="species", order=ORDER)
def _stagger(sim):
    """Seed 004: each animal decides every N steps, staggered, and holds its course between."""
    return StaggerSystem(sim)
