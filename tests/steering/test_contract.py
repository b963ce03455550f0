"""The behaviour contract: kernels receive only the components they declare, and a read they
did not declare is reported with the behaviour and the component named."""
from __future__ import annotations

from typing import Literal

import pytest
from numba import prange

import starling
from starling.config import ConfigError
from starling.steering import registry
from starling.steering.params import BehaviorParams, NeighborBehaviorParams
from starling.steering.registry import RegistryError
from starling.world.population import CORE_FIELDS


@pytest.fixture(autouse=True)
def _forget_test_behaviours():
    """The behaviours registered here are each test's own: other tests list every registered one."""
    yield
    for name in [n for n in registry._behaviors if n.startswith("test_contract_")]:
        del registry._behaviors[name]


class _EnergyParams(BehaviorParams):
    kind: Literal["test_contract_energy"] = "test_contract_energy"


def test_a_kernel_reading_an_undeclared_component_of_its_animals_is_refused_when_it_registers():
    def kernel(agents, p, time, dt, out):
        for i in prange(agents.position.shape[0]):
            out.speed[i] = agents.energy[i]

    with pytest.raises(RegistryError) as err:
        registry.behavior("test_contract_energy", kind="simple", params=_EnergyParams)(kernel)
    assert "'test_contract_energy'" in str(err.value) and "'energy'" in str(err.value)
    assert "components=('energy',)" in str(err.value)
    assert "test_contract_energy" not in {b.name for b in registry.behaviors()}


class _FoodParams(NeighborBehaviorParams):
    kind: Literal["test_contract_food"] = "test_contract_food"


def test_a_kernel_reading_an_undeclared_component_of_its_targets_is_refused_when_it_registers():
    def kernel(agents, others, neighbors, p, time, dt, out):
        for i in prange(agents.position.shape[0]):
            out.speed[i] = others.food[0]

    with pytest.raises(RegistryError) as err:
        registry.behavior("test_contract_food", kind="neighbor", params=_FoodParams, components=("food",))(kernel)
    assert "'food' of its targets" in str(err.value) and "target_components=('food',)" in str(err.value)


def test_every_built_in_kernel_keeps_the_contract():
    from starling.steering.contract import undeclared_reads

    for spec in registry.behaviors():
        assert undeclared_reads(spec.name, spec.kind, spec.kernel, spec.components, spec.target_components) == []


class _ViaHelperParams(BehaviorParams):
    kind: Literal["test_contract_via_helper"] = "test_contract_via_helper"


def _read_energy(agents, i):
    return agents.energy[i]


def test_a_read_hidden_in_a_helper_is_reported_at_the_first_step_with_the_path():
    from numba import njit

    helper = njit(_read_energy)

    def via_helper(agents, p, time, dt, out):
        for i in range(agents.position.shape[0]):
            out.speed[i] = helper(agents, i)
            out.speed_desire[i] = 0.0

    registry.behavior("test_contract_via_helper", kind="simple", params=_ViaHelperParams)(via_helper)
    sim = starling.load_scenario("flock", seed=1, overrides=[
        "species.bird.count=20", "species.bird.components.energy=1.0"])
    data = sim.config_data()
    data["species"][0]["behaviors"].append({"kind": "test_contract_via_helper"})
    with pytest.raises(ConfigError) as err:
        sim.reconfigure(data)
        sim.step()
    text = str(err.value)
    assert "species.bird.behaviors." in text and "'energy'" in text and "does not declare" in text


class _NeedsParams(BehaviorParams):
    kind: Literal["test_contract_needs"] = "test_contract_needs"


def _needs(agents, p, time, dt, out):
    for i in prange(agents.position.shape[0]):
        out.speed[i] = agents.stamina[i]


def test_the_view_a_kernel_gets_holds_the_core_arrays_and_its_declared_components_only():
    sim = starling.load_scenario("lagoon", seed=2)
    for pipe in sim.pipelines:
        for slot in pipe.slots:
            assert slot.self_type._fields == CORE_FIELDS + tuple(sorted(slot.spec.components))
            assert slot.target_type._fields == CORE_FIELDS + tuple(sorted(slot.spec.target_components))
    chase = next(s for p in sim.pipelines for s in p.slots if s.spec.name == "chase_food")
    assert chase.target_type._fields[len(CORE_FIELDS):] == ("food", "nutrition")
    sim.step(2)


def test_adding_a_component_to_a_species_recompiles_no_kernel():
    sim = starling.load_scenario("flock", seed=1, overrides=["species.bird.count=50"])
    sim.step(2)
    kernels = {s.spec.name: s.spec.compiled(False) for s in sim.pipelines[0].slots}
    before = {name: len(k.signatures) for name, k in kernels.items()}
    sim.set("species.bird.components.freshly_added=0.5")
    assert sim.population("bird").has_component("freshly_added")
    sim.step(2)
    assert {name: len(k.signatures) for name, k in kernels.items()} == before


def test_a_species_without_a_declared_component_is_refused_with_the_path():
    registry.behavior("test_contract_needs", kind="simple", params=_NeedsParams, components=("stamina",))(_needs)
    data = starling.load_scenario("flock", seed=1).config_data()
    data["species"][0]["behaviors"].append({"kind": "test_contract_needs"})
    with pytest.raises(ConfigError) as err:
        starling.Simulation(starling.validate_scenario(data))
    text = str(err.value)
    assert f"species.bird.behaviors.{len(data['species'][0]['behaviors']) - 1}" in text and "'stamina'" in text


class _LoudParams(NeighborBehaviorParams):
    kind: Literal["test_contract_loud"] = "test_contract_loud"


def _loud(agents, others, neighbors, p, time, dt, out):
    for i in prange(agents.position.shape[0]):
        out.speed[i] = others.loudness[0] if others.loudness.shape[0] else 0.0


def test_a_target_without_a_declared_component_is_refused_with_the_path():
    registry.behavior("test_contract_loud", kind="neighbor", params=_LoudParams, target_components=("loudness",))(_loud)
    data = starling.load_scenario("flock", seed=1).config_data()
    data["species"][0]["groups"][0]["behaviors"].append({"kind": "test_contract_loud"})
    b = len(data["species"][0]["groups"][0]["behaviors"]) - 1
    with pytest.raises(ConfigError) as err:
        starling.Simulation(starling.validate_scenario(data))
    text = str(err.value)
    assert f"species.bird.groups.0.behaviors.{b}" in text and "'loudness'" in text and "'bird'" in text
