"""Gathered targets (a group that sees several species, or filters by tag) against a NumPy oracle,
and the step's sharing of one gather between the species that gather the same targets."""
import numpy as np

import starling
from starling.config import validate_scenario
from starling.steering.targets import gather

SPAWN = {"center": [0, 0, 0], "size": [30, 0, 30]}
FLOCK = {"query": {"targets": ["west", "east"], "max_distance": 6, "k": 4},
         "behaviors": [{"kind": "cohesion"}, {"kind": "separation"}]}
SCENE = {
    "name": "gather",
    "seed": 11,
    "species": [
        {"name": "west", "count": 40, "mover": {"kind": "planar", "max_speed": 4}, "spawn": SPAWN, "groups": [FLOCK]},
        {"name": "east", "count": 30, "mover": {"kind": "planar", "max_speed": 4}, "spawn": SPAWN, "groups": [FLOCK]},
        {"name": "hawk", "count": 3, "mover": {"kind": "planar", "max_speed": 6}, "spawn": SPAWN,
         "groups": [{"query": {"targets": ["west", "east"], "exclude_tags": ["hidden"], "max_distance": 25, "k": 3},
                     "behaviors": [{"kind": "seek"}]}]},
    ],
}


def _sim():
    return starling.Simulation(validate_scenario(SCENE), record_debug=False)


def _pipeline(sim, name):
    return next(p for p in sim.pipelines if p.name == name)


def _oracle(sim, targets, exclude_bits=0):
    """Every target's rows whose tags carry none of ``exclude_bits``, in target order."""
    parts = []
    for t, name in enumerate(targets):
        pop = sim.population(name)
        rows = np.flatnonzero((pop.tags & np.uint32(exclude_bits)) == 0)
        parts.append((t, rows, pop))
    species = np.concatenate([np.full(r.size, t) for t, r, _ in parts])
    rows = np.concatenate([r for _, r, _ in parts])
    fields = {f: np.concatenate([getattr(p, f)[r] for _, r, p in parts]) for f in ("position", "velocity", "uid")}
    return species, rows, fields


def _check(got, expected):
    others, species, rows = got
    want_species, want_rows, want = expected
    np.testing.assert_array_equal(species, want_species)
    np.testing.assert_array_equal(rows, want_rows)
    for f, values in want.items():
        np.testing.assert_array_equal(getattr(others, f), values)


def _hawk(steps):
    """A stepped simulation, the hawk's pipeline and group, and the tag bit it excludes."""
    sim = _sim()
    sim.step(steps)
    hawk = _pipeline(sim, "hawk")
    return sim, hawk, hawk.groups[0], sim.world.tag_bit("hidden")


def test_a_tag_filter_gathers_the_rows_that_pass_and_every_row_again_once_nobody_is_filtered():
    sim, hawk, group, bit = _hawk(3)
    # nobody hidden: every row of both, in order
    _check(gather(sim.world, group), _oracle(sim, ["west", "east"], bit))
    sim.population("west").tags[[2, 5, 39]] |= np.uint32(bit)
    sim.population("east").tags[0] |= np.uint32(bit)
    _check(gather(sim.world, group), _oracle(sim, ["west", "east"], bit))
    assert gather(sim.world, group)[0].position.shape[0] == 70 - 4
    sim.population("west").tags[:] = 0
    sim.population("east").tags[:] = 0
    _check(gather(sim.world, group), _oracle(sim, ["west", "east"], bit))


def test_a_gather_hands_on_the_same_arrays_step_after_step_with_the_animals_moved():
    # kept while the layouts hold (so a behaviour's arguments built from them can be kept too),
    # refreshed with every step's positions
    sim, hawk, group, bit = _hawk(2)
    first = gather(sim.world, group)
    before = first[0].position.copy()
    sim.step(2)
    again = gather(sim.world, group)
    assert again[0] is first[0] and again[1] is first[1] and again[2] is first[2]
    _check(again, _oracle(sim, ["west", "east"], bit))
    assert not np.array_equal(again[0].position, before)  # the animals moved, and so did the copies


def test_a_gather_follows_populations_whose_counts_change():
    # births and deaths by commands: the same pipeline and group see new layouts
    sim, hawk, group, bit = _hawk(2)
    _check(gather(sim.world, group), _oracle(sim, ["west", "east"], bit))
    sim.world.commands.spawn("east", np.float32([[1, 0, 1]] * 5))
    sim.world.commands.kill("west", sim.population("west").uid[[0, 7]].copy())
    sim.step(1)
    assert (sim.population("west").n, sim.population("east").n) == (38, 35)
    assert _pipeline(sim, "hawk") is hawk
    _check(gather(sim.world, group), _oracle(sim, ["west", "east"], bit))


