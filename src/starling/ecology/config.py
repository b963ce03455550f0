"""The ecology's config sections and the rules that span them.

Five registered sections, all driving one :class:`~starling.ecology.system.EcologySystem`:

=====================  ==========  ================================================
section                scope       what
=====================  ==========  ================================================
``ecology``            scenario    ground/water planes, sounds, apples, carcasses, the player
``ecology``            species     energy, hunger, mouth, eating, grazing, body food, carcass, stamina, age
``brain``              species     the state machine (:mod:`starling.ecology.brains`)
``variation``          species     per-animal factors and start values (:mod:`starling.ecology.variation`)
``events``             scenario    the scripted timeline (:mod:`starling.ecology.events`)
=====================  ==========  ================================================

Whenever any of them is present the system exists and creates the populations
``sound``, ``apple``, ``carcass`` and ``player`` (empty until something spawns), so
neighbour groups may target them.

A species with any of the species sections carries the *ecology kit* of components
(``energy``, ``hunger``, ``chew``, ``mouth_x/y/z``, ``threat_*``, ``target_speed``,
``state``, ``state_time``, ``event_*``) that the ecology behaviours read; ``food`` and
``nutrition`` only when it is food itself (``[species.ecology.food]``); ``stamina`` and
``age`` only when configured.
"""
from typing import Optional

from pydantic import Field, field_validator

from ..steering.params import StrictModel
from .brain_config import BUILTIN_VARIABLES
from .components import AgeConfig, EnergyConfig, HungerConfig, MouthConfig, StaminaConfig
from .events import settable_problem
from .food import BodyFoodConfig, CarcassConfig, EatingConfig, GrazeConfig
from .items import APPLE, CARCASS, ApplesConfig, PhysicsConfig
from .player import PLAYER, PlayerConfig
from .sounds import SOUND, SoundsConfig
from .variation import Distribution

PROVIDED = (SOUND, APPLE, CARCASS, PLAYER)
FOOD_ITEMS = (APPLE, CARCASS)

KIT = {
    "energy": 1.0, "hunger": 1.0, "chew": 0.0,
    "mouth_x": 0.0, "mouth_y": 0.0, "mouth_z": 0.0,
    "threat_x": 0.0, "threat_y": 0.0, "threat_z": 0.0, "threat_level": 0.0, "threat_memory": 0.0,
    "target_speed": -1.0, "state": 0.0, "state_time": 0.0,
    "event_caught": 0.0, "event_bit": 0.0, "event_heard": 0.0,
    "eco_born": 0.0,
}
#: species sections whose presence gives a species the ecology kit
SPECIES_SECTIONS = ("ecology", "brain", "variation")


class CarcassesConfig(StrictModel):
    """Defaults for carcasses (a species' own [species.ecology.carcass] decides whether it leaves one)."""

    nutrition: float = Field(1.0, ge=0, description="Worth of one unit of carcass when the species has no body food.")


class EcologyConfig(StrictModel):
    """The world's ecology: where the ground and the water are, sounds, apples, carcasses and the player."""

    ground_height: Optional[float] = Field(None, description="Height of the ground plane, m (default: the world's floor).")
    water_level: Optional[float] = Field(None, description="Height of the water surface, m (none: no water).")
    sounds: SoundsConfig = Field(default_factory=SoundsConfig)
    apples: ApplesConfig = Field(default_factory=ApplesConfig)
    carcasses: CarcassesConfig = Field(default_factory=CarcassesConfig)
    physics: PhysicsConfig = Field(default_factory=PhysicsConfig)
    player: Optional[PlayerConfig] = Field(None, description="The player (none: no player in this scene).")

    @classmethod
    def cross_check(cls, scenario) -> list:
        return cross_check(scenario)


class SpeciesEcologyConfig(StrictModel):
    """A species' body: energy, hunger, mouth, what it eats, what it is worth as food, what it leaves."""

    energy: Optional[EnergyConfig] = Field(None, description="Energy coupled to movement (11.2.2).")
    hunger: Optional[HungerConfig] = Field(None, description="Hunger (without it the species is always hungry).")
    mouth: MouthConfig = Field(default_factory=MouthConfig)
    eating: Optional[EatingConfig] = Field(None, description="What it eats and how it bites.")
    graze: Optional[GrazeConfig] = Field(None, description="It bites the grass layer under it (11.2.7).")
    food: Optional[BodyFoodConfig] = Field(None, description="This species is food for others.")
    carcass: Optional[CarcassConfig] = Field(None, description="Dead animals leave a carcass.")
    stamina: Optional[StaminaConfig] = Field(None, description="The savannah's stamina.")
    age: Optional[AgeConfig] = Field(None, description="Age and its speed penalty.")
    body_radius: Optional[float] = Field(None, gt=0, description="Radius a bullet must pass within, m (default 0.5·scale).")

    @classmethod
    def provided_components(cls, species) -> set:
        """Components this species gets from the ecology (used by the component cross-check)."""
        if not any(getattr(species, s, None) is not None for s in SPECIES_SECTIONS):
            return set()
        out = set(KIT)
        eco = getattr(species, "ecology", None)
        if eco is not None:
            if eco.food is not None:
                out |= {"food", "nutrition"}
            if eco.stamina is not None:
                out.add("stamina")
            if eco.age is not None:
                out.add("age")
        return out


