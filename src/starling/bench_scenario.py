"""``starling bench --scenario NAME``: a whole scenario's step, and where its time goes.

Four measurements on the same scenario, each after a warm-up and a rehearsal (the same
steps run once before, from the same state, so that what they meet for the first time in the
process, such as a kernel's compiled version loaded from the cache the first time a carcass
appears, is not counted as a step's cost):

* **step**: ``sim.step()`` timed one by one (medians and 95th percentiles), nothing else
  running;
* **kernel share**: the same steps again, from the same state, with every call from Python
  into a compiled kernel timed (calls between kernels stay inside them): that time over the
  pass's own, each less what the clock added (measured on a kernel that does nothing, about a
  microsecond a call, nearly all of it outside the timed calls, where it would otherwise count
  as the step's Python). ``kernel_share_of_profiled`` is the uncorrected ratio, a lower bound;
* **phases**: the same steps once more with the step's phases timed (systems' hooks,
  pipelines, movers, the command buffer), the Python side of the ledger;
* **reconfigure**: ``sim.reconfigure`` with one behaviour parameter changed, the cost
  of a live edit (what the editor pays per change).

With ``--sizes`` (:func:`bench_scenario_sizes`) the scenario's largest species is set to
each count in turn (everything else as the scenario says, the world included) and only
the step is timed, each size for a time budget; ``--query`` names the neighbour search of
every group (``brute`` against ``grid`` shows seed 002's O(N²) curve, its Table 1, beside
the grid's).
"""
from __future__ import annotations

import copy
import time
from contextlib import contextmanager
from typing import Callable, Optional

import numpy as np
from numba import njit
from numba.core.registry import CPUDispatcher

from .config import load_scenario_config
from .kernel_calls import CallSite, observing
from .simulation import Simulation, load_scenario

_clock = time.perf_counter


class _KernelClock:
    """Sums the time of outermost calls into Numba kernels made from Python."""

    def __init__(self) -> None:
        self.total = 0.0
        self.calls = 0
        self.dispatched = 0  # of the calls, those through Numba's dispatcher (the others: call sites')
        self._depth = 0


@contextmanager
def kernel_clock():
    """Time every call of a compiled kernel from Python while the block runs (``clock.total`` s).

    Calls go through Numba's dispatcher or, where a step repeats them, straight to a compiled
    entry point from a :class:`~starling.kernel_calls.CallSite`. Both are timed, an outermost
    call once whichever way it went; of a site's call only the compiled call itself, since the
    site's own bookkeeping around it is the step's Python.
    """
    clock = _KernelClock()
    original = CPUDispatcher.__call__

    def dispatched(self, *args, **kwargs):
        if clock._depth:
            return original(self, *args, **kwargs)
        clock._depth += 1
        t0 = _clock()
        try:
            return original(self, *args, **kwargs)
        finally:
            clock.total += _clock() - t0
            clock.calls += 1
            clock.dispatched += 1
            clock._depth -= 1

    def direct(entry, args):
        if clock._depth:
            return entry(*args)
        clock._depth += 1
        t0 = _clock()
        try:
            return entry(*args)
        finally:
            clock.total += _clock() - t0
            clock.calls += 1
            clock._depth -= 1

    CPUDispatcher.__call__ = dispatched
    try:
        with observing(direct):
            yield clock
    finally:
        CPUDispatcher.__call__ = original


@njit(cache=True, no_cfunc_wrapper=True)
def _no_work(a):
    return a.shape[0]


def _clock_costs(calls: int = 20_000) -> tuple[float, float, float]:
    """What :func:`kernel_clock` adds to a call, in seconds: ``(through a call site, through the
    dispatcher, inside the timed part)``, from a kernel that does nothing, called bare and timed.

    The first two are the whole cost the clock adds to a step per timed call; the third (one
    reading of the clock, the median of back-to-back pairs) is the part it adds to the time it
    counts as in kernels.
    """
    a = np.zeros(4)
    site = CallSite()
    site(_no_work, 4, a)

    def run_site():
        t0 = _clock()
        for _ in range(calls):
            site(_no_work, 4, a)
        return _clock() - t0

    def run_dispatched():
        t0 = _clock()
        for _ in range(calls):
            _no_work(a)
        return _clock() - t0

    added = []
    for run in (run_site, run_dispatched):
        bare = min(run() for _ in range(3))
        with kernel_clock():
            timed = min(run() for _ in range(3))
        added.append(max(0.0, (timed - bare) / calls))
    pairs = []
    for _ in range(2001):
        t0 = _clock()
        pairs.append(_clock() - t0)
    return added[0], added[1], float(np.median(pairs))


