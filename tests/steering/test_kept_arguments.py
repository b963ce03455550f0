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


def _kept_for_now(sim) -> None:
    """Every argument tuple a step keeps was built for its population's present layout."""
    kept = []
    systems = {system.name: system for system in sim.systems}
    if "energy" in systems:
        kept += [(body.view.pop, body.kept) for body in systems["energy"].bodies.values()]
    if "factors" in systems:
        kept += [(f.view.pop, f.speed_args) for f in systems["factors"].species.values()]
    if "environment" in systems:
        kept += [(sim.world.population(body.name), body.kept) for body in systems["environment"].bodies]
    if "feeding" in systems:
        kept += [(e.view.pop, e._kept.get("mouths")) for e in systems["feeding"].eaters.values()]
    if "brains" in systems:
        kept += [(mind.view.pop, getattr(mind._buffers, "thinking", None)) for mind in systems["brains"].minds.values()]
    checked = 0
    for pop, entry in kept:
        if entry is not None and pop.n:
            assert entry[0] == pop.layout, pop.name  # (each keeps the layout it was built for first)
            checked += 1
    for pipe in sim.pipelines:
        pop = sim.world.population(pipe.name)
        for group in pipe.ray_groups:
            if group._filling is not None and pop.n:
                assert group._filling[1] == pop.layout, group.label
                checked += 1
        for slot in pipe.slots:
            if slot._bound is not None and pop.n:
                assert slot._bound.n == pop.n and slot._bound.layout == pop.layout, slot.where
                checked += 1
    assert checked


@pytest.mark.parametrize("scene", ["lagoon", "flock"])
def test_a_run_whose_animals_come_and_go_steps_as_one_built_after_the_change(scene):
    sim = starling.load_scenario(scene, record_debug=False)
    sim.step(3)  # every behaviour's arguments are kept by now
    species = max(sim.scenario.species, key=lambda sp: sp.count).name
    pop = sim.world.population(species)
    rng = np.random.default_rng(1)

    def arrive(k: int) -> None:
        for sp in sim.scenario.species:  # every species, the largest by k
            other = sim.world.population(sp.name)
            m = k if sp.name == species else 2
            sim.world.commands.spawn(sp.name, other.position[:1] + rng.normal(0.0, 1.0, (m, 3)),
                                     np.repeat(other.velocity[:1], m, axis=0))
        sim.step()  # they arrive at the end of this step
        sim.step()
        _kept_for_now(sim)

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
    sim.step(2)
    _kept_for_now(sim)
    _same_steps(sim, 3)


def test_kept_arguments_follow_draws_changed_in_place():
    """The energy and speed-factor kernels keep float64 copies of parameters drawn per animal among
    their kept arguments, filled again before each call: a draw changed in place (no animal comes or
    goes, so the layout holds) steps as in a simulation whose arguments are all built anew."""
    sim = starling.load_scenario("lagoon", record_debug=False, overrides=[
        "species.fish.ecology.energy.drain={ uniform = [0.2, 0.3] }",
        "species.fish.ecology.energy.fatigue_below={ uniform = [0.4, 0.6] }",
        "species.fish.mover.max_speed={ uniform = [5.0, 6.0] }"])
    sim.step(3)  # the arguments are kept by now
    pop = sim.world.population("fish")
    layout = pop.layout
    energy = pop.component("energy")
    energy[:] = np.linspace(0.05, 1.0, pop.n, dtype=np.float32)  # some tired: fatigue reads its threshold
    # each kind of copy: a drawn energy parameter, a drawn factor's threshold, the mover's drawn top
    # speed times the drawn factor on it
    for name, factor in (("var_energy_drain", 3.0), ("var_energy_fatigue_below", 1.5),
                         ("mover_max_speed", 0.5), ("var_max_speed", 0.8)):
        pop.component(name)[:] *= np.float32(factor)
    assert pop.layout == layout
    _same_steps(sim, 3)
