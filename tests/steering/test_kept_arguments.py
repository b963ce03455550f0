"""A behaviour's kernel arguments are kept between steps (``SpeciesPipeline._bound``) and must
follow every change of what they were built from: animals leaving and arriving change the rows,
the population's buffers and the results' buffers."""
import numpy as np
import pytest

import starling
from starling.simulation import Simulation


def _state(sim) -> dict:
    return {(name, key): value for name, pop in sim.world.populations.items()
            for key, value in pop.state()["arrays"].items()}


def _same_steps(sim, steps: int) -> None:
    """``sim`` and a simulation restored from it, whose arguments are all built anew, step alike."""
    fresh = Simulation.restore(sim.snapshot())
    for step in range(steps):
        sim.step()
        fresh.step()
        a, b = _state(sim), _state(fresh)
        assert a.keys() == b.keys()
        for key in a:
            assert a[key].tobytes() == b[key].tobytes(), (step, key)


@pytest.mark.parametrize("scene", ["lagoon", "flock"])
def test_a_run_whose_animals_come_and_go_steps_as_one_built_after_the_change(scene):
    sim = starling.load_scenario(scene, record_debug=False)
    sim.step(3)  # every behaviour's arguments are kept by now
    species = max(sim.scenario.species, key=lambda sp: sp.count).name
    pop = sim.world.population(species)
    rng = np.random.default_rng(1)

    def arrive(k: int) -> None:
        sim.world.commands.spawn(species, pop.position[:1] + rng.normal(0.0, 1.0, (k, 3)),
                                 np.repeat(pop.velocity[:1], k, axis=0))
        sim.step()

    # more newcomers than the spare room: the population's and the results' buffers are replaced
    capacity = pop.capacity
    sim.world.commands.kill(species, pop.uid[:5].copy())
    arrive(capacity - pop.n + 12)
    assert pop.capacity > capacity and pop.n == capacity + 7
    _same_steps(sim, 3)
    # a few more, in the room there is now: only the count changes
    n, capacity = pop.n, pop.capacity
    arrive(4)
    assert pop.n == n + 4 and pop.capacity == capacity
    _same_steps(sim, 3)
    # fewer, in the same buffers
    sim.world.commands.kill(species, pop.uid[::3].copy())
    sim.step()
    _same_steps(sim, 3)