def test_species_gathering_the_same_targets_share_one_gather_within_a_step():
    sim = _sim()
    sim.step(2)
    west, east = _pipeline(sim, "west"), _pipeline(sim, "east")
    shared = {}
    first = gather(sim.world, west.groups[0], shared)
    second = gather(sim.world, east.groups[0], shared)
    assert second is first
    _check(second, _oracle(sim, ["west", "east"]))
    # the hawk reads other components of them (none) and filters: a gather of its own
    hawk = _pipeline(sim, "hawk")
    assert gather(sim.world, hawk.groups[0], shared) is not first


def test_sharing_gathers_changes_no_desire():
    sim = _sim()
    sim.step(5)
    t, dt = sim.world.clock.time, sim.world.clock.dt
    for pipeline in sim.pipelines:
        pipeline.compute(sim.world, t, dt, record=False)
    alone = {p.name: p.desired[: sim.population(p.name).n].copy() for p in sim.pipelines}
    shared = {}
    for pipeline in sim.pipelines:
        pipeline.compute(sim.world, t, dt, record=False, gathered=shared)
    for p in sim.pipelines:
        np.testing.assert_array_equal(p.desired[: sim.population(p.name).n], alone[p.name])


def test_a_group_whose_target_is_empty_sees_nobody_then_its_animals_then_nobody_again():
    scene = {"name": "empty", "seed": 3, "species": [
        {"name": "sheep", "count": 20, "mover": {"kind": "planar", "max_speed": 4},
         "spawn": {"center": [0, 0, 0], "size": [10, 0, 10]},
         "groups": [{"query": {"targets": ["wolf"], "max_distance": 50, "k": 2, "fov_deg": 360},
                     "behaviors": [{"kind": "flee"}]}]},
        {"name": "wolf", "count": 0, "mover": {"kind": "planar", "max_speed": 6},
         "spawn": {"center": [0, 0, 0], "size": [10, 0, 10]}, "behaviors": [{"kind": "wandering"}]}]}
    sim = starling.Simulation(validate_scenario(scene))

    def table():
        sheep = _pipeline(sim, "sheep")
        sim.step(1)
        nb = sheep.groups[0].neighbors
        n = sim.population("sheep").n
        return nb.index[:n].copy(), nb.count[:n].copy(), sheep.groups[0].nobody

    for _ in range(2):
        index, count, nobody = table()
        assert nobody and not count.any() and (index == -1).all()
    # wolves arrive and leave by commands (the pipelines stay as they are, tables and all)
    sim.world.commands.spawn("wolf", np.float32([[1, 0, 1], [-1, 0, 2], [3, 0, -2]]))
    table()  # the wolves are added at the end of this step
    index, count, nobody = table()
    assert not nobody and (count == 2).all() and (index[:, :2] >= 0).all()
    sim.world.commands.kill("wolf", sim.population("wolf").uid.copy())
    table()
    for _ in range(2):
        index, count, nobody = table()
        assert nobody and not count.any() and (index == -1).all()


def test_a_copied_simulation_gathers_its_own_animals():
    import pickle
    sim, hawk, group, bit = _hawk(2)
    gather(sim.world, group)
    copy = pickle.loads(pickle.dumps(sim))
    copy.step(3)
    sim.step(3)
    group = _pipeline(copy, "hawk").groups[0]
    _check(gather(copy.world, group), _oracle(copy, ["west", "east"], bit))
    np.testing.assert_array_equal(copy.population("hawk").position, sim.population("hawk").position)


def test_the_tag_filter_keeps_the_rows_numpy_keeps():
    """The filter's kernel against its NumPy definition: a row passes with one of the included
    tags (any row when none is asked for) and none of the excluded ones, in row order."""
    from starling.world.tags import rows_with_tags

    tags = np.random.default_rng(5).integers(0, 16, 400).astype(np.uint32)
    rows = np.zeros(400, np.int64)
    for include, exclude in [(0, 4), (3, 0), (3, 4), (8, 8), (0, 0)]:
        keep = np.ones(400, bool) if not include else (tags & np.uint32(include)) != 0
        keep &= (tags & np.uint32(exclude)) == 0
        k = rows_with_tags(tags, np.uint32(include), np.uint32(exclude), rows)
        np.testing.assert_array_equal(rows[:k], np.flatnonzero(keep), err_msg=f"include {include}, exclude {exclude}")
