"""The world: populations, the clock, the tag table, the RNG and the command buffer."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np

from .commands import CommandBuffer
from .journal import Journal
from .population import Population


@dataclass
class Clock:
    """Fixed-step clock: every rate in Starling is multiplied by ``dt``."""

    dt: float
    time: float = 0.0
    step: int = 0
    #: time and step where the current ``dt`` took effect (a run whose dt was changed live)
    origin_time: float = 0.0
    origin_step: int = 0

    def advance(self) -> None:
        self.step += 1
        # no drift from repeated float addition
        self.time = self.origin_time + (self.step - self.origin_step) * self.dt


class World:
    """Every population plus shared state.

    ``bounds_min``/``bounds_max`` describe the world box; with ``wrap`` it is periodic
    (used by the benchmark's wrap-around cube).
    """

    def __init__(self, dt: float, seed: int, bounds_min=(-100, 0, -100), bounds_max=(100, 100, 100),
                 wrap: bool = False):
        self.clock = Clock(dt)
        self.seed = int(seed)
        self.rng = np.random.default_rng(np.random.SeedSequence(self.seed))
        self.bounds_min = np.asarray(bounds_min, np.float64)
        self.bounds_max = np.asarray(bounds_max, np.float64)
        self.wrap = bool(wrap)
        self.commands = CommandBuffer()
        self.journal = Journal(self.clock)
        self._populations: dict[str, Population] = {}
        self._tags: dict[str, int] = {}
        self._next_uid = 0
        self._rngs: dict[tuple, np.random.Generator] = {}

    # populations
    def add_population(self, population: Population) -> Population:
        if population.name in self._populations:
            raise ValueError(f"species {population.name!r} already exists")
        self._populations[population.name] = population
        return population

    def ensure_population(self, name: str, components: Optional[dict] = None, capacity: int = 16) -> Population:
        """The population ``name``, made empty if it does not exist yet (restored worlds already have it)."""
        pop = self._populations.get(name)
        if pop is None:
            return self.add_population(Population(name, capacity=capacity, components=components))
        for comp, default in (components or {}).items():
            pop.add_component(comp, default)
        return pop

    def population(self, name: str) -> Population:
        try:
            return self._populations[name]
        except KeyError:
            raise KeyError(f"unknown species {name!r}; known: {', '.join(self._populations)}") from None

    @property
    def populations(self) -> dict[str, Population]:
        return self._populations

    # identities and tags
    def new_uids(self, count: int) -> np.ndarray:
        uids = np.arange(self._next_uid, self._next_uid + count, dtype=np.int64)
        self._next_uid += count
        return uids

    def tag_bit(self, name: str) -> int:
        """The bit of tag ``name``, allocated on first use (32 tags at most)."""
        bit = self._tags.get(name)
        if bit is None:
            if len(self._tags) >= 32:
                raise ValueError(f"too many tags (32 at most); cannot add {name!r}")
            bit = 1 << len(self._tags)
            self._tags[name] = bit
        return bit

    def tag_bits(self, names: Iterable[str]) -> int:
        bits = 0
        for name in names:
            bits |= self.tag_bit(name)
        return bits

    @property
    def tags(self) -> dict[str, int]:
        return dict(self._tags)

    def species_rng(self, index: int, stream: int = 0) -> np.random.Generator:
        """An independent generator per species (and per ``stream`` of it), derived from the simulation seed.

        Stream 0 places the initial animals; the others serve the per-animal draws of
        individual variation (1: behaviour parameters, 2: mover parameters, 3: ecology
        numbers), so adding one kind of draw never shifts another.
        """
        key = (index,) if stream == 0 else (index, stream)
        rng = self._rngs.get(key)
        if rng is None:
            rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=key))
            self._rngs[key] = rng
        return rng

    def keyed_rng(self, *key: int) -> np.random.Generator:
        """A generator of the world's seed for a system's own ``key`` (one object per key, so its
        state is part of :meth:`state`)."""
        key = ("k",) + tuple(int(k) for k in key)
        rng = self._rngs.get(key)
        if rng is None:
            rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=key[1:]))
            self._rngs[key] = rng
        return rng

    # ------------------------------------------------------------------ state
    def state(self) -> dict:
        """Everything that changes while running, as plain data (see ``Simulation.snapshot``)."""
        return {
            "seed": self.seed,
            "clock": {"dt": self.clock.dt, "time": self.clock.time, "step": self.clock.step,
                      "origin_time": self.clock.origin_time, "origin_step": self.clock.origin_step},
            "next_uid": self._next_uid,
            "tags": dict(self._tags),
            "rng": self.rng.bit_generator.state,
            "rngs": [[list(k), g.bit_generator.state] for k, g in self._rngs.items()],
            "populations": {name: pop.state() for name, pop in self._populations.items()},
            "commands": self.commands.state(),
        }

    def load_state(self, state: dict) -> None:
        """Continue from ``state``: populations are replaced by the saved ones (created when missing)."""
        clock = state["clock"]
        self.clock.time = float(clock["time"])
        self.clock.step = int(clock["step"])
        if float(clock["dt"]) == self.clock.dt:
            self.clock.origin_time = float(clock["origin_time"])
            self.clock.origin_step = int(clock["origin_step"])
        else:  # dt changed live: the new step length counts from now
            self.clock.origin_time, self.clock.origin_step = self.clock.time, self.clock.step
        self._next_uid = int(state["next_uid"])
        self._tags = {str(k): int(v) for k, v in state["tags"].items()}
        self.rng.bit_generator.state = state["rng"]
        for key, rng_state in state["rngs"]:
            key = tuple(key)
            if key and key[0] == "k":
                self.keyed_rng(*key[1:]).bit_generator.state = rng_state
            else:
                self.species_rng(key[0], 0 if len(key) == 1 else key[1]).bit_generator.state = rng_state
        for name, pop_state in state["populations"].items():
            pop = self._populations.get(name)
            if pop is None:
                pop = self.add_population(Population(name, capacity=max(16, int(pop_state["n"]))))
            pop.load_state(pop_state)
        self.commands.load_state(state["commands"])

    @property
    def box(self) -> Optional[np.ndarray]:
        """Side lengths of the periodic box, or None when the world does not wrap."""
        return (self.bounds_max - self.bounds_min) if self.wrap else None
