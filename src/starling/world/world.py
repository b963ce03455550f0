"""The world: populations, the clock, the tag table, the RNG and the command buffer."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np

from .commands import CommandBuffer
from .population import Population


@dataclass
class Clock:
    """Fixed-step clock: every rate in Starling is multiplied by ``dt``."""

    dt: float
    time: float = 0.0
    step: int = 0

    def advance(self) -> None:
        self.step += 1
        self.time = self.step * self.dt  # no drift from repeated float addition


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
        self._populations: dict[str, Population] = {}
        self._tags: dict[str, int] = {}
        self._next_uid = 0

    # populations
    def add_population(self, population: Population) -> Population:
        if population.name in self._populations:
            raise ValueError(f"species {population.name!r} already exists")
        self._populations[population.name] = population
        return population

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
        return np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=key))

    @property
    def box(self) -> Optional[np.ndarray]:
        """Side lengths of the periodic box, or None when the world does not wrap."""
        return (self.bounds_max - self.bounds_min) if self.wrap else None
