"""The registry: behaviours, brain actions, movers and mergers are found by name.

Configs name what they use; this module resolves names to code. The shipped
behaviours register themselves exactly like a user's would, through
:func:`behavior`, when :mod:`starling.plugins` imports them (entry points of the
group ``starling.plugins``); this module imports none of them. Registration checks the declaration up front (PySPH, bevy): an
unknown kind, a parameter model that does not fix its ``kind``, or a missing
component is reported before anything compiles or runs.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Callable, Literal, Optional, get_args

from numba import njit

from .contract import attribute_reads, undeclared_reads
from .params import BehaviorParams, BrainActionParams, MergerParams, NeighborBehaviorParams

BehaviorKind = Literal["simple", "neighbor", "ray"]
KINDS: tuple[str, ...] = get_args(BehaviorKind)
#: what a neighbour behaviour may read of the pair geometry (``behavior(geometry=...)``)
GEOMETRY_READS: tuple[str, ...] = ("full", "filter")


class RegistryError(ValueError):
    """A behaviour, mover or merger was declared or named wrongly."""


@dataclass(frozen=True)
class BehaviorSpec:
    """Everything the pipeline needs to run one registered behaviour."""

    name: str
    kind: str
    params: type[BehaviorParams]
    kernel: Callable
    components: tuple[str, ...] = ()  # read from its own animals (see starling.steering.contract)
    result: str = "velocity"
    doc: str = ""
    target_components: tuple[str, ...] = ()  # read from its targets (neighbour behaviours)
    # an animal with no neighbours always gets "no opinion": a group that found nobody skips the kernel
    silent_alone: bool = False
    # the result sums over the neighbours and never reads which is nearest: rows may come unsorted
    order_free: bool = False
    # what it reads of the pair geometry: "full", or "filter" (distance and angle, only to apply its
    # own max_distance and fov_deg; see behavior())
    geometry: str = "full"
    _compiled: dict = field(default_factory=dict, compare=False, repr=False)

    def compiled(self, parallel: bool):
        """The kernel compiled serially or with ``prange`` threads (each cached on disk)."""
        return _compiled(self._compiled, self.kernel, parallel)


@dataclass(frozen=True)
class FusedSpec:
    """One kernel that runs several neighbour behaviours of a group in one pass over its pairs.

    ``kernel(agents, others, neighbors, params_1, …, params_m, time, dt, out_1, …, out_m)``,
    the behaviours in the order of ``names``: it must write each behaviour's result rows exactly
    as that behaviour's own kernel would, bit for bit (the oracle tests compare them). Pays
    where the group's pairs are many: each pair is read once instead of once per behaviour,
    and what the behaviours share (a neighbour's observability) is computed once.
    """

    names: tuple[str, ...]
    kernel: Callable
    doc: str = ""
    _compiled: dict = field(default_factory=dict, compare=False, repr=False)

    def compiled(self, parallel: bool):
        """The kernel compiled serially or with ``prange`` threads (each cached on disk)."""
        return _compiled(self._compiled, self.kernel, parallel)


#: what a behaviour may produce; a merger declares which of these it accepts
RESULT_TYPES: tuple[str, ...] = ("velocity",)


@dataclass(frozen=True)
class MergerSpec:
    """A registered merger: ``run(stacked, velocity, forward, desired, params, parallel)``."""

    name: str
    params: type
    run: Callable
    accepts: tuple[str, ...] = ("velocity",)
    doc: str = ""


@dataclass(frozen=True)
class MoverSpec:
    name: str
    params: type
    factory: Callable
    doc: str = ""


@dataclass(frozen=True)
class SectionSpec:
    """An optional config section and the system it builds (environment, ecology, …)."""

    name: str
    model: type
    scope: str  # "scenario" (a top-level table) or "species" (a table inside each species)
    factory: Optional[Callable] = None
    order: int = 0
    doc: str = ""
    provides: tuple[str, ...] = ()  # populations the system creates (queries may target them)


@dataclass(frozen=True)
class BrainActionSpec:
    """A registered brain action: ``run(ctx, rows, params)`` for the animals entering a state."""

    name: str
    params: type
    run: Callable
    doc: str = ""


@dataclass(frozen=True)
class QuerySpec:
    """A neighbour search method (``[species.groups.query] method = "<name>"``).

    ``search(self_position, self_forward, target_position, spec, box, exclude_self, out)``
    fills ``out`` (a reserved :class:`~starling.steering.queries.neighbors.Neighbors`:
    ``index``, ``distance``, ``count``, ``overflow``) for every row: the k nearest
    targets within ``spec.max_distance`` and ``spec.fov_deg``, sorted by distance then
    index. Every method must give the same table (the oracle tests compare them); where
    ``spec.early_stop`` is set, ``overflow`` may count only the targets the search met
    (a method may always count them all). ``out`` holds the previous call's rows.
    """

    name: str
    search: Callable
    doc: str = ""


_behaviors: dict[str, BehaviorSpec] = {}
_brain_actions: dict[str, BrainActionSpec] = {}
_queries: dict[str, QuerySpec] = {}
_sections: dict[tuple[str, str], SectionSpec] = {}
_movers: dict[str, MoverSpec] = {}
_fused: dict[str, FusedSpec] = {}  # by its behaviours' names joined with "+"
_mergers: dict[str, MergerSpec] = {}
_version = [0]


def version() -> int:
    """Bumps whenever something registers, so cached config models can be rebuilt."""
    return _version[0]


def _compiled(table: dict, kernel: Callable, parallel: bool):
    """``kernel`` compiled serially or with threads, made once per mode and kept in ``table``."""
    key = bool(parallel)
    compiled = table.get(key)
    if compiled is None:
        compiled = table[key] = _jit(kernel, parallel=key)
    return compiled


def _jit(func: Callable, parallel: bool):
    """Compile ``func`` once per threading mode.

    The parallel variant is a clone with its own qualified name so Numba's on-disk
    cache keeps the two compilations apart.
    """
    if hasattr(func, "py_func"):
        func = func.py_func
    if parallel:
        clone = types.FunctionType(
            func.__code__, func.__globals__, func.__name__ + "_parallel",
            func.__defaults__, func.__closure__,
        )
        clone.__qualname__ = func.__qualname__ + "_parallel"
        clone.__module__ = func.__module__
        return njit(cache=True, no_cfunc_wrapper=True, parallel=True)(clone)
    return njit(cache=True, no_cfunc_wrapper=True)(func)


def _check_params(what: str, name: str, params, base: type) -> None:
    """A registered thing's parameter model subclasses ``base`` and fixes ``kind`` to its name
    (so a config's list of them is a discriminated union)."""
    if not isinstance(params, type) or not issubclass(params, base):
        raise RegistryError(f"{what} {name!r}: params must subclass {base.__name__}")
    kind_field = params.model_fields.get("kind")
    if kind_field is None or get_args(kind_field.annotation) != (name,):
        raise RegistryError(f"{what} {name!r}: its params model must declare kind: Literal[{name!r}]")


def _check_free(what: str, name: str, table: dict, func: Callable, attr: str) -> None:
    """``name`` is free, or held by this very function (a module imported twice registers again)."""
    existing = getattr(table[name], attr) if name in table else None
    if existing is None or existing is func:
        return
    if (getattr(existing, "__module__", None) != getattr(func, "__module__", None)
            or existing.__qualname__ != func.__qualname__):
        raise RegistryError(f"a {what} named {name!r} is already registered")


def behavior(
    name: str,
    *,
    kind: BehaviorKind,
    params: type[BehaviorParams],
    components: tuple[str, ...] = (),
    target_components: tuple[str, ...] = (),
    result: str = "velocity",
    silent_alone: bool = False,
    order_free: bool = False,
    geometry: str = "full",
):
    """Register a behaviour kernel under ``name``.

    The kernel is a plain Python function that Numba compiles; its signature depends on
    the kind (arrays are views of the first ``n`` animals):

    * simple:   ``kernel(agents, params, time, dt, out)``
    * neighbor: ``kernel(agents, others, neighbors, params, time, dt, out)`` where
      ``neighbors`` is a :class:`~starling.steering.groups.NeighborView` with the
      shared per-pair ``distance``, ``angle`` and unit ``direction``
    * ray:      ``kernel(agents, hits, params, time, dt, out)`` where ``hits`` is a
      :class:`~starling.steering.groups.RayView` of the group's ray casts, one row of
      ``r`` rays per animal: ``hit (n,r)`` bool, ``distance (n,r)``, ``point (n,r,3)``,
      ``normal (n,r,3)`` (unit, facing the ray's origin), ``layer (n,r)`` and the ray
      ``direction (n,r,3)``; ray params usually subclass :class:`RayBehaviorParams`
      (``max_distance``/``fov_deg`` default to the group's query)

    ``agents``/``others`` are named tuples of arrays: ``position``, ``velocity``,
    ``forward``, ``up``, ``uid`` and exactly the components declared in ``components``
    (read from the animals themselves) and ``target_components`` (read from the
    targets of a neighbour behaviour); a read of anything else is an error when the
    behaviour registers (see :mod:`starling.steering.contract`). ``params``
    is ``params.kernel_params()``, ``out`` is a :class:`ResultView` to fill for
    every animal. Use ``numba.prange`` for the animal loop; the pipeline runs a
    serial compilation for small populations.

    ``silent_alone`` (neighbour behaviours): the kernel writes "no opinion" for every
    animal whose neighbour list is empty, whatever its state and parameters. When a
    group's query finds nobody for any animal (no sound playing, the player far away),
    the pipeline then skips the kernel and clears its results instead — most groups
    aimed at rare targets are empty most steps. ``tests/steering/test_silent_alone.py``
    checks the claim for every registered behaviour that makes it.

    ``order_free`` (neighbour behaviours): the result does not depend on the order of an
    animal's neighbour row — the kernel sums over every neighbour and never reads the
    nearest first. A group whose behaviours all say so queries with ``any_order``: a row of
    fewer than k neighbours comes in the query's own order, unsorted, which saves the
    ranking (Couzin's step 0.25 → 0.15 ms). ``tests/steering/queries/test_any_order.py``
    checks the claim on the built-in scenes.

    ``geometry`` (neighbour behaviours): what the kernel reads of the shared pair geometry.
    ``"full"`` (the default): anything. ``"filter"``: never ``neighbors.direction``, and
    ``distance`` and ``angle`` only to keep the neighbours within its own ``max_distance``
    and ``fov_deg``, where a field of view of 360° sees every neighbour whatever its angle.
    When every behaviour of a group says so and keeps the query's radius (or a wider one)
    and a 360° view, fixed for every animal, nobody is filtered out: the group skips the
    geometry kernel and its behaviours get the query's own distances (the same bits) and
    zero angles (Vicsek's step −18 %). The source check refuses a ``"filter"`` kernel that
    reads ``neighbors.direction``; ``tests/steering/test_geometry_filter.py`` runs every
    built-in scene using such a behaviour with and without the geometry.
    """
    if kind not in KINDS:
        raise RegistryError(f"behaviour {name!r}: kind must be one of {KINDS}, not {kind!r}")
    _check_params("behaviour", name, params, NeighborBehaviorParams if kind == "neighbor" else BehaviorParams)
    if result not in RESULT_TYPES:
        raise RegistryError(f"behaviour {name!r}: unknown result type {result!r}; known: {', '.join(RESULT_TYPES)}")
    if target_components and kind != "neighbor":
        raise RegistryError(f"behaviour {name!r}: only neighbour behaviours have targets to read components from")
    if silent_alone and kind != "neighbor":
        raise RegistryError(f"behaviour {name!r}: only neighbour behaviours can be silent alone")
    if order_free and kind != "neighbor":
        raise RegistryError(f"behaviour {name!r}: only neighbour behaviours read neighbour rows in an order")
    if geometry not in GEOMETRY_READS:
        raise RegistryError(f"behaviour {name!r}: geometry must be one of {', '.join(map(repr, GEOMETRY_READS))}, "
                            f"not {geometry!r}")
    if geometry != "full" and kind != "neighbor":
        raise RegistryError(f"behaviour {name!r}: only neighbour behaviours read the pair geometry")

    def register(kernel: Callable) -> Callable:
        _check_free("behaviour", name, _behaviors, kernel, "kernel")
        problems = undeclared_reads(name, kind, kernel, components, target_components)
        reads = attribute_reads(kernel, kind) if geometry == "filter" else None
        if reads is not None and "direction" in reads.get("neighbors", ()):
            problems.append(f"behaviour {name!r} says geometry='filter' but reads neighbors.direction: "
                            f"only distance and angle are there when the group skips the geometry")
        if problems:
            raise RegistryError("; ".join(problems))
        doc = (kernel.__doc__ or params.__doc__ or "").strip()
        _behaviors[name] = BehaviorSpec(name, kind, params, kernel, tuple(components), result, doc,
                                        tuple(target_components), bool(silent_alone), bool(order_free),
                                        geometry)
        _version[0] += 1
        return kernel

    return register


def fused(*names: str):
    """Register a kernel that runs the neighbour behaviours ``names`` of one group in one pass
    (see :class:`FusedSpec` for its signature and its promise).

    A group whose enabled behaviours include every one of ``names``, once each, reading the
    same components, runs this kernel in their place; the others of the group run as usual.
    Each behaviour must be registered first: a fused kernel is an optimisation of behaviours
    that exist, never a behaviour of its own.
    """
    if len(names) < 2 or len(set(names)) != len(names):
        raise RegistryError(f"a fused kernel runs two or more different behaviours, not {names!r}")
    for name in names:
        spec = _behaviors.get(name)
        if spec is None or spec.kind != "neighbor":
            raise RegistryError(f"fused kernel {'+'.join(names)}: {name!r} is not a registered neighbour behaviour")

    def register(kernel: Callable) -> Callable:
        key = "+".join(names)
        _check_free("fused kernel", key, _fused, kernel, "kernel")
        _fused[key] = FusedSpec(tuple(names), kernel, (kernel.__doc__ or "").strip())
        _version[0] += 1
        return kernel

    return register


def fused_kernels() -> list[FusedSpec]:
    """Every registered fused kernel, the ones that run the most behaviours first."""
    return sorted(_fused.values(), key=lambda spec: -len(spec.names))


def brain_action(name: str, *, params: type[BrainActionParams]):
    """Register what animals do when they enter a brain state (a state's ``on_enter`` list).

    Decorates ``run(ctx, rows, params)``: ``rows`` (int64 array) are the rows of the
    animals of ``ctx.population`` that entered the state this step, ``params`` the
    validated parameter model, ``ctx`` the ecology's action context (the population, the
    command buffer, sounds, the clock; see :mod:`starling.ecology.actions`). Actions run
    before the behaviours of the step; structural changes (sounds, tags, deaths) go
    through the command buffer and take effect at its end, like every other's.
    """
    _check_params("brain action", name, params, BrainActionParams)

    def register(run: Callable) -> Callable:
        _check_free("brain action", name, _brain_actions, run, "run")
        _brain_actions[name] = BrainActionSpec(name, params, run, (run.__doc__ or params.__doc__ or "").strip())
        _version[0] += 1
        return run

    return register


def neighbor_query(name: str):
    """Register a neighbour search method under ``name`` (see :class:`QuerySpec`)."""

    def register(search: Callable) -> Callable:
        _queries[name] = QuerySpec(name, search, (search.__doc__ or "").strip())
        _version[0] += 1
        return search

    return register


def get_brain_action(name: str) -> BrainActionSpec:
    try:
        return _brain_actions[name]
    except KeyError:
        raise RegistryError(f"unknown brain action {name!r}; registered: {', '.join(sorted(_brain_actions))} "
                            f"(an action from your own module needs --plugin MODULE)") from None


def brain_actions() -> list[BrainActionSpec]:
    return list(_brain_actions.values())


def get_query(name: str) -> QuerySpec:
    try:
        return _queries[name]
    except KeyError:
        raise RegistryError(f"unknown neighbour query method {name!r}; registered: {', '.join(sorted(_queries))} "
                            f"(a method from your own module needs --plugin MODULE)") from None


def queries() -> list[QuerySpec]:
    return list(_queries.values())


def merger(name: str, *, params: type[MergerParams], accepts: tuple[str, ...] = ("velocity",)):
    """Register a merger: how one species' stacked behaviour results become its desired velocity.

    Decorates ``run(stacked, velocity, forward, desired, params, parallel)``: ``stacked`` is
    ``(direction (m,n,3), direction_desire (m,n), speed (m,n), speed_desire (m,n),
    priority (m,n))`` for ``m`` behaviours and ``n`` animals, ``desired`` the (n,3) array
    to fill, ``params`` the validated model. ``accepts`` names the result types it can
    merge; a species whose behaviours produce another is refused when it loads.
    """
    _check_params("merger", name, params, MergerParams)
    unknown = [a for a in accepts if a not in RESULT_TYPES]
    if not accepts or unknown:
        raise RegistryError(f"merger {name!r}: accepts must name result types among {', '.join(RESULT_TYPES)}")

    def register(run: Callable) -> Callable:
        _check_free("merger", name, _mergers, run, "run")
        _mergers[name] = MergerSpec(name, params, run, tuple(accepts), (run.__doc__ or params.__doc__ or "").strip())
        _version[0] += 1
        return run

    return register


def get_merger(name: str) -> MergerSpec:
    try:
        return _mergers[name]
    except KeyError:
        raise RegistryError(f"unknown merger {name!r}; registered: {', '.join(sorted(_mergers))} "
                            f"(a merger from your own module needs --plugin MODULE)") from None


def mergers() -> list[MergerSpec]:
    return list(_mergers.values())


def mover(name: str, *, params: type):
    """Register a mover factory: ``factory(params_model) -> Mover``."""

    def register(factory: Callable) -> Callable:
        _movers[name] = MoverSpec(name, params, factory, (factory.__doc__ or "").strip())
        _version[0] += 1
        return factory

    return register


def section(name: str, *, model: type, scope: str = "scenario", order: int = 0, provides: tuple[str, ...] = ()):
    """Register an optional config section (``scope`` "scenario" or "species").

    Decorates ``factory(sim) -> System | None``, called once when a simulation is built
    (after its populations exist); systems run in ``order``. A section registered only
    for its data (read by another section's system) may decorate ``None``-returning
    factories or be registered with :func:`section_model`.
    """
    if scope not in ("scenario", "species"):
        raise RegistryError(f"section {name!r}: scope must be 'scenario' or 'species'")

    def register(factory: Optional[Callable]) -> Optional[Callable]:
        _sections[(scope, name)] = SectionSpec(name, model, scope, factory, order,
                                               ((factory.__doc__ if factory else None) or model.__doc__ or "").strip(),
                                               tuple(provides))
        _version[0] += 1
        return factory

    return register


def sections(scope: Optional[str] = None) -> list[SectionSpec]:
    return sorted((s for s in _sections.values() if scope is None or s.scope == scope), key=lambda s: (s.order, s.name))


def get_behavior(name: str) -> BehaviorSpec:
    try:
        return _behaviors[name]
    except KeyError:
        raise RegistryError(
            f"unknown behaviour {name!r}; registered: {', '.join(sorted(_behaviors))} "
            f"(a behaviour from your own module needs --plugin MODULE)"
        ) from None


def behaviors(kind: Optional[str] = None) -> list[BehaviorSpec]:
    return [b for b in _behaviors.values() if kind is None or b.kind == kind]


def get_mover(name: str) -> MoverSpec:
    try:
        return _movers[name]
    except KeyError:
        raise RegistryError(f"unknown mover {name!r}; known: {', '.join(sorted(_movers))}") from None


def movers() -> list[MoverSpec]:
    return list(_movers.values())
