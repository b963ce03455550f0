"""The Simulation: a scenario brought to life, stepped at a fixed ``dt``.

This is the one API the CLI, the browser server, the experiments and user scripts
share. A step reads one snapshot and writes the next:

1. every species computes its desired velocities from the step-start state,
2. every species is moved (velocity, orientation, position),
3. queued structural changes (spawns, kills, tag changes) are applied.
"""
from __future__ import annotations

import copy
import time as _time
import warnings
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Union

import numpy as np

from .config import ConfigError, load_scenario_config, validate_scenario
from . import kernel_calls
from .errors import Problem, name_species, species_names
from .config.io import apply_override, changed_paths, name_problems, toml_value
from .config.models import ScenarioBase
from .steering import registry
from .steering.per_animal import bind_draws
from .parallel import threads_from
from .steering.pipeline import SpeciesPipeline
from .steering.targets import link_joint_queries
from .systems import ComponentSpec, System, check_access
from .world import Population, World
from .observe import Observer, StepView
from .stopping import StopWatch
from .readings import inspect_animal, species_metrics
from .world.layout import spatial_order
from .world.spawn import SpawnError, spawn_headings, spawn_positions

#: large populations are re-sorted into grid-cell order this often (steps), first after step 1: a
#: spawn's rows are in random order, and at a million animals the kernels that read neighbours
#: by row (the neighbour lists' check, the pair geometry, the behaviours) wait on memory until then
REORDER_EVERY = 16
REORDER_MIN_ANIMALS = 4096


#: the ``format`` field of :meth:`Simulation.snapshot` data
SNAPSHOT_FORMAT = "starling.snapshot/1"


