"""One species' steering pipeline: queries → behaviours → merger (seed 000, Alg. 2).

The pipeline only computes each animal's desired velocity from the step-start
snapshot; the simulation moves every species afterwards, so no species ever sees
another one half-way through its update (species order never changes the outcome).

Neighbour behaviours are grouped by the query they share (seed 000, Alg. 6): one
neighbour search per group, then every behaviour of the group reads the same padded
``(n, k)`` neighbour arrays. Ray behaviours are grouped the same way (seed 000, 2.1.1,
7.1): one ray query per group, cast once into the environment, and every behaviour of
the group reads the same ``(n, r)`` hits.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from numba import njit
from numba.core.errors import TypingError

from ..kernel_calls import CallSite
from ..parallel import threads_from
from ..world import World
from ..errors import ConfigError, Problem
from .contract import explain_typing_error
from .params import with_stream_key
from .per_animal import bind_draws
from .random import stream_key
from .queries.candidates import NO_WRAP
from .queries.neighbors import NeighborQuerySpec, Neighbors, normalize_box, one_population, search_into
from .targets import gather
from .queries.pairs import PairGeometry
from .groups import BehaviorSlot, BoundCall, FusedRun, NeighborGroup, NeighborView, RayGroup, RayView
from .queries.rays import ray_filling
from .registry import get_behavior, get_merger
from .results import VelocityResults


def pair_box(box) -> np.ndarray:
    """The pair geometry's float32 box: the periodic sides, or zeros when the world does not wrap."""
    return NO_WRAP if box is None else np.asarray(box, np.float32)


def _record_one_target(group: NeighborGroup, target) -> None:
    """Keep, for inspection between steps, whom a group of one whole target population looked at."""
    group.target_species = None
    group.target_rows = None
    group.target_uids = target.uid.copy()


#: skip the kernels of behaviours that are silent alone when their group found nobody (tests turn it off
#: to run every kernel and compare)
SKIP_SILENT = True
#: ray batches at least this large are cast by the threaded kernel even for smaller populations
#: (waking the thread pool costs more than a few thousand serial casts on a busy machine)
RAY_PARALLEL_ROWS = 32_768


@njit(cache=True, no_cfunc_wrapper=True)
def _drop_rows(index, distance, count, self_row, keep):
    """Remove each animal's own row from its neighbour list and keep at most ``keep``."""
    n, k = index.shape
    for i in range(n):
        w = 0
        for r in range(count[i]):
            j = index[i, r]
            if j == self_row[i]:
                continue
            if w < keep:
                index[i, w] = j
                distance[i, w] = distance[i, r]
                w += 1
        for r in range(w, k):
            index[i, r] = -1
            distance[i, r] = np.inf
        count[i] = w


@njit(cache=True, no_cfunc_wrapper=True)
def _scale_desires(n, scale, direction_desire, speed_desire):
    """Multiply the first ``n`` animals' desires of every behaviour by the systems' factors
    (whole buffers and ``n``: a view of ``n`` columns would be a layout of its own for some ``n``)."""
    for j in range(direction_desire.shape[0]):
        for i in range(n):
            s = scale[j, i]
            direction_desire[j, i] *= s
            speed_desire[j, i] *= s


def _previous_draws(species_cfg) -> dict:
    """Row -> (behaviour kind, its distributions) of a species config, rows numbered as the pipeline numbers them."""
    params = [b for g in species_cfg.groups for b in getattr(g, "behaviors", [])]
    params += [b for g in getattr(species_cfg, "ray_groups", []) for b in getattr(g, "behaviors", [])]
    params += list(getattr(species_cfg, "behaviors", []))
    return {row: (p.kind, p.varied) for row, p in enumerate(params)}


