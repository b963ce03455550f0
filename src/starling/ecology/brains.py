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

:class:`BrainsSystem` runs them (``before_behaviors``): it refreshes the threat memories
the ``flee_memory`` behaviour reads (hysteresis), then takes every animal's transitions;
after the movers it advances the time in state. It owns ``state``, ``state_time``,
``target_speed`` and the ``threat_*`` memory of every species with an ecology section.
"""
from typing import Literal, Optional, Union

import numpy as np
from pydantic import ConfigDict, Field, field_validator, model_validator

from ..steering.params import StrictModel
from ..steering.queries.neighbors import NeighborQuerySpec, find_neighbors
from ..systems import Access, ComponentSpec, System, specs

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


# ---------------------------------------------------------------------------- the system

#: what the brains keep per animal (every species with an ecology section)
OWNED = specs({"threat_x": 0.0, "threat_y": 0.0, "threat_z": 0.0, "threat_level": 0.0, "threat_memory": 0.0,
               "target_speed": -1.0, "state": 0.0, "state_time": 0.0})
#: condition variables that are not components
DERIVED = ("time_in_state", "speed")


class _Mind:
    """One species' brain and memories at run time."""

    def __init__(self, view):
        self.view = view
        pop = view.pop
        for spec in OWNED:
            pop.add_component(spec)
        cfg = view.brain_cfg
        self.slot_rows = [(slot.row, slot.params.label or slot.spec.name, slot.spec.name)
                          for slot in view.pipeline.slots]
        self.brain: Optional[Brain] = None
        if cfg is not None:
            self.brain = Brain(cfg, self.slot_rows, view.pipeline.results.behaviours, view.mover_max)
            before = getattr(view.before, "brain", None) if view.before is not None else None
            old_names = [st.name for st in before.states] if before is not None else None
            if old_names and pop.n and old_names != self.brain.names:  # a reconfigured brain keeps states by name
                ids = pop.component("state").astype(np.int64)
                remap = np.array([self.brain.ids.get(name, self.brain.initial) for name in old_names], np.float32)
                pop.component("state")[:] = remap[np.clip(ids, 0, len(remap) - 1)]
        # hysteresis: every flee_memory behaviour's group is also watched by the system
        self.memories = [(group, slot) for group in view.pipeline.groups for slot in group.behaviors
                         if slot.spec.name == "flee_memory"]

    def reads(self) -> tuple[ComponentSpec, ...]:
        if self.brain is None:
            return ()
        names = []
        for tr in self.brain.cfg.transitions:
            for cond in tr.when:
                if cond.var is not None and cond.var not in DERIVED:
                    names.append(cond.var)
                elif cond.event is not None:
                    names.append(EVENT_COMPONENTS[cond.event])
        own = {spec.name for spec in OWNED}
        return tuple(ComponentSpec(n) for n in dict.fromkeys(names) if n not in own)