@contextmanager
def phase_clock(sim: Simulation):
    """Time the step's phases by wrapping the systems' hooks and the pipelines/movers of ``sim``."""
    totals: dict[str, float] = {}

    def wrap(owner, attr, label):
        original = getattr(owner, attr)

        def timed(*args, **kwargs):
            t0 = _clock()
            try:
                return original(*args, **kwargs)
            finally:
                totals[label] = totals.get(label, 0.0) + _clock() - t0

        setattr(owner, attr, timed)
        return owner, attr

    wrapped = []
    for system in sim.systems:
        for hook in ("before_behaviors", "after_move", "after_commands"):
            wrapped.append(wrap(system, hook, f"{system.name}.{hook}"))
    for pipeline in sim.pipelines:
        wrapped.append(wrap(pipeline, "compute", "steering"))
    for mover in sim.movers:
        wrapped.append(wrap(mover, "move", "movers"))
    wrapped.append(wrap(sim.world.commands, "apply", "commands"))
    try:
        yield totals
    finally:
        for owner, attr in wrapped:
            owner.__dict__.pop(attr, None)


def _ms(samples: list[float]) -> dict:
    a = np.asarray(samples) * 1e3
    return {"median": round(float(np.median(a)), 4), "p95": round(float(np.percentile(a, 95)), 4),
            "samples": len(samples)}


def bench_named_scenario(name: str, *, steps: int = 300, warmup: int = 60, seed: int = 0,
                         overrides: tuple[str, ...] = ()) -> dict:
    """Measure a built-in scenario or TOML file (see the module)."""
    sim = load_scenario(name, seed=seed, overrides=overrides, record_debug=False)
    sim.step(warmup)
    start = sim.snapshot()
    # a rehearsal of the timed steps: what they meet for the first time in this process (a kernel's
    # compiled version loaded from the cache when the first carcass appears) is not a step's cost
    sim.step(steps)
    sim = Simulation.restore(start)
    sim.step(2)
    times = []
    for _ in range(steps):
        t0 = _clock()
        sim.step()
        times.append(_clock() - t0)
    # the same steps again from the same state, once with the kernel clock and once with the
    # phase clock: each clock's own cost stays out of the other's figures
    sim = Simulation.restore(start)
    sim.step(2)
    with kernel_clock() as kernels:
        t0 = _clock()
        sim.step(steps)
        profiled = _clock() - t0
    sim = Simulation.restore(start)
    sim.step(2)
    with phase_clock(sim) as phases:
        sim.step(steps)
    site_cost, dispatch_cost, read_cost = _clock_costs()
    in_kernels = max(0.0, kernels.total - kernels.calls * read_cost)
    # the timed pass less what the clock itself added to it
    step_time = profiled - (kernels.calls - kernels.dispatched) * site_cost - kernels.dispatched * dispatch_cost
    report = {
        "scenario": sim.scenario.name,
        "animals": {n: int(p.n) for n, p in sim.world.populations.items()},
        "steps": steps,
        "step_ms": _ms(times),
        "kernel_ms": round(in_kernels / steps * 1e3, 4),
        "profiled_step_ms": round(profiled / steps * 1e3, 4),
        "kernel_share": round(in_kernels / step_time, 4) if step_time > 0 else 0.0,
        "kernel_share_of_profiled": round(kernels.total / profiled, 4) if profiled > 0 else 0.0,
        "clock_cost_us": {"site_call": round(site_cost * 1e6, 3), "dispatched_call": round(dispatch_cost * 1e6, 3),
                          "clock_read": round(read_cost * 1e6, 3)},
        "kernel_calls_per_step": round(kernels.calls / steps, 1),
        "phase_ms": {k: round(v / steps * 1e3, 4) for k, v in sorted(phases.items(), key=lambda kv: -kv[1])},
        "reconfigure_ms": _reconfigure_ms(sim),
    }
    return report


