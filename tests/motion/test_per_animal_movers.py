"""Mover parameters drawn per animal: each animal moves exactly as a lone animal with its own
numbers would (the oracle), and a run keeps every animal under its own top speed."""
import copy

import numpy as np
import pytest

import starling
from starling.config import validate_scenario
from starling.environment import Environment, Heightfield
from starling.environment.walking import GroundMover, GroundMoverParams
from starling.motion.movers import FreeMoverParams, Mover, PlanarMoverParams

RNG = np.random.default_rng(7)


def _state(n, planar=False):
    pos = RNG.uniform(-5, 5, (n, 3)).astype(np.float32)
    vel = RNG.normal(0, 2, (n, 3)).astype(np.float32)
    des = RNG.normal(0, 6, (n, 3)).astype(np.float32)
    if planar:
        pos[:, 1] = 0.0
        vel[:, 1] = 0.0
    fwd = vel / np.linalg.norm(vel, axis=1, keepdims=True)
    up = np.tile(np.float32([0, 1, 0]), (n, 1))
    return [pos, vel, fwd.astype(np.float32), up, des]


def _one(state, i):
    return [a[i:i + 1].copy() for a in state]


@pytest.mark.parametrize("model,planar", [(FreeMoverParams, False), (PlanarMoverParams, True)])
def test_a_drawn_mover_moves_each_animal_as_its_own_numbers_would(model, planar):
    n = 40
    drawn = {"max_speed": RNG.uniform(3, 7, n), "lateral_acceleration": RNG.uniform(2, 8, n),
             "turn_rate": RNG.uniform(2, 10, n), "drag": RNG.uniform(0, 0.05, n)}
    if not planar:
        drawn["banking"] = RNG.uniform(0, 2, n)
        drawn["bank_rate"] = RNG.uniform(1, 6, n)
    base = model(kind=model.model_fields["kind"].default)
    mover = Mover(base, planar=planar)
    state = _state(n, planar)
    singles = [_one(state, i) for i in range(n)]
    for _ in range(10):
        mover.move(*state[:4], state[4], 1 / 30, drawn=drawn)
    for i in range(0, n, 7):
        own = base.model_copy(update={k: float(v[i]) for k, v in drawn.items()})
        alone = Mover(own, planar=planar)
        s = singles[i]
        for _ in range(10):
            alone.move(*s[:4], s[4], 1 / 30)
        for a, b in zip(state[:4], s[:4]):
            np.testing.assert_array_equal(a[i], b[0])


def _bumpy():
    xs = np.arange(-20.0, 21.0)
    heights = 2.0 * np.sin(xs[None, :] / 4.0) * np.cos(xs[:, None] / 5.0)
    return Environment.from_parts(terrain=Heightfield.from_heights(heights, -20.0, -20.0, 20.0, 20.0))


def test_a_drawn_ground_mover_walks_each_animal_as_its_own_numbers_would():
    env = _bumpy()
    n = 30
    drawn = {"max_speed": RNG.uniform(2, 5, n), "max_slope_deg": RNG.uniform(20, 50, n),
             "step_height": RNG.uniform(0.1, 0.5, n), "align_rate": RNG.uniform(2, 9, n)}
    base = GroundMoverParams(center_height=0.5)
    mover = GroundMover(base)
    mover.attach_environment(env)
    pos, vel, fwd, up, des = _state(n)
    pos[:, 1] = 5.0  # they fall on to the terrain first
    des[:, 1] = 0.0
    state = [pos, vel, fwd, up, des]
    singles = [_one(state, i) for i in range(n)]
    for _ in range(40):
        mover.move(*state[:4], state[4], 1 / 30, drawn=drawn)
    for i in range(0, n, 6):
        own = base.model_copy(update={k: float(v[i]) for k, v in drawn.items()})
        alone = GroundMover(own)
        alone.attach_environment(env)
        s = singles[i]
        for _ in range(40):
            alone.move(*s[:4], s[4], 1 / 30)
        for a, b in zip(state[:4], s[:4]):
            np.testing.assert_allclose(a[i], b[0], rtol=0, atol=1e-5)
        assert mover.state_array[i] == alone.state_array[0]


FLOCK = {
    "name": "varied movers", "seed": 9,
    "world": {"bounds_min": [-60, -60, -60], "bounds_max": [60, 60, 60]},
    "species": [{
        "name": "bird", "count": 200, "spawn": {"center": [0, 0, 0], "radius": 20},
        "mover": {"kind": "free", "max_speed": {"uniform": [4.0, 8.0]}, "turn_rate": {"normal": [8, 1], "min": 4}},
        "behaviors": [{"kind": "go_forward", "speed": 20.0, "weight_speed": 1.0}],
    }],
}


def test_each_animal_keeps_its_own_top_speed_for_life():
    sim = starling.Simulation(validate_scenario(copy.deepcopy(FLOCK)))
    birds = sim.population("bird")
    top = birds.component("mover_max_speed")
    assert 4.0 <= top.min() and top.max() <= 8.0 and np.unique(top).size == 200
    assert sim.scenario.species[0].mover.max_speed == pytest.approx(6.0)  # code that needs one number: the mean
    sim.step(120)
    speed = np.linalg.norm(birds.velocity, axis=1)
    np.testing.assert_allclose(speed, birds.component("mover_max_speed"), rtol=1e-4)  # each flat out at its own
    dumped = sim.scenario.model_dump(mode="json")["species"][0]["mover"]
    assert dumped["max_speed"] == {"uniform": [4.0, 8.0]}


def test_mover_draws_are_checked_against_the_field():
    data = copy.deepcopy(FLOCK)
    data["species"][0]["mover"]["max_speed"] = {"normal": [6.0, 1.0]}
    with pytest.raises(starling.config.ConfigError) as err:
        validate_scenario(data)
    assert [str(p) for p in err.value.problems] == [
        "species.bird.mover.free.max_speed: every draw must be > 0; raise the low end or set 'min'"]
