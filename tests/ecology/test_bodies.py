"""Energy, hunger, stamina, age and mouths: the update rules against hand-computed numbers,
and a shark that runs out of energy slows to its limited speed and recovers when calm."""
import numpy as np
import pytest

from starling.ecology import components as C

DT = 1 / 30


def test_energy_rate_blends_recovery_at_rest_and_drain_at_full_speed():
    # rate = recovery (1 - s) - drain s^p
    assert C.energy_rate(0.0, 0.12, 0.06, 2.0) == pytest.approx(0.06)
    assert C.energy_rate(1.0, 0.12, 0.06, 2.0) == pytest.approx(-0.12)
    assert C.energy_rate(0.5, 0.12, 0.06, 2.0) == pytest.approx(0.06 * 0.5 - 0.12 * 0.25)  # 0.0
    e = np.float32([0.5, 0.0, 1.0])
    C.update_energy(e, np.array([1.0, 1.0, 0.0]), 0.12, 0.06, 2.0, 0.5)
    assert e == pytest.approx([0.5 - 0.06, 0.0, 1.0])  # clipped at both ends


def test_fatigue_is_full_above_the_threshold_and_the_minimum_at_zero():
    f = C.fatigue(np.array([1.0, 0.5, 0.25, 0.0]), 0.5, 0.4)
    assert f == pytest.approx([1.0, 1.0, 0.4 + 0.6 * 0.5, 0.4])
    assert C.fatigue(np.array([0.0]), 0.0, 0.4) == pytest.approx([1.0])  # no threshold: never tired


def test_hunger_grows_and_stays_in_range():
    h = np.float32([0.2, 0.99])
    C.update_hunger(h, 0.03, 1.0)
    assert h == pytest.approx([0.23, 1.0])


def test_stamina_is_lost_when_running_regained_when_walking_kept_in_between():
    st = np.float32([50, 50, 50, 0.5])
    effort = np.array([0.9, 0.2, 0.45, 0.9])
    C.update_stamina(st, effort, lose=1.0, regain=2.0, lose_above=0.6, regain_below=0.3, maximum=80.0, dt=1.0)
    assert st == pytest.approx([49, 52, 50, 0.0])
    # only in the draining states (the lions' Attacking)
    st = np.float32([50, 50])
    C.update_stamina(st, np.array([0.9, 0.9]), 1.0, 2.0, 0.6, 0.3, 80.0, 1.0, may_lose=np.array([True, False]))
    assert st == pytest.approx([49, 50])


def test_stamina_and_age_penalties_in_metres_per_second():
    assert C.stamina_penalty(np.array([30.0, 20.0, 10.0, 0.0]), 20.0, 3.0) == pytest.approx([0, 0, 1.5, 3.0])
    ages = np.array([0.0, 2.5, 5.0, 12.0, 20.0, 25.0, 40.0])
    assert C.age_penalty(ages, 5.0, 20.0, 10.0, 1.0) == pytest.approx([1.0, 0.5, 0, 0, 0, 0.5, 1.0])


def test_the_mouth_sits_in_the_animals_frame():
    pos = np.float32([[1, 2, 3], [0, 0, 0]])
    fwd = np.float32([[0, 0, 1], [1, 0, 0]])
    up = np.float32([[0, 1, 0], [0, 1, 0]])
    m = C.mouth_positions(pos, fwd, up, (0.5, 0.2, 1.0))
    # right = up x forward: +x when facing +z, -z when facing +x
    assert m[0] == pytest.approx([1.5, 2.2, 4.0])
    assert m[1] == pytest.approx([1.0, 0.2, -0.5])


SHARK = {
    "name": "energy",
    "dt": DT,
    "world": {"bounds_min": [-500, -50, -500], "bounds_max": [500, 50, 500]},
    "species": [{
        "name": "shark", "count": 1,
        "spawn": {"center": [0, 0, 0], "size": [0, 0, 0], "speed": [8, 8]},
        "mover": {"kind": "free", "max_speed": 8.0, "speed_up_acceleration": 7.0, "slow_down_acceleration": 7.0,
                  "lateral_acceleration": 5.0, "banking": 0.0},
        "ecology": {"energy": {"start": 0.0, "drain": 0.12, "recovery": 0.06, "drain_power": 2.0,
                               "fatigue_below": 0.5, "min_speed_factor": 0.35, "min_accel_factor": 0.5}},
        "behaviors": [{"kind": "go_forward", "label": "swim", "speed": 8.0, "weight_direction": 1.0,
                       "weight_speed": 1.0}],
    }],
}


