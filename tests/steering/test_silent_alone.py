"""Behaviours that claim to be silent alone are: no neighbours, no opinion, whatever else.

The pipeline skips such a behaviour's kernel when its group's query found nobody
(``registry.behavior(silent_alone=True)``), so the claim must hold for every animal state
and parameter set a scene produces. Each claiming behaviour is re-run here on the real
arguments of the built-in scenes with every neighbour list emptied, and whole scenes are
stepped with and without the skip.
"""
import numpy as np
import pytest

import starling
from starling.config import validate_scenario
from starling.steering import groups, pipeline, registry


SCENES = ("flock", "pond", "pasture", "lagoon", "fish_tank", "classroom", "vicsek", "couzin", "savannah",
          "meadow", "reef")
#: what no built-in scene uses: wolves that seek sheep that flee them
CHASE = {
    "name": "chase", "seed": 3, "dt": 1 / 30,
    "world": {"bounds_min": [-50, -5, -50], "bounds_max": [50, 20, 50]},
    "species": [
        {"name": "sheep", "count": 30, "spawn": {"center": [0, 0.5, 0], "size": [30, 0, 30]},
         "mover": {"kind": "planar", "max_speed": 3.0},
         "groups": [{"query": {"targets": ["wolf"], "max_distance": 12, "k": 2}, "behaviors": [{"kind": "flee"}]}]},
        {"name": "wolf", "count": 3, "spawn": {"center": [0, 0.5, 0], "size": [30, 0, 30]},
         "mover": {"kind": "planar", "max_speed": 5.0},
         "groups": [{"query": {"targets": ["sheep"], "max_distance": 15, "k": 3}, "behaviors": [{"kind": "seek"}]}]},
    ],
}


def _scenes():
    for name in SCENES:
        yield name, starling.load_scenario(name)
    yield "chase", starling.Simulation(validate_scenario(CHASE))


def _neighbour_calls(sim, steps: int) -> list:
    """(pipeline, slot, n, args) of every neighbour kernel call in ``steps`` steps (none skipped)."""
    calls = []
    for pipe in sim.pipelines:
        original = pipe._run

        def record(slot, n, kernel, args, out, pipe=pipe, original=original):
            if slot.spec.kind == "neighbor" and n:
                calls.append((pipe, slot, n, args))
            original(slot, n, kernel, args, out)

        pipe._run = record
    sim.step(steps)
    return calls


def test_every_behaviour_that_claims_it_writes_no_opinion_for_animals_without_neighbours(monkeypatch):
    monkeypatch.setattr(pipeline, "SKIP_SILENT", False)
    monkeypatch.setattr(groups, "FUSE", False)  # each behaviour's own kernel (the fused ones: test_fused.py)
    covered = set()
    for name, sim in _scenes():
        for pipe, slot, n, args in _neighbour_calls(sim, 3):
            if not slot.spec.silent_alone or not slot.enabled:
                continue
            agents, others, nbrs = args[:3]
            alone = nbrs._replace(count=np.zeros_like(nbrs.count))
            out = pipe.results.view(slot.row, n)
            for a in (out.direction, out.direction_desire, out.speed, out.speed_desire):
                a[...] = 7.0  # whatever the kernel leaves unwritten shows
            slot.spec.compiled(False)(agents, others, alone, *args[3:], out)
            for field in ("direction", "direction_desire", "speed", "speed_desire"):
                assert not np.any(getattr(out, field)), (name, slot.where, field)
            covered.add(slot.spec.name)
    claiming = {b.name for b in registry.behaviors("neighbor") if b.silent_alone}
    assert claiming, "no built-in behaviour claims to be silent alone"
    assert claiming <= covered, sorted(claiming - covered)


@pytest.mark.parametrize("name", ["lagoon", "meadow"])
def test_skipping_silent_kernels_changes_nothing(name, monkeypatch):
    """Scenes whose sound, player and apple groups are empty most steps, stepped both ways."""
    states = []
    skipped = []
    for skip in (True, False):
        monkeypatch.setattr(pipeline, "SKIP_SILENT", skip)
        sim = starling.load_scenario(name)
        silenced = []
        for pipe in sim.pipelines:
            original = pipe._silence

            def count(slot, n, original=original):
                silenced.append(slot.where)
                original(slot, n)

            pipe._silence = count
        sim.step(40)
        skipped.append(len(silenced))
        states.append({s: sim.population(s).state()["arrays"] for s in sim.species})
    assert skipped[0] > 40 and skipped[1] == 0  # the skip happened (every step, several groups)
    with_skip, without = states
    assert with_skip.keys() == without.keys()
    for species in with_skip:
        for array, value in with_skip[species].items():
            assert np.array_equal(value, without[species][array], equal_nan=True), (species, array)
