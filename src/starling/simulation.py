"""The Simulation: a scenario brought to life, stepped at a fixed ``dt``.

This is the one API the CLI, the browser server, the experiments and user scripts
share. A step reads one snapshot and writes the next:

1. every species computes its desired velocities from the step-start state,
2. every species is moved (velocity, orientation, position),
3. queued structural changes (spawns, kills, tag changes) are applied.
"""
from __future__ import annotations

import math
import time as _time
from pathlib import Path
from typing import Iterable, Optional, Union

import numpy as np

from .config import load_scenario_config
from .metrics import groups, local_polarization, milling, nearest_neighbor_distance, polarization
from .steering import registry
from .steering.per_animal import bind_draws
from .steering.pipeline import PARALLEL_THRESHOLD, SpeciesPipeline
from .world import Population, World
from .world.layout import spatial_order

#: large populations are re-sorted into grid-cell order this often (steps)
REORDER_EVERY = 16
REORDER_MIN_ANIMALS = 4096


class PlayerUnavailable(AttributeError, ValueError):
    """A player action asked of a scenario without a player.

    It is a ``ValueError`` for callers and an ``AttributeError`` for ``hasattr``, so
    ``hasattr(sim, "fire")`` says whether the scenario offers the action (what the
    browser server checks before forwarding one).
    """


class _PlayerAction:
    """A method that exists only while the scenario has a player (the ecology's ``[ecology.player]``)."""

    def __init__(self, func):
        self.func = func
        self.__doc__ = func.__doc__
        self.name = func.__name__

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, sim, owner=None):
        if sim is None:
            return self
        system = next((s for s in sim.systems if getattr(s, "has_player", False)), None)
        if system is None:
            raise PlayerUnavailable(f"{self.name} is not available in this scenario")
        func = self.func
        return lambda *args, **kwargs: func(sim, system, *args, **kwargs)


