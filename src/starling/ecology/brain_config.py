"""Brain configs: per-species state machines declared as data (thesis 12.2; seed 004, 1.3; the savannah's lions).

A brain is a list of **states** and an ordered list of **transitions**. Every step,
before any behaviour runs, each animal takes the first transition that

1. starts from its current state (``from``: a name, a list of names, or ``"*"``),
2. has every condition in ``when`` true (an empty list is true), and
3. passes its random draw, if it has ``probability_per_second``.

A transition that leads to the state the animal is already in *holds* it there (later
transitions are not tried and its timer keeps running); this is how "stay afraid while
a shark is in sight" is written before the ways out of fear.

Conditions are structured data, never code:

* ``{ var = "energy", op = "<", value = 0.2 }``: a per-animal number — ``energy``,
  ``hunger``, ``stamina``, ``age``, ``time_in_state`` (s), ``speed`` (m/s), ``chew`` (s),
  ``threat_memory``, or any component of the species;
* ``{ count = { targets = ["shark"], within = 8.0, fov_deg = 300 }, op = ">=", value = 1 }``:
  how many animals of those species (filtered by ``tags``/``exclude_tags``) are within
  ``within`` metres and the field of view (the animal itself never counts);
* ``{ event = "caught_prey" }``: something that happened to the animal in the previous
  step — ``caught_prey``, ``bit_food`` or ``heard_sound``.

**Probabilities are per second.** ``probability_per_second = p`` is the chance that the
transition fires within one second while its conditions hold; each step it fires with
``1 − (1 − p) ** dt``. The time to fire is then exponentially distributed with the same
law at every frame rate (the test runs dt = 1/30 and 1/240).

Each **state** can override how the species moves: ``max_speed`` (m/s) replaces the
mover's top speed, ``max_rotation_deg`` its rotation limit (the ``yaw`` mover: seed 001's
lone zebra turns at 5°/s, a herded one at 45°/s), ``target_speed`` is the cruising speed the ``cruise`` behaviour asks
for, ``acceleration`` scales every acceleration rate, ``emergency = true`` multiplies
it again by the brain's ``emergency_acceleration`` (seed 004: afraid fish and attacking
predators accelerate harder), ``weights`` scales behaviours' desires (by label or kind),
``enabled`` lists the only behaviours that run, ``disabled`` the ones that do not.

``on_enter`` lists **actions** the animals take when they enter the state (not when they
are born into the initial state, nor when a transition holds them where they are):
``{ kind = "sound", loudness = 1.0 }`` (a lion roars, a sheep bleats), ``{ kind = "tag",
tag = "alarmed" }``, ``{ kind = "untag", tag = "alarmed" }``, or any action a plugin
registers with :func:`starling.steering.registry.brain_action`.

:class:`~starling.ecology.brains.BrainsSystem` runs them (``before_behaviors``): it refreshes the threat memories
the ``flee_memory`` behaviour reads (hysteresis), then takes every animal's transitions;
after the movers it advances the time in state. It owns ``state``, ``state_time``,
``target_speed`` and the ``threat_*`` memory of every species with an ecology section.
"""
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import ConfigDict, Field, create_model, field_validator, model_validator

from ..steering import registry
from ..steering.params import BrainActionParams, StrictModel

EVENTS = ("caught_prey", "bit_food", "heard_sound")
BUILTIN_VARIABLES = ("energy", "hunger", "stamina", "age", "time_in_state", "speed", "chew", "threat_memory")
Op = Literal["<", "<=", ">", ">=", "==", "!="]

#: event name → the per-animal component flag the ecology system sets
EVENT_COMPONENTS = {"caught_prey": "event_caught", "bit_food": "event_bit", "heard_sound": "event_heard"}


class CountQuery(StrictModel):
    """Which animals to count around each animal."""

    targets: list[str] = Field(..., min_length=1, description="Species (or provided populations) counted.")
    tags: list[str] = Field(default_factory=list, description="Only those carrying any of these tags.")
    exclude_tags: list[str] = Field(default_factory=list, description="Ignore those carrying any of these tags.")
    within: float = Field(..., gt=0, description="Radius, m.")
    fov_deg: float = Field(360.0, gt=0, le=360, description="Field of view around forward, degrees.")