class VariationConfig(StrictModel):
    """Per-animal differences drawn at spawn (seed 003; thesis 12.2)."""

    max_speed: Optional[Distribution] = Field(None, description="Factor on the mover's top speed.")
    acceleration: Optional[Distribution] = Field(None, description="Factor on every acceleration rate.")
    weights: dict[str, Distribution] = Field(default_factory=dict,
                                             description="Factor on a behaviour's desires, by label or kind.")
    components: dict[str, Distribution] = Field(default_factory=dict, description="Start values of components.")

    @field_validator("max_speed", "acceleration")
    @classmethod
    def _factor(cls, v):
        if v is not None and v.support()[0] < 0:
            raise ValueError("a factor cannot be negative; set 'min'")
        return v

    @field_validator("weights")
    @classmethod
    def _factors(cls, v):
        for key, d in v.items():
            if d.support()[0] < 0:
                raise ValueError(f"{key}: a factor cannot be negative; set 'min'")
        return v


# ---------------------------------------------------------------------------- cross-checks

def _behaviour_names(sp) -> set:
    names = set()
    for group in sp.groups:
        for b in getattr(group, "behaviors", []):
            names.add(b.kind)
            if b.label:
                names.add(b.label)
    for b in getattr(sp, "behaviors", []):
        names.add(b.kind)
        if b.label:
            names.add(b.label)
    return names


def _has_ecology(scenario) -> bool:
    if getattr(scenario, "ecology", None) is not None or getattr(scenario, "events", None) is not None:
        return True
    return any(getattr(sp, s, None) is not None for sp in scenario.species for s in SPECIES_SECTIONS)


def cross_check(scenario) -> list:
    """Rules between the ecology sections and the rest of the scenario."""
    from ..errors import Problem

    if not _has_ecology(scenario):
        return []
    problems: list = []
    names = [sp.name for sp in scenario.species]
    by_name = {sp.name: sp for sp in scenario.species}
    populations = set(names) | set(PROVIDED)
    world_eco = getattr(scenario, "ecology", None)
    has_player = world_eco is not None and world_eco.player is not None

    def components_of(sp) -> set:
        return set(sp.components) | SpeciesEcologyConfig.provided_components(sp)

    def edible(name: str) -> bool:
        if name in FOOD_ITEMS:
            return True
        sp = by_name.get(name)
        return sp is not None and {"food", "nutrition"} <= components_of(sp)

    for i, sp in enumerate(scenario.species):
        if sp.name in PROVIDED:
            problems.append(Problem(f"species.{i}.name",
                                    f"{sp.name!r} is a population the ecology creates; choose another name"))
        behaviours = _behaviour_names(sp)
        comps = components_of(sp)
        eco = getattr(sp, "ecology", None)
        brain = getattr(sp, "brain", None)
        variation = getattr(sp, "variation", None)
        state_names = [s.name for s in brain.states] if brain is not None else []
        if eco is not None and eco.eating is not None:
            for j, food in enumerate(eco.eating.food):
                where = f"species.{i}.ecology.eating.food.{j}"
                if food not in populations:
                    problems.append(Problem(where, f"unknown population {food!r}; known: {', '.join(sorted(populations))}"))
                elif not edible(food):
                    problems.append(Problem(where, f"{food!r} is not food: give species {food!r} an [ecology.food] table"))
            for j, prey in enumerate(eco.eating.prey):
                if prey not in names:
                    problems.append(Problem(f"species.{i}.ecology.eating.prey.{j}",
                                            f"unknown species {prey!r}; known: {', '.join(names)}"))
        if eco is not None and eco.graze is not None:
            env = getattr(scenario, "environment", None)
            if env is None:
                problems.append(Problem(f"species.{i}.ecology.graze",
                                        "grazing needs an [environment] with shapes on a grass layer"))
            else:
                known = env.layer_registry()
                for j, layer in enumerate(eco.graze.layers):
                    if layer not in known:
                        problems.append(Problem(f"species.{i}.ecology.graze.layers.{j}",
                                                f"unknown layer {layer!r}; known layers are: {', '.join(known.names)}"))
        if eco is not None and eco.stamina is not None:
            for j, state in enumerate(eco.stamina.drain_states):
                if state not in state_names:
                    problems.append(Problem(f"species.{i}.ecology.stamina.drain_states.{j}",
                                            f"unknown state {state!r}" + (f"; states: {', '.join(state_names)}"
                                                                         if state_names else " (the species has no brain)")))
        if brain is not None:
            problems += _check_brain(brain, i, comps, behaviours, populations)
        if variation is not None:
            for key in variation.weights:
                if key not in behaviours:
                    problems.append(Problem(f"species.{i}.variation.weights.{key}",
                                            f"unknown behaviour {key!r}; this species has: {', '.join(sorted(behaviours)) or 'none'}"))
            for key in variation.components:
                if key not in comps:
                    problems.append(Problem(f"species.{i}.variation.components.{key}",
                                            f"unknown component {key!r}; this species has: {', '.join(sorted(comps)) or 'none'}"))
        for g, group in enumerate(sp.groups):
            for b, params in enumerate(getattr(group, "behaviors", [])):
                if params.kind == "chase_food":
                    for t, target in enumerate(group.query.targets or [sp.name]):
                        if target in populations and not edible(target):
                            problems.append(Problem(
                                f"species.{i}.groups.{g}.query.targets.{t}",
                                f"chase_food needs food: {target!r} has no food (give it an [ecology.food] table)"))
    events = getattr(scenario, "events", None)
    if events is not None:
        problems += _check_events(scenario, events, names, has_player)
    return problems


