"""The ecology system: one :class:`~starling.systems.System` for bodies, food, sounds, the player,
brains, individual variation and scripted events.

Where it runs in a step (DESIGN §4)::

    before_behaviors   due events fire; mouths are placed; threat memories refresh;
                       brains take their transitions; per-animal speed, acceleration
                       and desire factors are written into the species' pipelines
    (steering and movers)
    after_move         the player walks; apples and carcasses fall, float or rest;
                       sounds grow and expire (and are heard); bodies update (energy,
                       hunger, chewing, stamina, age); mouths catch prey and bite food
    (command buffer)   kills, despawns, spawns (sounds, apples, carcasses, newborns)
    after_commands     deaths are counted; newborns get their drawn parameters

Everything per animal lives in population components, so it follows the animals when
rows move (deaths compact a population, large ones are re-sorted in memory).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Optional

import numpy as np

from ..steering.queries.neighbors import NeighborQuerySpec, find_neighbors
from ..systems import System
from ..world import Population
from . import components as C
from . import items as I
from . import sounds as S
from .components import HungerConfig
from .brains import EVENT_COMPONENTS, Brain, compare
from .config import KIT, EcologyConfig
from .food import EatingConfig, bite_amount, nearest_within
from .player import PLAYER, first_hit, plane_hit, point, unit
from .variation import Distribution, bounds_of

#: ecology config sections whose numbers may be per-animal distributions
SAMPLED = ("energy", "hunger", "stamina", "age", "mouth", "eating", "graze", "food", "carcass")
#: start values: drawn straight into their component at birth
STARTS = {("energy", "start"): "energy", ("hunger", "start"): "hunger",
          ("stamina", "start"): "stamina", ("age", "start"): "age"}
EVENT_FLAGS = tuple(EVENT_COMPONENTS.values())
#: the values used for a table the species does not have
DEFAULTS = {"eating": EatingConfig(), "hunger": HungerConfig()}


def _sampled_of(eco) -> dict:
    """(section, field) -> (component, distribution) of an ecology config's per-animal draws."""
    out = {}
    for section in SAMPLED:
        sub = getattr(eco, section, None) if eco is not None else None
        if sub is None:
            continue
        for field in type(sub).model_fields:
            value = getattr(sub, field)
            if isinstance(value, Distribution) and (section, field) not in STARTS:
                out[(section, field)] = (f"var_{section}_{field}", value)
    return out


