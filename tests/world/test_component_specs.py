"""A population keeps components of any dtype and per-animal shape declared by a ComponentSpec."""
import numpy as np
import pytest

from starling.systems import ComponentSpec
from starling.world import Population


def test_typed_components_follow_the_animals_through_spawns_deaths_and_reordering():
    pop = Population("a", capacity=2)
    pop.add_component(ComponentSpec("counter", "int32", (), 7))
    pop.add_component(ComponentSpec("home", "float64", (3,), 0.0))
    pop.append(np.arange(3), np.zeros((3, 3), np.float32), np.ones((3, 3), np.float32),
               components={"home": np.arange(9.0).reshape(3, 3)})
    assert pop.component("counter").dtype == np.int32 and pop.component("counter").tolist() == [7, 7, 7]
    assert pop.component("home").shape == (3, 3) and pop.component("home").dtype == np.float64
    pop.component("counter")[:] = [1, 2, 3]
    pop.append(np.arange(3, 40), np.zeros((37, 3), np.float32), np.ones((37, 3), np.float32))  # grows
    assert pop.component("counter")[:4].tolist() == [1, 2, 3, 7]
    pop.alive[1] = False
    pop.compact()
    assert pop.component("counter")[:3].tolist() == [1, 3, 7]
    assert pop.component("home")[1].tolist() == [6.0, 7.0, 8.0]
    pop.permute(np.arange(pop.n)[::-1])
    assert pop.component("counter")[-3:].tolist() == [7, 3, 1]
    assert pop.component_spec("home") == ComponentSpec("home", "float64", (3,), 0.0)


def test_typed_components_survive_state_and_load_state():
    pop = Population("a")
    pop.add_component(ComponentSpec("counter", "int16", (), 1))
    pop.add_component(ComponentSpec("wish", "float32", (2,), 0.5))
    pop.append(np.arange(4), np.zeros((4, 3), np.float32), np.zeros((4, 3), np.float32))
    pop.component("counter")[:] = [4, 3, 2, 1]
    copy = Population("a")
    copy.load_state(pop.state())
    assert copy.component("counter").dtype == np.int16 and copy.component("counter").tolist() == [4, 3, 2, 1]
    assert copy.component("wish").shape == (4, 2) and float(copy.component("wish")[0, 1]) == 0.5


def test_redeclaring_a_component_with_another_type_is_an_error():
    pop = Population("a")
    pop.add_component("energy", 1.0)
    pop.add_component(ComponentSpec("energy", "float32", (), 1.0))  # the same: nothing happens
    with pytest.raises(ValueError, match="component 'energy' of 'a' is float32"):
        pop.add_component(ComponentSpec("energy", "float64"))