def _check_brain(brain, i: int, comps: set, behaviours: set, populations: set) -> list:
    from ..errors import Problem

    out = []
    names = [s.name for s in brain.states]
    seen = set()
    for s, state in enumerate(brain.states):
        if state.name in seen:
            out.append(Problem(f"species.{i}.brain.states.{s}.name", f"duplicate state {state.name!r}"))
        seen.add(state.name)
        for key in state.weights:
            if key not in behaviours:
                out.append(Problem(f"species.{i}.brain.states.{s}.weights.{key}",
                                   f"unknown behaviour {key!r}; this species has: {', '.join(sorted(behaviours)) or 'none'}"))
        for field in ("enabled", "disabled"):
            for j, key in enumerate(getattr(state, field) or []):
                if key not in behaviours:
                    out.append(Problem(f"species.{i}.brain.states.{s}.{field}.{j}",
                                       f"unknown behaviour {key!r}; this species has: {', '.join(sorted(behaviours)) or 'none'}"))

    def state_ok(where: str, name: str, star: bool = False):
        if name == "*" and star:
            return
        if name not in seen:
            out.append(Problem(where, f"unknown state {name!r}; states: {', '.join(names)}"))

    if brain.initial is not None:
        state_ok(f"species.{i}.brain.initial", brain.initial)
    variables = comps | {"time_in_state", "speed"}
    for t, tr in enumerate(brain.transitions):
        sources = tr.sources()
        for j, name in enumerate(sources):
            state_ok(f"species.{i}.brain.transitions.{t}.from" + (f".{j}" if len(sources) > 1 else ""), name, star=True)
        state_ok(f"species.{i}.brain.transitions.{t}.to", tr.to)
        for c, cond in enumerate(tr.when):
            where = f"species.{i}.brain.transitions.{t}.when.{c}"
            if cond.var is not None and cond.var not in variables:
                known = sorted(variables & (set(BUILTIN_VARIABLES) | comps))
                out.append(Problem(f"{where}.var", f"unknown variable {cond.var!r}; known: {', '.join(known)}"))
            if cond.count is not None:
                for j, target in enumerate(cond.count.targets):
                    if target not in populations:
                        out.append(Problem(f"{where}.count.targets.{j}",
                                           f"unknown species {target!r}; known: {', '.join(sorted(populations))}"))
    return out


def _check_events(scenario, events, names: list, has_player: bool) -> list:
    from ..errors import Problem

    out = []
    for e, ev in enumerate(events):
        where = f"events.{e}"
        for field in ("species", "target_species"):
            species = getattr(ev, field, None)
            if species is not None and species not in names:
                out.append(Problem(f"{where}.{field}", f"unknown species {species!r}; known: {', '.join(names)}"))
        if ev.kind == "gunshot" and ev.origin is None and not has_player:
            out.append(Problem(f"{where}.origin", "needed: this scenario has no [ecology.player] to fire from"))
        if ev.kind == "apple" and ev.origin is None and not has_player:
            out.append(Problem(f"{where}.origin", "needed: this scenario has no [ecology.player] to throw from"))
        if ev.kind == "move_player" and not has_player:
            out.append(Problem(f"{where}.kind", "this scenario has no [ecology.player] to move"))
        if ev.kind == "set":
            why = settable_problem(ev.path, names)
            if why is not None:
                out.append(Problem(f"{where}.path", why))
                continue
            # whether the value itself is valid there is checked by the config layer (config.io.cross_check)
    return out