class Simulation:
    """A running scenario. Read any population's arrays between steps."""

    def __init__(self, scenario, *, record_debug: bool = True):
        self.scenario = scenario
        self.record_debug = record_debug
        w = scenario.world
        self.world = World(scenario.dt, scenario.seed, w.bounds_min, w.bounds_max, w.wrap)
        self.pipelines: list[SpeciesPipeline] = []
        self.movers = []
        self.mover_draws: list[tuple] = []  # per species: (field, component) of mover parameters drawn per animal
        self.last_step_ms = 0.0
        for index, sp in enumerate(scenario.species):
            mover_spec = registry.get_mover(sp.mover.kind)
            mover = mover_spec.factory(sp.mover)
            pop = Population(sp.name, capacity=max(sp.count, 16), components=sp.components)
            self.world.add_population(pop)
            self._spawn_initial(pop, sp, index, planar=getattr(mover, "planar", False))
            self.movers.append(mover)
            self.mover_draws.append(bind_draws(pop, sp.mover, "mover_", self.world.species_rng(index, stream=2), {}))
            self.pipelines.append(SpeciesPipeline(sp, index, self.world, planar=getattr(mover, "planar", False),
                                                  max_speed=sp.mover.max_speed))

        self.systems = []
        for sec in registry.sections():
            if sec.factory is None:
                continue
            present = (getattr(scenario, sec.name, None) is not None if sec.scope == "scenario"
                       else any(getattr(sp, sec.name, None) is not None for sp in scenario.species))
            if present:
                system = sec.factory(self)
                if system is not None:
                    self.systems.append(system)

    # ------------------------------------------------------------------ setup
    def _spawn_initial(self, pop: Population, sp, index: int, planar: bool) -> None:
        rng = self.world.species_rng(index)
        n = sp.count
        s = sp.spawn
        center = np.asarray(s.center, np.float64)
        if s.shape == "box":
            pos = center + (rng.random((n, 3)) - 0.5) * np.asarray(s.size)
        else:
            d = rng.normal(size=(n, 3))
            d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
            pos = center + d * s.radius * rng.random((n, 1)) ** (1.0 / 3.0)
        flat = planar or s.planar
        if planar:
            pos[:, 1] = center[1]
        heading = rng.normal(size=(n, 3))
        if flat:
            heading[:, 1] = 0.0
        heading /= np.maximum(np.linalg.norm(heading, axis=1, keepdims=True), 1e-12)
        speed = rng.uniform(s.speed[0], s.speed[1], size=(n, 1))
        vel = heading * speed
        pop.append(self.world.new_uids(n), pos.astype(np.float32), vel.astype(np.float32),
                   forward=heading.astype(np.float32))

    # ------------------------------------------------------------------ stepping
    @property
    def dt(self) -> float:
        return self.world.clock.dt

    @property
    def time(self) -> float:
        return self.world.clock.time

    @property
    def step_count(self) -> int:
        return self.world.clock.step

    @property
    def species(self) -> list[str]:
        """The scenario's species (systems may add more populations: ``world.populations``)."""
        return [sp.name for sp in self.scenario.species]

    def population(self, name: str) -> Population:
        return self.world.population(name)

    @property
    def environment(self):
        """The scene's static :class:`~starling.environment.Environment` (None without an ``[environment]``).

        Cast rays into it with :func:`starling.environment.cast_rays` (a gun, a look-out),
        or ask it for heights, water and solids.
        """
        system = next((s for s in self.systems if s.name == "environment"), None)
        return None if system is None else system.environment

    def step(self, n: int = 1) -> None:
        """Advance ``n`` fixed steps."""
        for _ in range(int(n)):
            t0 = _time.perf_counter()
            self._step_once()
            self.last_step_ms = (_time.perf_counter() - t0) * 1000.0

    def _step_once(self) -> None:
        world = self.world
        t = world.clock.time
        dt = world.clock.dt
        for system in self.systems:
            system.before_behaviors(self, dt)
        for pipeline in self.pipelines:
            pipeline.compute(world, t, dt, record=self.record_debug)
        wrap = (world.bounds_min, world.bounds_max - world.bounds_min) if world.wrap else None
        for pipeline, mover, draws in zip(self.pipelines, self.movers, self.mover_draws):
            pop = world.population(pipeline.name)
            if pop.n == 0:
                continue
            mover.move(pop.position, pop.velocity, pop.forward, pop.up, pipeline.desired[: pop.n], dt,
                       wrap=wrap, parallel=pop.n >= PARALLEL_THRESHOLD,
                       speed_scale=pipeline.speed_scale_for(pop.n), accel_scale=pipeline.accel_scale_for(pop.n),
                       drawn={name: pop.component(comp) for name, comp in draws})
        for system in self.systems:
            system.after_move(self, dt)
        killed = world.commands.apply(world)
        for system in self.systems:
            system.after_commands(self, killed)
        world.clock.advance()
        if world.clock.step % REORDER_EVERY == 0:
            self._restore_locality()

    def set_mover(self, index: int, params) -> None:
        """Give species ``index`` a new mover configuration during a run.

        Parameters whose distribution changed are drawn afresh for every animal; the
        pipeline's defaults that follow the mover (``max_speed``) follow it.
        """
        old = self.scenario.species[index].mover
        mover = registry.get_mover(params.kind).factory(params)
        previous = self.movers[index]
        environment = getattr(previous, "environment", None)
        if environment is not None and hasattr(mover, "attach_environment"):
            mover.attach_environment(environment)
        self.movers[index] = mover
        self.pipelines[index].max_speed = float(params.max_speed)
        pop = self.world.population(self.pipelines[index].name)
        self.mover_draws[index] = bind_draws(pop, params, "mover_", self.world.species_rng(index, stream=2),
                                             old.varied if old.kind == params.kind else {})

    def _restore_locality(self) -> None:
        """Sort big populations by grid cell so neighbours are neighbours in memory too."""
        for pipeline in self.pipelines:
            pop = self.world.population(pipeline.name)
            if pop.n < REORDER_MIN_ANIMALS:
                continue
            radii = [g.query.max_distance for g in pipeline.groups] or [5.0]
            pop.permute(spatial_order(pop.position, max(radii)))

    # ------------------------------------------------------------------ the player
    @_PlayerAction
    def fire(self, system, origin, direction) -> dict:
        """The player fires from ``origin`` along ``direction``: the first animal on the ray dies.

        Sounds start at the muzzle and where the bullet stops. Structural effects (the
        death, the sounds, a carcass) happen at the end of the next step. Returns
        ``{"hit": {"species", "uid"} or None, "impact": [x, y, z] or None}``.
        Raises ``ValueError`` when the scenario has no player.
        """
        return system.fire(origin, direction)

    @_PlayerAction
    def throw_apple(self, system, origin, velocity) -> None:
        """The player throws an apple from ``origin`` with ``velocity`` (zero drops it); it falls and is food.

        Raises ``ValueError`` when the scenario has no player.
        """
        system.throw_apple(origin, velocity)

    @_PlayerAction
    def move_player(self, system, position, look_direction=None) -> None:
        """Place the player at ``position`` (feet), optionally looking along ``look_direction``.

        Raises ``ValueError`` when the scenario has no player.
        """
        system.move_player(position, look_direction)

    # ------------------------------------------------------------------ reading
    def inspect(self, species: str, uid: int) -> Optional[dict]:
        """Everything the viewer shows about one animal; None if it is not alive."""
        pop = self.world.population(species)
        row = pop.index_of(uid)
        if row < 0:
            return None
        index = self.species.index(species)
        pipeline = self.pipelines[index]
        cfg = self.scenario.species[index]
        vel = pop.velocity[row]
        info = {
            "species": species,
            "uid": int(uid),
            "position": [float(x) for x in pop.position[row]],
            "velocity": [float(x) for x in vel],
            "speed": float(np.linalg.norm(vel)),
            "state": None,
            "components": {name: float(pop.component(name)[row]) for name in pop.component_names},
            "neighbors": [],
            "rays": [],
            "behaviors": [],
            "desired_velocity": [float(x) for x in pipeline.desired[row]],
            "fov_deg": float(cfg.groups[0].query.fov_deg) if cfg.groups else 360.0,
            "view_distance": float(cfg.groups[0].query.max_distance) if cfg.groups else 0.0,
        }
        for system in self.systems:
            info.update(system.inspect(self, species, row))
        detail = pipeline.inspect_row(self.world, uid)
        if detail:
            info["behaviors"] = detail["behaviors"]
            info["neighbors"] = detail["neighbors"]
            info["rays"] = detail["rays"]
            info["desired_velocity"] = detail["desired_velocity"]
        return info

    def metrics(self, nn_sample: int = 2000, group_radius: Optional[float] = None,
                groups_max: int = 20_000) -> dict:
        """Order parameters per species (cheap enough for a live chart), periodic in a wrapping world.

        ``groups`` / ``largest_group``: animals closer than ``group_radius`` are linked;
        by default the reach of the species' neighbour queries of its own kind (what an
        animal can see of its fellows), None for populations without one. The count is
        exact and costs with the number of linked pairs, so populations above
        ``groups_max`` report None rather than stall a live view (0.3 s at 20,000 birds).
        """
        box = self.world.box
        reach = {}
        for pipe in self.pipelines:
            own = [g.query.max_distance for g in pipe.groups if pipe.name in g.targets]
            reach[pipe.name] = max(own) if own else None
        out = {}
        for name, pop in self.world.populations.items():
            radius = group_radius if group_radius is not None else reach.get(name)
            count, largest = (groups(pop.position, radius, box) if radius is not None and pop.n <= groups_max
                              else (None, None))
            out[name] = {
                "count": int(pop.n),
                "polarization": polarization(pop.velocity),
                "milling": milling(pop.position, pop.velocity, box=box),
                "local_polarization": local_polarization(pop.position, pop.velocity, sample=nn_sample, box=box),
                "nn_distance": nearest_neighbor_distance(pop.position, sample=nn_sample, box=box),
                "groups": count,
                "largest_group": largest,
                "mean_speed": float(np.linalg.norm(pop.velocity, axis=1).mean()) if pop.n else 0.0,
            }
        return out

    def health(self) -> dict:
        """Counts of broken state; all zero in a healthy run."""
        bad = 0
        for pop in self.world.populations.values():
            for arr in (pop.position, pop.velocity, pop.forward, pop.up):
                bad += int(np.count_nonzero(~np.isfinite(arr).all(axis=1)))
        out = {"nan": bad}
        for system in self.systems:
            out.update(system.health(self))
        return out

    def species_summary(self, species: str) -> dict:
        """Per-species counters contributed by systems (deaths, bites, catches, states…)."""
        out: dict = {}
        for system in self.systems:
            out.update(system.species_summary(self, species))
        return out

    def scene(self) -> dict:
        """Static scene description for viewers: world box, species looks, and systems' geometry."""
        out = {
            "name": self.scenario.name,
            "bounds_min": list(self.scenario.world.bounds_min),
            "bounds_max": list(self.scenario.world.bounds_max),
            "species": [{"name": sp.name, **sp.appearance.model_dump()} for sp in self.scenario.species],
        }
        for system in self.systems:
            out.update(system.scene(self))
        return out

    def describe_environment(self) -> Optional[dict]:
        """The static geometry a viewer draws (terrain, water, obstacles, meshes), or None.

        The shape is the browser protocol's ``Environment`` (see ``docs/protocol.md``);
        it is the ``environment`` part of :meth:`scene`.
        """
        for system in self.systems:
            part = system.scene(self).get("environment")
            if part is not None:
                return part
        return None


def load_scenario(name_or_path: Union[str, Path], *, seed: Optional[int] = None, dt: Optional[float] = None,
                  overrides: Iterable[str] = (), record_debug: bool = True) -> Simulation:
    """Build a :class:`Simulation` from a built-in scenario name or a TOML path.

    ``overrides`` are ``path=value`` strings (``"species.bird.count=5000"``).
    Raises :class:`starling.config.ConfigError` naming every invalid field.
    """
    scenario = load_scenario_config(name_or_path, overrides, seed=seed, dt=dt)
    return Simulation(scenario, record_debug=record_debug)
