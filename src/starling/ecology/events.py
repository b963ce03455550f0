"""Scripted events: a timeline of disturbances, so an experiment is reproducible headless.

``[[events]]`` in a scenario lists what happens when; each event fires once, at the
start of the first step whose time is at or after its ``at``::

    [[events]]
    at = 20.0
    kind = "gunshot"            # the player fires toward a point
    target = [10.0, -3.0, 0.0]

Kinds:

``gunshot``   the player (or ``origin``) fires toward ``target``, along ``direction``, or at the
              centre of ``target_species``
``sound``     a noise of ``loudness`` at ``position``
``apple``     an apple thrown from ``origin`` (default the player's hand) with ``velocity``,
              or so that it lands on ``target`` after ``flight_time`` seconds
``spawn``     ``count`` animals of ``species`` around ``center`` (default: the species' spawn region)
``kill``      ``count`` random animals of ``species`` (or those ``uids``) die
``despawn``   like ``kill`` but they simply leave (no death, no carcass)
``tag``       add/remove tags on ``count`` random animals of ``species`` (all when no count)
``set``       change a parameter during the run: ``path`` and ``value`` exactly as ``--set``
              (``species.fish.groups.school.behaviors.cohesion.weight_direction``)
``move_player`` the player walks to ``to`` (at its walk speed) or jumps to ``position``

Structural effects (spawns, deaths, sounds, apples) go through the command buffer, so
they take effect at the end of that step and everyone sees them from the next one.
"""
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, RootModel, model_validator

from ..steering.params import StrictModel, Vec3


class _Event(StrictModel):
    at: float = Field(..., ge=0, description="Simulation time of the event, s.")


class GunshotEvent(_Event):
    """The player fires (seed 000, 11.1.2): the first animal on the ray dies, sounds at muzzle and impact."""

    kind: Literal["gunshot"] = "gunshot"
    origin: Optional[Vec3] = Field(None, description="Muzzle position, m (default: the player's).")
    target: Optional[Vec3] = Field(None, description="Aim at this point, m.")
    direction: Optional[Vec3] = Field(None, description="Or fire along this direction.")
    target_species: Optional[str] = Field(None, description="Or aim at the centre of this species' animals.")

    @model_validator(mode="after")
    def _aim(self):
        if sum(x is not None for x in (self.target, self.direction, self.target_species)) != 1:
            raise ValueError("give exactly one of 'target', 'direction' or 'target_species'")
        if self.direction is not None and not any(self.direction):
            raise ValueError("direction must not be zero")
        return self


class SoundEvent(_Event):
    """A noise at a point."""

    kind: Literal["sound"] = "sound"
    position: Vec3 = Field(..., description="Where, m.")
    loudness: float = Field(1.0, gt=0, description="Loudness (1 = a gunshot).")
    lifetime: Optional[float] = Field(None, gt=0, description="Seconds it lasts (default: [ecology.sounds]).")


class AppleEvent(_Event):
    """An apple is thrown (or dropped)."""

    kind: Literal["apple"] = "apple"
    origin: Optional[Vec3] = Field(None, description="Where it leaves the hand, m (default: the player's hand).")
    velocity: Optional[Vec3] = Field(None, description="Initial velocity, m/s.")
    target: Optional[Vec3] = Field(None, description="Or throw it so that it arrives here.")
    flight_time: float = Field(1.2, gt=0, description="Seconds to reach target, s.")

    @model_validator(mode="after")
    def _aim(self):
        if self.velocity is not None and self.target is not None:
            raise ValueError("give 'velocity' or 'target', not both")
        return self


class SpawnEvent(_Event):
    """New animals enter the world."""

    kind: Literal["spawn"] = "spawn"
    species: str = Field(..., description="Species of the newcomers.")
    count: int = Field(1, ge=1, le=1_000_000, description="How many.")
    center: Optional[Vec3] = Field(None, description="Centre of a sphere they start in (default: the species' spawn).")
    radius: float = Field(2.0, ge=0, description="Radius of that sphere, m.")
    speed: float = Field(1.0, ge=0, description="Initial speed, m/s.")
    tags: list[str] = Field(default_factory=list, description="Tags they are born with.")


class _Selection(_Event):
    species: str = Field(..., description="Species of the animals concerned.")
    count: Optional[int] = Field(None, ge=1, description="How many random animals (default: all, or the uids).")
    uids: list[int] = Field(default_factory=list, description="These animals.")


class KillEvent(_Selection):
    """Animals die (and leave carcasses where configured)."""

    kind: Literal["kill"] = "kill"
    count: Optional[int] = Field(1, ge=1)


class DespawnEvent(_Selection):
    """Animals leave the world (no death counted, no carcass)."""

    kind: Literal["despawn"] = "despawn"
    count: Optional[int] = Field(1, ge=1)


class TagEvent(_Selection):
    """Tags change."""

    kind: Literal["tag"] = "tag"
    add: list[str] = Field(default_factory=list, description="Tags added.")
    remove: list[str] = Field(default_factory=list, description="Tags removed.")


class SetEvent(_Event):
    """A parameter changes during the run (the same path syntax as ``--set``)."""

    kind: Literal["set"] = "set"
    path: str = Field(..., min_length=1, description="e.g. species.fish.behaviors.wandering.max_speed")
    value: Any = Field(..., description="New value (number, boolean, string, list, or a table such as a distribution).")


class MovePlayerEvent(_Event):
    """The player walks somewhere or is placed there."""

    kind: Literal["move_player"] = "move_player"
    to: Optional[Vec3] = Field(None, description="Walk here at the player's walk speed.")
    position: Optional[Vec3] = Field(None, description="Or jump here.")
    look: Optional[Vec3] = Field(None, description="New viewing direction.")

    @model_validator(mode="after")
    def _where(self):
        if (self.to is None) == (self.position is None):
            raise ValueError("give exactly one of 'to' or 'position'")
        return self


Event = Annotated[
    Union[GunshotEvent, SoundEvent, AppleEvent, SpawnEvent, KillEvent, DespawnEvent, TagEvent, SetEvent,
          MovePlayerEvent],
    Field(discriminator="kind"),
]


class EventsConfig(RootModel[list[Event]]):
    """A timeline of scripted events (``[[events]]``), each at a time in seconds."""

    def __iter__(self):
        return iter(self.root)

    def __len__(self) -> int:
        return len(self.root)


#: the parts of a scenario a ``set`` event may change while it runs
SETTABLE_SPECIES = ("behaviors", "groups", "mover", "merger", "components", "ecology", "brain")
SETTABLE_TOP = ("ecology",)


def settable_problem(path: str, species_names: list[str]) -> Optional[str]:
    """Why ``path`` cannot be changed during a run (None if it can)."""
    keys = [k for k in path.split(".") if k]
    hint = ("settable: species.<name>.{" + ",".join(SETTABLE_SPECIES) + "}.…, ecology.…")
    if not keys:
        return "empty path"
    if keys[0] in SETTABLE_TOP and len(keys) > 1:
        return None
    if keys[0] == "species" and len(keys) >= 4 and keys[2] in SETTABLE_SPECIES:
        return None
    if keys[0] == "species" and len(keys) >= 3 and keys[2] == "components":
        return None if len(keys) == 4 else "name one component: species.<name>.components.<component>"
    return f"{'.'.join(keys[:3])!r} cannot be changed during a run ({hint})"
