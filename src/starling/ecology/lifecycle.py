"""The lifecycle system: births, deaths, their counters and the scripted timeline.

``before_behaviors``
    the events that are due fire (gunshots, sounds, apples, spawns, kills, tags, ``set``
    changes, the player's walks), before anything else of the step happens;
``after_commands``
    deaths are counted (despawns are not deaths); every animal that has just entered
    (at the start, spawned, born of a count change) gets its numbers: each ecology system's
    ``born`` hook runs for those rows, species by species, in the systems' order, all drawing
    from the one ecology stream, so a run is reproducible.

Kills and despawns are requests: they go through the command buffer and take effect at
the end of the step; an animal already dying is not killed twice. A species with a
``carcass`` table leaves one where an animal died (feeding's :meth:`leave_carcass`).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Optional

import numpy as np

from ..systems import Access, ComponentSpec, System
from ..world import Population
from .config import PROVIDED
from .items import throw_velocity
from .player import PLAYER, unit

BORN = ComponentSpec("eco_born", default=0.0)


class LifecycleSystem(System):
    """Births, deaths, counters and the timeline of scripted events (see the module)."""

    name = "lifecycle"

    def __init__(self, ctx):
        self.ctx = ctx
        self.world = ctx.world
        self.counters = {v.name: {"deaths": 0, "eaten": 0, "caught": 0} for v in ctx.species}
        self.causes = {v.name: defaultdict(int) for v in ctx.species}
        self._dying: dict[str, set] = defaultdict(set)
        self._despawned: dict[str, set] = defaultdict(set)
        # per species, the population and its arrivals when every animal was last found born
        self._settled: dict = {}
        events = getattr(ctx.sim.scenario, "events", None)
        self.timeline = sorted(enumerate(events or ()), key=lambda e: (e[1].at, e[0]))
        self._next_event = 0
        for v in ctx.species:
            if v.kit:
                v.pop.add_component(BORN)

    def components(self) -> dict[str, Access]:
        return {v.name: Access(owns=(BORN,)) for v in self.ctx.species if v.kit}

    # ------------------------------------------------------------------ hooks
    def before_behaviors(self, sim, dt: float) -> None:
        t = sim.time
        while self._next_event < len(self.timeline) and self.timeline[self._next_event][1].at <= t + 1e-9:
            _, ev = self.timeline[self._next_event]
            self._next_event += 1
            self.run_event(ev)

    def after_commands(self, sim, killed: dict) -> None:
        for species, uids in killed.items():
            if species not in self.counters:
                continue
            gone = self._despawned.get(species, set())
            self.counters[species]["deaths"] += int(sum(1 for u in uids if int(u) not in gone))
        self._dying.clear()
        self._despawned.clear()
        self.births()

    def births(self) -> None:
        """Every animal not yet initialised gets its drawn numbers and start state (in system order)."""
        rng = self.ctx.rng
        for v in self.ctx.species:
            if not v.kit or v.pop.n == 0:
                continue
            if self._settled.get(v.name) == (v.pop, v.pop.arrivals):  # nobody arrived since all were born
                continue
            born = v.pop.component("eco_born")
            rows = np.flatnonzero(born < 0.5)
            self._settled[v.name] = (v.pop, v.pop.arrivals)
            if rows.size == 0:
                continue
            for system in self.ctx.systems:
                hook = getattr(system, "born", None)
                if hook is not None:
                    hook(v, rows, rng)
            born[rows] = 1.0

    # ------------------------------------------------------------------ deaths and births
    def is_dying(self, species: str, uid: int) -> bool:
        return uid in self._dying[species]

    def dying(self, species: str) -> set:
        """Uids of ``species`` that die or leave at the end of this step."""
        return self._dying[species]

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
        self.world.commands.kill(species, [u for u, _ in fresh], cause=cause)
        dying.update(u for u, _ in fresh)
        view = self.ctx.view(species)
        if view is not None:
            self.causes[species][cause] += len(fresh)
            if view.has("carcass"):
                for _, row in fresh:
                    self.ctx.feeding.leave_carcass(view, row, carcass_food)
        return len(fresh)

    def despawn(self, species: str, uids) -> int:
        """Remove entities at the end of this step without counting a death or leaving a carcass."""
        pop = self.world.population(species)
        gone = [int(u) for u in np.atleast_1d(np.asarray(uids, np.int64))
                if int(u) not in self._dying[species] and pop.index_of(int(u)) >= 0]
        if gone:
            self.world.commands.kill(species, gone, cause="despawned")
            self._dying[species].update(gone)
            self._despawned[species].update(gone)
        return len(gone)

    def spawn(self, species: str, positions, velocities=None, tags=()) -> None:
        """New animals at the end of this step; their ecology numbers are drawn when they appear."""
        self.world.commands.spawn(species, positions, velocities, tags=tags)

    def retag(self, species: str, uids, add=(), remove=()) -> None:
        self.world.commands.retag(species, uids, add=add, remove=remove)

    def count(self, species: str, what: str, k: int = 1) -> None:
        """Add ``k`` to a species' counter (``eaten``, ``caught``)."""
        self.counters[species][what] += k

    # ------------------------------------------------------------------ events
    def run_event(self, ev) -> None:
        """Carry out one scripted event now (structural effects at the end of the step)."""
        ctx = self.ctx
        kind = ev.kind
        player = ctx.player
        self.world.journal.log("scripted", getattr(ev, "species", None), event=ev.model_dump(mode="json"))
        if kind == "gunshot":
            origin = np.asarray(ev.origin, np.float64) if ev.origin is not None else player.hand()
            if ev.direction is not None:
                direction = np.asarray(ev.direction, np.float64)
            elif ev.target is not None:
                direction = np.asarray(ev.target, np.float64) - origin
            else:
                aim = self.world.population(ev.target_species)
                if aim.n == 0:
                    direction = self.world.population(PLAYER).forward[0].astype(np.float64) if player.has_player \
                        else np.array([0.0, 0.0, 1.0])
                else:
                    direction = aim.position.astype(np.float64).mean(axis=0) - origin
            player.fire(origin, direction)
        elif kind == "sound":
            ctx.sounds.make_sound(ev.position, ev.loudness, ev.lifetime)
        elif kind == "apple":
            origin = np.asarray(ev.origin, np.float64) if ev.origin is not None else player.hand()
            if ev.velocity is not None:
                velocity = ev.velocity
            elif ev.target is not None:
                velocity = throw_velocity(origin, ev.target, ev.flight_time, ctx.cfg.physics.gravity)
            else:
                velocity = (0.0, 0.0, 0.0)
            player.throw_apple(origin, velocity)
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
            ctx.sim.queue_set(ev.path, ev.value)
        elif kind == "move_player":
            if ev.to is not None:
                player.walk_player(ev.to)
            else:
                player.move_player(ev.position, ev.look)
            if ev.look is not None:
                self.world.population(PLAYER).forward[0] = unit(ev.look, "look")
        else:  # pragma: no cover - the config union admits nothing else
            raise ValueError(f"unknown event kind {kind!r}")

    def _select(self, pop: Population, ev) -> np.ndarray:
        dying = self._dying[pop.name]
        alive = pop.uid[~np.isin(pop.uid, list(dying))] if dying else pop.uid.copy()
        if ev.uids:
            return np.asarray([u for u in ev.uids if u in set(alive.tolist())], np.int64)
        if ev.count is None or ev.count >= alive.size:
            return alive
        return self.ctx.rng.choice(alive, size=ev.count, replace=False)

    def _spawn_event(self, ev) -> None:
        ctx = self.ctx
        rng = ctx.rng
        v = ctx.by_name[ev.species]
        center = np.asarray(ev.center if ev.center is not None else v.cfg.spawn.center, np.float64)
        d = rng.normal(size=(ev.count, 3))
        d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
        pos = center + d * ev.radius * rng.random((ev.count, 1)) ** (1.0 / 3.0)
        heading = rng.normal(size=(ev.count, 3))
        planar = getattr(ctx.sim.movers[v.index], "planar", False)
        if planar or v.cfg.spawn.planar:
            heading[:, 1] = 0.0
            if planar:
                pos[:, 1] = center[1]
        heading /= np.maximum(np.linalg.norm(heading, axis=1, keepdims=True), 1e-12)
        self.spawn(ev.species, pos.astype(np.float32), (heading * ev.speed).astype(np.float32), tags=ev.tags)

    # ------------------------------------------------------------------ reports and state
    def species_summary(self, sim, species: str) -> dict:
        counters = self.counters.get(species)
        return {} if counters is None else dict(counters)

    def health(self, sim) -> dict:
        bad = 0
        for pop in self.world.populations.values():
            for name in pop.component_names:
                bad += int(np.count_nonzero(~np.isfinite(pop.component(name))))
        return {"ecology_nan": bad}

    def scene(self, sim) -> dict:
        """What viewers draw of the ecology: its populations, planes, the player, carcasses' species, sounds."""
        ctx = self.ctx
        sounds = ctx.cfg.sounds
        return {"ecology": {
            "populations": list(PROVIDED),
            "ground_height": ctx.feeding.ground,
            "water_level": ctx.cfg.water_level,
            "player": ctx.player.has_player,
            # which species a carcass came from, by the tag it carries (viewers draw its body)
            "carcass_tags": {v.eco.carcass.tag or f"dead_{v.name}": v.name for v in ctx.species if v.has("carcass")},
            "sounds": {"speed": sounds.speed, "range": sounds.range, "lifetime": sounds.lifetime},
        }}

    def state(self, sim) -> dict:
        return {
            "counters": {k: dict(v) for k, v in self.counters.items()},
            "causes": {k: dict(v) for k, v in self.causes.items()},
            "dying": {k: sorted(int(u) for u in v) for k, v in self._dying.items()},
            "despawned": {k: sorted(int(u) for u in v) for k, v in self._despawned.items()},
            "events": [ev.model_dump(mode="json") for _, ev in self.timeline],
            "next_event": self._next_event,
        }

    def load_state(self, sim, state: dict) -> None:
        for name, counts in state["counters"].items():
            if name in self.counters:
                self.counters[name].update(counts)
        for name, causes in state["causes"].items():
            if name in self.causes:
                self.causes[name].update(causes)
        self._dying = defaultdict(set, {k: set(v) for k, v in state["dying"].items()})
        self._despawned = defaultdict(set, {k: set(v) for k, v in state["despawned"].items()})
        if state["events"] == [ev.model_dump(mode="json") for _, ev in self.timeline]:
            self._next_event = int(state["next_event"])
        else:  # an edited timeline: what is due from now on still happens
            self._next_event = sum(1 for _, ev in self.timeline if ev.at < sim.time - 1e-9)
        self.births()  # newcomers of a reconfiguration (a raised count, a new species)
