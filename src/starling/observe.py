"""Watching a run: what an observer is handed after a step (``Simulation.observe``).

Observers are the one way anything watches a simulation — the browser's frames, the
live metrics, a recorder — so they get read-only views: a watcher can never change
what it watches, and the step never pays for copies nobody asked for.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .world import Population


class ReadOnlyPopulation:
    """One population's arrays as read-only views (what an observer sees)."""

    __slots__ = ("_pop",)

    def __init__(self, pop: Population):
        self._pop = pop

    @property
    def name(self) -> str:
        return self._pop.name

    @property
    def n(self) -> int:
        return self._pop.n

    @property
    def component_names(self) -> tuple[str, ...]:
        return self._pop.component_names

    def component(self, name: str) -> np.ndarray:
        return _frozen(self._pop.component(name))

    def __getattr__(self, name: str) -> np.ndarray:
        if name.startswith("_"):
            raise AttributeError(name)
        return _frozen(getattr(self._pop, name))


def _frozen(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


class StepView:
    """What an observer is handed after a step: the clock and read-only populations.

    Valid during the callback; copy what you keep. ``sim`` is there for the read-only
    helpers (``metrics()``, ``scene()``, ``inspect()``); changing the simulation from an
    observer is not supported.
    """

    def __init__(self, sim: Any):
        self.sim = sim
        self.step = sim.step_count
        self.time = sim.time
        self.dt = sim.dt
        self.species = sim.species
        self.tags = sim.world.tags

    def population(self, name: str) -> ReadOnlyPopulation:
        return ReadOnlyPopulation(self.sim.world.population(name))

    @property
    def populations(self) -> dict[str, ReadOnlyPopulation]:
        """Every population: the species, then what systems made (apples, sounds, the player, …)."""
        return {name: ReadOnlyPopulation(pop) for name, pop in self.sim.world.populations.items()}


class Observer:
    """A callback attached to a simulation by :meth:`Simulation.observe`."""

    def __init__(self, sim: Any, callback: Callable[[StepView], None], every: int):
        self._sim = sim
        self.callback = callback
        self.every = every

    def close(self) -> None:
        """Stop being called (idempotent)."""
        observers = self._sim._observers
        if self in observers:
            observers.remove(self)
