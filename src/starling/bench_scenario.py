"""``starling bench --scenario NAME``: a whole scenario's step, and where its time goes.

Three measurements on the same scenario, each after a warm-up:

* **step**: ``sim.step()`` timed one by one (medians and 95th percentiles), nothing else
  running;
* **kernel share**: a second pass in which every call from Python into a compiled
  kernel is timed (calls between kernels stay inside them), so the share of the step
  spent in kernels vs. Python orchestration is known. The timer costs about a
  microsecond per call, so this pass is reported apart from the clean timings;
* **phases**: the same pass split by the step's phases (systems' hooks, pipelines,
  movers, the command buffer), the Python side of the ledger;
* **reconfigure**: ``sim.reconfigure`` with one behaviour parameter changed, the cost
  of a live edit (what the editor pays per change).
"""
from __future__ import annotations

import copy
import time
from contextlib import contextmanager

import numpy as np
from numba.core.registry import CPUDispatcher

from .simulation import Simulation, load_scenario

_clock = time.perf_counter


class _KernelClock:
    """Sums the time of outermost calls into Numba kernels made from Python."""

    def __init__(self) -> None:
        self.total = 0.0
        self.calls = 0
        self._depth = 0


@contextmanager
def kernel_clock():
    """Time every call of a compiled kernel from Python while the block runs (``clock.total`` s)."""
    clock = _KernelClock()
    original = CPUDispatcher.__call__

    def timed(self, *args, **kwargs):
        if clock._depth:
            return original(self, *args, **kwargs)
        clock._depth += 1
        t0 = _clock()
        try:
            return original(self, *args, **kwargs)
        finally:
            clock.total += _clock() - t0
            clock.calls += 1
            clock._depth -= 1

    CPUDispatcher.__call__ = timed
    try:
        yield clock
    finally:
        CPUDispatcher.__call__ = original


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
    times = []
    for _ in range(steps):
        t0 = _clock()
        sim.step()
        times.append(_clock() - t0)
    # the same steps again from the same state, with the kernel and phase clocks on
    sim = Simulation.restore(start)
    sim.step(2)
    with kernel_clock() as kernels, phase_clock(sim) as phases:
        t0 = _clock()
        sim.step(steps)
        profiled = _clock() - t0
    report = {
        "scenario": sim.scenario.name,
        "animals": {n: int(p.n) for n, p in sim.world.populations.items()},
        "steps": steps,
        "step_ms": _ms(times),
        "profiled_step_ms": round(profiled / steps * 1e3, 4),
        "kernel_share": round(kernels.total / profiled, 4) if profiled > 0 else 0.0,
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
