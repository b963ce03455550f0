"""A simulation's step on the GPU: the state stays on the device between steps.

:class:`DeviceStepper` mirrors the CPU step (``Simulation._step_parts``) for the scenes the
GPU can run: every species computes its desired velocity from the step-start state —
the neighbour grid and the k nearest (:mod:`starling.cuda.neighbors`), the group's pair
geometry, every behaviour, the merger — and then every species moves. Each of those is
the CPU kernel's own source made into a CUDA kernel (:mod:`starling.cuda.translate`), so
the two backends compute the same thing and a plugin's behaviour runs on both unchanged.

The host copy of the state (the populations' arrays that observers, metrics, recordings
and the app read) is refreshed by :meth:`DeviceStepper.download`, which the simulation
calls at the end of every ``step(n)`` and before anything that reads it mid-run (stop
conditions, observers, queued edits). Code that writes the host arrays by hand between
steps calls :meth:`DeviceStepper.upload` (``sim.device.upload()``).

:func:`device_problems` lists what keeps a scenario on the CPU, each with its config path
and reason: ray casts, the ecology and environment systems, groups that gather several
target species or filter by tags, a mover or merger without a device kernel, and any
behaviour whose source cannot become a CUDA kernel.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import Problem
from ..steering import blending, mergers
from ..steering.pipeline import NeighborView
from ..steering.queries.candidates import query_thresholds
from ..steering.queries.pairs import geometry_one_pass_range
from ..steering.results import ResultView
from .neighbors import DeviceGrid, knn_range
from .runtime import cuda_module, simulated
from .translate import TUPLE_METHODS, LOCAL_MAX, DeviceUnsupported, device_kernel

__all__ = ["DeviceStepper", "device_problems"]

#: threads per block of the per-animal kernels (small on the simulator: a Python thread each)
THREADS = 32 if simulated() else 128

_CORE = ("position", "velocity", "forward", "up")


def _blocks(n: int) -> int:
    return max(1, (n + THREADS - 1) // THREADS)


_kernels: dict = {}


def kernel_for(func: Callable, args: tuple = ()):
    """The CUDA kernel of ``func`` for arguments like ``args`` (translated once per process and
    set of named-tuple arguments whose fields shadow a tuple method, see ``device_kernel``)."""
    fields = {}
    if args:
        names = list(inspect.signature(getattr(func, "py_func", func)).parameters)
        fields = {name: tuple(a._fields) for name, a in zip(names, args)
                  if hasattr(a, "_fields") and set(a._fields) & TUPLE_METHODS}
    key = (func, tuple(sorted(fields.items())))
    k = _kernels.get(key)
    if k is None:
        k = _kernels[key] = device_kernel(func, tuple_fields=fields)
    return k


@dataclass
class _Launch:
    """One kernel launch of the step: the kernel, its grid and its arguments (fixed between uploads)."""

    kernel: Any
    blocks: int
    args: tuple
    where: str = ""
    time_arg: int = -1  # index of the ``time`` argument, set per step (behaviours)

    def __call__(self, time: float = 0.0) -> None:
        args = self.args
        if self.time_arg >= 0:
            args = args[:self.time_arg] + (float(time),) + args[self.time_arg + 1:]
        self.kernel[self.blocks, THREADS](*args)


def _to_device(a: np.ndarray):
    """A host array's device copy (an empty one as a view of one element: no zero-byte allocation)."""
    cuda = cuda_module()
    a = np.ascontiguousarray(a)
    if a.size == 0:
        return cuda.to_device(np.zeros((1,) + a.shape[1:], a.dtype))[:0]
    return cuda.to_device(a)


# ---------------------------------------------------------------------------------------------- support

def _merger_problem(pipe) -> str | None:
    name = pipe.merger_spec.name
    sorts = name in mergers._CODES or name == "priority_blend"  # these order each animal's behaviours
    if sorts or name == "acceleration_sum":
        if sorts and len(pipe.slots) > LOCAL_MAX:
            return (f"merger {name!r} orders at most {LOCAL_MAX} behaviours per animal on the GPU "
                    f"(this species has {len(pipe.slots)})")
        return None
    return f"merger {name!r} has no GPU kernel (the built-in mergers have)"


