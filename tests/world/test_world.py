"""World state: struct-of-arrays populations, stable uids, the command buffer."""
import numpy as np
import pytest

from starling.world import Population, World


def world_with(n=5, components=None):
    w = World(dt=0.1, seed=3)
    pop = w.add_population(Population("fish", capacity=2, components=components or {"energy": 1.0}))
    pos = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    pop.append(w.new_uids(n), pos, np.ones((n, 3), np.float32))
    return w, pop


def test_capacity_grows_and_keeps_existing_rows():
    w, pop = world_with(5)
    assert pop.capacity >= 5 and pop.n == 5
    np.testing.assert_array_equal(pop.uid, np.arange(5))
    np.testing.assert_array_equal(pop.position[4], [12, 13, 14])
    np.testing.assert_allclose(pop.component("energy"), 1.0)
    assert pop.forward.shape == (5, 3)
    np.testing.assert_allclose(np.linalg.norm(pop.forward, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.einsum("ij,ij->i", pop.forward, pop.up), 0.0, atol=1e-6)


def test_kills_wait_for_the_end_of_the_step_and_keep_uids_stable():
    w, pop = world_with(5)
    w.commands.kill("fish", [1, 3])
    assert pop.n == 5  # nothing changes until the buffer is applied
    killed = w.commands.apply(w)
    np.testing.assert_array_equal(killed["fish"], [1, 3])
    np.testing.assert_array_equal(pop.uid, [0, 2, 4])
    np.testing.assert_array_equal(pop.position[1], [6, 7, 8])  # uid 2's row moved, its data with it
    assert pop.index_of(3) == -1 and pop.index_of(4) == 2


def test_spawned_animals_get_new_uids_and_component_defaults():
    w, pop = world_with(3)
    w.commands.spawn("fish", [[1, 2, 3], [4, 5, 6]], [[0, 0, 1], [1, 0, 0]], components={"energy": [0.5, 0.25]})
    w.commands.kill("fish", [0])
    w.commands.apply(w)
    np.testing.assert_array_equal(pop.uid, [1, 2, 3, 4])
    np.testing.assert_allclose(pop.component("energy"), [1, 1, 0.5, 0.25])
    np.testing.assert_allclose(pop.forward[-1], [1, 0, 0])


def test_tags_are_bits_changed_by_retag_commands():
    w, pop = world_with(3)
    w.commands.retag("fish", [2], add=["dead_fish"])
    w.commands.apply(w)
    bit = w.tag_bit("dead_fish")
    assert pop.tags[2] & bit and not pop.tags[0] & bit
    w.commands.retag("fish", [2], remove=["dead_fish"])
    w.commands.apply(w)
    assert not pop.tags[2] & bit


def test_agents_view_exposes_core_arrays_and_components_without_copies():
    w, pop = world_with(4)
    agents = pop.agents()
    assert agents._fields[:5] == ("position", "velocity", "forward", "up", "uid")
    assert "energy" in agents._fields
    agents.position[0, 0] = 42.0
    assert pop.position[0, 0] == 42.0


def test_unknown_component_names_the_species_and_what_it_has():
    w, pop = world_with(1)
    with pytest.raises(KeyError, match="has no component 'hunger'; it has: energy"):
        pop.component("hunger")


def test_species_generators_are_reproducible_and_independent():
    a = World(0.1, seed=7).species_rng(0).random(3)
    b = World(0.1, seed=7).species_rng(0).random(3)
    c = World(0.1, seed=7).species_rng(1).random(3)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_the_clock_has_no_drift():
    w = World(dt=0.1, seed=0)
    for _ in range(1000):
        w.clock.advance()
    assert w.clock.time == pytest.approx(100.0, abs=1e-12)


def test_core_arrays_read_as_attributes_follow_every_change_of_count_and_buffer():
    """``pop.position`` is cached on the population after its first read; appending, killing,
    growing the buffers, adding a component, restoring and pickling must all show the live rows."""
    import pickle

    w, pop = world_with(3)
    for name in ("position", "velocity", "forward", "up", "uid", "alive", "tags"):
        assert getattr(pop, name) is getattr(pop, name)  # one view while nothing changes
        assert getattr(pop, name).shape[0] == 3
    before = pop.position
    pop.append(w.new_uids(40), np.full((40, 3), 7.0, np.float32), np.ones((40, 3), np.float32))  # grows the buffers
    assert pop.n == 43 and pop.position.shape == (43, 3) and pop.position is not before
    assert np.shares_memory(pop.position, pop._buffers["position"])
    pop.position[42] = [1.0, 2.0, 3.0]
    assert pop._buffers["position"][42].tolist() == [1.0, 2.0, 3.0]
    w.commands.kill("fish", [int(u) for u in pop.uid[:40]])
    w.commands.apply(w)
    assert pop.n == 3 and pop.uid.shape == (3,) and pop.alive.all()
    np.testing.assert_array_equal(pop.position[2], [1.0, 2.0, 3.0])
    held = pop.velocity
    pop.add_component("hunger", 0.5)  # a new buffer: the version changes
    assert pop.velocity is not held and np.shares_memory(pop.velocity, pop._buffers["velocity"])
    state = pop.state()
    copy = pickle.loads(pickle.dumps(pop))
    assert copy.n == 3 and np.shares_memory(copy.position, copy._buffers["position"])
    np.testing.assert_array_equal(copy.position, pop.position)
    copy.position[0] = 99.0
    assert copy._buffers["position"][0, 0] == 99.0 and pop.position[0, 0] != 99.0
    pop.append(w.new_uids(2), np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32))
    assert pop.position.shape[0] == 5
    pop.load_state(state)
    assert pop.position.shape[0] == 3 and pop.uid.tolist() == state["arrays"]["uid"].tolist()
