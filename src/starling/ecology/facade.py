"""One object for the whole ecology of a simulation: what ``ecology_of(sim)`` returns.

The ecology is several systems (see :mod:`.sections`); scripts, tests and the player's
actions want one handle. :class:`Ecology` forwards to the system that does the work, so
it sees the running state, also after ``sim.reconfigure`` (the systems a caller holds
take over the rebuilt ones' state).
"""
from __future__ import annotations

from typing import Optional


class Ecology:
    """The ecology's public API: kills, spawns, sounds, the player, counters."""

    def __init__(self, ctx):
        self._lifecycle = ctx.lifecycle
        self._player = ctx.player
        self._sounds = ctx.sounds
        self.systems = ctx.systems

    # lifecycle
    @property
    def counters(self) -> dict:
        """Per species: ``{"deaths", "eaten", "caught"}``."""
        return self._lifecycle.counters

    @property
    def causes(self) -> dict:
        """Per species: deaths by cause (``caught``, ``shot``, ``starvation``, ``old age``, …)."""
        return self._lifecycle.causes

    def kill(self, species: str, uids, cause: str = "killed", carcass_food: Optional[float] = None) -> int:
        """Animals die at the end of this step (with carcasses where configured); returns how many."""
        return self._lifecycle.kill(species, uids, cause=cause, carcass_food=carcass_food)

    def despawn(self, species: str, uids) -> int:
        """Entities leave at the end of this step (no death, no carcass); returns how many."""
        return self._lifecycle.despawn(species, uids)

    def spawn(self, species: str, positions, velocities=None, tags=()) -> None:
        """New animals at the end of this step; their ecology numbers are drawn when they appear."""
        self._lifecycle.spawn(species, positions, velocities, tags=tags)

    def retag(self, species: str, uids, add=(), remove=()) -> None:
        """Add and remove tags at the end of this step."""
        self._lifecycle.retag(species, uids, add=add, remove=remove)

    def run_event(self, event) -> None:
        """Carry out one scripted event now."""
        self._lifecycle.run_event(event)

    # sounds and the player
    def make_sound(self, position, loudness: float = 1.0, lifetime: Optional[float] = None) -> None:
        """A sound at ``position`` (appears at the end of the step)."""
        self._sounds.make_sound(position, loudness, lifetime)

    @property
    def has_player(self) -> bool:
        return self._player.has_player

    @property
    def shots(self) -> int:
        return self._player.shots

    @property
    def apples_thrown(self) -> int:
        return self._player.apples_thrown

    def fire(self, origin, direction) -> dict:
        """The player's shot (see :meth:`PlayerSystem.fire`)."""
        return self._player.fire(origin, direction)

    def throw_apple(self, origin, velocity) -> None:
        self._player.throw_apple(origin, velocity)

    def move_player(self, position, look=None) -> None:
        self._player.move_player(position, look)

    def walk_player(self, target) -> None:
        self._player.walk_player(target)
