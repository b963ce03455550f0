"""Fixtures for the server tests: one kernel warm-up per session and self-stopping runners."""
from __future__ import annotations

import pytest

from starling.server.runner import SimulationRunner
from starling.server.scenes import scenario_loader

from .helpers import SCENARIO, SMALL, RecordingSink, wait_for


@pytest.fixture(scope="session", autouse=True)
def warm_simulation():
    """Compile (or load from cache) the simulation's kernels once for the whole session."""
    sim = scenario_loader(SMALL, SCENARIO)(SCENARIO, 1)
    sim.step(2)
    sim.inspect(sim.species[0], int(sim.population(sim.species[0]).uid[0]))
    sim.metrics()


@pytest.fixture
def runner_factory():
    """Start runners on the small flock; every one is stopped after the test."""
    started: list[SimulationRunner] = []

    def make(**kwargs) -> tuple[SimulationRunner, RecordingSink]:
        kwargs.setdefault("loader", scenario_loader(SMALL, SCENARIO))
        kwargs.setdefault("seed", 1)
        runner = SimulationRunner(SCENARIO, **kwargs)
        sink = RecordingSink()
        runner.start(sink)
        started.append(runner)
        wait_for(lambda: runner.sim is not None and sink.frames, what="the first frame")
        return runner, sink

    yield make
    for runner in started:
        runner.stop()