class SpeciesEco:
    """The ecology of one species at run time: its config, drawn parameters, brain and buffers."""

    def __init__(self, system: "EcologySystem", index: int):
        self.system = system
        self.index = index
        sim = system.sim
        self.pipeline = sim.pipelines[index]
        self.name = self.pipeline.name
        self.pop: Population = sim.world.population(self.name)
        self._draw_rng = sim.world.species_rng(index, stream=3)  # ecology numbers drawn per animal
        previous = getattr(sim, "previous_scenario", None)
        before = next((sp for sp in (previous.species if previous is not None else ()) if sp.name == self.name), None)
        if before is not None:  # a restored or reconfigured run: keep what the animals drew, remap brain states
            self.sampled = _sampled_of(getattr(before, "ecology", None))
            brain_cfg = getattr(before, "brain", None)
            self._previous_states = [st.name for st in brain_cfg.states] if brain_cfg is not None else None
        self.configure(sim.scenario.species[index])

    # ------------------------------------------------------------------ configuration
    def configure(self, cfg) -> None:
        self.cfg = cfg
        self.eco = getattr(cfg, "ecology", None)
        self.brain_cfg = getattr(cfg, "brain", None)
        self.variation = getattr(cfg, "variation", None)
        self.mover_max = float(cfg.mover.max_speed)
        self.kit = any(x is not None for x in (self.eco, self.brain_cfg, self.variation))
        pop = self.pop
        if self.kit:
            for name, default in KIT.items():
                pop.add_component(name, default)
            if self.eco is not None:
                if self.eco.food is not None:
                    pop.add_component("food", 1.0)
                    pop.add_component("nutrition", 1.0)
                if self.eco.stamina is not None:
                    pop.add_component("stamina", 0.0)
                if self.eco.age is not None:
                    pop.add_component("age", 0.0)
                if self.eco.hunger is not None and self.eco.hunger.starve_after is not None:
                    pop.add_component("starving", 0.0)
        # numbers drawn per animal, when it enters (the population draws them, like behaviour parameters)
        old_sampled = getattr(self, "sampled", {})
        self.sampled: dict = {}
        for section in SAMPLED:
            sub = getattr(self.eco, section, None) if self.eco is not None else None
            if sub is None:
                continue
            for field, info in type(sub).model_fields.items():
                value = getattr(sub, field)
                if isinstance(value, Distribution) and (section, field) not in STARTS:
                    comp = f"var_{section}_{field}"
                    b = bounds_of(info)
                    rng = self._draw_rng
                    draw = (lambda k, d=value, b=b: d.sample(rng, k, b.lo, b.hi))
                    if old_sampled.get((section, field), (None, None))[1] != value or not pop.has_component(comp):
                        pop.add_drawn_component(comp, draw, value.mean())
                    else:
                        pop.set_draw(comp, draw, value.mean())
                    self.sampled[(section, field)] = (comp, value)
        for key, (comp, _) in old_sampled.items():
            if key not in self.sampled:
                pop.drop_draw(comp)
        # variation of the pipeline's own numbers
        self.slot_rows = [(slot.row, slot.params.label or slot.spec.name, slot.spec.name) for slot in self.pipeline.slots]
        self.rows = self.pipeline.results.behaviours
        self.weight_vars = []
        if self.variation is not None:
            if self.variation.max_speed is not None:
                pop.add_component("var_max_speed", 1.0)
            if self.variation.acceleration is not None:
                pop.add_component("var_acceleration", 1.0)
            for k, (key, dist) in enumerate(self.variation.weights.items()):
                comp = f"var_weight_{k}"
                pop.add_component(comp, 1.0)
                rows = [r for r, label, kind in self.slot_rows if key in (label, kind)]
                self.weight_vars.append((np.asarray(rows, np.int64), comp, dist))
        # brain
        old = getattr(self, "brain", None)
        old_names = old.names if old is not None else getattr(self, "_previous_states", None)
        self.brain: Optional[Brain] = None
        if self.brain_cfg is not None:
            self.brain = Brain(self.brain_cfg, self.slot_rows, self.rows, self.mover_max)
            if old_names and pop.n and old_names != self.brain.names:  # a reconfigured brain keeps states by name
                ids = pop.component("state").astype(np.int64)
                remap = np.array([self.brain.ids.get(name, self.brain.initial) for name in old_names], np.float32)
                pop.component("state")[:] = remap[np.clip(ids, 0, len(remap) - 1)]
        self.drain_ids = None
        if self.eco is not None and self.eco.stamina is not None and self.eco.stamina.drain_states and self.brain:
            self.drain_ids = np.array([self.brain.ids[s] for s in self.eco.stamina.drain_states], np.float32)
        # hysteresis: every flee_memory behaviour's group is also watched by the system
        self.memories = [(group, slot) for group in self.pipeline.groups for slot in group.behaviors
                         if slot.spec.name == "flee_memory"]
        self.modulates_speed = self.kit and (
            (self.eco is not None and (self.eco.energy is not None or self.eco.stamina is not None
                                       or self.eco.age is not None))
            or self.brain is not None
            or (self.variation is not None and (self.variation.max_speed is not None
                                                or self.variation.acceleration is not None)))
        self.modulates_desires = bool(self.weight_vars) or (self.brain is not None and self.brain.modulates_desires)
        self._speed = np.ones(0, np.float32)
        self._accel = np.ones(0, np.float32)
        self._desire = np.ones((self.rows, 0), np.float32)
        if not self.modulates_speed:
            self.pipeline.speed_scale = None
            self.pipeline.accel_scale = None
        if not self.modulates_desires:
            self.pipeline.desire_scale = None

    def get(self, section: str, field: str):
        """A parameter: a number, or the per-animal array of its draws (a missing table: its defaults)."""
        hit = self.sampled.get((section, field))
        if hit is not None:
            return self.pop.component(hit[0])
        sub = getattr(self.eco, section, None)
        value = getattr(sub if sub is not None else DEFAULTS[section], field)
        return value.mean() if isinstance(value, Distribution) else float(value)

    def value_at(self, section: str, field: str, row: int) -> float:
        v = self.get(section, field)
        return float(v[row]) if isinstance(v, np.ndarray) else float(v)

    def top_speed(self):
        """Each animal's own top speed (the mover's, drawn per animal or not, times its drawn factor)."""
        top = self.mover_max
        if "max_speed" in self.cfg.mover.varied:
            top = self.pop.component("mover_max_speed").astype(np.float64)
        if self.variation is not None and self.variation.max_speed is not None:
            return top * self.pop.component("var_max_speed")
        return top

    # ------------------------------------------------------------------ births
    def births(self, rng: np.random.Generator) -> None:
        """Give every animal that has not been initialised its drawn numbers and start state."""
        if not self.kit or self.pop.n == 0:
            return
        pop = self.pop
        rows = np.flatnonzero(pop.component("eco_born") < 0.5)
        k = rows.size
        if k == 0:
            return
        eco = self.eco

        def start(section: str, field: str, comp: str, default) -> None:
            sub = getattr(eco, section, None) if eco is not None else None
            value = default if sub is None else getattr(sub, field)
            if value is None:
                value = default
            if isinstance(value, Distribution):
                b = bounds_of(type(sub).model_fields[field])
                value = value.sample(rng, k, b.lo, b.hi)
            elif isinstance(value, np.ndarray):
                value = value[rows]
            pop.component(comp)[rows] = value

        start("energy", "start", "energy", 1.0)
        start("hunger", "start", "hunger", 1.0)
        if eco is not None and eco.stamina is not None:
            start("stamina", "start", "stamina", self.get("stamina", "max"))
        if eco is not None and eco.age is not None:
            start("age", "start", "age", 10.0)
        if eco is not None and eco.food is not None:
            start("food", "amount", "food", 1.0)
            start("food", "nutrition", "nutrition", 1.0)
        for name in ("chew", "threat_memory", "threat_level", "state_time") + EVENT_FLAGS:
            pop.component(name)[rows] = 0.0
        if pop.has_component("starving"):
            pop.component("starving")[rows] = 0.0
        if self.brain is not None:
            pop.component("state")[rows] = self.brain.initial
            pop.component("target_speed")[rows] = self.brain.target_speed[self.brain.initial]
        v = self.variation
        if v is not None:
            if v.max_speed is not None:
                pop.component("var_max_speed")[rows] = v.max_speed.sample(rng, k, 0.0)
            if v.acceleration is not None:
                pop.component("var_acceleration")[rows] = v.acceleration.sample(rng, k, 0.0)
            for _, comp, dist in self.weight_vars:
                pop.component(comp)[rows] = dist.sample(rng, k, 0.0)
            for name, dist in v.components.items():
                pop.component(name)[rows] = dist.sample(rng, k)
        self.place_mouths()
        pop.component("eco_born")[rows] = 1.0

    # ------------------------------------------------------------------ per step
    def place_mouths(self) -> None:
        pop = self.pop
        if not self.kit or pop.n == 0:
            return
        offset = self.eco.mouth.offset if self.eco is not None else (0.0, 0.0, 0.0)
        m = C.mouth_positions(pop.position, pop.forward, pop.up, offset)
        pop.component("mouth_x")[:] = m[:, 0]
        pop.component("mouth_y")[:] = m[:, 1]
        pop.component("mouth_z")[:] = m[:, 2]

    def mouths(self) -> np.ndarray:
        pop = self.pop
        return np.stack([pop.component("mouth_x"), pop.component("mouth_y"), pop.component("mouth_z")], axis=1)

    def modulate(self) -> None:
        """Write this step's per-animal factors into the pipeline (speed, acceleration, desires)."""
        pop = self.pop
        n = pop.n
        if self.modulates_speed:
            if self._speed.shape[0] < n:
                cap = max(n, pop.capacity)
                self._speed = np.ones(cap, np.float32)
                self._accel = np.ones(cap, np.float32)
            speed = np.ones(n, np.float64)
            accel = np.ones(n, np.float64)
            eco = self.eco
            if eco is not None and eco.energy is not None:
                e = pop.component("energy")
                below = self.get("energy", "fatigue_below")
                speed *= C.fatigue(e, below, self.get("energy", "min_speed_factor"))
                accel *= C.fatigue(e, below, self.get("energy", "min_accel_factor"))
            penalty = np.zeros(n)
            if eco is not None and eco.stamina is not None:
                penalty += C.stamina_penalty(pop.component("stamina"), self.get("stamina", "penalty_below"),
                                             self.get("stamina", "max_penalty"))
            if eco is not None and eco.age is not None:
                a = eco.age
                penalty += C.age_penalty(pop.component("age"), a.young_below, a.old_above, a.old_span,
                                         self.get("age", "max_penalty"))
            if penalty.any():
                speed *= np.maximum(0.05, 1.0 - penalty / self.mover_max)
            if self.variation is not None:
                if self.variation.max_speed is not None:
                    speed *= pop.component("var_max_speed")
                if self.variation.acceleration is not None:
                    accel *= pop.component("var_acceleration")
            if self.brain is not None:
                st = pop.component("state").astype(np.int64)
                speed *= self.brain.speed_factor[st]
                accel *= self.brain.accel_factor[st]
            self._speed[:n] = speed
            self._accel[:n] = accel
            self.pipeline.speed_scale = self._speed
            self.pipeline.accel_scale = self._accel
        if self.modulates_desires:
            if self._desire.shape[1] < n:
                self._desire = np.ones((self.rows, max(n, pop.capacity)), np.float32)
            d = self._desire[:, :n]
            if self.brain is not None and self.brain.modulates_desires:
                d[:] = self.brain.weights[pop.component("state").astype(np.int64)].T
            else:
                d[:] = 1.0
            for rows, comp, _ in self.weight_vars:
                d[rows] *= pop.component(comp)[None, :]
            self.pipeline.desire_scale = self._desire

    def bodies(self, dt: float) -> None:
        """Energy, hunger, chewing, stamina and age advance by ``dt`` (after the move)."""
        pop = self.pop
        if not self.kit or pop.n == 0:
            return
        eco = self.eco
        s = C.speed_fraction(pop.velocity, self.top_speed())
        if eco is not None and eco.energy is not None:
            C.update_energy(pop.component("energy"), s, self.get("energy", "drain"), self.get("energy", "recovery"),
                            eco.energy.drain_power, dt)
        if eco is not None and eco.hunger is not None:
            hunger = pop.component("hunger")
            C.update_hunger(hunger, self.get("hunger", "rate"), dt)
            if eco.hunger.starve_after is not None:
                starving = pop.component("starving")
                C.update_starving(starving, hunger, dt)
                starved = np.flatnonzero(starving >= self.get("hunger", "starve_after"))
                if starved.size:
                    self.system.kill(self.name, pop.uid[starved], cause="starvation")
        chew = pop.component("chew")
        np.maximum(chew - dt, 0.0, out=chew)
        if eco is not None and eco.stamina is not None:
            st = eco.stamina
            may_lose = True
            if self.drain_ids is not None:
                may_lose = np.isin(pop.component("state"), self.drain_ids)
            C.update_stamina(pop.component("stamina"), s, self.get("stamina", "lose"), self.get("stamina", "regain"),
                             st.lose_above, st.regain_below, self.get("stamina", "max"), dt, may_lose)
        if eco is not None and eco.age is not None:
            age = pop.component("age")
            age += eco.age.years_per_second * dt
            if eco.age.max_age is not None:
                old = np.flatnonzero(age >= eco.age.max_age)
                if old.size:
                    self.system.kill(self.name, pop.uid[old], cause="old age")
        if self.brain is not None:
            pop.component("state_time")[:] += dt