def test_an_exhausted_shark_slows_to_its_limited_speed_and_recovers_when_calm(build):
    sim, eco = build(SHARK)
    shark = sim.population("shark")
    rows = []
    for _ in range(45):  # 1.5 s flat out on an empty tank
        e0 = float(shark.component("energy")[0])
        sim.step()
        speed = float(np.linalg.norm(shark.velocity[0]))
        e1 = float(shark.component("energy")[0])
        rows.append((e0, speed, e1))
    for e0, speed, e1 in rows:
        cap = 8.0 * (0.35 + 0.65 * min(e0 / 0.5, 1.0))  # the limit set from the step-start energy
        assert speed <= cap + 1e-4
        s = speed / 8.0
        assert e1 == pytest.approx(min(1.0, max(0.0, e0 + (0.06 * (1 - s) - 0.12 * s * s) * DT)), abs=1e-6)
    # it could not keep 8 m/s: after a second it swims at its limited speed, ~3 m/s
    assert rows[-1][1] < 3.6
    assert rows[-1][1] == pytest.approx(8.0 * (0.35 + 0.65 * rows[-1][0] / 0.5), abs=0.3)

    # calm: it only wants 1 m/s; energy climbs at recovery (1 - s) - drain s^2 with s = 1/8
    sim.set("species.shark.behaviors.swim.speed=1.0")
    sim.step(90)
    assert float(np.linalg.norm(shark.velocity[0])) == pytest.approx(1.0, abs=1e-3)
    before = float(shark.component("energy")[0])
    sim.step(300)  # 10 s
    gained = float(shark.component("energy")[0]) - before
    assert gained == pytest.approx(10.0 * (0.06 * (1 - 1 / 8) - 0.12 / 64), rel=1e-3)
    # rested above the fatigue threshold, it can sprint again
    assert float(shark.component("energy")[0]) > 0.6
    sim.set("species.shark.behaviors.swim.speed=8.0")
    sim.step(45)
    assert float(np.linalg.norm(shark.velocity[0])) > 7.9


def test_a_tired_shark_accelerates_more_slowly():
    # the acceleration factor follows the same fatigue curve with its own minimum
    assert C.fatigue(np.array([0.0]), 0.5, 0.5) == pytest.approx([0.5])


def test_time_at_full_hunger_accumulates_and_resets_when_the_animal_eats():
    starving = np.float32([0.0, 1.0, 2.0])
    C.update_starving(starving, np.float32([1.0, 1.0, 0.7]), 0.5)
    assert starving == pytest.approx([0.5, 1.5, 0.0])


STARVING = {
    "name": "famine", "dt": DT, "seed": 2,
    "world": {"bounds_min": [-20, -20, -20], "bounds_max": [20, 20, 20]},
    "species": [{
        "name": "fish", "count": 12, "spawn": {"center": [0, 0, 0], "radius": 5},
        # hunger reaches 1 after 0.5 s (start 0.95, +0.1/s); starvation 2 s later
        "ecology": {"hunger": {"start": 0.95, "rate": 0.1, "starve_after": 2.0}},
        "behaviors": [{"kind": "wandering"}],
    }],
}


def test_an_animal_that_stays_starving_dies_of_starvation(build):
    sim, eco = build(STARVING)
    fish = sim.population("fish")
    sim.step(int(round(2.4 / DT)))
    assert fish.n == 12
    assert fish.component("starving").max() == pytest.approx(1.9, abs=0.05)
    sim.step(int(round(0.2 / DT)))
    assert fish.n == 0
    assert eco.causes["fish"]["starvation"] == 12
    assert sim.species_summary("fish")["deaths"] == 12


def test_a_negative_starvation_time_is_rejected_with_the_field_named(config_problems):
    import copy

    data = copy.deepcopy(STARVING)
    data["species"][0]["ecology"]["hunger"]["starve_after"] = -1.0
    assert config_problems(data) == ["species.fish.ecology.hunger.starve_after: Input should be greater than 0"]


def test_drawn_float64_copies_the_draws_as_astype_and_multiplies_in_float64():
    """A kernel's copy of float32 draws: exactly ``astype(np.float64)`` (times another draw, in float64,
    not rounded through float32), and filled again by the operation it hands back."""
    from starling.ecology.variation import drawn_float64
    top = np.float32([5.1, 6.3, 0.7])
    factor = np.float32([1.1, 0.9, 1.3])
    refresh = []
    copy = drawn_float64(top, refresh)
    product = drawn_float64(top, refresh, times=factor)
    assert copy.dtype == product.dtype == np.float64
    assert copy.tobytes() == top.astype(np.float64).tobytes()
    assert product.tobytes() == (top.astype(np.float64) * factor).tobytes()
    assert product[1] != np.float64(top[1] * factor[1])  # the float32 product rounds: 6.3 · 0.9 differs
    top[:] = [2.0, 3.0, 4.0]
    for fill in refresh:
        fill()
    assert copy.tolist() == [2.0, 3.0, 4.0]
    assert product.tobytes() == (top.astype(np.float64) * factor).tobytes()
    assert drawn_float64(top).tolist() == [2.0, 3.0, 4.0]  # no refresh: a copy alone