class Condition(StrictModel):
    """One test: a variable, a count of visible animals, or an event."""

    var: Optional[str] = Field(None, description="Per-animal variable compared with value.")
    count: Optional[CountQuery] = Field(None, description="Visible animals compared with value.")
    event: Optional[Literal[EVENTS]] = Field(None, description="Happened to the animal in the last step.")  # type: ignore[valid-type]
    op: Optional[Op] = Field(None, description="Comparison: <, <=, >, >=, ==, !=.")
    value: Optional[float] = Field(None, description="Right-hand side of the comparison.")

    @model_validator(mode="after")
    def _shape(self):
        subjects = [k for k in ("var", "count", "event") if getattr(self, k) is not None]
        if len(subjects) != 1:
            raise ValueError("a condition needs exactly one of 'var', 'count' or 'event'")
        if self.event is not None:
            if self.op is not None or self.value is not None:
                raise ValueError("an event condition takes no 'op' or 'value'")
        elif self.op is None or self.value is None:
            raise ValueError(f"a '{subjects[0]}' condition needs 'op' and 'value'")
        return self


class Transition(StrictModel):
    """Go from some states to another when every condition holds (and the draw passes)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, validate_by_name=True,
                              validate_by_alias=True, serialize_by_alias=True)

    from_: Union[str, list[str]] = Field("*", alias="from", description="State(s) this leaves; '*' is any.")
    to: str = Field(..., description="State entered.")
    when: list[Condition] = Field(default_factory=list, description="All must hold.")
    probability_per_second: Optional[float] = Field(
        None, ge=0, le=1, description="Chance of firing within one second while the conditions hold.")

    @field_validator("from_")
    @classmethod
    def _as_list(cls, v):
        return [v] if isinstance(v, str) else v

    def sources(self) -> list[str]:
        return list(self.from_)


class State(StrictModel):
    """A state and how it changes the species' steering and movement."""

    name: str = Field(..., min_length=1, description="State name.")
    max_speed: Optional[float] = Field(None, gt=0, description="Top speed in this state, m/s (default: the mover's).")
    target_speed: Optional[float] = Field(None, ge=0, description="Cruising speed the 'cruise' behaviour asks for, m/s.")
    acceleration: float = Field(1.0, gt=0, description="Factor on every acceleration rate of the mover.")
    max_rotation_deg: Optional[float] = Field(
        None, gt=0, description="Largest turn of the body in this state, degrees/s (default: the mover's; "
        "movers with a rotation limit only, such as yaw).")
    emergency: bool = Field(False, description="Accelerate harder (times the brain's emergency_acceleration).")
    weights: dict[str, float] = Field(default_factory=dict,
                                      description="Factor on a behaviour's desires, by label or kind.")
    enabled: Optional[list[str]] = Field(None, description="Only these behaviours run (by label or kind).")
    disabled: list[str] = Field(default_factory=list, description="These behaviours do not run.")
    on_enter: list[Any] = Field(default_factory=list,
                                description="Actions taken by the animals entering this state (sound, tag, untag, …).")

    @field_validator("on_enter")
    @classmethod
    def _actions(cls, v):
        """Each action by its registered kind (the scenario model validates them as a union already)."""
        out = []
        for item in v:
            if isinstance(item, BrainActionParams):
                out.append(item)
                continue
            kind = item.get("kind") if isinstance(item, dict) else None
            if kind is None:
                raise ValueError("an action needs a 'kind'")
            out.append(registry.get_brain_action(kind).params.model_validate(item))
        return out

    @field_validator("weights")
    @classmethod
    def _non_negative(cls, v):
        for key, w in v.items():
            if not w >= 0:
                raise ValueError(f"{key}: weight factors must be >= 0")
        return v


class BrainConfig(StrictModel):
    """A state machine for every animal of the species."""

    initial: Optional[str] = Field(None, description="State at spawn (default: the first).")
    emergency_acceleration: float = Field(2.0, gt=0, description="Acceleration factor of emergency states.")
    states: list[State] = Field(..., min_length=1, description="The states (names unique).")
    transitions: list[Transition] = Field(default_factory=list, description="Tried in order; the first that fires wins.")

    @classmethod
    def for_registry(cls):
        """This model with each state's ``on_enter`` typed as the union of the registered actions
        (what the scenario model, its JSON Schema and the editor use)."""
        version = registry.version()
        cached = _specialised.get("brain")
        if cached is not None and cached[0] == version:
            return cached[1]
        actions = [a.params for a in registry.brain_actions()]
        if not actions:
            model = cls
        else:
            union = actions[0] if len(actions) == 1 else Annotated[Union[tuple(actions)], Field(discriminator="kind")]
            state = create_model("State", __base__=State, __doc__=State.__doc__,
                                 on_enter=(list[union], Field(default_factory=list, description=(
                                     "Actions taken by the animals entering this state."))))
            model = create_model("BrainConfig", __base__=cls, __doc__=cls.__doc__,
                                 states=(list[state], Field(..., min_length=1, description="The states (names unique).")))
        _specialised["brain"] = (version, model)
        return model


_specialised: dict = {}
