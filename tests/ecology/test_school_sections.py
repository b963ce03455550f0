"""Seed 004's optimisations (Ménard, 1.5): ``[species.vision]`` adapts each animal's vision radius to
about six neighbours, ``[species.stagger]`` makes each animal decide every N steps and hold its
course between; checked against a brute-force count and the merger's output."""
import numpy as np
import pytest

import starling
from starling.config import ConfigError
from starling.ecology.school import adapt, turn_mask


def test_turn_mask_lets_each_animal_decide_once_in_every_n_steps():
    uid = np.arange(37, dtype=np.int64)
    decided = np.zeros(37, int)
    for step in range(100, 110):
        mask = turn_mask(uid, step, 10)
        assert 3 <= mask.sum() <= 4  # about a tenth each step
        decided += mask
    assert (decided == 1).all()
    assert turn_mask(uid, 5, 1).all()


def test_adapt_grows_after_too_few_shrinks_after_too_many_and_clamps():
    radius = np.float32([2.0, 2.0, 2.0, 9.5, 0.52])
    seen = np.float32([3, 6, 9, 0, 20])
    np.testing.assert_allclose(adapt(radius, seen, 6, 0.1, 0.5, 10.0), [2.2, 2.0, 1.8, 10.0, 0.5], rtol=1e-6)


def small_reef(**extra):
    return starling.load_scenario("reef", overrides=["fish=40", "sharks=1", *[f"{k}={v}" for k, v in extra.items()]])


def test_vision_counts_the_neighbours_within_each_probing_animals_radius_then_adapts_it():
    sim = small_reef()
    sim.step(25)
    fish = sim.world.population("fish")
    checked = 0
    for _ in range(12):
        step = sim.world.clock.step
        uid, pos = fish.uid[: fish.n].copy(), fish.position[: fish.n].astype(np.float64)
        vision = fish.component("vision")[: fish.n].copy()
        seen_before = fish.component("neighbors_seen")[: fish.n].copy()
        sim.step(1)
        if not np.array_equal(fish.uid[: fish.n], uid):
            continue  # the rows were reordered at the end of this step
        probing = turn_mask(uid, step, 10)
        d = np.linalg.norm(pos[:, None] - pos[None], axis=2)
        brute = (d <= vision[:, None].astype(np.float64)).sum(axis=1) - 1
        seen = fish.component("neighbors_seen")[: fish.n]
        np.testing.assert_array_equal(seen[probing], brute[probing])
        np.testing.assert_array_equal(seen[~probing], seen_before[~probing])  # the others did not probe
        np.testing.assert_allclose(fish.component("vision")[: fish.n][probing],
                                   adapt(vision[probing], brute[probing], 6, 0.1, 0.5, 10.0), rtol=1e-6)
        np.testing.assert_array_equal(fish.component("vision")[: fish.n][~probing], vision[~probing])
        checked += int(probing.sum())
    assert checked >= 30


def test_between_its_decisions_an_animal_steers_toward_the_velocity_it_last_chose():
    sim = small_reef()
    sim.step(25)
    fish = sim.world.population("fish")
    pipeline = next(p for p in sim.pipelines if p.name == "fish")
    held_names = ("held_x", "held_y", "held_z")
    checked = 0
    for _ in range(12):
        step = sim.world.clock.step
        uid = fish.uid[: fish.n].copy()
        held = np.stack([fish.component(c)[: fish.n] for c in held_names], axis=1).copy()
        sim.step(1)
        if not np.array_equal(fish.uid[: fish.n], uid):
            continue
        turning = turn_mask(uid, step, 10)
        holding = ~turning & (np.abs(held).sum(axis=1) > 0)
        assert fish.component("stagger_hold")[: fish.n][holding].min() == 1.0
        desired = pipeline.desired[: fish.n]
        # holding: the merger hands on the held velocity (hold_course fills the desire budget)
        np.testing.assert_allclose(desired[holding], held[holding], rtol=1e-4, atol=1e-4)
        after = np.stack([fish.component(c)[: fish.n] for c in held_names], axis=1)
        np.testing.assert_array_equal(after[turning], desired[turning])  # a new decision is kept
        np.testing.assert_array_equal(after[~turning], held[~turning])
        checked += int(holding.sum())
    assert checked >= 200


def test_the_sections_are_checked():
    with pytest.raises(ConfigError, match="min <= initial <= max"):
        small_reef(**{"species.fish.vision.initial": 20.0})
    with pytest.raises(ConfigError, match="unknown species"):
        small_reef(**{"species.fish.vision.targets": '["squid"]'})
