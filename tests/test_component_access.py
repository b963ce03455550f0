"""Systems declare the components they own, read and write; a simulation is built only when
every read has an owner of the same type (bevy's checked system parameters)."""
import numpy as np
import pytest

import starling
from starling.config import validate_scenario
from starling.errors import ConfigError
from starling.steering import registry
from starling.steering.params import StrictModel
from starling.systems import Access, ComponentSpec, System


class ProbeConfig(StrictModel):
    """Which component the probe reads, as what, and what it owns."""

    reads: str = "energy"
    dtype: str = "float32"
    owns: str = ""


class Probe(System):
    name = "probe"

    def __init__(self, sim):
        self.cfg = sim.scenario.probe

    def components(self):
        owns = (ComponentSpec(self.cfg.owns),) if self.cfg.owns else ()
        return {"fish": Access(owns=owns, reads=(ComponentSpec(self.cfg.reads, self.cfg.dtype),))}


@pytest.fixture
def probe():
    registry.section("probe", model=ProbeConfig, order=200)(Probe)
    yield
    registry._sections.pop(("scenario", "probe"), None)
    registry._version[0] += 1


def scene(**probe):
    return {"name": "access", "probe": probe,
            "species": [{"name": "fish", "count": 5, "components": {"shyness": 0.5},
                         "behaviors": [{"kind": "wandering"}]}]}


def test_a_system_reading_a_component_nobody_owns_fails_at_load_naming_both(probe):
    with pytest.raises(ConfigError) as info:
        starling.Simulation(validate_scenario(scene(reads="energy")))
    message = str(info.value)
    assert "system 'probe' reads component 'energy' of 'fish', which no system owns" in message
    assert message.startswith("species.fish:")


def test_a_component_of_the_scenario_or_the_ecology_satisfies_a_read(probe):
    starling.Simulation(validate_scenario(scene(reads="shyness")))
    data = scene(reads="energy")
    data["species"][0]["ecology"] = {"energy": {}}  # now the ecology's energy system owns it
    starling.Simulation(validate_scenario(data))


def test_a_read_of_another_type_fails_naming_both_types(probe):
    with pytest.raises(ConfigError, match=r"reads component 'shyness' of 'fish' as int32, but the scenario's "
                                          r"components table owns it as float32"):
        starling.Simulation(validate_scenario(scene(reads="shyness", dtype="int32")))


def test_two_systems_owning_one_component_fail(probe):
    data = scene(reads="shyness", owns="hunger")
    data["species"][0]["ecology"] = {}
    with pytest.raises(ConfigError, match="system 'probe' and system 'energy' both own component 'hunger'|"
                                          "system 'energy' and system 'probe' both own component 'hunger'"):
        starling.Simulation(validate_scenario(data))


def test_every_component_of_the_lagoon_has_a_declared_owner():
    """The ecology's declarations are complete: no component appears that nobody declared owning."""
    sim = starling.load_scenario("lagoon", record_debug=False)
    owned: dict[str, set] = {}
    for system in sim.systems:
        for pop, access in system.components().items():
            mine = owned.setdefault(pop, set())
            names = {s.name for s in access.owns}
            assert not (mine & names), (system.name, pop, mine & names)
            mine |= names
    for i, sp in enumerate(sim.scenario.species):
        pop = sim.population(sp.name)
        drawn = {c for c in pop.component_names if c.startswith("param_")}  # the pipeline's per-animal draws
        assert set(pop.component_names) == owned[sp.name] | set(sp.components) | drawn
    for name in ("sound", "apple", "carcass", "player"):
        assert set(sim.population(name).component_names) == owned[name]
