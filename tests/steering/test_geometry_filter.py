"""A neighbour behaviour that reads the pair geometry only to filter by its own radius and view
(``@behavior(..., geometry="filter")``) lets a group skip the geometry kernel when that filter keeps
every neighbour; the runs must be the same, bit for bit, as with the geometry computed."""
from typing import Literal

import numpy as np
import pytest

from starling.config import load_scenario_config, validate_scenario
from starling.simulation import Simulation
from starling.steering import registry
from starling.steering.params import NeighborBehaviorParams
from starling.steering.registry import RegistryError, behavior
from starling.steering.results import no_opinion


def skipped(sim):
    return {(p.name, g.label): not g.geometry_needed for p in sim.pipelines for g in p.groups}


def vicsek_with(**behaviour):
    data = load_scenario_config("vicsek").model_dump(mode="json", exclude_none=True)
    data["species"][0]["groups"][0]["behaviors"][0].update(behaviour)
    return Simulation(validate_scenario(data), record_debug=False)


def test_a_group_skips_the_geometry_only_when_every_filter_keeps_everyone():
    assert skipped(Simulation(load_scenario_config("vicsek"), record_debug=False)) == {("particle", "vicsek"): True}
    # the thesis' behaviours weigh neighbours by direction and angle
    assert not any(skipped(Simulation(load_scenario_config("flock"), record_debug=False)).values())
    # a filter that can leave someone out needs the angles or the exact distances
    assert skipped(vicsek_with(fov_deg=300.0)) == {("particle", "vicsek"): False}
    assert skipped(vicsek_with(max_distance=0.5)) == {("particle", "vicsek"): False}
    assert skipped(vicsek_with(max_distance=2.0)) == {("particle", "vicsek"): True}  # wider than the query: all pass
    # drawn per animal, the radius is not one number to compare
    drawn = vicsek_with(max_distance={"uniform": [1.0, 1.2]})
    assert skipped(drawn) == {("particle", "vicsek"): False}
    # a live edit adding a behaviour that reads the geometry brings it back, and back again
    sim = Simulation(load_scenario_config("vicsek"), record_debug=False)
    data = sim.config_data()
    data["species"][0]["groups"][0]["behaviors"].append({"kind": "alignment"})
    sim.reconfigure(data)
    assert skipped(sim) == {("particle", "vicsek"): False}
    sim.reconfigure(load_scenario_config("vicsek"))
    assert skipped(sim) == {("particle", "vicsek"): True}


def test_every_filter_behaviour_runs_the_same_without_the_geometry(scenes_using):
    """Each registered behaviour that says ``geometry="filter"`` is run on every built-in scene that
    uses it, once as built (the geometry skipped) and once with the geometry computed: the
    trajectories must be equal bit for bit."""
    claimed = {spec.name for spec in registry.behaviors("neighbor") if spec.geometry == "filter"}
    assert "vicsek_alignment" in claimed
    checked = set()
    for name, config in scenes_using(claimed):
        sims = [Simulation(config, record_debug=False) for _ in range(2)]
        forced = [g for p in sims[1].pipelines for g in p.groups if not g.geometry_needed]
        if not forced:
            continue
        for group in forced:
            group.geometry_needed = True
        for sim in sims:
            sim.step(60)
        for pop in sims[0].world.populations:
            a, b = sims[0].world.population(pop), sims[1].world.population(pop)
            assert np.array_equal(a.position[:a.n], b.position[:b.n]), f"{name}/{pop}"
            assert np.array_equal(a.velocity[:a.n], b.velocity[:b.n]), f"{name}/{pop}"
        # the computed geometry was really there, and really different from the zeros
        angles = [g.geometry.angle for g in forced]
        assert any(np.any(a != 0.0) for a in angles)
        checked |= {slot.spec.name for g in forced for slot in g.behaviors}
    assert claimed <= checked  # no claim goes unchecked: a new one needs a scene (or a test) that uses it


class _Params(NeighborBehaviorParams):
    kind: Literal["test_filter_reading_direction"] = "test_filter_reading_direction"


def test_a_filter_behaviour_that_reads_directions_is_refused_when_it_registers():
    def kernel(agents, others, neighbors, p, time, dt, out):
        unit = neighbors.direction
        for i in range(unit.shape[0]):
            no_opinion(out, i)

    with pytest.raises(RegistryError, match="neighbors.direction"):
        behavior("test_filter_reading_direction", kind="neighbor", params=_Params, geometry="filter")(kernel)
    assert "test_filter_reading_direction" not in {s.name for s in registry.behaviors("neighbor")}
    with pytest.raises(RegistryError, match="geometry must be one of 'full', 'filter'"):
        behavior("test_filter_reading_direction", kind="neighbor", params=_Params, geometry="angles")
    with pytest.raises(RegistryError, match="only neighbour behaviours"):
        behavior("test_filter_reading_direction", kind="simple", params=_Params, geometry="filter")