def _reconfigure_ms(sim: Simulation, repeats: int = 7) -> dict | None:
    """A live edit of one behaviour parameter of the largest species (median of ``repeats``)."""
    data = sim.config_data()
    species = max(range(len(data["species"])), key=lambda i: data["species"][i].get("count", 0))
    sp = data["species"][species]
    lists = [b for g in sp.get("groups", []) for b in g.get("behaviors", [])] + list(sp.get("behaviors", []))
    target = next((b for b in lists if isinstance(b.get("weight_direction"), float)), None)
    if target is None:
        return None
    times = []
    for i in range(repeats):
        target["weight_direction"] = 0.3 + 0.05 * (i % 2)
        edited = copy.deepcopy(data)
        t0 = _clock()
        sim.reconfigure(edited)
        times.append(_clock() - t0)
    return {"species": sp["name"], "animals": int(sim.population(sp["name"]).n), **_ms(times)}


def scenario_overrides(name: str, *, count: int | None = None, query: str | None = None,
                       overrides: tuple[str, ...] = ()) -> tuple[str, ...]:
    """``--set`` paths that give the scenario's largest species ``count`` animals and every
    neighbour group of every species the search method ``query`` (None: leave it)."""
    config = load_scenario_config(name, overrides)
    extra = []
    if count is not None:
        biggest = max(config.species, key=lambda sp: sp.count)
        extra.append(f"species.{biggest.name}.count={int(count)}")
    if query is not None:
        for sp in config.species:
            extra += [f"species.{sp.name}.groups.{g}.query.method={query}" for g in range(len(sp.groups))]
    return tuple(overrides) + tuple(extra)


def bench_scenario_sizes(name: str, sizes: list[int], *, query: str | None = None, steps: int = 300,
                         budget_s: float = 3.0, warmup: int = 3, seed: int = 0,
                         overrides: tuple[str, ...] = (),
                         per_size: Optional[Callable[[int], tuple[str, ...]]] = None) -> dict:
    """Step medians of a scenario at each size of its largest species (see the module);
    ``per_size(n)`` adds overrides of its own to each size (e.g. a spawn area growing with n).

    Per size: ``warmup`` steps (compilation, caches), then steps timed one by one until
    ``budget_s`` seconds or ``steps`` steps have passed (at least 5 steps). Each result also
    says the largest neighbour count and overflow seen in its last step, so a table cut at
    its capacity ``k`` (a denser world than the scenario was tuned for) is never silent
    (exact for ``all_in_radius`` groups; a knn group's search may stop once its k nearest
    are certain, and its overflow then counts only what the search met).
    """
    import numba

    results = []
    species = None
    for n in sizes:
        extra = tuple(per_size(int(n))) if per_size is not None else ()
        sim = load_scenario(name, seed=seed, overrides=scenario_overrides(name, count=n, query=query,
                                                                          overrides=overrides + extra),
                            record_debug=False)
        species = max(sim.scenario.species, key=lambda sp: sp.count).name
        sim.step(warmup)
        times: list[float] = []
        started = _clock()
        while len(times) < 5 or (len(times) < steps and _clock() - started < budget_s):
            t0 = _clock()
            sim.step()
            times.append(_clock() - t0)
        groups = [g for p in sim.pipelines for g in p.groups if g.neighbors is not None and g.neighbors.n]
        results.append({
            "n": int(n),
            "animals": {s: int(p.n) for s, p in sim.world.populations.items()},
            "step_ms": _ms(times),
            "pairs": int(n) * int(n),
            "max_neighbors": max((int(g.neighbors.count.max()) for g in groups), default=0),
            "overflow": max((int(g.neighbors.overflow.max()) for g in groups), default=0),
        })
    methods = sorted({g.query.method for p in sim.pipelines for g in p.groups}) if sizes else []
    return {"scenario": name, "species": species, "query": query or ",".join(methods),
            "threads": numba.get_num_threads(), "results": results}
