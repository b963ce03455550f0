"""The command buffer: structural changes wait for the end of the step.

Behaviours, ecology and the player never add or remove animals mid-step, so every
reader of the step-start snapshot sees a consistent world. Commands are applied in a
fixed order — tag changes, kills, spawns — so the outcome does not depend on who
issued them first.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import numpy as np



@dataclass
class _Spawn:
    species: str
    position: np.ndarray
    velocity: np.ndarray
    components: Optional[Mapping[str, np.ndarray]] = None
    tags: Sequence[str] = ()


@dataclass
class CommandBuffer:
    """Pending spawns, kills and tag changes, applied by :meth:`apply`."""

    _spawns: list = field(default_factory=list)
    _kills: list = field(default_factory=list)
    _retags: list = field(default_factory=list)

    def spawn(self, species: str, position, velocity=None, components=None, tags: Sequence[str] = ()) -> None:
        position = np.atleast_2d(np.asarray(position, np.float32))
        if velocity is None:
            velocity = np.zeros_like(position)
        velocity = np.atleast_2d(np.asarray(velocity, np.float32))
        self._spawns.append(_Spawn(species, position, velocity, components, tuple(tags)))

    def kill(self, species: str, uids, cause: str = "removed") -> None:
        """``uids`` leave at the end of the step; ``cause`` goes to the journal (``despawned``: not a death)."""
        self._kills.append((species, np.atleast_1d(np.asarray(uids, np.int64)), cause))

    def retag(self, species: str, uids, add: Sequence[str] = (), remove: Sequence[str] = ()) -> None:
        self._retags.append((species, np.atleast_1d(np.asarray(uids, np.int64)), tuple(add), tuple(remove)))

    def state(self) -> dict:
        """Pending changes as plain data (a snapshot taken between steps after a player action)."""
        return {
            "spawns": [{"species": s.species, "position": s.position.copy(), "velocity": s.velocity.copy(),
                        "components": None if s.components is None else
                        {k: np.asarray(v).copy() for k, v in s.components.items()},
                        "tags": list(s.tags)} for s in self._spawns],
            "kills": [[species, uids.copy(), cause] for species, uids, cause in self._kills],
            "retags": [[species, uids.copy(), list(add), list(remove)] for species, uids, add, remove in self._retags],
        }

    def load_state(self, state: dict) -> None:
        self._spawns = [_Spawn(s["species"], np.asarray(s["position"], np.float32),
                               np.asarray(s["velocity"], np.float32), s["components"], tuple(s["tags"]))
                        for s in state["spawns"]]
        self._kills = [(kill[0], np.asarray(kill[1], np.int64), kill[2] if len(kill) > 2 else "removed")
                       for kill in state["kills"]]
        self._retags = [(species, np.asarray(uids, np.int64), tuple(add), tuple(remove))
                        for species, uids, add, remove in state["retags"]]

    def __len__(self) -> int:
        return len(self._spawns) + len(self._kills) + len(self._retags)

    def apply(self, world) -> dict[str, np.ndarray]:
        """Apply everything queued; returns the uids killed per species.

        Each death (or despawn) and each newcomer is written to ``world.journal``.
        """
        journal = world.journal
        for species, uids, add, remove in self._retags:
            pop = world.population(species)
            rows = np.flatnonzero(np.isin(pop.uid, uids))
            add_bits = world.tag_bits(add)
            remove_bits = world.tag_bits(remove)
            pop.tags[rows] = (pop.tags[rows] | np.uint32(add_bits)) & np.uint32(~remove_bits & 0xFFFFFFFF)
        killed: dict[str, list] = {}
        for species, uids, cause in self._kills:
            pop = world.population(species)
            rows = np.flatnonzero(np.isin(pop.uid, uids) & pop.alive)
            pop.alive[rows] = False
            killed.setdefault(species, []).append(pop.uid[rows].copy())
            if rows.size:
                if cause == "despawned":
                    journal.log_many("despawn", species, pop.uid[rows], pop.position[rows])
                else:
                    journal.log_many("death", species, pop.uid[rows], pop.position[rows], cause=cause)
        for name in {kill[0] for kill in self._kills}:
            world.population(name).compact()
        for sp in self._spawns:
            pop = world.population(sp.species)
            uids = world.new_uids(len(sp.position))
            pop.append(uids, sp.position, sp.velocity, components=sp.components, tags=world.tag_bits(sp.tags))
            journal.log_many("spawn", sp.species, uids, sp.position)
        self._spawns.clear()
        self._kills.clear()
        self._retags.clear()
        return {k: np.concatenate(v) for k, v in killed.items()}
