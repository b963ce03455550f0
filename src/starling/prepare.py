"""Compiling a simulation's kernels before it runs, in named stages a progress display can show.

Numba compiles a kernel the first time it is called (:mod:`starling.warm` explains the
cache); on a machine whose cache is cold the first step of a scenario can take many
seconds, and the live app would sit silent. :func:`prepare` takes that first step on a
throwaway copy of the simulation (:meth:`Simulation.restore` of its snapshot: the
simulation itself does not move), one part at a time — the systems' preparation, each
species' steering (its neighbour queries and behaviours), each species' movement, the
systems after the move — then a second step and whatever the caller adds (the live app:
encoding frames, the live metrics, the inspector). Before each stage and whenever Numba
starts compiling a kernel it calls ``on_progress(stage, fraction)``::

    compiling kernels: fish steering — grid_query_kernel (3/11)

``fraction`` is the share of stages finished (0 to 1; the last call says ``ready``, 1.0).
With a warm cache every stage is quick and the whole costs a copy and two steps.

**A second process.** Numba compiles on one core. When kernels were compiled while the
simulation was built (before :func:`prepare` is called), or are compiled during a stage, and
the machine has a second core, a second process (:mod:`starling.parallel_compile`) gets a pickled copy
of the simulation and compiles the step's parts from the last one back — the systems after
the move, the last species' movement … — while this process goes from the first one on.
Each part is claimed by whichever process reaches it first; a part the other process is
compiling is waited for, then run here with its kernels loaded from the shared cache
(:mod:`starling.kernel_cache` keeps concurrent saves safe). The second process is only an
accelerator: it prints nothing, and if it fails or dies this process compiles what it
had claimed. ``STARLING_COMPILE_HELPER=0`` turns it off.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from . import parallel_compile
from .kernel_cache import compilations, watching

Progress = Callable[[str, float], None]
Extra = Sequence[tuple[str, Callable[[Any], None]]]


@dataclass(frozen=True)
class Prepared:
    """What :func:`prepare` did: the stages it named, the kernels Numba compiled (in this
    process), the seconds it took, and the step parts a second process compiled."""

    stages: int
    compiled: int
    seconds: float
    parts_elsewhere: int = 0


def can_prepare(sim: Any) -> bool:
    """Whether ``sim`` is a real :class:`~starling.simulation.Simulation` (a test's stand-in is not)."""
    return all(callable(getattr(sim, name, None)) for name in ("snapshot", "restore", "_step_parts", "step_part_count"))


def prepare(sim: Any, extra: Extra = (), on_progress: Optional[Progress] = None, *,
            in_place: bool = False) -> Prepared:
    """Compile what ``sim``'s steps need on a copy of it, naming each stage (see the module).

    ``extra``: more ``(label, fn(copy))`` stages after the steps. ``sim`` is left as it was.
    ``in_place``: take one real step of ``sim`` instead, its parts as the stages (no copy, no
    second step, no ``extra``: what ``starling run`` does with its first step).
    """
    global _compilations_seen
    t0 = time.perf_counter()
    report = on_progress or (lambda stage, fraction: None)
    parts = sim.step_part_count()
    total = parts if in_place else 1 + parts + 1 + len(extra)
    state: dict[str, Any] = {"label": "", "done": -1, "compiling": False, "kernel": None}
    # kernels compiled since the last preparation (building this simulation): the cache is cold
    first = compilations()
    cold = first > _compilations_seen
    second: Optional[parallel_compile.SecondCompiler] = None

    def say(kernel: Optional[str] = None) -> None:
        if kernel is not None:
            state["compiling"] = True
            kernel = kernel or state.get("kernel")  # an unnamed one: keep the last name shown
            state["kernel"] = kernel
        verb = "compiling kernels: " if state["compiling"] else ""
        what = f" — {kernel}" if kernel else ""
        report(f"{verb}{state['label']}{what} ({state['done'] + 1}/{total})", max(state["done"], 0) / total)

    def stage(label: str) -> None:
        state["done"] += 1
        state["label"], state["compiling"], state["kernel"] = label, False, None
        say()

    def part(label: str, index: int, source: Any) -> None:
        """Before step part ``index`` runs here: on a cold cache, start the second process; then
        claim the part or wait for it. ``source``: the simulation the second process copies (the
        real one part-way through its step when preparing in place: a throwaway copy compiled
        for its types does not mind)."""
        stage(label)
        state["part"] = (index, source)
        if cold:
            start_second()
        if second is not None:
            second.take(index, lambda: say("in a second process"))

    def start_second() -> None:
        """Start the second process, once, while a part that leaves others after it runs here
        (at a part's start on a cold cache, else at the first compilation in a part)."""
        nonlocal second
        at = state.get("part")
        if second is None and at is not None and at[0] < parts - 1 and parallel_compile.wanted(sim):
            second = parallel_compile.SecondCompiler(at[1], parts, mine=at[0] + 1)

    def compiling(kernel: str) -> None:
        start_second()
        say(kernel)

    try:
        with watching(compiling):
            if in_place:
                index = iter(range(parts))
                sim.step(on_part=lambda label: part(label, next(index), sim))
            else:
                stage("copying the simulation")
                copy = type(sim).restore(sim.snapshot())
                for index, label in enumerate(copy._step_parts()):
                    part(label, index, sim)
                state["part"] = None
                stage("a second step")
                copy.step()
                for label, fn in extra:
                    stage(label)
                    fn(copy)
    except BaseException:
        if second is not None:
            second.close(at_once=True)
        raise
    finally:
        _compilations_seen = compilations()
    elsewhere = 0 if second is None else second.close()
    report("ready", 1.0)
    return Prepared(total, _compilations_seen - first, time.perf_counter() - t0, elsewhere)


_compilations_seen = 0  # kernels compiled in this process when the last preparation ended
