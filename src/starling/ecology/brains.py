"""Brains: per-species state machines declared as data (thesis 12.2; seed 004, 1.3; the savannah's lions).

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
mover's top speed, ``target_speed`` is the cruising speed the ``cruise`` behaviour asks
for, ``acceleration`` scales every acceleration rate, ``emergency = true`` multiplies
it again by the brain's ``emergency_acceleration`` (seed 004: afraid fish and attacking
predators accelerate harder), ``weights`` scales behaviours' desires (by label or kind),
``enabled`` lists the only behaviours that run, ``disabled`` the ones that do not.
"""
from typing import Literal, Optional, Union

import numpy as np
from pydantic import ConfigDict, Field, field_validator, model_validator

from ..steering.params import StrictModel

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
    emergency: bool = Field(False, description="Accelerate harder (times the brain's emergency_acceleration).")
    weights: dict[str, float] = Field(default_factory=dict,
                                      description="Factor on a behaviour's desires, by label or kind.")
    enabled: Optional[list[str]] = Field(None, description="Only these behaviours run (by label or kind).")
    disabled: list[str] = Field(default_factory=list, description="These behaviours do not run.")

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


# ---------------------------------------------------------------------------- runtime

_OPS = {
    "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
    "==": np.equal, "!=": np.not_equal,
}


def step_probability(p_per_second: float, dt: float) -> float:
    """Per-step chance for a per-second probability: ``1 − (1 − p) ** dt``."""
    if p_per_second >= 1.0:
        return 1.0
    return float(-np.expm1(dt * np.log1p(-p_per_second)))


class Brain:
    """The compiled state machine of one species (tables indexed by state id)."""

    def __init__(self, cfg: BrainConfig, behaviour_rows: list[tuple[int, str, str]], rows: int, mover_max_speed: float):
        self.cfg = cfg
        self.names = [s.name for s in cfg.states]
        self.ids = {name: i for i, name in enumerate(self.names)}
        self.initial = self.ids[cfg.initial] if cfg.initial else 0
        m = len(self.names)
        self.speed_factor = np.ones(m, np.float32)
        self.accel_factor = np.ones(m, np.float32)
        self.target_speed = np.full(m, -1.0, np.float32)
        self.weights = np.ones((m, rows), np.float32)
        for s, st in enumerate(cfg.states):
            if st.max_speed is not None:
                self.speed_factor[s] = st.max_speed / mover_max_speed
            self.accel_factor[s] = st.acceleration * (cfg.emergency_acceleration if st.emergency else 1.0)
            if st.target_speed is not None:
                self.target_speed[s] = st.target_speed
            for row, label, kind in behaviour_rows:
                w = 1.0
                for key, factor in st.weights.items():
                    if key in (label, kind):
                        w *= factor
                if st.enabled is not None and label not in st.enabled and kind not in st.enabled:
                    w = 0.0
                if label in st.disabled or kind in st.disabled:
                    w = 0.0
                self.weights[s, row] = w
        self.modulates_desires = bool((self.weights != 1.0).any())
        self.transitions = []
        for tr in cfg.transitions:
            sources = tr.sources()
            mask = np.ones(m, bool) if "*" in sources else np.isin(np.arange(m), [self.ids[x] for x in sources])
            self.transitions.append((mask, self.ids[tr.to], tr.when, tr.probability_per_second))

    def step(self, state: np.ndarray, state_time: np.ndarray, evaluate, rng: np.random.Generator,
             dt: float) -> np.ndarray:
        """Apply one step of transitions in place; returns the mask of animals that changed state.

        ``evaluate(condition) -> bool array`` answers a condition for every animal.
        """
        n = state.shape[0]
        current = state.astype(np.int64)
        decided = np.zeros(n, bool)
        new = current.copy()
        for from_mask, to, conditions, prob in self.transitions:
            live = ~decided & from_mask[current]
            if not live.any():
                continue
            for cond in conditions:
                live &= evaluate(cond)
                if not live.any():
                    break
            if prob is not None:
                draws = rng.random(n)
                live &= draws < step_probability(prob, dt)
            new[live] = to
            decided |= live
        changed = new != current
        state[:] = new
        state_time[changed] = 0.0
        return changed


def compare(values: np.ndarray, op: str, value: float) -> np.ndarray:
    return _OPS[op](values, value)