def _mover_problem(mover) -> str | None:
    if hasattr(mover, "range_call"):
        return None
    return (f"mover {type(mover).__name__} has no range kernel to run on the GPU (a mover offers one with "
            "`range_call`, as free, planar, constant_speed, halfway and reversal do)")


def device_problems(sim) -> list[Problem]:
    """What keeps ``sim`` on the CPU: one problem per config path, empty when the GPU can run it all."""
    problems = []
    for system in sim.systems:
        problems.append(Problem(system.name, f"the {system.name} system runs on the CPU only (the environment "
                                             "and ecology systems have no GPU version yet)"))
    for pipe, mover in zip(sim.pipelines, sim.movers):
        where = f"species.{pipe.name}"
        if pipe.ray_groups:
            problems.append(Problem(f"{where}.ray_groups", "ray casts run on the CPU only (the GPU backend has no "
                                                           "ray tracer yet)"))
        for g, group in enumerate(pipe.groups):
            if len(group.targets) != 1 or group.include_bits or group.exclude_bits:
                problems.append(Problem(f"{where}.groups.{g}.query", "a group that gathers several species or "
                                                                     "filters by tags runs on the CPU only"))
        reason = _merger_problem(pipe)
        if reason:
            problems.append(Problem(f"{where}.merger", reason))
        reason = _mover_problem(mover)
        if reason:
            problems.append(Problem(f"{where}.mover", reason))
        for slot in pipe.slots:
            try:
                kernel_for(slot.spec.kernel)
            except DeviceUnsupported as exc:
                problems.append(Problem(slot.where, f"behaviour {slot.spec.name!r} cannot run on the GPU: {exc}"))
    return problems


# ---------------------------------------------------------------------------------------------- state

class _Species:
    """One species on the device: its arrays, its groups' buffers and the launches of its step."""

    def __init__(self, pipe, mover, draws, pop):
        self.pipe = pipe
        self.mover = mover
        self.draws = draws
        self.pop = pop
        self.n = -1
        self.arrays: dict = {}

    def fields(self, stepper) -> set:
        """Every array of this species a kernel reads: the core, the declared components, the draws."""
        wanted = set(_CORE) | {"uid"}
        for slot in self.pipe.slots:
            wanted |= set(slot.spec.components) | {c for _, c in slot.varied}
        for other in stepper.species.values():
            for group in other.pipe.groups:
                if group.targets[0] == self.pipe.name:
                    wanted |= {c for slot in group.behaviors for c in slot.spec.target_components}
        wanted |= {c for _, c in self.draws}
        return wanted

    def upload(self, stepper) -> None:
        pop = self.pop
        self.n = pop.n
        self.arrays = {f: _to_device(pop._buffers[f][:pop.n]) for f in sorted(self.fields(stepper))}

    def view(self, tuple_type):
        return tuple_type(*(self.arrays[f] for f in tuple_type._fields))


