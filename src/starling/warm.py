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
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import numpy as np
from numba.core import event

from .config import read_scenario_data, scenario_names
from .frames import FrameEncoder
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


class _CompileWatch(event.Listener):
    """Counts Numba's compilations (cache misses, nested ones included) and names each as it starts."""

    def __init__(self, on_kernel: Optional[Callable[[str], None]] = None) -> None:
        self.count = 0
        self.on_kernel = on_kernel

    def on_start(self, ev: event.Event) -> None:
        self.count += 1
        if self.on_kernel is not None:
            dispatcher = (ev.data or {}).get("dispatcher")
            func = getattr(dispatcher, "py_func", None)
            self.on_kernel(getattr(func, "__name__", "kernel"))

    def on_end(self, ev: event.Event) -> None:
        pass


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
    watch = _CompileWatch(on_kernel)
    t0 = time.perf_counter()
    with event.install_listener("numba:compile", watch):
        rehearse(load_scenario(name), steps)
    return WarmResult(name, watch.count, time.perf_counter() - t0)


def warm(names: Iterable[str] = (), *, steps: int = STEPS, on_start: Optional[Callable[[str], None]] = None,
         on_kernel: Optional[Callable[[str], None]] = None,
         on_done: Optional[Callable[[WarmResult], None]] = None) -> list[WarmResult]:
    """Warm every built-in scenario, or the named ones (names or TOML paths); returns one result per scenario."""
    results = []
    for name in check_names(names):
        if on_start is not None:
            on_start(name)
        result = warm_scenario(name, steps=steps, on_kernel=on_kernel)
        results.append(result)
        if on_done is not None:
            on_done(result)
    return results
