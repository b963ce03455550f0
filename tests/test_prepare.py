"""Compiling a scenario's kernels in named stages (starling.prepare): what the live app's
loading progress and ``starling run``'s first step show."""
from __future__ import annotations

import pickle

import numpy as np

import starling
from starling.prepare import can_prepare, prepare


def _flock():
    return starling.load_scenario("flock", seed=2, overrides=("species.bird.count=120",))


def test_a_step_taken_in_named_parts_is_the_same_step():
    whole, parts = _flock(), _flock()
    whole.step(3)
    named: list[str] = []
    parts.step(3, on_part=named.append)
    assert np.array_equal(whole.population("bird").position, parts.population("bird").position)
    assert np.array_equal(whole.population("bird").velocity, parts.population("bird").velocity)
    assert parts.step_count == 3 and len(named) == 3 * parts.step_part_count()
    assert named[:parts.step_part_count()] == [
        "systems before steering", "bird steering", "bird movement", "systems after the move"]


def test_prepare_names_every_stage_reaches_one_and_leaves_the_simulation_as_it_was():
    sim = _flock()
    before = pickle.dumps(sim.snapshot())
    seen: list[tuple[str, float]] = []
    touched: list[int] = []
    done = prepare(sim, [("an extra", lambda copy: touched.append(copy.step_count))],
                   on_progress=lambda stage, fraction: seen.append((stage, fraction)))
    assert pickle.dumps(sim.snapshot()) == before and sim.step_count == 0
    assert touched == [2]  # the extra stages see the copy after its two steps
    assert done.stages == 1 + sim.step_part_count() + 1 + 1
    assert seen[-1] == ("ready", 1.0)
    fractions = [f for _, f in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0.0
    stages = [s for s, _ in seen[:-1] if not s.startswith("compiling")]
    assert stages == [f"{label} ({i}/{done.stages})" for i, label in enumerate(
        ["copying the simulation", "systems before steering", "bird steering", "bird movement",
         "systems after the move", "a second step", "an extra"], start=1)]


def test_prepare_in_place_is_the_first_step_of_the_run():
    sim, twin = _flock(), _flock()
    seen: list[str] = []
    prepare(sim, on_progress=lambda stage, fraction: seen.append(stage), in_place=True)
    twin.step()
    assert sim.step_count == 1 and np.array_equal(sim.population("bird").position, twin.population("bird").position)
    assert seen[0] == "systems before steering (1/4)" and seen[-1] == "ready"


def test_only_a_real_simulation_is_prepared():
    assert can_prepare(_flock()) and not can_prepare(object())