class EcologySystem(System):
    """Bodies, food, sounds, the player, brains, variation and events (see the module docstring)."""

    name = "ecology"

    def __init__(self, sim):
        self.sim = sim
        world = sim.world
        self.world = world
        self.cfg: EcologyConfig = getattr(sim.scenario, "ecology", None) or EcologyConfig()
        self.rng = np.random.default_rng(np.random.SeedSequence(world.seed, spawn_key=(0xEC0,)))
        self.populations = {}
        for name, comps in ((S.SOUND, S.COMPONENTS), (I.APPLE, I.COMPONENTS), (I.CARCASS, I.COMPONENTS),
                            (PLAYER, {"still_time": 0.0})):
            self.populations[name] = world.ensure_population(name, comps)
        self.species = [SpeciesEco(self, i) for i in range(len(sim.pipelines))]
        self.by_name = {sp.name: sp for sp in self.species}
        self.counters = {sp.name: {"deaths": 0, "eaten": 0, "caught": 0} for sp in self.species}
        self.causes = {sp.name: defaultdict(int) for sp in self.species}
        self.shots = 0
        self.apples_thrown = 0
        self._dying: dict[str, set] = defaultdict(set)
        self._despawned: dict[str, set] = defaultdict(set)
        self._perceived: dict = {}
        self._tables: dict = {}
        self._walk_to: Optional[np.ndarray] = None
        self._player_moved = 0.0
        player = self.cfg.player
        if player is None:
            self.populations[PLAYER].remove_rows(np.arange(self.populations[PLAYER].n))
        elif self.populations[PLAYER].n == 0:
            look = unit(player.look, "look")
            self.populations[PLAYER].append(world.new_uids(1), np.float32([player.position]),
                                            np.zeros((1, 3), np.float32), forward=np.float32([look]))
        events = getattr(sim.scenario, "events", None)
        self.timeline = sorted(enumerate(events or ()), key=lambda e: (e[1].at, e[0]))
        self._next_event = 0
        if self.name not in getattr(sim, "saved_systems", ()):  # a restored system births after load_state
            for sp in self.species:
                sp.births(self.rng)

    # ------------------------------------------------------------------ properties
    @property
    def has_player(self) -> bool:
        return self.cfg.player is not None

    @property
    def ground(self) -> float:
        return float(self.cfg.ground_height if self.cfg.ground_height is not None else self.world.bounds_min[1])

    def player_position(self) -> np.ndarray:
        return self.populations[PLAYER].position[0].astype(np.float64)

    def player_hand(self) -> np.ndarray:
        return self.player_position() + np.array([0.0, self.cfg.player.eye_height, 0.0])

    # ------------------------------------------------------------------ step hooks
    def before_behaviors(self, sim, dt: float) -> None:
        self._perceived.clear()
        self._run_events(sim.time)
        for sp in self.species:
            if not sp.kit or sp.pop.n == 0:
                continue
            sp.place_mouths()
            self._remember_threats(sp, dt)
            if sp.brain is not None:
                self._think(sp, dt)
            for flag in EVENT_FLAGS:
                sp.pop.component(flag)[:] = 0.0
            sp.modulate()

    def after_move(self, sim, dt: float) -> None:
        self._perceived.clear()
        self._move_player(dt)
        lo, hi = self.world.bounds_min, self.world.bounds_max
        for name in (I.APPLE, I.CARCASS):
            items = self.populations[name]
            expired = I.step_items(items, self._ground_under(items), self.cfg.water_level, self.cfg.physics,
                                   lo, hi, dt)
            if expired.size:
                self.despawn(name, expired)
        sounds = self.populations[S.SOUND]
        expired = S.advance(sounds, self.cfg.sounds.speed, dt)
        if expired.size:
            self.despawn(S.SOUND, expired)
        for sp in self.species:
            if sp.kit and sp.pop.n and sounds.n:
                sp.pop.component("event_heard")[:] = S.heard(sp.pop.position, sounds)
            sp.bodies(dt)
        for sp in self.species:
            if sp.eco is not None and (sp.eco.eating is not None or sp.eco.graze is not None) and sp.pop.n:
                self._eat(sp)

    def after_commands(self, sim, killed: dict) -> None:
        for species, uids in killed.items():
            if species not in self.counters:
                continue
            gone = self._despawned.get(species, set())
            self.counters[species]["deaths"] += int(sum(1 for u in uids if int(u) not in gone))
        self._dying.clear()
        self._despawned.clear()
        for sp in self.species:
            sp.births(self.rng)

    def _ground_under(self, pop):
        """Height of the ground under each item: the environment's surfaces, else the ground plane."""
        env = getattr(self.sim, "environment", None)
        if env is None or pop.n == 0:
            return self.ground
        from ..environment.raycast import cast_rays

        known = [name for name in ("terrain", "ground", "environment") if name in env.layers]
        origins = pop.position.astype(np.float32) + np.float32([0.0, 0.5, 0.0])
        down = np.tile(np.float32([0.0, -1.0, 0.0]), (pop.n, 1))
        reach = float(self.world.bounds_max[1] - self.world.bounds_min[1]) + 1.0
        hits = cast_rays(env, origins, down, reach, mask=env.mask(known))
        return np.where(hits.hit[:pop.n], hits.point[:pop.n, 1], self.ground)

    # ------------------------------------------------------------------ reports
    def species_summary(self, sim, species: str) -> dict:
        counters = self.counters.get(species)
        if counters is None:
            return {}
        out = dict(counters)
        sp = self.by_name[species]
        if sp.brain is not None:
            states = sp.pop.component("state").astype(np.int64)
            out["states"] = {name: int(np.count_nonzero(states == i)) for i, name in enumerate(sp.brain.names)}
        return out

    def inspect(self, sim, species: str, row: int) -> dict:
        sp = self.by_name.get(species)
        if sp is None or sp.brain is None:
            return {}
        return {"state": sp.brain.names[int(sp.pop.component("state")[row])]}

    def health(self, sim) -> dict:
        bad = 0
        for pop in self.world.populations.values():
            for name in pop.component_names:
                bad += int(np.count_nonzero(~np.isfinite(pop.component(name))))
        return {"ecology_nan": bad}

    def scene(self, sim) -> dict:
        sounds = self.cfg.sounds
        return {"ecology": {
            "populations": list(self.populations),
            "ground_height": self.ground,
            "water_level": self.cfg.water_level,
            "player": self.has_player,
            # which species a carcass came from, by the tag it carries (viewers draw its body)
            "carcass_tags": {sp.eco.carcass.tag or f"dead_{sp.name}": sp.name for sp in self.species
                             if sp.eco is not None and sp.eco.carcass is not None},
            "sounds": {"speed": sounds.speed, "range": sounds.range, "lifetime": sounds.lifetime},
        }}

    # ------------------------------------------------------------------ lifecycle
    def kill(self, species: str, uids, cause: str = "killed", carcass_food: Optional[float] = None) -> int:
        """Animals die at the end of this step (with a carcass where their species has one).

        Returns how many of ``uids`` were alive and not already dying.
        """
        pop = self.world.population(species)
        dying = self._dying[species]
        fresh = []
        for uid in np.atleast_1d(np.asarray(uids, np.int64)):
            uid = int(uid)
            if uid in dying:
                continue
            row = pop.index_of(uid)
            if row < 0:
                continue
            fresh.append((uid, row))
        if not fresh:
            return 0
        self.world.commands.kill(species, [u for u, _ in fresh])
        dying.update(u for u, _ in fresh)
        sp = self.by_name.get(species)
        if sp is not None:
            self.causes[species][cause] += len(fresh)
            if sp.eco is not None and sp.eco.carcass is not None:
                for uid, row in fresh:
                    self._leave_carcass(sp, row, carcass_food)
        return len(fresh)

    def despawn(self, species: str, uids) -> int:
        """Remove entities at the end of this step without counting a death or leaving a carcass."""
        pop = self.world.population(species)
        gone = [int(u) for u in np.atleast_1d(np.asarray(uids, np.int64))
                if int(u) not in self._dying[species] and pop.index_of(int(u)) >= 0]
        if gone:
            self.world.commands.kill(species, gone)
            self._dying[species].update(gone)
            self._despawned[species].update(gone)
        return len(gone)

    def spawn(self, species: str, positions, velocities=None, tags=()) -> None:
        """New animals at the end of this step; their ecology numbers are drawn when they appear."""
        self.world.commands.spawn(species, positions, velocities, tags=tags)

    def retag(self, species: str, uids, add=(), remove=()) -> None:
        self.world.commands.retag(species, uids, add=add, remove=remove)

    def _leave_carcass(self, sp: SpeciesEco, row: int, food: Optional[float]) -> None:
        cc = sp.eco.carcass
        if food is None:
            if cc.food is not None:
                food = cc.food.sample(self.rng, 1)[0] if isinstance(cc.food, Distribution) else float(cc.food)
            elif sp.eco.food is not None:
                food = float(sp.pop.component("food")[row])
            else:
                food = 1.0
        if not food > 1e-6:
            return
        nutrition = (float(sp.pop.component("nutrition")[row]) if sp.eco.food is not None
                     else self.cfg.carcasses.nutrition)
        self.world.commands.spawn(
            I.CARCASS, sp.pop.position[row:row + 1].copy(), sp.pop.velocity[row:row + 1] * 0.3,
            components={"food": np.float32([food]), "nutrition": np.float32([nutrition]),
                        "floats": np.float32([1.0 if cc.buoyancy == "float" else 0.0]),
                        "item_age": np.float32([0.0]),
                        "item_lifetime": np.float32([cc.lifetime if cc.lifetime is not None else -1.0])},
            tags=[cc.tag or f"dead_{sp.name}"])

    # ------------------------------------------------------------------ the player
    def move_player(self, position, look=None) -> None:
        if not self.has_player:
            raise ValueError("move_player is not available in this scenario")
        pop = self.populations[PLAYER]
        new = point(position, "position")
        old = pop.position[0].astype(np.float64)
        self._player_moved += float(np.linalg.norm(new - old))
        pop.position[0] = new
        pop.velocity[0] = (new - old) / self.sim.dt
        if look is not None:
            pop.forward[0] = unit(look, "direction")
        self._walk_to = None

    def walk_player(self, target) -> None:
        if not self.has_player:
            raise ValueError("move_player is not available in this scenario")
        self._walk_to = point(target, "to")

    def _move_player(self, dt: float) -> None:
        if not self.has_player:
            return
        pop = self.populations[PLAYER]
        if self._walk_to is not None:
            here = pop.position[0].astype(np.float64)
            offset = self._walk_to - here
            dist = float(np.linalg.norm(offset))
            step = self.cfg.player.walk_speed * dt
            if dist <= step:
                pop.position[0] = self._walk_to
                pop.velocity[0] = offset / dt
                self._walk_to = None
            else:
                pop.position[0] = here + offset / dist * step
                pop.velocity[0] = offset / dist * self.cfg.player.walk_speed
                pop.forward[0] = offset / dist
            self._player_moved += min(dist, step)
        still = pop.component("still_time")
        if self._player_moved > self.cfg.player.still_after:
            still[0] = 0.0
        else:
            still[0] += dt
            if self._walk_to is None:
                pop.velocity[0] = 0.0
        self._player_moved = 0.0

    def fire(self, origin, direction) -> dict:
        """A shot: the first animal along the ray dies; sounds at the muzzle and where the bullet stops."""
        o = point(origin, "origin")
        d = unit(direction, "direction")
        gun = self.cfg.player.gun if self.cfg.player is not None else None
        reach = gun.range if gun else 120.0
        t_ground = plane_hit(o, d, self.ground, reach)
        depth = gun.water_penetration if gun else 1.0
        if self.cfg.water_level is not None:  # bullets do not get far in water
            t_ground = min(t_ground, plane_hit(o, d, self.cfg.water_level - depth, reach))
        env = getattr(self.sim, "environment", None)
        if env is not None:  # walls, rocks, terrain; and the environment's water
            t_ground = min(t_ground, self._env_stop(env, o, d, reach, gun, depth))
        best = (None, -1, min(reach, t_ground))
        for sp in self.species:
            pop = sp.pop
            if pop.n == 0:
                continue
            alive = np.ones(pop.n, bool)
            if self._dying[sp.name]:
                alive &= ~np.isin(pop.uid, list(self._dying[sp.name]))
            rows = np.flatnonzero(alive)
            j, t = first_hit(o, d, best[2], pop.position[rows], self._body_radius(sp))
            if j >= 0 and t < best[2]:
                best = (sp, int(pop.uid[rows[j]]), t)
        S.spawn_sound(self.world.commands, o, gun.muzzle_loudness if gun else 1.0, self.cfg.sounds)
        self.shots += 1
        hit = None
        impact = None
        if best[0] is not None:
            sp, uid, t = best
            self.kill(sp.name, [uid], cause="shot")
            impact = o + d * t
            hit = {"species": sp.name, "uid": uid}
        elif np.isfinite(t_ground):
            impact = o + d * t_ground
        if impact is not None:
            S.spawn_sound(self.world.commands, impact, gun.impact_loudness if gun else 0.6, self.cfg.sounds)
        return {"hit": hit, "impact": None if impact is None else [float(x) for x in impact]}

    @staticmethod
    def _env_stop(env, o, d, reach: float, gun, depth: float) -> float:
        """Distance along the ray to where the environment stops a bullet (inf: nowhere in range)."""
        from ..environment.raycast import cast_rays

        origin = np.float32([o])
        direction = np.float32([d])
        stops = gun.stopped_by if gun else ["terrain", "ground", "environment"]
        t = np.inf
        known = [name for name in stops if name in env.layers]
        if known:
            hit = cast_rays(env, origin, direction, reach, mask=env.mask(known))
            if hit.hit[0]:
                t = float(hit.distance[0])
        if "water" in env.layers:
            hit = cast_rays(env, origin, direction, reach, mask=env.mask(["water"]))
            if hit.hit[0]:
                t = min(t, float(hit.distance[0]) + depth / max(abs(float(d[1])), 0.05))
        return t

    def _body_radius(self, sp: SpeciesEco) -> float:
        if sp.eco is not None and sp.eco.body_radius is not None:
            return float(sp.eco.body_radius)
        return max(0.1, 0.5 * float(sp.cfg.appearance.scale))

    def throw_apple(self, origin, velocity) -> None:
        """An apple leaves ``origin`` with ``velocity`` (zero: dropped); it appears at the end of the step."""
        o = point(origin, "origin")
        v = point(velocity, "velocity")
        a = self.cfg.apples

        def draw(value):
            return float(value.sample(self.rng, 1, 0.0)[0]) if isinstance(value, Distribution) else float(value)

        self.world.commands.spawn(I.APPLE, o.reshape(1, 3), v.reshape(1, 3), components={
            "food": np.float32([draw(a.food)]), "nutrition": np.float32([draw(a.nutrition)]),
            "floats": np.float32([1.0 if a.buoyancy == "float" else 0.0]),
            "item_age": np.float32([0.0]),
            "item_lifetime": np.float32([a.lifetime if a.lifetime is not None else -1.0]),
        })
        self.apples_thrown += 1

    def make_sound(self, position, loudness: float = 1.0, lifetime: Optional[float] = None) -> None:
        S.spawn_sound(self.world.commands, point(position, "position"), loudness, self.cfg.sounds, lifetime)

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

    def _perceive(self, sp: SpeciesEco, names, include_bits: int, exclude_bits: int, radius: float, fov: float):
        """For every animal: how many targets it sees, and the nearest one's position and distance."""
        key = (sp.name, tuple(names), include_bits, exclude_bits, float(radius), float(fov))
        hit = self._perceived.get(key)
        if hit is not None:
            return hit
        pop = sp.pop
        n = pop.n
        pos, own = self._targets(names, include_bits, exclude_bits)
        self_index = np.full(n, -1, np.int64)
        if sp.name in own:
            offset, rows = own[sp.name]
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

    def _remember_threats(self, sp: SpeciesEco, dt: float) -> None:
        if not sp.memories:
            return
        pop = sp.pop
        memory = pop.component("threat_memory")
        refreshed = np.zeros(pop.n, bool)
        for group, slot in sp.memories:
            p = slot.params
            total, nearest, dist = self._perceive(sp, group.targets, group.include_bits, group.exclude_bits,
                                                  p.max_distance, p.fov_deg)
            seen = (total > 0) & np.isfinite(dist) & ~refreshed
            pop.component("threat_x")[seen] = nearest[seen, 0]
            pop.component("threat_y")[seen] = nearest[seen, 1]
            pop.component("threat_z")[seen] = nearest[seen, 2]
            pop.component("threat_level")[seen] = np.clip(1.0 - dist[seen] / p.max_distance, 0.0, 1.0)
            memory[seen] = 1.0
            refreshed |= seen
        remember = max(slot.params.remember for _, slot in sp.memories)
        fading = ~refreshed
        memory[fading] = np.maximum(memory[fading] - dt / remember, 0.0)

    # ------------------------------------------------------------------ brains
    def _think(self, sp: SpeciesEco, dt: float) -> None:
        pop = sp.pop

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
            total, _, _ = self._perceive(sp, q.targets, self.world.tag_bits(q.tags), self.world.tag_bits(q.exclude_tags),
                                         q.within, q.fov_deg)
            return compare(total, cond.op, cond.value)

        state = pop.component("state")
        sp.brain.step(state, pop.component("state_time"), evaluate, self.rng, dt)
        pop.component("target_speed")[:] = sp.brain.target_speed[state.astype(np.int64)]

    # ------------------------------------------------------------------ eating
    def _eat(self, sp: SpeciesEco) -> None:
        eat = sp.eco.eating if sp.eco.eating is not None else DEFAULTS["eating"]
        pop = sp.pop
        mouths = C.mouth_positions(pop.position, pop.forward, pop.up, sp.eco.mouth.offset)
        hunger = pop.component("hunger")
        chew = pop.component("chew")
        eligible = np.flatnonzero((chew <= 0.0) & (hunger >= sp.get("eating", "min_hunger")))
        if eligible.size == 0:
            return
        reach = sp.get("mouth", "reach")
        reach_rows = reach[eligible] if isinstance(reach, np.ndarray) else np.full(eligible.size, reach)
        done = np.zeros(eligible.size, bool)
        points = mouths[eligible]

        def took(k: int, amount: float, nutrition: float) -> None:
            row = eligible[k]
            satiation = sp.value_at("hunger", "satiation", row) if sp.eco.hunger is not None else 1.0
            hunger[row] = max(0.0, float(hunger[row]) - amount * nutrition * satiation)
            chew[row] = sp.value_at("eating", "chew_time", row)
            pop.component("event_bit")[row] = 1.0
            self.counters[sp.name]["eaten"] += 1
            done[k] = True

        for prey_name in eat.prey:
            prey = self.world.population(prey_name)
            if prey.n == 0:
                continue
            idx, dist, _ = nearest_within(points, prey.position, float(reach_rows.max()))
            prey_sp = self.by_name[prey_name]
            for k in np.flatnonzero((idx >= 0) & ~done):
                if dist[k] > reach_rows[k]:
                    continue
                j = int(idx[k])
                uid = int(prey.uid[j])
                if uid in self._dying[prey_name] or (prey_name == sp.name and j == eligible[k]):
                    continue
                has_food = prey_sp.eco is not None and prey_sp.eco.food is not None
                left = float(prey.component("food")[j]) if has_food else 1.0
                nutrition = float(prey.component("nutrition")[j]) if has_food else 1.0
                amount = bite_amount(left, sp.value_at("eating", "bite", eligible[k]))
                self.kill(prey_name, [uid], cause="caught", carcass_food=left - amount)
                self.counters[sp.name]["caught"] += 1
                pop.component("event_caught")[eligible[k]] = 1.0
                took(k, amount, nutrition)
        bits = self.world.tag_bits(eat.food_tags)
        for food_name in eat.food:
            items = self.world.population(food_name)
            if items.n == 0 or done.all():
                continue
            rows = np.arange(items.n)
            if bits:
                rows = np.flatnonzero((items.tags & np.uint32(bits)) != 0)
                if rows.size == 0:
                    continue
            idx, dist, _ = nearest_within(points, np.ascontiguousarray(items.position[rows]), float(reach_rows.max()))
            food = items.component("food")
            for k in np.flatnonzero((idx >= 0) & ~done):
                if dist[k] > reach_rows[k]:
                    continue
                j = int(rows[idx[k]])
                uid = int(items.uid[j])
                if uid in self._dying[food_name] or (food_name == sp.name and j == eligible[k]):
                    continue
                left = float(food[j])
                if left <= 0.0:
                    continue
                amount = bite_amount(left, sp.value_at("eating", "bite", eligible[k]))
                food[j] = left - amount
                if food[j] <= 1e-6:
                    food[j] = 0.0
                    if food_name in self.by_name:
                        self.kill(food_name, [uid], cause="eaten", carcass_food=0.0)
                    else:
                        self.despawn(food_name, [uid])
                took(k, amount, float(items.component("nutrition")[j]))
        if sp.eco.graze is not None and not done.all():
            self._graze(sp, eligible, done, took)

    def _graze(self, sp: SpeciesEco, eligible: np.ndarray, done: np.ndarray, took) -> None:
        """Animals nearly still over the grass layer bite it (grass never runs out)."""
        env = getattr(self.sim, "environment", None)
        if env is None:
            return
        from ..environment.raycast import cast_rays

        g = sp.eco.graze
        pop = sp.pop
        rows = eligible[~done]
        speed = np.sqrt(np.einsum("ij,ij->i", pop.velocity[rows], pop.velocity[rows]))
        keep = speed <= g.max_speed
        ks = np.flatnonzero(~done)[keep]
        if ks.size == 0:
            return
        origins = np.ascontiguousarray(pop.position[eligible[ks]], np.float32)
        down = np.tile(np.float32([0.0, -1.0, 0.0]), (ks.size, 1))
        hits = cast_rays(env, origins, down, g.reach, mask=env.mask(g.layers))
        for k, on in zip(ks, hits.hit[:ks.size]):
            if on:
                row = eligible[k]
                took(k, sp.value_at("eating", "bite", row), sp.value_at("graze", "nutrition", row))

    # ------------------------------------------------------------------ events
    def _run_events(self, t: float) -> None:
        while self._next_event < len(self.timeline) and self.timeline[self._next_event][1].at <= t + 1e-9:
            _, ev = self.timeline[self._next_event]
            self._next_event += 1
            self.run_event(ev)

    def run_event(self, ev) -> None:
        """Carry out one scripted event now (structural effects at the end of the step)."""
        kind = ev.kind
        if kind == "gunshot":
            origin = np.asarray(ev.origin, np.float64) if ev.origin is not None else self.player_hand()
            if ev.direction is not None:
                direction = np.asarray(ev.direction, np.float64)
            elif ev.target is not None:
                direction = np.asarray(ev.target, np.float64) - origin
            else:
                aim = self.world.population(ev.target_species)
                if aim.n == 0:
                    direction = self.populations[PLAYER].forward[0].astype(np.float64) if self.has_player \
                        else np.array([0.0, 0.0, 1.0])
                else:
                    direction = aim.position.astype(np.float64).mean(axis=0) - origin
            self.fire(origin, direction)
        elif kind == "sound":
            self.make_sound(ev.position, ev.loudness, ev.lifetime)
        elif kind == "apple":
            origin = np.asarray(ev.origin, np.float64) if ev.origin is not None else self.player_hand()
            if ev.velocity is not None:
                velocity = ev.velocity
            elif ev.target is not None:
                velocity = I.throw_velocity(origin, ev.target, ev.flight_time, self.cfg.physics.gravity)
            else:
                velocity = (0.0, 0.0, 0.0)
            self.throw_apple(origin, velocity)
        elif kind == "spawn":
            self._spawn_event(ev)
        elif kind in ("kill", "despawn", "tag"):
            pop = self.world.population(ev.species)
            uids = self._select(pop, ev)
            if kind == "kill":
                self.kill(ev.species, uids, cause="event")
            elif kind == "despawn":
                self.despawn(ev.species, uids)
            elif uids.size:
                self.retag(ev.species, uids, add=ev.add, remove=ev.remove)
        elif kind == "set":
            self.sim.queue_set(ev.path, ev.value)
        elif kind == "move_player":
            if ev.to is not None:
                self.walk_player(ev.to)
            else:
                self.move_player(ev.position, ev.look)
            if ev.look is not None:
                self.populations[PLAYER].forward[0] = unit(ev.look, "look")
        else:  # pragma: no cover - the config union admits nothing else
            raise ValueError(f"unknown event kind {kind!r}")

    def _select(self, pop: Population, ev) -> np.ndarray:
        alive = pop.uid[~np.isin(pop.uid, list(self._dying[pop.name]))] if self._dying[pop.name] else pop.uid.copy()
        if ev.uids:
            return np.asarray([u for u in ev.uids if u in set(alive.tolist())], np.int64)
        if ev.count is None or ev.count >= alive.size:
            return alive
        return self.rng.choice(alive, size=ev.count, replace=False)

    def _spawn_event(self, ev) -> None:
        sp = self.by_name[ev.species]
        center = np.asarray(ev.center if ev.center is not None else sp.cfg.spawn.center, np.float64)
        d = self.rng.normal(size=(ev.count, 3))
        d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
        pos = center + d * ev.radius * self.rng.random((ev.count, 1)) ** (1.0 / 3.0)
        heading = self.rng.normal(size=(ev.count, 3))
        planar = getattr(self.sim.movers[sp.index], "planar", False)
        if planar or sp.cfg.spawn.planar:
            heading[:, 1] = 0.0
            if planar:
                pos[:, 1] = center[1]
        heading /= np.maximum(np.linalg.norm(heading, axis=1, keepdims=True), 1e-12)
        self.spawn(ev.species, pos.astype(np.float32), (heading * ev.speed).astype(np.float32), tags=ev.tags)

    # ------------------------------------------------------------------ state
    def state(self, sim) -> dict:
        return {
            "rng": self.rng.bit_generator.state,
            "counters": {k: dict(v) for k, v in self.counters.items()},
            "causes": {k: dict(v) for k, v in self.causes.items()},
            "shots": self.shots,
            "apples_thrown": self.apples_thrown,
            "dying": {k: sorted(int(u) for u in v) for k, v in self._dying.items()},
            "despawned": {k: sorted(int(u) for u in v) for k, v in self._despawned.items()},
            "walk_to": None if self._walk_to is None else [float(x) for x in self._walk_to],
            "player_moved": self._player_moved,
            "events": [ev.model_dump(mode="json") for _, ev in self.timeline],
            "next_event": self._next_event,
        }

    def load_state(self, sim, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        for name, counts in state["counters"].items():
            if name in self.counters:
                self.counters[name].update(counts)
        for name, causes in state["causes"].items():
            if name in self.causes:
                self.causes[name].update(causes)
        self.shots = int(state["shots"])
        self.apples_thrown = int(state["apples_thrown"])
        self._dying = defaultdict(set, {k: set(v) for k, v in state["dying"].items()})
        self._despawned = defaultdict(set, {k: set(v) for k, v in state["despawned"].items()})
        self._walk_to = None if state["walk_to"] is None else np.asarray(state["walk_to"], np.float64)
        self._player_moved = float(state["player_moved"])
        if state["events"] == [ev.model_dump(mode="json") for _, ev in self.timeline]:
            self._next_event = int(state["next_event"])
        else:  # an edited timeline: what is due from now on still happens
            self._next_event = sum(1 for _, ev in self.timeline if ev.at < sim.time - 1e-9)
        for sp in self.species:  # newcomers of a reconfiguration (a raised count, a new species)
            sp.births(self.rng)