class SpeciesPipeline:
    """Builds and runs one species' groups, simple behaviours and merger."""

    def __init__(self, species_cfg, species_index: int, world: World, *, planar: bool, max_speed: float,
                 previous=None):
        self.name = species_cfg.name
        self.index = species_index
        self.planar = planar
        self.max_speed = float(max_speed)
        self.merger = species_cfg.merger
        self.merger_spec = get_merger(self.merger.kind)
        self.population = world.population(self.name)
        self._param_rng = world.species_rng(species_index, stream=1)  # per-animal parameter draws
        self._seed = world.seed  # keys each behaviour row's random stream (starling.steering.random)
        self.slots: list[BehaviorSlot] = []
        self.groups: list[NeighborGroup] = []
        self.simple: list[BehaviorSlot] = []
        # the draws of the config this species ran under before (a restored or reconfigured run):
        # a behaviour at the same row, of the same kind, with the same distribution keeps its animals' draws
        self._previous = _previous_draws(previous) if previous is not None else {}
        row = 0
        for g, gcfg in enumerate(species_cfg.groups):
            q = gcfg.query
            slots = []
            for b, params in enumerate(getattr(gcfg, "behaviors", [])):
                slots.append(self._slot(params, row, q, f"species.{self.name}.groups.{g}.behaviors.{b}"))
                row += 1
            # behaviours read the neighbours, never how many more were in reach: a knn query may
            # stop early (the spec keeps all_in_radius queries exhaustive); behaviours that only
            # sum over their rows let a row that holds everyone stay unsorted
            spec = NeighborQuerySpec(max_distance=q.max_distance, k=q.k, fov_deg=q.fov_deg,
                                     mode=q.mode, method=q.method, early_stop=True,
                                     any_order=bool(slots) and all(slot.spec.order_free for slot in slots))
            self.groups.append(NeighborGroup(
                label=gcfg.label or f"group {g}",
                query=spec,
                targets=list(q.targets) or [self.name],
                include_bits=world.tag_bits(q.tags),
                exclude_bits=world.tag_bits(q.exclude_tags),
                behaviors=slots,
            ))
        self.ray_groups: list[RayGroup] = []
        for g, gcfg in enumerate(getattr(species_cfg, "ray_groups", [])):
            q = gcfg.query
            slots = []
            for b, params in enumerate(getattr(gcfg, "behaviors", [])):
                slots.append(self._slot(params, row, q, f"species.{self.name}.ray_groups.{g}.behaviors.{b}"))
                row += 1
            self.ray_groups.append(RayGroup(label=gcfg.label or f"rays {g}", query=q,
                                            pattern=np.ascontiguousarray(q.pattern(), dtype=np.float64), behaviors=slots))
        for b, params in enumerate(getattr(species_cfg, "behaviors", [])):
            self.simple.append(self._slot(params, row, None, f"species.{self.name}.behaviors.{b}"))
            row += 1
        self.environment = None  # the static environment ray groups cast into (see attach_environment)
        self.results = VelocityResults(row, 0)
        self.results.set_priorities([slot.params.priority for slot in self.slots])
        # per-animal modulation written by systems (brains, energy); None = no modulation
        self.desire_scale: Optional[np.ndarray] = None  # (behaviours, capacity): multiplies both desires
        self.speed_scale: Optional[np.ndarray] = None  # (capacity,): multiplies the mover's max speed
        self.accel_scale: Optional[np.ndarray] = None  # (capacity,): multiplies the mover's rates
        self.turn_scale: Optional[np.ndarray] = None  # (capacity,): multiplies the mover's rotation limit
        self.desired = np.zeros((16, 3), np.float32)
        self.result_uids: Optional[np.ndarray] = None
        self._scale_calls = CallSite()

    def attach_environment(self, environment) -> None:
        """Cast this species' ray groups into ``environment`` (layer names resolved against its layers)."""
        self.environment = environment
        for group in self.ray_groups:
            group.mask = environment.mask(group.query.layers)

    def _fill(self, params, query):
        """Settings that default to the group's query (``max_distance``, ``fov_deg``) or the mover (``max_speed``)."""
        fields = type(params).model_fields
        updates = {}
        if query is not None:
            for name in ("max_distance", "fov_deg"):
                if name in fields and getattr(params, name) is None:
                    updates[name] = getattr(query, name)
        if "max_speed" in fields and getattr(params, "max_speed") is None:
            updates["max_speed"] = self.max_speed
        return params.model_copy(update=updates) if updates else params

    def _slot(self, params, row: int, query, where: str) -> BehaviorSlot:
        params = self._fill(params, query)
        kp = with_stream_key(params.kernel_params(), stream_key(self._seed, self.index, row))
        slot = BehaviorSlot(get_behavior(params.kind), params, kp, row, where=where)
        kind, old = self._previous.get(row, (None, {}))
        self._draw(slot, old if kind == params.kind else {})
        self.slots.append(slot)
        return slot

    def _draw(self, slot: BehaviorSlot, old: dict) -> None:
        """One component per parameter drawn per animal, named ``param_<row>_<field>``."""
        slot.varied = bind_draws(self.population, slot.params, f"param_{slot.row}_", self._param_rng, old)

    # ------------------------------------------------------------------ step
    def compute(self, world: World, time: float, dt: float, *, record: bool = True,
                gathered: Optional[dict] = None) -> None:
        """Fill ``desired[:n]`` from the step-start state of ``world``.

        ``gathered``: one dict shared by every species' steering in one step (the simulation
        passes a new one each step). It keeps what one species' groups gathered and what a
        :class:`~starling.steering.targets.JointQuery` found, for the later species that ask
        the same (the meadow's two bird species each see both); the state they come from does
        not change while species steer. ``None`` shares nothing.
        """
        pop = world.population(self.name)
        n = pop.n
        self.results.ensure(n)
        desired = self.desired_rows(n)
        if n == 0:
            return
        parallel = n >= threads_from()
        time, dt = float(time), float(dt)  # one scalar type at every step: the kernels' call sites rely on it
        box = world.box
        box32 = pair_box(box)
        query_box = normalize_box(box)
        for group in self.groups:
            others, nbrs = self._query(world, pop, group, box, record, box32, query_box, gathered)
            for run in group.runs:
                if type(run) is FusedRun:
                    self._run_fused(run, n, parallel, pop, others, nbrs, time, dt, group.nobody)
                    continue
                if group.nobody and run.spec.silent_alone and SKIP_SILENT:
                    self._silence(run, n)
                    continue
                call = self._bound(run, n, parallel, pop, others)
                if call is not None:
                    self._run(run, n, call.kernel, (call.own, call.targets, nbrs, call.params, time, dt), call.out)
        for group in self.ray_groups:
            hits = self._cast(pop, group, parallel)
            for slot in group.behaviors:
                call = self._bound(slot, n, parallel, pop, None)
                if call is not None:
                    self._run(slot, n, call.kernel, (call.own, hits, call.params, time, dt), call.out)
        for slot in self.simple:
            call = self._bound(slot, n, parallel, pop, None)
            if call is not None:
                self._run(slot, n, call.kernel, (call.own, call.params, time, dt), call.out)
        if self.desire_scale is not None:
            self._scale_calls(_scale_desires, n, n, self.desire_scale, self.results.direction_desire,
                              self.results.speed_desire)
        self.merger_spec.run(self.results.stacked(n), pop.velocity, pop.forward, desired, self.merger, parallel)
        if record:
            self.result_uids = pop.uid.copy()

    def desired_rows(self, n: int) -> np.ndarray:
        """``desired[:n]``, the buffer grown first if it is shorter (zeros: no steering yet)."""
        if self.desired.shape[0] < n:
            self.desired = np.zeros((max(n, int(self.desired.shape[0] * 1.5)), 3), np.float32)
        return self.desired[:n]

    def rows_permuted(self, order: np.ndarray) -> None:
        """This species' rows were reordered (``Population.permute``): the neighbour lists its
        groups keep between steps follow (a group that looks at itself alone keeps them)."""
        for group in self.groups:
            if group.neighbors is not None and group.one_target and group.targets[0] == self.name:
                group.neighbors.rows_permuted(order)

    def speed_scale_for(self, n: int):
        return None if self.speed_scale is None else self.speed_scale[:n]

    def accel_scale_for(self, n: int):
        return None if self.accel_scale is None else self.accel_scale[:n]

    def turn_scale_for(self, n: int):
        return None if self.turn_scale is None else self.turn_scale[:n]

    def _cast(self, pop, group: RayGroup, parallel: bool) -> RayView:
        """Generate the group's rays from the step-start state and cast them into the environment
        (through its ``cast_into`` method: the steering layer never imports the environment).

        Every argument is a buffer of the group's or an array of the population's, in the kernels'
        types, so the casts skip the public functions' conversions and checks."""
        if self.environment is None:
            raise RuntimeError(f"species {self.name!r} has ray groups but no environment is attached "
                               "(add an [environment] section to the scenario)")
        n = pop.n
        rows = n * group.pattern.shape[0]
        group.ensure(rows, self.environment)
        rays, hits, view = group.prepared(n)
        if n:
            kept = group._filling  # fill_rays' kernel and arguments, kept while the rays and the layout hold
            if kept is None or kept[0] is not rays or kept[1] != pop.layout:
                kept = group._filling = (rays, pop.layout, *ray_filling(group.query, pop.position, pop.forward,
                                                                         pop.up, group.pattern, group.offset, rays))
            group.fill_calls(kept[2], n, *kept[3])
        self.environment.cast_into(rays.origins, rays.directions, group.max_distance, group.mask, hits,
                                   parallel or rows >= RAY_PARALLEL_ROWS)
        group.view = view
        return view

    def _silence(self, slot: BehaviorSlot, n: int) -> None:
        """What the kernel of a behaviour that is silent alone would write when nobody is seen."""
        key = (n, self.results.capacity)
        if slot._silent != key:  # already cleared for these rows and this buffer: nothing to write
            self.results.clear(slot.row, n)
            slot._silent = key

    def _bound(self, slot: BehaviorSlot, n: int, parallel: bool, pop, others) -> Optional[BoundCall]:
        """``slot``'s kernel, own view, targets' view, parameters and result rows for this step, or
        None when it is disabled (its rows cleared). Kept in the slot while the rows, the threads'
        choice, the population's layout, the targets' view and the results' buffers are the ones
        they were built from: a step then builds none of them."""
        slot._silent = None
        if not slot.enabled:
            self.results.clear(slot.row, n)
            return None
        bound = slot._bound
        results = self.results.direction
        if (bound is not None and bound.n == n and bound.parallel is parallel and bound.others is others
                and bound.results is results and bound.layout == pop.layout):
            return bound
        targets = None if others is None else slot.targets_from(others)
        bound = slot._bound = BoundCall(slot.spec.compiled(parallel), pop.view(slot.self_type), targets,
                                        slot.params_for(pop), self.results.view(slot.row, n), n, parallel, others,
                                        results, pop.layout)
        return bound

    def _run_fused(self, run: FusedRun, n: int, parallel: bool, pop, others, nbrs, time: float, dt: float,
                   nobody: bool) -> None:
        """The behaviours of ``run`` in one call of its fused kernel (each slot's own view, parameters
        and result rows, kept as its own call would keep them; the slots read the same components)."""
        if nobody and SKIP_SILENT and all(slot.spec.silent_alone for slot in run.slots):
            for slot in run.slots:
                self._silence(slot, n)
            return
        calls = [self._bound(slot, n, parallel, pop, others) for slot in run.slots]
        first = calls[0]
        run.kernel_calls(run.spec.compiled(parallel), n, first.own, first.targets, nbrs,
                         *[call.params for call in calls], time, dt, *[call.out for call in calls])

    def _run(self, slot: BehaviorSlot, n: int, kernel, args, out) -> None:
        """``kernel(*args, out)`` for the first ``n`` animals (``out``: the slot's result rows)."""
        try:
            slot.kernel_calls(kernel, n, *args, out)
        except TypingError as exc:
            message = explain_typing_error(slot.name, slot.where, exc)
            if message is None:
                raise
            raise ConfigError([Problem(slot.where, message)]) from None

    def check_contract(self, world: World) -> list[Problem]:
        """Every component a behaviour declares exists on its animals and on each of its targets.

        Run when a simulation is built (every system has added its components by then),
        so a missing one is reported with the behaviour's config path before any step.
        """
        problems = []
        pop = world.population(self.name)
        for slot in self.slots:
            if slot.spec.result not in self.merger_spec.accepts:
                problems.append(Problem(slot.where, f"behaviour {slot.spec.name!r} produces {slot.spec.result!r} results, "
                                                    f"which merger {self.merger_spec.name!r} does not accept "
                                                    f"(it accepts {', '.join(self.merger_spec.accepts)})"))
        for group in [None] + list(self.groups):
            slots = self.simple + [s for g in self.ray_groups for s in g.behaviors] if group is None else group.behaviors
            for slot in slots:
                for comp in slot.spec.components:
                    if not pop.has_component(comp):
                        problems.append(Problem(slot.where, f"behaviour {slot.spec.name!r} reads component {comp!r}, "
                                                            f"which species {self.name!r} does not have"))
                if group is None:
                    continue
                for comp in slot.spec.target_components:
                    lacking = [t for t in group.targets if t in world.populations and not world.population(t).has_component(comp)]
                    if lacking:
                        problems.append(Problem(slot.where, f"behaviour {slot.spec.name!r} reads component {comp!r} "
                                                            f"of its targets, which {', '.join(map(repr, lacking))} "
                                                            f"do not have"))
        return problems

    def _query(self, world: World, pop, group: NeighborGroup, box, record: bool, box32: np.ndarray,
               query_box: Optional[np.ndarray], gathered: Optional[dict] = None):
        """Query ``group``'s neighbours and their pair geometry (``box32``: :func:`pair_box` of ``box``,
        ``query_box``: its :func:`normalize_box`, each made once per step)."""
        own = self.name
        if group.one_target:
            target = world.population(group.targets[0])
            if target.n == 0:
                return self._nobody_there(pop, group, target, record)
            group._cleared_for = None
            # the core arrays and the components the group's behaviours declare, nothing more
            others = target.view(group.target_type)
            # a population's live rows are what find_neighbors would make of them, and its own rows are
            # one array object (pop is target): its checks and conversions are skipped
            group.neighbors = search_into(pop.position, pop.forward, target.position, group.query,
                                          query_box, target is pop, group.neighbors)
            if record:
                _record_one_target(group, target)
        else:
            others, species_idx, rows = gather(world, group, gathered)
            includes_self = own in group.targets
            if group.joint is not None:  # one query for every species it links; each skips itself
                group.neighbors = group.joint.rows_of(own, world, others, box, gathered)
            else:
                # one neighbour more when the animal itself is among the targets (dropped below)
                spec = group.query_with_self if includes_self else group.query
                # what find_neighbors would make of these arguments, without its checks: the gathered
                # positions are C-ordered float32 rows, a buffer's or a population's own
                group.neighbors = search_into(pop.position, pop.forward, one_population(pop.position, others.position),
                                              spec, query_box, False, group.neighbors)
            if includes_self and group.joint is None:
                own_idx = self.index_in_targets(world, group)
                self_row = np.full(pop.n, -1, np.int64)
                sel = species_idx == own_idx
                self_row[rows[sel]] = np.flatnonzero(sel)
                nb = group.neighbors
                _drop_rows(nb.index[: pop.n], nb.distance[: pop.n], nb.count[: pop.n], self_row, group.query.k)
            if record:  # kept for inspection between steps (the gathered buffers are reused)
                group.target_species = species_idx.copy()
                group.target_rows = rows.copy()
                group.target_uids = others.uid.copy()
        nb = group.neighbors
        n = pop.n
        geometry = group.geometry
        if geometry is None:
            geometry = group.geometry = PairGeometry()
        direction, distance, angle = geometry.buffers(n, group.query.k)
        # the view of n rows is kept while the table's and the geometry's buffers are the ones it shows
        # (a step then builds none, and what the behaviours' arguments are built from stays the same)
        kept = group._view
        if (kept is None or kept[0] is not nb.index or kept[1] is not nb.count or kept[2] is not nb.distance
                or kept[3] is not direction):
            k = group.query.k
            if not group.geometry_needed:  # the query's distances; the geometry's buffers, never written, are zeros
                distance = nb.distance[:n, :k]
            view = NeighborView(nb.index[:n, :k], nb.count[:n], distance, angle, direction)
            kept = group._view = (nb.index, nb.count, nb.distance, direction, view)
        view = kept[4]
        group.nobody = np.count_nonzero(view.count) == 0  # (ndarray.any goes through Python in NumPy)
        # no pair to describe when nobody was found: the buffers stay unwritten (no kernel reads a pair past count)
        if group.geometry_needed and not group.nobody:
            geometry.compute(pop.position, pop.forward, others.position, view.index, view.count, box32,
                             parallel=n >= threads_from())
        return others, view

    def _nobody_there(self, pop, group: NeighborGroup, target, record: bool):
        """What :meth:`_query` returns when the group's one target population (``target``) is empty
        (no sound made, no carcass left): the cleared table, cleared once rather than every step,
        and no query."""
        n = pop.n
        k = group.query.k
        if group.neighbors is None:
            group.neighbors = Neighbors(n, k)
        nb = group.neighbors
        if group._cleared_for is None or group._cleared_for[0] != n or nb.k != k:
            nb.reserve(n, k)
            nb.clear()
            if group.geometry is None:
                group.geometry = PairGeometry()
            direction, distance, angle = group.geometry.buffers(n, k)
            group._cleared_for = (n, NeighborView(nb.index[:n, :k], nb.count[:n], distance, angle, direction))
        if record:
            _record_one_target(group, target)
        group.nobody = True
        return target.view(group.target_type), group._cleared_for[1]

    def index_in_targets(self, world: World, group: NeighborGroup) -> int:
        return group.targets.index(self.name)

    # ------------------------------------------------------------------ inspection
    def inspect_row(self, world: World, uid: int) -> Optional[dict]:
        """Each behaviour's last result and the last neighbours of the animal ``uid``."""
        if self.result_uids is None:
            return None
        hits = np.flatnonzero(self.result_uids == uid)
        if hits.size == 0:
            return None
        i = int(hits[0])
        r = self.results
        if i >= self.desired.shape[0] or i >= r.direction.shape[1]:
            return None  # rebuilt (reconfigured) and not stepped yet: nothing to show this frame
        behaviours = []
        for slot in self.slots:
            if slot.row >= r.behaviours:
                continue
            behaviours.append({
                "name": slot.name,
                "kind": slot.spec.name,
                "direction": [float(x) for x in r.direction[slot.row, i]],
                "direction_desire": float(r.direction_desire[slot.row, i]),
                "speed": float(r.speed[slot.row, i]),
                "speed_desire": float(r.speed_desire[slot.row, i]),
                "priority": int(slot.params.priority),
                "enabled": bool(slot.params.enabled),
                # this animal's own draws of the parameters that vary per animal
                "drawn": {name: float(self.population.component(comp)[i])
                          for name, comp in slot.varied if i < self.population.n},
            })
        neighbours = []
        for group in self.groups:
            nb = group.neighbors
            if nb is None or group.target_uids is None or i >= nb.count.shape[0]:
                continue
            for r_ in range(int(nb.count[i])):
                j = int(nb.index[i, r_])
                if j < 0 or j >= group.target_uids.size:
                    continue
                species = group.targets[int(group.target_species[j])] if group.target_species is not None else group.targets[0]
                neighbours.append({"species": species, "uid": int(group.target_uids[j]),
                                   "distance": float(nb.distance[i, r_]), "group": group.label})
        rays = []
        for group in self.ray_groups:
            v = group.view
            if v is None or i >= v.hit.shape[0]:
                continue
            r = v.hit.shape[1]
            for q in range(r):
                hit = bool(v.hit[i, q])
                rays.append({"group": group.label, "origin": [float(x) for x in group.origins[i * r + q]],
                             "direction": [float(x) for x in v.direction[i, q]],
                             "hit": hit, "distance": float(v.distance[i, q]) if hit else None,
                             "point": [float(x) for x in v.point[i, q]],
                             "normal": [float(x) for x in v.normal[i, q]] if hit else None})
        return {"row": i, "behaviors": behaviours, "neighbors": neighbours, "rays": rays,
                "desired_velocity": [float(x) for x in self.desired[i]]}
