"""The energy system: bodies that tire, hunger, starve, run out of stamina and age.

It owns, for every species with an ecology section, ``energy`` and ``hunger`` (and
``stamina``, ``age``, ``starving`` where configured, and the drawn parameters of those
tables). After the movers (``after_move``) each body advances by ``dt`` from the speed
the animal just moved at (the rules are in :mod:`starling.ecology.components`);
starvation and old age kill through the lifecycle. At birth every animal gets its start
values (drawn, where a start is a distribution).
"""
from __future__ import annotations

import numpy as np

from ..systems import Access, ComponentSpec, System
from . import components as C
from .variation import Distribution, bounds_of

SECTIONS = ("energy", "hunger", "stamina", "age")
ENERGY = ComponentSpec("energy", default=1.0)
HUNGER = ComponentSpec("hunger", default=1.0)
STAMINA = ComponentSpec("stamina", default=0.0)
AGE = ComponentSpec("age", default=0.0)
STARVING = ComponentSpec("starving", default=0.0)


def owned(species_cfg) -> tuple[ComponentSpec, ...]:
    """The body components a species config gives its animals (none without an ecology section)."""
    eco = getattr(species_cfg, "ecology", None)
    out = [ENERGY, HUNGER]
    if eco is not None:
        if eco.stamina is not None:
            out.append(STAMINA)
        if eco.age is not None:
            out.append(AGE)
        if eco.hunger is not None and eco.hunger.starve_after is not None:
            out.append(STARVING)
    return tuple(out)


class _Body:
    """One species' body settings at run time."""

    def __init__(self, view):
        self.view = view
        self.owns = owned(view.cfg)
        for spec in self.owns:
            view.pop.add_component(spec)
        self.drawn = tuple(view.bind_sampled(SECTIONS))
        eco = view.eco
        self.drain_ids = None
        if eco is not None and eco.stamina is not None and eco.stamina.drain_states and view.brain_cfg is not None:
            ids = {s.name: i for i, s in enumerate(view.brain_cfg.states)}
            self.drain_ids = np.array([ids[s] for s in eco.stamina.drain_states], np.float32)


class EnergySystem(System):
    """Energy, hunger, starvation, stamina and age (see the module)."""

    name = "energy"

    def __init__(self, ctx):
        self.ctx = ctx
        self.bodies = {v.name: _Body(v) for v in ctx.species if v.kit}

    def components(self) -> dict[str, Access]:
        out = {}
        for name, body in self.bodies.items():
            v = body.view
            reads = []
            if v.variation is not None and v.variation.max_speed is not None:
                reads.append(ComponentSpec("var_max_speed", default=1.0))
            if body.drain_ids is not None:
                reads.append(ComponentSpec("state"))
            if "max_speed" in v.cfg.mover.varied:
                reads.append(ComponentSpec("mover_max_speed"))
            out[name] = Access(owns=body.owns + body.drawn, reads=tuple(reads))
        return out

    def after_move(self, sim, dt: float) -> None:
        for body in self.bodies.values():
            if body.view.pop.n:
                self._advance(body, dt)

    def _advance(self, body: _Body, dt: float) -> None:
        """Energy, hunger, stamina and age advance by ``dt`` (after the move)."""
        v = body.view
        pop = v.pop
        eco = v.eco
        s = C.speed_fraction(pop.velocity, v.top_speed())
        if eco is not None and eco.energy is not None:
            C.update_energy(pop.component("energy"), s, v.get("energy", "drain"), v.get("energy", "recovery"),
                            eco.energy.drain_power, dt)
        if eco is not None and eco.hunger is not None:
            hunger = pop.component("hunger")
            C.update_hunger(hunger, v.get("hunger", "rate"), dt)
            if eco.hunger.starve_after is not None:
                starving = pop.component("starving")
                C.update_starving(starving, hunger, dt)
                starved = np.flatnonzero(starving >= v.get("hunger", "starve_after"))
                if starved.size:
                    self.ctx.lifecycle.kill(v.name, pop.uid[starved], cause="starvation")
        if eco is not None and eco.stamina is not None:
            st = eco.stamina
            may_lose = True
            if body.drain_ids is not None:
                may_lose = np.isin(pop.component("state"), body.drain_ids)
            C.update_stamina(pop.component("stamina"), s, v.get("stamina", "lose"), v.get("stamina", "regain"),
                             st.lose_above, st.regain_below, v.get("stamina", "max"), dt, may_lose)
        if eco is not None and eco.age is not None:
            age = pop.component("age")
            age += eco.age.years_per_second * dt
            if eco.age.max_age is not None:
                old = np.flatnonzero(age >= eco.age.max_age)
                if old.size:
                    self.ctx.lifecycle.kill(v.name, pop.uid[old], cause="old age")

    def born(self, view, rows, rng) -> None:
        """Start values: energy, hunger, stamina (default: its maximum) and age."""
        body = self.bodies.get(view.name)
        if body is None:
            return
        eco = view.eco
        pop = view.pop
        k = rows.size

        def start(section: str, field: str, comp: str, default) -> None:
            sub = getattr(eco, section, None) if eco is not None else None
            value = default if sub is None else getattr(sub, field)
            if value is None:
                value = default
            if isinstance(value, Distribution):
                b = bounds_of(type(sub).model_fields[field])
                value = value.sample(rng, k, b.lo, b.hi)
            elif isinstance(value, np.ndarray):
                value = value[rows]
            pop.component(comp)[rows] = value

        start("energy", "start", "energy", 1.0)
        start("hunger", "start", "hunger", 1.0)
        if eco is not None and eco.stamina is not None:
            start("stamina", "start", "stamina", view.get("stamina", "max"))
        if eco is not None and eco.age is not None:
            start("age", "start", "age", 10.0)
        if pop.has_component("starving"):
            pop.component("starving")[rows] = 0.0