class DeviceStepper:
    """The step of a simulation on one CUDA device; see the module docstring."""

    def __init__(self, sim):
        problems = device_problems(sim)
        if problems:
            raise DeviceUnsupported("; ".join(f"{p.path}: {p.message}" for p in problems))
        self.sim = sim
        self.species = {pipe.name: _Species(pipe, mover, draws, sim.world.population(pipe.name))
                        for pipe, mover, draws in zip(sim.pipelines, sim.movers, sim.mover_draws)}
        self.steer_launches: list[_Launch] = []
        self.move_launches: list[_Launch] = []
        self.grids: list[tuple] = []
        self.upload()

    def _compile(self) -> None:
        """Compile every kernel for its arguments now, so a kernel the device compiler refuses is
        reported when the scenario loads (with its config path), not at the first step.

        Each launch keeps the kernel specialised for its arguments: their types never change
        between uploads, and a specialised kernel skips Numba's type resolution at every
        launch (tens of microseconds of Python for the named tuples a behaviour takes).
        """
        for launch in self.steer_launches + self.move_launches:
            if not isinstance(launch, _Launch):
                continue  # the neighbour query: Starling's own kernel, compiled at the first step
            try:
                launch.kernel = launch.kernel.specialize(*launch.args)
            except Exception as exc:  # noqa: BLE001 - Numba's typing and lowering errors have many types
                first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
                raise DeviceUnsupported(f"{launch.where or 'a kernel'}: the GPU compiler refused it ({first})") from None

    # ------------------------------------------------------------------ host <-> device
    def upload(self) -> None:
        """Copy the host state to the device and lay out every launch for it (after a host-side edit)."""
        for sp in self.species.values():
            sp.upload(self)
        self._plan()
        if not simulated():
            self._compile()

    def download(self) -> None:
        """Copy the moving state (positions, velocities, forward and up vectors) back to the host arrays."""
        for sp in self.species.values():
            if sp.n == 0:
                continue
            for f in _CORE:
                sp.arrays[f].copy_to_host(sp.pop._buffers[f][:sp.n])
        cuda_module().synchronize()

    def step(self, time: float, dt: float) -> None:
        """One step: build the grids, steer every species from the step-start state, then move every species."""
        for sp in self.species.values():
            if sp.pop.n != sp.n:
                raise RuntimeError(f"species {sp.pipe.name!r} changed size on the host; call upload() first")
        for grid, position, radius in self.grids:
            grid.build(position, radius, *self._bounds)
        for launch in self.steer_launches:
            launch(time)
        for launch in self.move_launches:
            launch()

    # ------------------------------------------------------------------ layout
    @property
    def _bounds(self):
        w = self.sim.world
        return w.bounds_min, w.bounds_max, self._box_host

    def _plan(self) -> None:
        cuda = cuda_module()
        sim = self.sim
        world = sim.world
        dt = float(world.clock.dt)
        self._box_host = np.zeros(3, np.float32) if world.box is None else np.asarray(world.box, np.float32)
        box = cuda.to_device(self._box_host)
        self.steer_launches = []
        self.move_launches = []
        self.grids = []
        for sp in self.species.values():
            self._plan_species(sp, box, dt)
        wrap = world.wrap
        lo = np.asarray(world.bounds_min, np.float64)
        size = np.asarray(world.bounds_max - world.bounds_min, np.float64)
        for sp in self.species.values():
            n = sp.n
            if n == 0:
                continue
            a = sp.arrays
            drawn = {name: sp.pop.component(comp) for name, comp in sp.draws}
            # the mover's own range kernel and arguments, with the device's arrays for the moving state
            kernel, args = sp.mover.range_call(a["position"], a["velocity"], a["forward"], a["up"], sp.desired, dt,
                                               wrap=(lo, size) if wrap else None, drawn=drawn)
            args = tuple(_to_device(x) if isinstance(x, np.ndarray) else x for x in args)
            kernel = getattr(sp.mover, "device_kernel", kernel)  # a kernel that is not one loop names its twin
            self.move_launches.append(_Launch(kernel_for(kernel), _blocks(n), (0, n) + args,
                                              f"species.{sp.pipe.name}.mover"))

    def _plan_species(self, sp: _Species, box, dt: float) -> None:
        cuda = cuda_module()
        pipe = sp.pipe
        n = sp.n
        m = max(len(pipe.slots), 1)  # a species without behaviours merges one "no opinion" row: it keeps its velocity
        rows = max(n, 1)
        priority = np.zeros((m, rows), np.int16)
        for slot in pipe.slots:
            priority[slot.row] = slot.params.priority
        sp.results = ResultView(cuda.to_device(np.zeros((m, rows, 3), np.float32)),
                                cuda.to_device(np.zeros((m, rows), np.float32)),
                                cuda.to_device(np.zeros((m, rows), np.float32)),
                                cuda.to_device(np.zeros((m, rows), np.float32)),
                                cuda.to_device(priority))
        sp.desired = cuda.to_device(np.zeros((rows, 3), np.float32))
        if n == 0:
            return
        blocks = _blocks(n)
        a = sp.arrays
        for group in pipe.groups:
            target = self.species[group.targets[0]]
            q = group.query
            k = q.k
            grid = DeviceGrid(box)
            self.grids.append((grid, target.arrays["position"], q.max_distance))
            index = cuda.device_array((n, k), np.int32)
            distance = cuda.device_array((n, k), np.float32)
            count = cuda.device_array(n, np.int32)
            overflow = cuda.device_array(n, np.int32)
            direction = cuda.device_array((n, k, 3), np.float32)
            angle = cuda.device_array((n, k), np.float32)
            group.device = (index, distance, count, overflow)  # for tests and inspection
            self.steer_launches.append(_KnnLaunch(grid, q, (a["position"], a["forward"]),
                                                  target is sp, k, (index, distance, count, overflow), blocks))
            self.steer_launches.append(_Launch(kernel_for(geometry_one_pass_range), blocks,
                                               (0, n, a["position"], a["forward"], target.arrays["position"], index,
                                                count, box, direction, distance, angle),
                                               f"species.{pipe.name}.groups pair geometry"))
            nbrs = NeighborView(index, count, distance, angle, direction)
            for slot in group.behaviors:
                self._plan_behavior(sp, slot, (sp.view(slot.self_type), target.view(slot.target_type), nbrs), dt)
        for slot in pipe.simple:
            self._plan_behavior(sp, slot, (sp.view(slot.self_type),), dt)
        self.steer_launches.append(self._merger_launch(sp))

    def _plan_behavior(self, sp: _Species, slot, inputs: tuple, dt: float) -> None:
        if not slot.params.enabled:
            return  # its row stays "no opinion" (zeros)
        r = sp.results
        out = ResultView(r.direction[slot.row], r.direction_desire[slot.row], r.speed[slot.row],
                         r.speed_desire[slot.row], r.priority[slot.row])
        params = slot.kernel_params._replace(**{f: sp.arrays[c] for f, c in slot.varied})
        params = type(params)(*(_to_device(v) if isinstance(v, np.ndarray) else v for v in params))
        args = inputs + (params, 0.0, dt, out)
        self.steer_launches.append(_Launch(kernel_for(slot.spec.kernel, args), _blocks(sp.n), args, slot.where,
                                           time_arg=len(inputs) + 1))

    def _merger_launch(self, sp: _Species) -> _Launch:
        pipe = sp.pipe
        name = pipe.merger_spec.name
        r = sp.results
        a = sp.arrays
        n = sp.n
        p = pipe.merger
        where = f"species.{pipe.name}.merger"
        if name in mergers._CODES:
            args = (0, n, mergers._CODES[name], float(getattr(p, "max_desire", 1.0)), r.direction,
                    r.direction_desire, r.speed, r.speed_desire, r.priority, a["velocity"], a["forward"], sp.desired)
            return _Launch(kernel_for(mergers._merge_range), _blocks(n), args, where)
        if name == "priority_blend":
            args = (0, n, float(p.epsilon), r.direction, r.direction_desire, r.speed, r.speed_desire, r.priority,
                    a["velocity"], sp.desired)
            return _Launch(kernel_for(blending._blend_range), _blocks(n), args, where)
        args = (0, n, float(p.acceleration), r.direction, r.direction_desire, a["velocity"], sp.desired)
        return _Launch(kernel_for(mergers._acceleration_sum_range), _blocks(n), args, where)


@dataclass
class _KnnLaunch:
    """A group's neighbour query: the grid (built earlier in the step) searched by :func:`knn_range`."""

    grid: DeviceGrid
    query: Any
    queriers: tuple  # the querying animals' positions and forward vectors
    same: bool  # the queriers are the targets (each skips itself)
    k: int
    out: tuple  # index, distance, count, overflow
    blocks: int
    where: str = "neighbour query"

    def __post_init__(self):
        # the float32 radius and field-of-view thresholds of the CPU query (query_thresholds)
        self.thresholds = query_thresholds(self.query.max_distance, self.query.fov_deg)

    def __call__(self, time: float = 0.0) -> None:
        n = self.queriers[0].shape[0]
        kernel_for(knn_range)[self.blocks, THREADS](0, n, *self.queriers, *self.grid.query_args(), *self.thresholds,
                                                    self.same, self.k, *self.out)
