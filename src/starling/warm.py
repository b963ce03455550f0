"""Warming the kernel cache: compile every kernel a scenario needs before a run needs it.

Numba compiles a kernel the first time it is called with new argument types and keeps the
result in its on-disk cache (:mod:`starling.kernel_cache`), so the first run of a scenario
on a machine spends most of its time compiling: a minute or more of silence before the
first animal moves. :func:`warm` pays that once, up front (``make setup`` runs ``starling
warm``): it runs each scenario the way the live app does — build it, take a few steps,
let the player shoot and throw an apple where the scenario has one, encode the browser's
frames, read the live metrics and the status counters, inspect an animal — so that every
later run, ``starling demo`` included, loads its kernels from the cache.

Each scenario runs at its configured size, so the kernels compiled are the ones the app
uses at that size (below :data:`starling.parallel.PARALLEL_MIN_ANIMALS` animals the
serial compilations; a population grown past it compiles the threaded ones when it gets
there). When the cache is already warm nothing compiles and a scenario takes about a
second.

Scenarios are warmed side by side, one process per core up to four (:func:`warm`'s
``jobs``): compiling is Python and holds the interpreter, so threads would not help, but
separate processes share the on-disk cache (Numba writes each entry through a temporary
file and a rename).
The largest scenario starts first and the others follow smallest first, so that the
scenarios with an environment and an ecology mostly come after the largest one has
compiled what they share and load it instead of compiling it again.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from functools import partial
from multiprocessing import get_context
from typing import Callable, Iterable, Iterator, Optional

import numpy as np

from .config import read_scenario_data, scenario_names
from .frames import FrameEncoder
from .kernel_cache import compilations, watching
from .processes import HELPERS_ENV, ctrl_c_ignored_by_new_processes, usable_cores
from .server.live_view import entity_blocks, frame_states, read_readouts
from .simulation import Simulation, load_scenario
from .steering.queries.verlet import FIRST_GRID_CALLS

#: steps each scenario takes, before and after the player's actions: enough for a population that
#: queries itself to answer from its neighbour lists twice (they start after the grid's first calls),
#: so their kernels are compiled too
STEPS = FIRST_GRID_CALLS + 2


@dataclass(frozen=True)
class WarmResult:
    """One scenario warmed: ``compiled`` kernel compilations it needed (0: its kernels were all cached)."""

    scenario: str
    compiled: int
    seconds: float


def check_names(names: Iterable[str]) -> list[str]:
    """The scenarios to warm (every built-in one when ``names`` is empty); raises
    :class:`~starling.config.ConfigError` for a name that is neither a built-in nor a file."""
    names = list(names) or list(scenario_names())
    for name in names:
        read_scenario_data(name)
    return names


def rehearse(sim: Simulation, steps: int = STEPS) -> None:
    """Everything a live run calls on ``sim`` (see :class:`starling.server.runner.SimulationRunner`)."""
    encoder = FrameEncoder()
    blocks = entity_blocks(sim)  # reads sim.scene()
    sim.describe_environment()

    def frame() -> None:
        encoder.encode(frame_states(sim, blocks), step=int(sim.step_count), time=float(sim.time),
                       dt=float(sim.dt), sequence=int(sim.step_count))

    frame()
    for _ in range(steps):
        sim.step()
        frame()
    read_readouts(sim)
    if hasattr(sim, "fire"):  # the player's actions: a shot (sounds, maybe a carcass) and an apple
        player = sim.world.populations.get("player")
        at = (np.asarray(player.position[0], np.float64) if player is not None and player.n
              else np.zeros(3)) + np.array([0.0, 1.5, 0.0])
        aim = np.asarray(player.forward[0], np.float64) if player is not None and player.n else np.array([1.0, 0, 0])
        sim.move_player(at - np.array([0.0, 1.5, 0.0]))
        sim.fire(at, aim)
        sim.throw_apple(at, 4.0 * aim + np.array([0.0, 2.0, 0.0]))
        for _ in range(steps):
            sim.step()
            frame()
        read_readouts(sim)
    sim.health()


def warm_scenario(name: str, *, steps: int = STEPS, on_kernel: Optional[Callable[[str], None]] = None) -> WarmResult:
    """Build ``name`` and :func:`rehearse` it, counting the kernels that had to be compiled."""
    first = compilations()
    t0 = time.perf_counter()
    with watching(on_kernel or (lambda kernel: None)):
        rehearse(load_scenario(name), steps)
    return WarmResult(name, compilations() - first, time.perf_counter() - t0)


def warm(names: Iterable[str] = (), *, steps: int = STEPS, jobs: Optional[int] = None,
         plugins: Iterable[str] = (), on_start: Optional[Callable[[str], None]] = None,
         on_kernel: Optional[Callable[[str], None]] = None,
         on_done: Optional[Callable[[WarmResult], None]] = None) -> list[WarmResult]:
    """Warm every built-in scenario, or the named ones (names or TOML paths); returns one result per
    scenario, in the order they finished.

    ``jobs``: the processes asked for (:func:`processes` says how many run). With one, everything
    happens in this process: ``on_start`` is told each scenario as it starts and ``on_kernel``
    each kernel as it compiles ("" for Numba's own, unnamed ones); worker processes report whole scenarios only (``on_done``).
    ``plugins``: the ``--plugin`` modules a worker loads before it builds a scenario (this process
    has loaded them already).
    """
    names = check_names(names)
    workers = processes(jobs, len(names))
    if workers == 1:
        return _collect(_one_by_one(names, steps, on_start, on_kernel), on_done)
    # a Pool rather than concurrent.futures: its terminate() stops workers mid-compile when this
    # process is interrupted, where an executor's shutdown would wait for them
    with ctrl_c_ignored_by_new_processes():
        pool = get_context("spawn").Pool(workers, initializer=_start_worker, initargs=(tuple(plugins),))
    try:
        # a scenario that fails to build raises its ConfigError here, as it would in this process
        return _collect(pool.imap_unordered(partial(warm_scenario, steps=steps), largest_first_then_smallest(names)),
                        on_done)
    except BaseException:  # a scenario that failed, Ctrl-C: no worker goes on compiling for nobody
        pool.terminate()
        raise
    finally:
        pool.close()
        pool.join()


def _one_by_one(names: list[str], steps: int, on_start, on_kernel) -> Iterator[WarmResult]:
    for name in names:
        if on_start is not None:
            on_start(name)
        yield warm_scenario(name, steps=steps, on_kernel=on_kernel)


def _collect(outcomes: Iterable[WarmResult], on_done) -> list[WarmResult]:
    results = []
    for outcome in outcomes:
        results.append(outcome)
        if on_done is not None:
            on_done(outcome)
    return results


def processes(jobs: Optional[int], scenarios: int) -> int:
    """How many processes :func:`warm` runs for ``scenarios`` when asked for ``jobs`` (None:
    :func:`default_jobs`): never more than the scenarios, at least one."""
    return max(1, min(default_jobs() if jobs is None else int(jobs), scenarios))


#: the most processes :func:`warm` starts unless told: the largest scenario alone takes most of the
#: wall time of two (``meadow``: 74 s on an empty cache, 584 MB), so more processes would mostly
#: compile the kernels the scenarios share again, each in memory of its own
MAX_DEFAULT_JOBS = 4


def default_jobs() -> int:
    """One warming process per core this process may run on, at most :data:`MAX_DEFAULT_JOBS`."""
    return max(1, min(usable_cores(), MAX_DEFAULT_JOBS))


def largest_first_then_smallest(names: list[str]) -> list[str]:
    """The order scenarios are handed to the workers: the largest (its settings written out: more
    species, behaviours and systems, more kernels) first, then the rest from the smallest up."""
    size = {name: len(repr(read_scenario_data(name)[0])) for name in names}
    ordered = sorted(names, key=lambda name: size[name])
    return ordered[-1:] + ordered[:-1]


def _start_worker(plugins: tuple) -> None:
    """A worker leaves Ctrl-C to the command (which stops every worker), starts no compiling
    helpers of its own (the workers keep the cores busy) and loads the ``--plugin`` modules."""
    from .plugins import load_plugin

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ[HELPERS_ENV] = "0"
    for spec in plugins:
        load_plugin(spec)
