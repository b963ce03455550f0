"""What the ecology systems share: one view per species and the ecology's context.

A :class:`SpeciesView` is a species as every ecology system sees it: its config tables,
its population, and its parameters that are plain numbers or drawn per animal. The
:class:`EcologyContext` holds the views, the ecology's random stream and the systems
themselves, so a system can ask another to act (a catch kills through the lifecycle,
a death leaves a carcass through feeding) without importing it.

Drawn parameters: any number in the ``energy``, ``hunger``, ``stamina``, ``age``,
``mouth``, ``eating``, ``graze``, ``food`` and ``carcass`` tables may be a distribution.
The system that owns a table keeps one component per drawn field, named
``var_<table>_<field>``; every animal draws its value once, when it enters, from the
species' ecology stream (stream 3 of the world's per-species generators).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..systems import ComponentSpec
from .components import HungerConfig
from .config import SPECIES_SECTIONS
from .food import EatingConfig
from .variation import Distribution, bounds_of

#: start values: drawn straight into their component at birth, not kept as a drawn parameter
STARTS = {("energy", "start"): "energy", ("hunger", "start"): "hunger",
          ("stamina", "start"): "stamina", ("age", "start"): "age"}
#: the values used for a table the species does not have
DEFAULTS = {"eating": EatingConfig(), "hunger": HungerConfig()}
#: the world's keyed random stream of the ecology (events, brains, births, carcasses, apples)
STREAM = 0xEC0


def sampled_of(eco, sections) -> dict:
    """(section, field) -> (component, distribution) of an ecology table's per-animal draws."""
    out = {}
    for section in sections:
        sub = getattr(eco, section, None) if eco is not None else None
        if sub is None:
            continue
        for field in type(sub).model_fields:
            value = getattr(sub, field)
            if isinstance(value, Distribution) and (section, field) not in STARTS:
                out[(section, field)] = (f"var_{section}_{field}", value)
    return out


class SpeciesView:
    """One species' config tables, population and parameters, shared by the ecology systems."""

    def __init__(self, sim, index: int):
        self.index = index
        self.pipeline = sim.pipelines[index]
        self.name = self.pipeline.name
        self.pop = sim.world.population(self.name)
        self.cfg = sim.scenario.species[index]
        self.eco = getattr(self.cfg, "ecology", None)
        self.brain_cfg = getattr(self.cfg, "brain", None)
        self.variation = getattr(self.cfg, "variation", None)
        self.mover_max = float(self.cfg.mover.max_speed)
        #: whose top speed differs per animal: the mover's max_speed drawn per animal, and/or a drawn factor on it
        self.max_speed_drawn = "max_speed" in self.cfg.mover.varied
        self.speed_factor_drawn = self.variation is not None and self.variation.max_speed is not None
        #: a species with any ecology section carries the kit of components the systems keep
        self.kit = any(getattr(self.cfg, s, None) is not None for s in SPECIES_SECTIONS)
        previous = getattr(sim, "previous_scenario", None)
        #: the config this species ran under before a restore or a reconfiguration (None: fresh)
        self.before = next((sp for sp in (previous.species if previous is not None else ()) if sp.name == self.name),
                           None)
        self.draw_rng = sim.world.species_rng(index, stream=3)
        self.sampled: dict = {}

    def bind_sampled(self, sections) -> list[ComponentSpec]:
        """Keep one drawn component per distribution in ``sections``; returns their specs.

        A component whose distribution is unchanged since the previous config keeps the
        animals' draws (newcomers draw the same way); a new or changed one is redrawn for
        everyone; one no longer drawn stops drawing.
        """
        pop = self.pop
        old_sampled = sampled_of(getattr(self.before, "ecology", None), sections) if self.before is not None else {}
        out = []
        for section in sections:
            sub = getattr(self.eco, section, None) if self.eco is not None else None
            if sub is None:
                continue
            for field, info in type(sub).model_fields.items():
                value = getattr(sub, field)
                if not isinstance(value, Distribution) or (section, field) in STARTS:
                    continue
                comp = f"var_{section}_{field}"
                b = bounds_of(info)
                rng = self.draw_rng
                draw = (lambda k, d=value, b=b: d.sample(rng, k, b.lo, b.hi))
                if old_sampled.get((section, field), (None, None))[1] != value or not pop.has_component(comp):
                    pop.add_drawn_component(comp, draw, value.mean())
                else:
                    pop.set_draw(comp, draw, value.mean())
                self.sampled[(section, field)] = (comp, value)
                out.append(ComponentSpec(comp, default=value.mean()))
        for key, (comp, _) in old_sampled.items():
            if key not in self.sampled:
                pop.drop_draw(comp)
        return out

    def get(self, section: str, field: str):
        """A parameter: a number, or the per-animal array of its draws (a missing table: its defaults)."""
        hit = self.sampled.get((section, field))
        if hit is not None:
            return self.pop.component(hit[0])
        sub = getattr(self.eco, section, None)
        value = getattr(sub if sub is not None else DEFAULTS[section], field)
        return value.mean() if isinstance(value, Distribution) else float(value)

    def value_at(self, section: str, field: str, row: int) -> float:
        v = self.get(section, field)
        return float(v[row]) if isinstance(v, np.ndarray) else float(v)

    def top_speed(self):
        """Each animal's own top speed (the mover's, drawn per animal or not, times its drawn factor)."""
        top = self.mover_max
        if self.max_speed_drawn:
            top = self.pop.component("mover_max_speed").astype(np.float64)
        if self.speed_factor_drawn:
            return top * self.pop.component("var_max_speed")
        return top

    def has(self, section: str) -> bool:
        """Whether the species' ``[species.ecology]`` has the table ``section``."""
        return self.eco is not None and getattr(self.eco, section, None) is not None


class EcologyContext:
    """The ecology of one simulation: species views, the shared random stream and the systems.

    The systems are set once they are all built; each reaches the others through here.
    """

    def __init__(self, sim, cfg):
        self.sim = sim
        self.world = sim.world
        self.cfg = cfg
        #: one stream for every ecology draw, in the fixed order of the systems (its state is the world's)
        self.rng = sim.world.keyed_rng(STREAM)
        self.species = [SpeciesView(sim, i) for i in range(len(sim.pipelines))]
        self.by_name = {v.name: v for v in self.species}
        self.systems: tuple = ()
        self.lifecycle = self.player = self.sounds = self.energy = self.feeding = self.brains = None
        self.factors = None

    def attach(self, systems) -> None:
        self.systems = tuple(systems)
        for system in systems:
            setattr(self, system.name, system)

    @property
    def environment(self):
        return getattr(self.sim, "environment", None)

    def view(self, name: str) -> Optional[SpeciesView]:
        return self.by_name.get(name)
