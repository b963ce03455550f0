"""The parts a species' steering pipeline is built from: its behaviours' slots, the groups
that share one neighbour or ray query with their reusable buffers, and the views the groups
hand their behaviours' kernels (:mod:`starling.steering.pipeline` runs them every step).
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field, replace
from typing import Any, Optional

import numpy as np

from ..kernel_calls import CallSite
from ..world.population import agent_tuple_type
from .queries.rays import Rays
from .registry import BehaviorSpec, FusedSpec, fused_kernels

#: run a fused kernel in place of the behaviours it fuses (tests turn it off to compare)
FUSE = True

NeighborView = namedtuple("NeighborView", ["index", "count", "distance", "angle", "direction"])
NeighborView.__doc__ = """A group's neighbours of the first ``n`` animals and their shared pair geometry.

``index`` (n,k) int32 into the group's target arrays (-1 padded), ``count`` (n,) int32
valid entries per row, each row sorted by distance (nearest first); for each valid pair: ``distance`` (n,k) float32 (m),
``angle`` (n,k) float32 between the animal's forward and the direction to the
neighbour (rad), ``direction`` (n,k,3) float32 unit vector toward the neighbour
(minimum image in a periodic world)."""

RayView = namedtuple("RayView", ["hit", "distance", "point", "normal", "layer", "direction"])
RayView.__doc__ = """A ray group's casts for the first ``n`` animals, ``r`` rays each (views, no copies).