def _restore_pickled(snapshot: dict) -> "Simulation":
    return Simulation.restore(snapshot)


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
    """A running scenario. Read any population's arrays between steps.

    Built fresh from a config, from a :meth:`snapshot` (:meth:`restore`), or from the
    running state and an edited config (:meth:`reconfigure`): the three share one build
    path, so whatever a fresh simulation sets up, a restored or reconfigured one does too.
    """

    def __init__(self, scenario, *, record_debug: bool = True):
        self._build(scenario, record_debug=record_debug)

    # ------------------------------------------------------------------ building
    def _build(self, scenario, **kwargs) -> None:
        """:meth:`_assemble`, with the species of any config problem named by name (``species.fish.…``)."""
        try:
            self._assemble(scenario, **kwargs)
        except ConfigError as err:
            raise ConfigError(name_species(err.problems, species_names(scenario.species)), err.source) from None

    def _assemble(self, scenario, *, record_debug: bool, state: Optional[dict] = None, previous=None,
                  reuse: Optional["Simulation"] = None) -> None:
        """Set everything up from ``scenario``; with ``state``, continue from it.

        ``previous`` is the config ``state`` was running under: what it shares with
        ``scenario`` is kept (drawn parameters, counts), what changed is rebuilt. ``reuse``
        is the simulation being replaced, whose static parts (environment geometry) may serve again.
        """
        self.scenario = scenario
        self.previous_scenario = previous
        self.record_debug = record_debug
        self.device = None  # the GPU stepper, attached last (systems read the host state while they build)
        self._host_stale = False
        self.reused = reuse
        w = scenario.world
        self.world = World(scenario.dt, scenario.seed, w.bounds_min, w.bounds_max, w.wrap)
        self.pipelines: list[SpeciesPipeline] = []
        self.movers = []
        self.mover_draws: list[tuple] = []  # per species: (field, component) of mover parameters drawn per animal
        self.last_step_ms = 0.0
        self._observers: list[Observer] = []
        self._queued_sets: list[str] = []
        #: per population, the first row of the animals this build spawned (the rest were restored)
        self.fresh_from: dict[str, int] = {}
        if state is not None:
            keep = {sp.name for sp in scenario.species}
            dropped = {sp.name for sp in (previous.species if previous is not None else ())} - keep
            world_state = dict(state["world"])
            world_state["populations"] = {k: v for k, v in world_state["populations"].items() if k not in dropped}
            if previous is not None:  # species streams follow their species when the order changes
                moved = {i: next((j for j, sp in enumerate(scenario.species) if sp.name == old.name), None)
                         for i, old in enumerate(previous.species)}
                rngs = []
                for key, rng in world_state["rngs"]:
                    if key[0] == "k":
                        rngs.append([key, rng])
                    elif moved.get(key[0]) is not None:
                        rngs.append([[moved[key[0]], *key[1:]], rng])
                world_state["rngs"] = rngs
            self.world.load_state(world_state)
        old_species = {sp.name: sp for sp in (previous.species if previous is not None else ())}
        spawns = []
        for index, sp in enumerate(scenario.species):
            mover_spec = registry.get_mover(sp.mover.kind)
            mover = mover_spec.factory(sp.mover)
            planar = getattr(mover, "planar", False)
            old = old_species.get(sp.name)
            pop = self.world.populations.get(sp.name)
            if pop is None:
                pop = self.world.add_population(Population(sp.name, capacity=max(sp.count, 16), components=sp.components))
                target = sp.count
            else:
                target = sp.count if old is None or old.count != sp.count else pop.n
            for name, value in sp.components.items():
                if pop.has_component(name) and old is not None and old.components.get(name) != value:
                    pop.component(name)[:] = value  # a changed start value applies to everyone
                pop.add_component(name, value)
                pop._component_defaults[name] = float(value)
            if target < pop.n:  # fewer: the newest animals leave
                pop.remove_rows(np.argsort(pop.uid, kind="stable")[target:])
            self.movers.append(mover)
            old_mover = old.mover.varied if old is not None and old.mover.kind == sp.mover.kind else {}
            self.mover_draws.append(bind_draws(pop, sp.mover, "mover_", self.world.species_rng(index, stream=2),
                                               old_mover))
            self.pipelines.append(SpeciesPipeline(sp, index, self.world, planar=planar,
                                                  max_speed=sp.mover.max_speed, previous=old))
            spawns.append((pop, sp, index, planar, target - pop.n))
        link_joint_queries(self.pipelines)
        for pop, sp, index, planar, k in spawns:
            self.fresh_from[sp.name] = pop.n
            if k > 0:
                self._spawn(pop, sp, index, planar, k)
        if state is not None:
            for mover, mover_state in zip(self.movers, self._mover_states(state, scenario, previous)):
                if mover_state is not None and hasattr(mover, "load_state"):
                    mover.load_state(mover_state)

        self.systems = []
        saved = (state or {}).get("systems", {})
        self.saved_systems = frozenset(saved)
        for sec in registry.sections():
            if sec.factory is None:
                continue
            present = (getattr(scenario, sec.name, None) is not None if sec.scope == "scenario"
                       else any(getattr(sp, sec.name, None) is not None for sp in scenario.species))
            if present:
                built = sec.factory(self)  # a system, a sequence of systems run in that order, or None
                for system in (built if isinstance(built, (list, tuple)) else () if built is None else (built,)):
                    if system.name in saved:
                        system.load_state(self, saved[system.name])
                    self.systems.append(system)
        self._check_access()
        self._queued_sets = list((state or {}).get("queued_sets", ())) if previous is scenario else []
        stop = (state or {}).get("stop") or {}
        #: how the run was decided by the scenario's ``[[stop]]``: None, or {"outcome", "step", "time"}
        self.outcome: Optional[dict] = stop.get("outcome")
        self._stops = StopWatch(self.world.journal, stop.get("deaths"))
        self.previous_scenario = None
        self.reused = None
        self.saved_systems = frozenset()
        self._attach_device()

    def _attach_device(self) -> None:
        """Step on the GPU when the scenario asks for it (``backend = "cuda"``) and it can (docs/gpu.md).

        Otherwise the simulation runs on the CPU and ``backend_note`` says why — no GPU
        here, or the config paths the GPU cannot run (ray casts, ecology, …) — also as a
        ``RuntimeWarning``. ``device`` is the :class:`~starling.cuda.stepper.DeviceStepper`, or None.
        """
        self.device = None
        self._host_stale = False  # the GPU has stepped since the host arrays were last copied back
        #: why a ``backend = "cuda"`` scenario runs on the CPU (None when it runs where it asked)
        self.backend_note: Optional[str] = None
        if self.scenario.backend != "cuda":
            return
        from .cuda import unavailable_reason

        reason = unavailable_reason()
        if reason is None:
            from .cuda.stepper import DeviceStepper, device_problems
            from .cuda.translate import DeviceUnsupported

            problems = device_problems(self)
            if problems:
                reason = "; ".join(f"{p.path}: {p.message}" for p in problems)
            else:
                try:
                    self.device = DeviceStepper(self)
                except DeviceUnsupported as exc:
                    reason = str(exc)
        if reason is not None:
            self.backend_note = f"backend 'cuda' is not used, this simulation runs on the CPU: {reason}"
            warnings.warn(self.backend_note, RuntimeWarning, stacklevel=4)

    @property
    def backend(self) -> str:
        """Where the step runs: ``"cuda"`` or ``"cpu"``."""
        return "cpu" if self.device is None else "cuda"

    def _check_access(self) -> None:
        """Every component a system reads or writes is owned, with its type (see ``starling.systems``)."""
        declared = {}
        for sp, draws in zip(self.scenario.species, self.mover_draws):
            comps = [ComponentSpec(name, "float32", (), value) for name, value in sp.components.items()]
            comps += [ComponentSpec(comp) for _, comp in draws]  # the mover's per-animal parameters
            declared[sp.name] = comps
        where = {sp.name: f"species.{i}" for i, sp in enumerate(self.scenario.species)}
        check_access(self.systems, declared, where)
        # and every component a behaviour declares (starling.steering.contract)
        problems = [p for pipe in self.pipelines for p in pipe.check_contract(self.world)]
        if problems:
            raise ConfigError(problems)

    @staticmethod
    def _mover_states(state: dict, scenario, previous) -> list:
        """The saved state of each species' mover, where the species and its mover kind remain."""
        saved = state.get("movers", {})
        old = {sp.name: sp.mover.kind for sp in (previous.species if previous is not None else ())}
        return [saved.get(sp.name) if old.get(sp.name) == sp.mover.kind else None for sp in scenario.species]

    def _spawn(self, pop: Population, sp, index: int, planar: bool, n: int) -> None:
        """``n`` newcomers by the species' spawn rules (its own seeded stream)."""
        rng = self.world.species_rng(index)
        s = sp.spawn
        try:
            pos = spawn_positions(rng, n, shape=s.shape, center=s.center, size=s.size, radius=s.radius,
                                  planar=planar, min_spacing=s.min_spacing)
        except SpawnError as e:
            raise ConfigError([Problem(f"species.{sp.name}.spawn.min_spacing", str(e))]) from None
        if self.world.wrap:
            # a periodic world takes its newcomers into the box: a spawn region as wide as the box
            # placed anywhere fills it uniformly (the vicsek scene spawns around the origin)
            lo = self.world.bounds_min
            pos = lo + np.mod(pos - lo, self.world.bounds_max - lo)
        heading = spawn_headings(rng, n, flat=planar or s.planar, direction=s.direction,
                                 spread_deg=s.direction_spread_deg)
        speed = rng.uniform(s.speed[0], s.speed[1], size=(n, 1))
        vel = heading * speed
        pop.append(self.world.new_uids(n), pos.astype(np.float32), vel.astype(np.float32),
                   forward=heading.astype(np.float32))

    # ------------------------------------------------------------------ state
    def snapshot(self) -> dict:
        """The whole state as plain data: config, arrays, components, random generators,
        clock, movers, systems (brains, ecology, pending events) and queued changes.

        :meth:`restore` continues from it exactly as this simulation would have.
        Take it between steps. Values are copies: later steps do not change it.
        """
        self.sync()
        return {
            "format": SNAPSHOT_FORMAT,
            "config": self.scenario.model_dump(mode="json"),
            "base_dir": self.scenario.base_dir,
            "record_debug": self.record_debug,
            "world": self.world.state(),
            "movers": {sp.name: m.state() for sp, m in zip(self.scenario.species, self.movers) if hasattr(m, "state")},
            "systems": {system.name: system.state(self) for system in self.systems},
            "queued_sets": list(self._queued_sets),
            "stop": {"outcome": copy.deepcopy(self.outcome), "deaths": self._stops.state()},
        }

    @classmethod
    def restore(cls, snapshot: dict) -> "Simulation":
        """A simulation continuing from ``snapshot`` (see :meth:`snapshot`)."""
        if not isinstance(snapshot, dict) or snapshot.get("format") != SNAPSHOT_FORMAT:
            raise ValueError(f"not a Starling snapshot (expected format {SNAPSHOT_FORMAT!r})")
        scenario = validate_scenario(copy.deepcopy(snapshot["config"]), base_dir=snapshot.get("base_dir"))
        sim = cls.__new__(cls)
        sim._build(scenario, record_debug=snapshot.get("record_debug", True), state=snapshot, previous=scenario)
        return sim

    def __reduce__(self):
        """Pickle through the snapshot: a simulation sent to another process continues there."""
        return (_restore_pickled, (self.snapshot(),))

    def reconfigure(self, config, source: str = "") -> None:
        """Apply a whole scenario config to the running simulation, between two steps.

        ``config`` is a scenario model or plain data (parsed TOML). Everything is validated
        and built before anything is swapped: a change that fails raises
        :class:`~starling.config.ConfigError` naming the config path and leaves this
        simulation exactly as it was. Animals that remain keep their state; a changed
        ``count`` spawns newcomers by the spawn rules or removes the newest animals; a new
        species spawns, a removed one leaves. Observers stay attached.
        """
        scenario = self._validated(config, source)
        state = self.snapshot()
        new = Simulation.__new__(Simulation)
        new._build(scenario, record_debug=self.record_debug, state=state, previous=self.scenario, reuse=self)
        observers = self._observers
        changes = changed_paths(self.config_data(), new.config_data())
        new.world.journal = self.world.journal
        new.world.journal.follow(new.world.clock)
        new._stops.seq = self._stops.seq
        new.world.journal.log("edit", source=source or None, changes=changes)
        for name, pop in new.world.populations.items():
            held = self.world.populations.get(name)
            if held is not None and held is not pop:  # whoever holds a Population sees the new state through it
                held.__dict__ = pop.__dict__
                new.world.populations[name] = held
        for i, system in enumerate(new.systems):  # likewise for a held system (``ecology_of(sim)``)
            held = next((x for x in self.systems if type(x) is type(system)), None)
            if held is not None:
                held.__dict__ = system.__dict__
                new.systems[i] = held
                for key, value in list(new.__dict__.items()):
                    if value is system:
                        new.__dict__[key] = held
        self.__dict__.update(new.__dict__)
        self._observers = observers
        kernel_calls.invalidate()  # kernels reused from the old build may now take other argument types

    def set(self, *assignments: str) -> None:
        """Change parameters now: ``sim.set("species.bird.count=500", "seed=3")`` (the ``--set`` syntax)."""
        data = self.config_data()
        named = [n for n in (apply_override(data, text) for text in assignments) if n is not None]
        try:
            self.reconfigure(data)
        except ConfigError as err:
            raise name_problems(err, named) from None

    def queue_set(self, path: str, value) -> None:
        """Set ``path`` to ``value`` at the end of the current step (what a scripted ``set`` event does)."""
        self._queued_sets.append(f"{path}={toml_value(value)}")

    def config_data(self) -> dict:
        """The running config as plain data (what :meth:`reconfigure` takes back, edited)."""
        return self.scenario.model_dump(mode="json", exclude_none=True)

    def _validated(self, config, source: str):
        base_dir = self.scenario.base_dir
        if isinstance(config, dict):
            return validate_scenario(copy.deepcopy(config), source, base_dir=base_dir)
        if isinstance(config, ScenarioBase):
            if config.base_dir is None and base_dir is not None:
                config = config.model_copy()
                config.with_base_dir(base_dir)
            return config
        raise ConfigError([Problem("", f"expected a scenario config or a table of its fields, "
                                       f"not {type(config).__name__}")], source)

    # ------------------------------------------------------------------ observers
    def observe(self, callback: Callable[["StepView"], None], every: int = 1) -> "Observer":
        """Call ``callback(view)`` after every ``every``-th step with a read-only :class:`StepView`.

        This is how anything watches a run (the browser's frames, live metrics, a
        recorder). Returns the :class:`Observer`; ``observer.close()`` detaches it.
        """
        if int(every) < 1:
            raise ValueError("every must be a whole number of steps >= 1")
        observer = Observer(self, callback, int(every))
        self._observers.append(observer)
        return observer

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
        self.sync()
        return self.world.population(name)

    @property
    def environment(self):
        """The scene's static :class:`~starling.environment.Environment` (None without an ``[environment]``).

        Cast rays into it with :func:`starling.environment.cast_rays` (a gun, a look-out),
        or ask it for heights, water and solids.
        """
        system = self._systems_read()[0]  # read by the ecology's systems every step
        return None if system is None else system.environment

    def step(self, n: int = 1, on_part: Optional[Callable[[str], None]] = None, *, sync: bool = True) -> None:
        """Advance ``n`` fixed steps; ``on_part(name)`` is told each part of a step as it starts
        (a progress display while the first step compiles the kernels, see :mod:`starling.prepare`).

        On the GPU (``backend = "cuda"``) the host arrays are refreshed at the end unless
        ``sync=False``; then :meth:`sync` (which :meth:`population`, :meth:`metrics`,
        :meth:`health`, :meth:`inspect` and :meth:`snapshot` call) refreshes them when read.
        """
        synced = True
        for _ in range(int(n)):
            t0 = _time.perf_counter()
            if on_part is None:
                self._step_once()
            else:
                for part in self._step_parts():
                    on_part(part)
            synced = self.device is None
            if self._queued_sets:
                synced = synced or self._download()
                queued, self._queued_sets = self._queued_sets, []
                self.set(*queued)
            self.last_step_ms = (_time.perf_counter() - t0) * 1000.0
            if self.scenario.stop and self.outcome is None:
                synced = synced or self._download()
                self.outcome = self._stops.outcome(self)
            if self._observers:
                step = self.world.clock.step
                view = None
                for observer in tuple(self._observers):
                    if step % observer.every == 0:
                        synced = synced or self._download()
                        view = view or StepView(self)
                        observer.callback(view)
        if not synced:
            self._host_stale = True
            if sync:
                self._download()

    def sync(self) -> None:
        """Bring the host arrays up to date with the GPU after ``step(..., sync=False)`` (else nothing)."""
        if self._host_stale:
            self._download()

    def _download(self) -> bool:
        """Bring the GPU's state to the host arrays (everything that reads them runs after this)."""
        if self.device is not None:
            self.device.download()
        self._host_stale = False
        return True

    def _step_once(self) -> None:
        for _ in self._step_parts():
            pass

    def _step_parts(self) -> Iterator[str]:
        """One step, naming each part before it runs: the systems' preparation, each species'
        steering, each species' movement, the systems after the move (what a progress display
        shows while the first step compiles the kernels, see :mod:`starling.prepare`).
        :meth:`step_part_count` parts; a generator costs well under a microsecond a step.

        Sending the generator a true value skips the part just named (the clock still
        advances at the end): how :mod:`starling.parallel_compile`'s second process compiles one
        part of a throwaway copy's step alone. ``for`` loops send nothing and run every part."""
        world = self.world
        t = world.clock.time
        dt = world.clock.dt
        if self.device is not None:  # no systems, no commands: device_problems keeps those on the CPU
            if not (yield "GPU step"):
                self.device.step(t, dt)
            world.clock.advance()
            return
        hooked = self._systems_read()[1]
        if not (yield "systems before steering"):
            for system in hooked[0]:
                system.before_behaviors(self, dt)
        gathered: dict = {}  # targets gathered this step, shared by the species that gather the same
        for pipeline in self.pipelines:
            if not (yield f"{pipeline.name} steering"):
                pipeline.compute(world, t, dt, record=self.record_debug, gathered=gathered)
        wrap = (world.bounds_min, world.bounds_max - world.bounds_min) if world.wrap else None
        for pipeline, mover, draws in zip(self.pipelines, self.movers, self.mover_draws):
            skip = yield f"{pipeline.name} movement"
            pop = world.population(pipeline.name)
            if skip or pop.n == 0:
                continue
            turn = pipeline.turn_scale_for(pop.n)  # only brains of movers with a rotation limit set one
            mover.move(pop.position, pop.velocity, pop.forward, pop.up, pipeline.desired_rows(pop.n), dt,
                       wrap=wrap, parallel=pop.n >= threads_from(),
                       speed_scale=pipeline.speed_scale_for(pop.n), accel_scale=pipeline.accel_scale_for(pop.n),
                       drawn={name: pop.component(comp) for name, comp in draws},
                       **({} if turn is None else {"turn_scale": turn}))
        if not (yield "systems after the move"):
            for system in hooked[1]:
                system.after_move(self, dt)
            killed = world.commands.apply(world)
            for system in hooked[2]:
                system.after_commands(self, killed)
        world.clock.advance()
        if world.clock.step % REORDER_EVERY == 1:
            self._restore_locality()

    def _systems_read(self) -> tuple:
        """``(the environment's system or None, the hooked systems)`` of :attr:`systems`, found again
        whenever the list is replaced or grows (a step reads both).

        The hooked systems are three lists, in order: those that do something before the
        behaviours, after the move and after the commands. A hook left as
        :class:`~starling.systems.System`'s does nothing and is not called; one given to the
        instance itself counts as the system's own."""
        systems = self.systems
        found = self.__dict__.get("_systems_found")  # (systems, how many, what was found)
        if found is None or found[0] is not systems or found[1] != len(systems):
            environment = next((s for s in systems if s.name == "environment"), None)
            hooked = tuple([s for s in systems if name in vars(s) or getattr(type(s), name) is not getattr(System, name)]
                           for name in ("before_behaviors", "after_move", "after_commands"))
            found = self._systems_found = (systems, len(systems), (environment, hooked))
        return found[2]

    def step_part_count(self) -> int:
        """How many parts :meth:`_step_parts` names: 2 + 2 per species (1 on the GPU)."""
        return 1 if self.device is not None else 2 + 2 * len(self.pipelines)

    def _restore_locality(self) -> None:
        """Sort big populations by grid cell so neighbours are neighbours in memory too."""
        for pipeline in self.pipelines:
            pop = self.world.population(pipeline.name)
            if pop.n < REORDER_MIN_ANIMALS:
                continue
            radii = [g.query.max_distance for g in pipeline.groups] or [5.0]
            order = spatial_order(pop.position, max(radii))
            pop.permute(order)
            pipeline.rows_permuted(order)

    # ------------------------------------------------------------------ the player
    @_PlayerAction
    def fire(self, system, origin, direction) -> dict:
        """The player fires from ``origin`` along ``direction``: the first animal on the ray dies.

        Sounds start at the muzzle and where the bullet stops. Structural effects (the
        death, the sounds, a carcass) happen at the end of the next step. Returns
        ``{"hit": {"species", "uid"} or None, "impact": [x, y, z] or None}``.
        Raises ``ValueError`` when the scenario has no player.
        """
        result = system.fire(origin, direction)
        self.world.journal.log("fire", position=origin, direction=[float(x) for x in direction],
                               hit=result.get("hit"), impact=result.get("impact"))
        return result

    @_PlayerAction
    def throw_apple(self, system, origin, velocity) -> None:
        """The player throws an apple from ``origin`` with ``velocity`` (zero drops it); it falls and is food.

        Raises ``ValueError`` when the scenario has no player.
        """
        system.throw_apple(origin, velocity)
        self.world.journal.log("apple", position=origin, velocity=[float(x) for x in velocity])

    @_PlayerAction
    def move_player(self, system, position, look_direction=None) -> None:
        """Place the player at ``position`` (feet), optionally looking along ``look_direction``.

        Raises ``ValueError`` when the scenario has no player.
        """
        system.move_player(position, look_direction)

    # ------------------------------------------------------------------ reading
    def inspect(self, species: str, uid: int) -> Optional[dict]:
        """Everything the viewer shows about one animal; None if it is not alive
        (:func:`~starling.readings.inspect_animal`)."""
        self.sync()
        return inspect_animal(self, species, uid)

    def metrics(self, nn_sample: int = 2000, group_radius: Optional[float] = None,
                groups_max: int = 20_000) -> dict:
        """Order parameters per species, periodic in a wrapping world (what each one means and
        how ``group_radius`` defaults: :func:`~starling.readings.species_metrics`)."""
        self.sync()
        return species_metrics(self, nn_sample, group_radius, groups_max)

    def health(self) -> dict:
        """Counts of broken state; all zero in a healthy run."""
        self.sync()
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

    def animal_labels(self, species: str) -> Optional[list[str]]:
        """One short line per animal of ``species`` (row order) for viewers to draw over its
        head — its brain's state, its rank in a pack ("Attacking · #1") — or None when no
        system labels this species."""
        parts = [part for system in self.systems if (part := system.labels(self, species)) is not None]
        if not parts:
            return None
        return [" · ".join(words) for words in zip(*parts)]

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
