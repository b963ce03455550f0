"""The reef (seed 004, Ménard): health, the fish's fear of sharks, six neighbours, the sharks' states.

One simulation of 2,000 steps (67 simulated seconds) is shared by the tests. Before every step
the fish's brain states, their distance to the nearest shark (the step-start positions the
brains count from) and the sharks' states are recorded; after it the fish's states and the
neighbours each fish saw at its last probe; health every 50 steps.
"""
import numpy as np
import pytest

import starling

STEPS = 2000
NORMAL, ALONE, AFRAID = 0, 1, 2
CHILL, HUNTING, ATTACKING = 0, 1, 2
FEAR = 6.0  # the fish's AFRAID radius in reef.toml


@pytest.fixture(scope="module")
def run():
    sim = starling.load_scenario("reef")
    fish = sim.world.population("fish")
    sharks = sim.world.population("shark")
    n = fish.n
    rec = {"nearest": np.zeros((STEPS, n)), "before": np.zeros((STEPS, n), int), "after": np.zeros((STEPS, n), int),
           "seen": np.zeros((STEPS, n)), "sharks": np.zeros((STEPS, sharks.n), int), "health": []}
    for s in range(STEPS):
        order = np.argsort(fish.uid[: fish.n])  # record by uid: rows are reordered now and then
        pos = fish.position[: fish.n][order].astype(np.float64)
        d = np.linalg.norm(pos[:, None] - sharks.position[None, : sharks.n].astype(np.float64), axis=2)
        rec["nearest"][s] = d.min(axis=1)
        rec["before"][s] = fish.component("state")[: fish.n][order]
        rec["sharks"][s] = sharks.component("state")[: sharks.n][np.argsort(sharks.uid[: sharks.n])]
        sim.step(1)
        order = np.argsort(fish.uid[: fish.n])
        rec["after"][s] = fish.component("state")[: fish.n][order]
        rec["seen"][s] = fish.component("neighbors_seen")[: fish.n][order]
        if s % 50 == 49:
            rec["health"].append(sim.health())
    assert fish.n == n and sharks.n == 3  # nobody is born or dies on the reef
    rec["sim"] = sim
    return rec


def test_every_health_count_stays_zero(run):
    assert len(run["health"]) == STEPS // 50
    for health in run["health"]:
        assert health and all(v == 0 for v in health.values()), health


def test_fish_become_afraid_when_a_shark_comes_close_and_normal_again_once_it_left(run):
    before, after, nearest = run["before"], run["after"], run["nearest"]
    scared = (before != AFRAID) & (after == AFRAID)
    calmed = (before == AFRAID) & (after == NORMAL)
    # many fish, many times
    assert scared.sum() >= 100 and len(np.unique(np.nonzero(scared)[1])) >= 50
    assert calmed.sum() >= 100 and len(np.unique(np.nonzero(calmed)[1])) >= 50
    # a fish becomes AFRAID only with a shark within its fear radius, and calms down only once none is
    assert nearest[scared].max() < FEAR + 1e-3
    assert nearest[calmed].min() > FEAR - 1e-3
    # and it stays afraid exactly while one is near: no fish with a shark within the radius is anything else
    assert (after[nearest < FEAR - 1e-3] == AFRAID).all()
    # the approach: a shark that was farther away a second before (it came to the fish)
    steps, rows = np.nonzero(scared)
    late = steps >= 30
    assert (nearest[steps[late] - 30, rows[late]] > nearest[steps[late], rows[late]]).mean() > 0.7


def test_each_fish_sees_about_six_neighbours(run):
    seen = run["seen"][STEPS // 4:]  # after the vision radii settled
    assert 5.0 <= seen.mean() <= 7.0
    per_fish = np.median(seen, axis=0)
    assert (np.abs(per_fish - 6) <= 2).mean() >= 0.9
    vision = run["sim"].world.population("fish").component("vision")
    assert 0.5 <= vision.min() and vision.max() <= 10.0 and vision.std() > 0.1  # each fish its own


def test_sharks_chill_hunt_and_attack(run):
    states = run["sharks"]
    for shark in states.T:
        assert {CHILL, HUNTING} <= set(shark.tolist())
    assert (states == ATTACKING).any()