``hit`` (n,r) bool; ``distance`` (n,r) float32 metres along the ray (inf on a miss);
``point`` (n,r,3) float32 the hit point (the ray's end on a miss); ``normal`` (n,r,3)
float32 unit surface normal turned toward the ray's origin (zero on a miss); ``layer``
(n,r) int16 layer index of the shape hit (-1 on a miss); ``direction`` (n,r,3) float32
the unit ray directions. Rays are generated from the step-start state."""

class BoundCall:
    """A behaviour's kernel call for one step but the neighbours or hits and the clock, and what it
    was built from (:meth:`~starling.steering.pipeline.SpeciesPipeline._bound` keeps it while
    ``n``, ``parallel``, ``others``, ``results`` and ``layout`` are the same)."""

    __slots__ = ("kernel", "own", "targets", "params", "out", "n", "parallel", "others", "results", "layout")

    def __init__(self, kernel, own, targets, params, out, n, parallel, others, results, layout):
        self.kernel, self.own, self.targets, self.params, self.out = kernel, own, targets, params, out
        self.n, self.parallel, self.others, self.results, self.layout = n, parallel, others, results, layout


@dataclass
class BehaviorSlot:
    """A configured behaviour: registry entry, validated params, kernel params, result row.

    ``varied`` pairs each parameter drawn per animal with the population component that
    holds the draws; the kernel receives those arrays in place of the shared numbers.
    """

    spec: BehaviorSpec
    params: Any
    kernel_params: Any
    row: int
    varied: tuple = ()
    where: str = ""  # the behaviour's config path (errors name it)
    # the named tuple types its kernel receives: core arrays plus the declared components
    self_type: Any = None
    target_type: Any = None
    enabled: bool = True  # params.enabled, read once (a changed behaviour gets a new slot)
    # argument tuples kept between steps while what they were built from is unchanged
    _params_cache: Any = field(default=None, repr=False, compare=False)
    # (n, results capacity) for which the pipeline last cleared this behaviour's rows instead of
    # running its kernel (see SpeciesPipeline._silence); None once the kernel has run since
    _silent: Any = field(default=None, repr=False, compare=False)
    _targets_cache: Any = field(default=None, repr=False, compare=False)
    _bound: Optional[BoundCall] = field(default=None, repr=False, compare=False)
    # the kernel's compiled entry points for this slot's arguments (starling.kernel_calls)
    kernel_calls: CallSite = field(default_factory=CallSite, repr=False, compare=False)

    def __post_init__(self):
        self.enabled = bool(self.params.enabled)
        self.self_type = agent_tuple_type(self.spec.components)
        self.target_type = agent_tuple_type(self.spec.target_components)

    @property
    def name(self) -> str:
        return self.params.label or self.spec.name

    def params_for(self, pop):
        """The kernel's parameter tuple for this step (per-animal arrays where drawn)."""
        if not self.varied:
            return self.kernel_params
        cached = self._params_cache
        if cached is not None and cached[0] is pop and cached[1] == pop.layout:
            return cached[2]
        params = self.kernel_params._replace(**{f: pop.component(c) for f, c in self.varied})
        self._params_cache = (pop, pop.layout, params)
        return params

    def targets_from(self, others):
        """The declared part of ``others`` (a view of the targets), kept while ``others`` is the same view."""
        cached = self._targets_cache
        if cached is not None and cached[0] is others:
            return cached[1]
        targets = self.target_type(*(getattr(others, f) for f in self.target_type._fields))
        self._targets_cache = (others, targets)
        return targets


class FusedRun:
    """Behaviours of one group that a fused kernel runs together (:func:`~starling.steering.registry.fused`),
    in the order of the kernel's names, with the kernel's compiled entry points."""

    __slots__ = ("spec", "slots", "kernel_calls")

    def __init__(self, spec: FusedSpec, slots: tuple):
        self.spec, self.slots = spec, slots
        self.kernel_calls = CallSite()

    @property
    def name(self) -> str:
        return "+".join(slot.name for slot in self.slots)


def plan_runs(slots: list[BehaviorSlot]) -> list:
    """A group's behaviours as its step runs them: a :class:`FusedRun` in place of the behaviours a
    registered fused kernel covers, each of them present once and enabled, all reading the same
    components (the kernel gets one view of the animals and one of the targets); every other
    behaviour as its own slot. A run takes the place of its first behaviour: the order changes
    nothing, since each behaviour writes its own result rows only."""
    if not FUSE:
        return list(slots)
    taken: set[int] = set()  # ids of the slots a run covers
    runs: dict[int, FusedRun] = {}  # id of a fused behaviour's slot -> its run
    for spec in fused_kernels():
        members = []
        for name in spec.names:
            alike = [slot for slot in slots if slot.spec.name == name]
            if len(alike) != 1 or not alike[0].enabled or id(alike[0]) in taken:
                break
            members.append(alike[0])
        else:
            if len({(m.self_type, m.target_type) for m in members}) == 1:
                run = FusedRun(spec, tuple(members))
                for m in members:
                    runs[id(m)] = run
                    taken.add(id(m))
    plan, placed = [], set()
    for slot in slots:
        run = runs.get(id(slot))
        if run is None:
            plan.append(slot)
        elif id(run) not in placed:
            placed.add(id(run))
            plan.append(run)
    return plan


@dataclass
class NeighborGroup:
    """Behaviours sharing one neighbour query, and that query's reusable buffers."""

    label: str
    query: Any  # NeighborQuerySpec
    targets: list[str]
    include_bits: int
    exclude_bits: int
    behaviors: list[BehaviorSlot]
    neighbors: Any = None
    geometry: Any = None
    # the target set of the last query (for inspection): species index and row per target
    target_species: Optional[np.ndarray] = None
    target_rows: Optional[np.ndarray] = None
    target_uids: Optional[np.ndarray] = None
    gathered: Any = None  # targets.gather's reusable buffers (a group with several targets or tag filters)
    nobody: bool = False  # the last query found no neighbour for any animal
    # the query this group shares with the other species it flocks with (targets.link_joint_queries), or None
    joint: Any = field(default=None, repr=False, compare=False)
    # (rows, the view of them) for which ``neighbors`` was last cleared because its target was empty
    # (None: queried since, so the table holds neighbours)
    _cleared_for: Any = field(default=None, repr=False, compare=False)
    # (the table's index, count and distance buffers, the geometry's direction rows, the view of them) that
    # SpeciesPipeline._query hands the behaviours, kept while those are the same objects
    _view: Any = field(default=None, repr=False, compare=False)
    # derived from the fields above when the group is made (see __post_init__)
    target_components: frozenset = field(init=False, repr=False)  # what its behaviours read from targets
    target_type: Any = field(init=False, repr=False)  # the core arrays and those components
    gather_key: tuple = field(init=False, repr=False)  # what targets.gather gathers (a step shares equal ones)
    query_with_self: Any = field(init=False, repr=False)  # the query with one neighbour more, to drop oneself
    one_target: bool = field(init=False, repr=False)  # one population, unfiltered: read in place, never gathered
    # whether a behaviour reads the pair geometry (False: every behaviour's filter passes every neighbour)
    geometry_needed: bool = field(init=False, repr=False)
    # the behaviours as the step runs them: slots, and fused runs in place of the slots they cover
    runs: list = field(init=False, repr=False)

    def __post_init__(self):
        self.target_components = frozenset(c for slot in self.behaviors for c in slot.spec.target_components)
        self.target_type = agent_tuple_type(self.target_components)
        self.gather_key = (tuple(self.targets), self.include_bits, self.exclude_bits, self.target_components)
        self.query_with_self = replace(self.query, k=self.query.k + 1)
        self.one_target = len(self.targets) == 1 and self.include_bits == 0 and self.exclude_bits == 0
        self.geometry_needed = not all(_filters_nobody(slot, self.query) for slot in self.behaviors)
        self.runs = plan_runs(self.behaviors)


def _filters_nobody(slot: BehaviorSlot, query) -> bool:
    """Whether ``slot`` reads the pair geometry only for a filter that keeps every neighbour of
    ``query``: it says ``geometry="filter"``, and its radius (at least the query's) and its 360°
    view are the same for every animal."""
    params = slot.params
    drawn = {name for name, _ in slot.varied}
    return (slot.spec.geometry == "filter" and not drawn & {"max_distance", "fov_deg"}
            and params.max_distance >= query.max_distance and params.fov_deg >= 360.0)


@dataclass
class RayGroup:
    """Ray behaviours sharing one ray query, and that query's reusable buffers."""

    label: str
    query: Any  # RayQuerySpec
    pattern: np.ndarray  # the query's (count, 3) ray pattern, computed once
    behaviors: list[BehaviorSlot]
    mask: int = 0  # layer mask, resolved when the environment is attached
    origins: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))
    directions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))
    hits: Any = None  # RayHits with capacity rows
    view: Optional[RayView] = None  # the last cast (for inspection)
    # (n, the rays, the hits and the view of n animals' casts): views of the buffers, kept while n is
    _prepared: Any = field(default=None, repr=False, compare=False)
    # (the rays, the layout, fill_rays' kernel and arguments), see SpeciesPipeline._cast
    _filling: Any = field(default=None, repr=False, compare=False)
    fill_calls: CallSite = field(default_factory=CallSite, repr=False, compare=False)  # fill_rays' compiled entry

    def __post_init__(self):
        self.offset = np.asarray(self.query.origin_offset, dtype=np.float64)
        self.max_distance = np.full(1, self.query.max_distance, np.float32)

    def ensure(self, rows: int, environment) -> None:
        """Room for ``rows`` rays; grows geometrically so steps never reallocate."""
        if self.origins.shape[0] < rows:
            cap = max(rows, int(self.origins.shape[0] * 1.5))
            self.origins = np.zeros((cap, 3), np.float32)
            self.directions = np.zeros((cap, 3), np.float32)
            self.hits = environment.allocate_hits(cap)
            self._prepared = None

    def prepared(self, n: int):
        """``(rays, hits, view)`` for ``n`` animals' casts (see :meth:`ensure` for the room)."""
        if self._prepared is None or self._prepared[0] != n:
            r = self.pattern.shape[0]
            rows = n * r
            h = self.hits
            view = RayView(h.hit[:rows].reshape(n, r), h.distance[:rows].reshape(n, r),
                           h.point[:rows].reshape(n, r, 3), h.normal[:rows].reshape(n, r, 3),
                           h.layer[:rows].reshape(n, r), self.directions[:rows].reshape(n, r, 3))
            rays = Rays(self.origins[:rows], self.directions[:rows], self.query.max_distance, r)
            self._prepared = (n, rays, h.view(rows), view)
        return self._prepared[1:]

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_prepared"] = None  # views would unpickle as copies, no longer looking at the buffers
        state["_filling"] = None
        return state
