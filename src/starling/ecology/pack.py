"""The pride's coordination (seed 001, ``PackBehaviour``): ranks, attack points, the catch.

A species with a ``[species.pack]`` table hunts ``prey`` together. The brain stays data
in the scenario file (its states and transitions); this system computes what its
conditions and the steering read, as per-animal components the scenario declares:

* ``power`` — drawn once per animal, uniform in ``power_range`` ([0, 100)); ``rank`` — how
  many of the pride are more powerful (0 = the alpha); ``pack_size`` — lions alive;
* ``herd_x``, ``herd_z``, ``herd_on`` — the centre of the zebras the animal sees (within
  ``sight``): what ``flee_herd`` keeps away from while preparing;
* ``goal_x``, ``goal_z``, ``goal_on`` — what ``seek_goal`` steers to: while preparing the
  **attack point** on the line from the herd's centre along a direction that runs from the
  centre toward the lion for the alpha (and a lone lion) and from the alpha through the
  centre for the others; while attacking its prey (``prey_uid``); while eating the carcass;
* ``pack_ready`` — 1 once every lion of the pride is within ``position_threshold`` (20 m)
  of its attack point (the seed's ``AllInPositionForAttack``): the brain's signal to attack
  together; ``pack_fed`` — 1 once any of them caught a zebra (the seed's ``NotifyCatch``).

The author lists the weaknesses of his lions (seed 001, 6.1.2 and 6.3). By default the
three that concern the pride's hunt are fixed here, and so is the seed's division by an
empty herd; ``faithful = true`` hunts exactly as the seed's code does:

=====================  ===============================================  =====================================
weakness               default                                          faithful
=====================  ===============================================  =====================================
attack distance grows  the point is ``attack_standoff`` (70 m) beyond   ``attack_distance_factor`` (8) × the
with the herd's spread the herd's mean radius                           mean radius from the centre
hesitation between     keep the chosen zebra until another is closer    the nearest zebra, re-chosen every
the closest zebras     than ``commit_ratio`` (0.5) × its distance       step
no prediction          aim where the zebra will be: its position plus   aim at where it is
in the chase           its velocity × min(distance / own speed,
                       ``lead_time`` 1.5 s)
lost herd              a preparing lion that no longer sees the herd    it steers nowhere (the seed divides
                       keeps its last attack point                      by an empty herd: a NaN point)
=====================  ===============================================  =====================================

After the movers, a lion in ``attacking_state`` whose nearest zebra is closer than
``catch_distance`` (5 m) kills it (cause ``caught``): one catch per step, in row order.
Herd mates forget a killed zebra because it leaves the population.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field, model_validator

from ..errors import ConfigError, Problem
from ..steering import registry
from ..steering.params import StrictModel
from ..systems import Access, ComponentSpec, System

#: the components a pride carries, with their start values (the scenario's ``components`` table declares them)
COMPONENTS = {"power": -1.0, "rank": 0.0, "pack_size": 1.0, "herd_x": 0.0, "herd_z": 0.0, "herd_on": 0.0,
              "goal_x": 0.0, "goal_z": 0.0, "goal_on": 0.0, "pack_ready": 0.0, "pack_fed": 0.0, "prey_uid": -1.0}


class PackConfig(StrictModel):
    """A pride hunting a herd together (seed 001's PackBehaviour)."""

    prey: str = Field(..., min_length=1, description="The species hunted.")
    sight: float = Field(80.0, gt=0, description="Radius within which an animal sees the prey, m.")
    catch_distance: float = Field(5.0, gt=0, description="catchThreshold: a prey closer than this is caught, m.")
    position_threshold: float = Field(20.0, gt=0, description="In position within this of the attack point, m.")
    attack_distance_factor: float = Field(8.0, gt=0, description="faithful: the attack point is this many "
                                          "mean herd radii from the herd's centre.")
    attack_standoff: float = Field(70.0, ge=0, description="The attack point is this far beyond the herd's mean "
                                   "radius, m (the seed's factor × radius puts a spread herd's lions 150 m out).")
    commit_ratio: float = Field(0.5, ge=0, le=1, description="An attacking animal keeps its prey until another is "
                                "closer than this fraction of its distance (1: the nearest, re-chosen every step).")
    lead_time: float = Field(1.5, ge=0, description="Chase where the prey will be, at most this far ahead, s "
                             "(0: where it is).")
    power_range: tuple[float, float] = Field((0.0, 100.0), description="Power drawn uniformly in [low, high).")
    preparing_states: list[str] = Field(..., min_length=1, description="Brain states heading for the attack point.")
    attacking_state: str = Field("attacking", description="Brain state chasing the nearest prey (the only one "
                                 "that catches).")
    eating_state: str = Field("eating", description="Brain state gathering at the carcass.")
    faithful: bool = Field(False, description="Hunt as the seed's code does: attack points at attack_distance_factor "
                           "× the herd's radius, the nearest prey re-chosen every step, no prediction, and a "
                           "preparing animal that sees no prey steering nowhere (the seed divides by an empty "
                           "herd) instead of keeping its last point.")

    @model_validator(mode="after")
    def _range(self):
        lo, hi = self.power_range
        if not hi > lo:
            raise ValueError("power_range: high must be greater than low")
        return self


def attack_point(centre, distance: float, me, alpha, is_alpha: bool):
    """The seed's ``CalculateAttackPosition``: ``centre + unit(direction) · distance``; the
    direction is ``me − centre`` for the alpha, ``centre − alpha`` for the others (x–z only)."""
    centre = np.asarray(centre, np.float64)
    d = (np.asarray(me, np.float64) - centre) if is_alpha else (centre - np.asarray(alpha, np.float64))
    length = float(np.hypot(d[0], d[1]))
    if length < 1e-9:
        return centre.copy()
    return centre + d / length * distance


def attack_distance(radius: float, cfg: "PackConfig") -> float:
    """How far from the herd's centre the attack points lie: the seed's ``radius · factor`` when
    faithful, else ``radius + attack_standoff``."""
    return radius * cfg.attack_distance_factor if cfg.faithful else radius + cfg.attack_standoff


def chase_target(seen, seen_dist, seen_uid, seen_vel, my_speed: float, kept_uid: int, cfg: "PackConfig"):
    """The prey an attacking animal chases and the point it aims at: ``(uid, (x, z))``.

    ``seen`` are the prey it sees (x, z), ``seen_dist`` their distances to it. Faithful:
    the nearest, aimed at where it is. Otherwise the prey kept from the last step while no
    other is closer than ``commit_ratio`` × its distance, aimed ``min(distance / speed,
    lead_time)`` seconds ahead along its velocity.
    """
    d = seen_dist
    j = int(np.argmin(d))
    if cfg.faithful:
        return int(seen_uid[j]), seen[j].copy()
    kept = np.flatnonzero(seen_uid == kept_uid)
    if kept.size and not d[j] < cfg.commit_ratio * d[kept[0]]:
        j = int(kept[0])
    ahead = min(d[j] / max(my_speed, 1.0), cfg.lead_time)
    return int(seen_uid[j]), seen[j] + seen_vel[j] * ahead


class _Pride:
    """One hunting species and its bookkeeping."""

    def __init__(self, index: int, species_cfg, pack: PackConfig, seed: int):
        self.name = species_cfg.name
        self.cfg = pack
        brain = getattr(species_cfg, "brain", None)
        where = f"species.{index}"
        problems = []
        if brain is None:
            problems.append(Problem(f"{where}.pack", "a pride needs a [species.brain] with its states"))
            names: list[str] = []
        else:
            names = [s.name for s in brain.states]
        for key, state in ([("preparing_states", s) for s in pack.preparing_states]
                           + [("attacking_state", pack.attacking_state), ("eating_state", pack.eating_state)]):
            if names and state not in names:
                problems.append(Problem(f"{where}.pack.{key}", f"unknown state {state!r}; states: {', '.join(names)}"))
        missing = [c for c in COMPONENTS if c not in species_cfg.components]
        if missing:
            problems.append(Problem(f"{where}.components", "a pride declares its components: add "
                                    + ", ".join(f"{c} = {COMPONENTS[c]}" for c in missing)))
        if problems:
            raise ConfigError(problems)
        self.preparing = np.array([names.index(s) for s in pack.preparing_states], np.float32)
        self.attacking = float(names.index(pack.attacking_state))
        self.eating = float(names.index(pack.eating_state))
        self.rng = np.random.default_rng([int(seed), 1, index])
        self.carcass = np.zeros(2)


class PackSystem(System):
    """Ranks, attack points, readiness and catches of every pride (see the module)."""

    name = "pack"

    def __init__(self, sim):
        self.sim = sim
        self.prides = []
        for i, sp in enumerate(sim.scenario.species):
            pack = getattr(sp, "pack", None)
            if pack is None:
                continue
            if pack.prey not in [s.name for s in sim.scenario.species]:
                raise ConfigError([Problem(f"species.{i}.pack.prey", f"unknown species {pack.prey!r}")])
            self.prides.append(_Pride(i, sp, pack, sim.scenario.seed))

    def components(self) -> dict[str, Access]:
        out = {}
        for p in self.prides:
            out[p.name] = Access(owns=tuple(ComponentSpec(n, default=d) for n, d in COMPONENTS.items()),
                                 reads=(ComponentSpec("state"),))
        return out

    def before_behaviors(self, sim, dt: float) -> None:
        for p in self.prides:
            self._coordinate(sim, p)

    def labels(self, sim, species: str):
        """Each lion's rank ("#1" the strongest); none until every lion of the pride is ranked
        (a pride ranks itself at its first step, when it draws a newcomer's power: before that
        every rank read 0, and the whole pride "#1")."""
        if not any(p.name == species for p in self.prides):
            return None
        pop = sim.world.population(species)
        if (pop.component("power")[: pop.n] < 0).any():
            return None
        return [f"#{int(r) + 1}" for r in pop.component("rank")[: pop.n]]

    def _coordinate(self, sim, p: _Pride) -> None:
        pop = sim.world.population(p.name)
        n = pop.n
        if n == 0:
            return
        c = {k: pop.component(k) for k in COMPONENTS}
        fresh = c["power"] < 0
        if fresh.any():
            lo, hi = p.cfg.power_range
            c["power"][fresh] = p.rng.uniform(lo, hi, int(fresh.sum()))
        power = c["power"][:n].astype(np.float64)
        # rank: how many are stronger (ties broken by row, so ranks are a permutation)
        order = np.lexsort((np.arange(n), -power))
        rank = np.empty(n, np.float32)
        rank[order] = np.arange(n)
        c["rank"][:n] = rank
        c["pack_size"][:n] = n
        alpha = int(order[0])
        me = pop.position[:n][:, [0, 2]].astype(np.float64)
        prey = sim.world.population(p.cfg.prey)
        zebras = prey.position[: prey.n][:, [0, 2]].astype(np.float64)
        zebra_vel = prey.velocity[: prey.n][:, [0, 2]].astype(np.float64)
        zebra_uid = prey.uid[: prey.n]
        speed = np.hypot(pop.velocity[:n, 0], pop.velocity[:n, 2]).astype(np.float64)
        state = pop.component("state")[:n]
        preparing = np.isin(state, p.preparing)
        attacking = state == p.attacking
        eating = state == p.eating
        in_position = np.zeros(n, bool)
        for i in range(n):
            dist = np.hypot(*(zebras - me[i]).T) if len(zebras) else np.zeros(0)
            sees = dist < p.cfg.sight
            seen = zebras[sees]
            # a preparing lion that lost sight of the herd keeps heading for its last attack point
            # (faithful: it stops steering toward any, as the seed's NaN point does)
            keep = preparing[i] and c["goal_on"][i] >= 0.5 and not p.cfg.faithful
            c["goal_on"][i] = 1.0 if keep else 0.0
            c["herd_on"][i] = 0.0
            if len(seen):
                centre = seen.mean(axis=0)
                radius = float(np.hypot(*(seen - centre).T).mean())
                goal = attack_point(centre, attack_distance(radius, p.cfg), me[i], me[alpha],
                                    is_alpha=(i == alpha or n == 1))
                in_position[i] = float(np.hypot(*(goal - me[i]))) < p.cfg.position_threshold
                if preparing[i]:
                    c["goal_x"][i], c["goal_z"][i] = goal
                    c["goal_on"][i] = 1.0
                    c["herd_x"][i], c["herd_z"][i] = centre
                    c["herd_on"][i] = 1.0
                elif attacking[i]:
                    uid, aim = chase_target(seen, dist[sees], zebra_uid[sees], zebra_vel[sees], float(speed[i]),
                                            int(c["prey_uid"][i]), p.cfg)
                    c["prey_uid"][i] = uid
                    c["goal_x"][i], c["goal_z"][i] = aim
                    c["goal_on"][i] = 1.0
            if eating[i]:
                c["goal_x"][i], c["goal_z"][i] = p.carcass
                c["goal_on"][i] = 1.0
        c["pack_ready"][:n] = 1.0 if in_position.all() else 0.0

    def after_move(self, sim, dt: float) -> None:
        from . import ecology_of

        for p in self.prides:
            pop = sim.world.population(p.name)
            prey = sim.world.population(p.cfg.prey)
            if pop.n == 0 or prey.n == 0 or pop.component("pack_fed")[0] >= 1.0:
                continue
            state = pop.component("state")[: pop.n]
            zebras = prey.position[: prey.n][:, [0, 2]].astype(np.float64)
            for i in np.flatnonzero(state == p.attacking):
                d = np.hypot(*(zebras - pop.position[i, [0, 2]].astype(np.float64)).T)
                j = int(np.argmin(d))
                if d[j] < p.cfg.catch_distance:
                    ecology_of(sim).kill(p.cfg.prey, [int(prey.uid[j])], cause="caught")
                    p.carcass = zebras[j].copy()
                    pop.component("pack_fed")[: pop.n] = 1.0
                    break

    def state(self, sim) -> dict[str, Any]:
        return {p.name: {"rng": p.rng.bit_generator.state, "carcass": p.carcass.tolist()} for p in self.prides}

    def load_state(self, sim, state: dict[str, Any]) -> None:
        for p in self.prides:
            saved = state.get(p.name)
            if saved:
                p.rng.bit_generator.state = saved["rng"]
                p.carcass = np.asarray(saved["carcass"], np.float64)


ORDER = 95  # before the ecology (100): the brains read this step's readiness and catches


@registry.section("pack", model=PackConfig, scope="species", order=ORDER)
def _pack(sim):
    """A pride hunting a herd together: ranks, attack points, a synchronized attack, the catch."""
    return PackSystem(sim)