class BrainsSystem(System):
    """Threat memories and state machines (see the module)."""

    name = "brains"

    def __init__(self, ctx):
        self.ctx = ctx
        self.world = ctx.world
        self.minds = {v.name: _Mind(v) for v in ctx.species if v.kit}
        self._perceived: dict = {}
        self._tables: dict = {}

    def components(self) -> dict[str, Access]:
        return {name: Access(owns=OWNED, reads=m.reads()) for name, m in self.minds.items()}

    def brain_of(self, name: str) -> Optional[Brain]:
        mind = self.minds.get(name)
        return None if mind is None else mind.brain

    # ------------------------------------------------------------------ hooks
    def before_behaviors(self, sim, dt: float) -> None:
        self._perceived.clear()
        for mind in self.minds.values():
            if mind.view.pop.n == 0:
                continue
            self._remember_threats(mind, dt)
            if mind.brain is not None:
                self._think(mind, dt)

    def after_move(self, sim, dt: float) -> None:
        for mind in self.minds.values():
            if mind.brain is not None and mind.view.pop.n:
                mind.view.pop.component("state_time")[:] += dt

    def born(self, view, rows, rng) -> None:
        mind = self.minds.get(view.name)
        if mind is None:
            return
        pop = view.pop
        for name in ("threat_memory", "threat_level", "state_time"):
            pop.component(name)[rows] = 0.0
        if mind.brain is not None:
            pop.component("state")[rows] = mind.brain.initial
            pop.component("target_speed")[rows] = mind.brain.target_speed[mind.brain.initial]

    # ------------------------------------------------------------------ perception
    def _targets(self, names, include_bits: int, exclude_bits: int):
        chunks = []
        offset = 0
        own = {}
        for name in names:
            pop = self.world.population(name)
            mask = np.ones(pop.n, bool)
            if include_bits:
                mask &= (pop.tags & np.uint32(include_bits)) != 0
            if exclude_bits:
                mask &= (pop.tags & np.uint32(exclude_bits)) == 0
            rows = np.flatnonzero(mask)
            chunks.append(pop.position[rows])
            own[name] = (offset, rows)
            offset += rows.size
        pos = np.ascontiguousarray(np.concatenate(chunks)) if chunks else np.zeros((0, 3), np.float32)
        return pos, own

    def _perceive(self, view, names, include_bits: int, exclude_bits: int, radius: float, fov: float):
        """For every animal: how many targets it sees, and the nearest one's position and distance."""
        key = (view.name, tuple(names), include_bits, exclude_bits, float(radius), float(fov))
        hit = self._perceived.get(key)
        if hit is not None:
            return hit
        pop = view.pop
        n = pop.n
        pos, own = self._targets(names, include_bits, exclude_bits)
        self_index = np.full(n, -1, np.int64)
        if view.name in own:
            offset, rows = own[view.name]
            self_index[rows] = offset + np.arange(rows.size)
        spec = NeighborQuerySpec(max_distance=float(radius), k=2, fov_deg=float(fov))
        nb = find_neighbors(pop.position, pop.forward, pos, spec, out=self._tables.get(key))
        self._tables[key] = nb  # reused next step: no allocation once warm
        total = nb.count[:n].astype(np.int64) + nb.overflow[:n]
        total -= (self_index >= 0)  # an animal always sees itself (distance 0): it does not count
        first = nb.index[:n, 0].astype(np.int64)
        dist = nb.distance[:n, 0].astype(np.float64)
        skip = (first == self_index) & (first >= 0)
        first = np.where(skip, nb.index[:n, 1], first)
        dist = np.where(skip, nb.distance[:n, 1], dist)
        nearest = np.zeros((n, 3), np.float32)
        seen = first >= 0
        nearest[seen] = pos[first[seen]]
        out = (np.maximum(total, 0), nearest, np.where(seen, dist, np.inf))
        self._perceived[key] = out
        return out

    def _remember_threats(self, mind: _Mind, dt: float) -> None:
        if not mind.memories:
            return
        view = mind.view
        pop = view.pop
        memory = pop.component("threat_memory")
        refreshed = np.zeros(pop.n, bool)
        for group, slot in mind.memories:
            p = slot.params
            total, nearest, dist = self._perceive(view, group.targets, group.include_bits, group.exclude_bits,
                                                  p.max_distance, p.fov_deg)
            seen = (total > 0) & np.isfinite(dist) & ~refreshed
            pop.component("threat_x")[seen] = nearest[seen, 0]
            pop.component("threat_y")[seen] = nearest[seen, 1]
            pop.component("threat_z")[seen] = nearest[seen, 2]
            pop.component("threat_level")[seen] = np.clip(1.0 - dist[seen] / p.max_distance, 0.0, 1.0)
            memory[seen] = 1.0
            refreshed |= seen
        remember = max(slot.params.remember for _, slot in mind.memories)
        fading = ~refreshed
        memory[fading] = np.maximum(memory[fading] - dt / remember, 0.0)

    # ------------------------------------------------------------------ thinking
    def _think(self, mind: _Mind, dt: float) -> None:
        view = mind.view
        pop = view.pop

        def evaluate(cond):
            if cond.event is not None:
                return pop.component(EVENT_COMPONENTS[cond.event]) > 0.5
            if cond.var is not None:
                if cond.var == "time_in_state":
                    values = pop.component("state_time")
                elif cond.var == "speed":
                    values = np.sqrt(np.einsum("ij,ij->i", pop.velocity, pop.velocity))
                else:
                    values = pop.component(cond.var)
                return compare(values, cond.op, cond.value)
            q = cond.count
            total, _, _ = self._perceive(view, q.targets, self.world.tag_bits(q.tags),
                                         self.world.tag_bits(q.exclude_tags), q.within, q.fov_deg)
            return compare(total, cond.op, cond.value)

        state = pop.component("state")
        mind.brain.step(state, pop.component("state_time"), evaluate, self.ctx.rng, dt)
        pop.component("target_speed")[:] = mind.brain.target_speed[state.astype(np.int64)]

    # ------------------------------------------------------------------ reports
    def species_summary(self, sim, species: str) -> dict:
        brain = self.brain_of(species)
        if brain is None:
            return {}
        states = self.minds[species].view.pop.component("state").astype(np.int64)
        return {"states": {name: int(np.count_nonzero(states == i)) for i, name in enumerate(brain.names)}}

    def inspect(self, sim, species: str, row: int) -> dict:
        brain = self.brain_of(species)
        if brain is None:
            return {}
        return {"state": brain.names[int(self.minds[species].view.pop.component("state")[row])]}
