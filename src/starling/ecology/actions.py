"""Brain actions: what animals do when they enter a state (a state's ``on_enter`` list).

An action is registered like a behaviour, with a parameter model whose ``kind`` names
it, and then appears in configs, the JSON Schema and the editor::

    from typing import Literal
    from pydantic import Field
    from starling.steering import registry
    from starling.steering.params import BrainActionParams

    class Glow(BrainActionParams):
        kind: Literal["glow"] = "glow"
        level: float = Field(1.0, ge=0)

    @registry.brain_action("glow", params=Glow)
    def glow(ctx, rows, params):
        ctx.population.component("glow")[rows] = params.level

``rows`` are the rows (in ``ctx.population``) of the animals that entered the state in
this step's transitions; actions run right after the transitions, before the
behaviours. Structural changes go through the command buffer (``ctx.commands``, or the
helpers below) and appear at the end of the step, like every other's.

The built-in actions (registered here, through the ecology's plugin entry point):

``sound``   each entering animal makes a sound at its position (a lion roars, a sheep bleats)
``tag``     the entering animals get a tag
``untag``   the entering animals lose a tag
"""
from __future__ import annotations

from typing import Literal, Optional

import numpy as np
from pydantic import Field

from ..steering import registry
from ..steering.params import BrainActionParams


class ActionContext:
    """What an action may use: the species' population, the ecology's systems, the clock."""

    def __init__(self, ctx, view, state: str):
        self._ctx = ctx
        self.sim = ctx.sim
        #: the species and its population (read and write its components by row)
        self.species = view.name
        self.population = view.pop
        #: the state the animals entered
        self.state = state
        self.commands = ctx.world.commands
        #: the ecology's random stream (draw from it, in row order, to stay reproducible)
        self.rng = ctx.rng

    @property
    def time(self) -> float:
        return self.sim.time

    def uids(self, rows) -> np.ndarray:
        return self.population.uid[rows].copy()

    def make_sound(self, positions, loudness: float = 1.0, lifetime: Optional[float] = None) -> None:
        """One sound at each of ``positions`` ((k, 3)); they appear at the end of the step."""
        for p in np.atleast_2d(np.asarray(positions, np.float64)):
            self._ctx.sounds.make_sound(p, loudness, lifetime)

    def retag(self, rows, add=(), remove=()) -> None:
        """Add and remove tags of the animals at ``rows`` (at the end of the step)."""
        self._ctx.lifecycle.retag(self.species, self.uids(rows), add=add, remove=remove)

    def kill(self, rows, cause: str = "killed") -> int:
        """The animals at ``rows`` die at the end of the step (with carcasses where configured)."""
        return self._ctx.lifecycle.kill(self.species, self.uids(rows), cause=cause)


class SoundAction(BrainActionParams):
    """Each animal entering the state makes a sound where it is (a lion roars, a sheep bleats)."""

    kind: Literal["sound"] = "sound"
    loudness: float = Field(1.0, gt=0, description="Loudness (1 = a gunshot at the muzzle).")
    lifetime: Optional[float] = Field(None, gt=0, description="Seconds it lasts (default: [ecology.sounds]).")


class TagAction(BrainActionParams):
    """The animals entering the state get a tag (queries and brains can select them by it)."""

    kind: Literal["tag"] = "tag"
    tag: str = Field(..., min_length=1, description="The tag added.")


class UntagAction(BrainActionParams):
    """The animals entering the state lose a tag."""

    kind: Literal["untag"] = "untag"
    tag: str = Field(..., min_length=1, description="The tag removed.")


@registry.brain_action("sound", params=SoundAction)
def sound(ctx: ActionContext, rows: np.ndarray, params: SoundAction) -> None:
    """A sound at each entering animal's position, in row order."""
    ctx.make_sound(ctx.population.position[rows], params.loudness, params.lifetime)


@registry.brain_action("tag", params=TagAction)
def tag(ctx: ActionContext, rows: np.ndarray, params: TagAction) -> None:
    """Add ``tag`` to the entering animals (through the command buffer)."""
    ctx.retag(rows, add=[params.tag])


@registry.brain_action("untag", params=UntagAction)
def untag(ctx: ActionContext, rows: np.ndarray, params: UntagAction) -> None:
    """Remove ``tag`` from the entering animals (through the command buffer)."""
    ctx.retag(rows, remove=[params.tag])
