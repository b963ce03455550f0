"""The classroom scene (seed 003): healthy, contained, breathing, reproducible."""
import numpy as np
import pytest
from scipy.spatial import cKDTree
from typer.testing import CliRunner

import starling
from starling.cli import app

ROOM_MIN = np.array([-12.0, -8.0])  # x, z of the room's corners (the scenario's room_min/room_max)
ROOM_MAX = np.array([12.0, 8.0])
PERIOD = 8.0                          # breathing_period of cohesion and separation, s
STEPS = 2000
EVERY = 10
OFF = ("species.boid.groups.0.behaviors.0.breathing_period=0",   # boid_separation
       "species.boid.groups.0.behaviors.1.breathing_period=0")   # boid_cohesion


def _run(overrides=(), seed=None):
    """2,000 steps; the mean nearest-neighbour distance and the worst wall overshoot every 10 steps."""
    sim = starling.load_scenario("classroom", seed=seed, overrides=overrides, record_debug=False)
    pop = sim.world.population("boid")
    times, nn, overshoot = [], [], 0.0
    for _ in range(STEPS // EVERY):
        sim.step(EVERY)
        xz = pop.position[:pop.n][:, [0, 2]].astype(np.float64)
        overshoot = max(overshoot, float(np.max(ROOM_MIN - xz)), float(np.max(xz - ROOM_MAX)))
        d, _ = cKDTree(xz).query(xz, k=2)
        nn.append(d[:, 1].mean())
        times.append(sim.world.clock.time)
    return sim, np.array(times), np.array(nn), overshoot


def _amplitude_at(times, series, period):
    """Amplitude of the series' component at ``period`` (a lock-in: projection on cos and sin)."""
    x = series - series.mean()
    w = 2 * np.pi * times / period
    return 2 * np.hypot(np.mean(x * np.cos(w)), np.mean(x * np.sin(w)))


@pytest.fixture(scope="module")
def breathing_run():
    return _run()


def test_listed_with_the_builtins():
    assert "classroom" in starling.scenario_names()
    listing = CliRunner().invoke(app, ["scenarios"])
    assert listing.exit_code == 0 and "classroom" in listing.output


def test_two_thousand_steps_are_healthy_and_nobody_leaves_the_room(breathing_run):
    sim, _, _, overshoot = breathing_run
    assert sim.world.clock.step == STEPS
    assert all(v == 0 for v in sim.health().values()), sim.health()
    assert sim.world.population("boid").n == 120
    assert overshoot <= 0.0, f"a boid was {overshoot:.3f} m outside the room"
    assert (sim.world.population("boid").position[:, 1] == 1.5).all()  # flat: the x–z plane at 1.5 m


def test_the_breathing_shows_in_the_nearest_neighbour_distance(breathing_run):
    _, times, nn, _ = breathing_run
    _, times_off, nn_off, _ = _run(OFF)
    on = _amplitude_at(times, nn, PERIOD)
    off = _amplitude_at(times_off, nn_off, PERIOD)
    # measured: about 0.48 m breathing (on a mean of 0.8 m) against 0.01 m without breathing
    assert on > 0.25, on
    assert off < 0.1, off
    assert on > 5 * off
    # and the breathing period is the strongest rhythm of the series among nearby periods
    others = [_amplitude_at(times, nn, p) for p in (PERIOD / 2, PERIOD / 1.5, PERIOD * 1.5, PERIOD * 2)]
    assert on > 2 * max(others), others


def _positions(seed, steps=150):
    sim = starling.load_scenario("classroom", seed=seed, record_debug=False)
    sim.step(steps)
    pop = sim.world.population("boid")
    order = np.argsort(pop.uid[:pop.n])
    return pop.position[:pop.n][order].copy()


def test_the_same_seed_reproduces_and_another_differs():
    a = _positions(3)
    np.testing.assert_array_equal(a, _positions(3))
    assert not np.allclose(a, _positions(4))
