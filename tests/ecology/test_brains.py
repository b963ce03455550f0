"""Brains: transitions on probabilities (frame-rate independent), counts, variables and events;
per-state overrides; configs that name unknown states or variables are rejected with the field."""
import copy

import numpy as np
import pytest

from starling.ecology.brains import step_probability


def coin_scene(dt, n=3000, seed=11):
    return {
        "name": "coin", "dt": dt, "seed": seed,
        "world": {"bounds_min": [-500, -50, -500], "bounds_max": [500, 50, 500]},
        "species": [{
            "name": "a", "count": n, "spawn": {"center": [0, 0, 0], "size": [800, 80, 800], "speed": [0, 0]},
            "behaviors": [{"kind": "go_forward", "speed": 0.0, "weight_direction": 0.0, "weight_speed": 0.1}],
            "brain": {"states": [{"name": "calm"}, {"name": "excited"}],
                      "transitions": [{"from": "calm", "to": "excited", "probability_per_second": 0.5}]},
        }],
    }


def test_the_per_step_chance_compounds_to_the_per_second_probability():
    for dt in (1 / 30, 1 / 240, 0.5):
        assert (1 - step_probability(0.5, dt)) ** round(1 / dt) == pytest.approx(0.5)
    assert step_probability(1.0, 0.01) == 1.0
    assert step_probability(0.0, 0.01) == 0.0


def test_a_probability_per_second_gives_the_same_rate_at_30_and_240_steps_per_second(build):
    n = 3000
    fractions = {}
    for dt in (1 / 30, 1 / 240):
        sim, eco = build(coin_scene(dt, n))
        per_second = round(1 / dt)
        out = []
        for _ in range(2):
            sim.step(per_second)
            out.append(sim.species_summary("a")["states"]["excited"] / n)
        fractions[dt] = out
    sigma = np.sqrt(0.25 / n)  # binomial standard deviation of a fraction near 1/2
    for dt, (after1, after2) in fractions.items():
        assert after1 == pytest.approx(0.5, abs=4 * sigma), dt
        assert after2 == pytest.approx(0.75, abs=4 * sigma), dt
    assert abs(fractions[1 / 30][0] - fractions[1 / 240][0]) < 5 * sigma


FISH_AND_SHARK = {
    "name": "fear", "dt": 1 / 30,
    "world": {"bounds_min": [-100, -50, -100], "bounds_max": [100, 50, 100]},
    "species": [
        {"name": "fish", "count": 2, "spawn": {"center": [0, 0, 0], "size": [0, 0, 0], "speed": [0, 0]},
         "mover": {"kind": "free", "max_speed": 5.0, "speed_up_acceleration": 2.0, "slow_down_acceleration": 2.0},
         "behaviors": [{"kind": "go_forward", "label": "swim", "speed": 5.0, "weight_direction": 1.0,
                        "weight_speed": 1.0},
                       {"kind": "cruise", "weight_speed": 1.0, "priority": 1}],
         "brain": {
             "initial": "normal",
             "emergency_acceleration": 3.0,
             "states": [
                 {"name": "normal", "max_speed": 1.0, "target_speed": 1.0, "weights": {"swim": 0.0}},
                 {"name": "afraid", "emergency": True, "target_speed": 5.0, "weights": {"swim": 0.0}},
             ],
             "transitions": [
                 {"from": "*", "to": "afraid",
                  "when": [{"count": {"targets": ["shark"], "within": 10.0}, "op": ">=", "value": 1}]},
                 {"from": "afraid", "to": "normal", "when": [{"var": "time_in_state", "op": ">", "value": 1.0}]},
             ]}},
        {"name": "shark", "count": 1, "spawn": {"center": [50, 0, 0], "size": [0, 0, 0], "speed": [0, 0]},
         "mover": {"kind": "free", "max_speed": 0.01}},
    ],
}


def test_counts_switch_state_and_states_set_top_speed_target_speed_and_emergency_acceleration(build):
    sim, eco = build(FISH_AND_SHARK)
    fish = sim.population("fish")
    sim.step(60)
    assert sim.species_summary("fish")["states"] == {"normal": 2, "afraid": 0}
    assert np.linalg.norm(fish.velocity, axis=1) == pytest.approx([1.0, 1.0], abs=1e-4)  # capped at 1 m/s
    assert sim.inspect("fish", int(fish.uid[0]))["state"] == "normal"
    shark = sim.population("shark")
    shark.position[0] = fish.position[0] + np.float32([5, 0, 0])  # a shark in sight
    speed0 = float(np.linalg.norm(fish.velocity[0]))
    sim.step(1)
    assert sim.species_summary("fish")["states"] == {"normal": 0, "afraid": 2}
    assert fish.component("target_speed")[0] == 5.0
    # emergency: 3x the 2 m/s² speed-up rate
    assert float(np.linalg.norm(fish.velocity[0])) - speed0 == pytest.approx(3 * 2.0 / 30, abs=1e-4)
    # the transition into the current state holds it: the timer keeps running while the shark stays
    sim.step(60)
    assert sim.species_summary("fish")["states"]["afraid"] == 2
    assert fish.component("state_time")[0] == pytest.approx(61 / 30, abs=1e-4)
    shark.position[0] = np.float32([90, 40, 90])
    sim.step(2)
    assert sim.species_summary("fish")["states"]["normal"] == 2


def test_events_drive_transitions(build):
    data = copy.deepcopy(FISH_AND_SHARK)
    data["ecology"] = {}
    brain = data["species"][0]["brain"]
    brain["transitions"] = [{"from": "normal", "to": "afraid", "when": [{"event": "heard_sound"}]}]
    sim, eco = build(data)
    sim.step(3)
    assert sim.species_summary("fish")["states"]["afraid"] == 0
    eco.make_sound(sim.population("fish").position[0], loudness=1.0)
    sim.step(3)  # appears at the end of a step, is heard after the next move, acted on the step after
    assert sim.species_summary("fish")["states"]["afraid"] == 2


BRAIN_BASE = {
    "name": "b",
    "species": [{
        "name": "shark", "count": 2,
        "behaviors": [{"kind": "wandering"}],
        "brain": {"states": [{"name": "chill"}, {"name": "hunting"}, {"name": "attacking"}],
                  "transitions": [
                      {"from": "chill", "to": "hunting", "probability_per_second": 0.1},
                      {"from": "hunting", "to": "attacking", "when": [{"var": "energy", "op": ">", "value": 0.5}]},
                      {"from": "attacking", "to": "chill"},
                  ]},
    }],
}


def test_a_transition_to_an_unknown_state_is_rejected_with_the_field_named(config_problems):
    data = copy.deepcopy(BRAIN_BASE)
    data["species"][0]["brain"]["transitions"][2]["to"] = "hunt"
    (line,) = config_problems(data)
    assert line.startswith("species.shark.brain.transitions.2.to: unknown state 'hunt'")
    data = copy.deepcopy(BRAIN_BASE)
    data["species"][0]["brain"]["transitions"][0]["from"] = ["chill", "sleeping"]
    assert config_problems(data) == ["species.shark.brain.transitions.0.from.1: unknown state 'sleeping'; "
                                     "states: chill, hunting, attacking"]


def test_a_condition_on_an_unknown_variable_is_rejected_with_the_field_named(config_problems):
    data = copy.deepcopy(BRAIN_BASE)
    data["species"][0]["brain"]["transitions"][1]["when"][0]["var"] = "hungry"
    (line,) = config_problems(data)
    assert line.startswith("species.shark.brain.transitions.1.when.0.var: unknown variable 'hungry'; known:")
    assert "hunger" in line and "energy" in line


def test_malformed_conditions_and_overrides_name_the_field(config_problems):
    data = copy.deepcopy(BRAIN_BASE)
    data["species"][0]["brain"]["transitions"][1]["when"][0] = {"var": "energy", "op": ">"}
    assert config_problems(data) == ["species.shark.brain.transitions.1.when.0: a 'var' condition needs 'op' and 'value'"]
    data = copy.deepcopy(BRAIN_BASE)
    data["species"][0]["brain"]["transitions"][0]["probability_per_second"] = 1.5
    assert config_problems(data) == ["species.shark.brain.transitions.0.probability_per_second: "
                                     "Input should be less than or equal to 1"]
    data = copy.deepcopy(BRAIN_BASE)
    data["species"][0]["brain"]["states"][1]["weights"] = {"wanderin": 0.5}
    (line,) = config_problems(data)
    assert line.startswith("species.shark.brain.states.1.weights.wanderin: unknown behaviour 'wanderin'")
    data = copy.deepcopy(BRAIN_BASE)
    data["species"][0]["brain"]["transitions"][1]["when"][0] = {"event": "ate_lunch"}
    (line,) = config_problems(data)
    assert line.startswith("species.shark.brain.transitions.1.when.0.event: Input should be")


def test_a_brain_round_trips_through_toml():
    import tomllib

    from starling.config import scenario_to_toml, validate_scenario

    original = validate_scenario(copy.deepcopy(BRAIN_BASE))
    text = scenario_to_toml(original)
    assert "\nfrom = [" in text  # the field is written under its TOML name
    assert validate_scenario(tomllib.loads(text)) == original


SAVANNAH = {
    "name": "savannah", "dt": 1 / 30, "seed": 2,
    "world": {"bounds_min": [-200, 0, -200], "bounds_max": [200, 10, 200]},
    "species": [
        {"name": "zebra", "count": 10, "spawn": {"center": [0, 0, 0], "size": [10, 0, 10], "speed": [0.5, 1]},
         "mover": {"kind": "planar", "max_speed": 7.0},
         "ecology": {"food": {"amount": 50.0}, "carcass": {"tag": "dead_zebra"},
                     "age": {"start": {"uniform": [1, 25]}, "max_penalty": 1.0},
                     "stamina": {"max": 80, "penalty_below": 20}},
         "groups": [{"query": {"targets": ["lion"], "max_distance": 25.0, "k": 2, "fov_deg": 360},
                     "behaviors": [{"kind": "flee", "max_speed": 4.0}]}]},
        {"name": "lion", "count": 1, "spawn": {"center": [30, 0, 0], "size": [0, 0, 0], "speed": [0, 0]},
         "mover": {"kind": "planar", "max_speed": 7.0, "speed_up_acceleration": 5.0},
         "ecology": {"stamina": {"max": 40, "penalty_below": 10, "max_penalty": 3.0,
                                 "drain_states": ["attacking"]},
                     "mouth": {"offset": [0, 0, 1.0], "reach": 1.5},
                     "eating": {"prey": ["zebra"], "bite": 5.0, "chew_time": 2.0}},
         "groups": [{"label": "hunt", "query": {"targets": ["zebra"], "max_distance": 60.0, "k": 4, "fov_deg": 360},
                     "behaviors": [{"kind": "chase_food", "weight_direction": 1.0, "weight_speed": 1.0,
                                    "hunger_power": 0.0, "min_speed": 7.0}]}],
         "behaviors": [{"kind": "cruise", "weight_speed": 0.5}],
         # the savannah's lion (Collado 2013): Wandering, PreparingForAttack, Attacking, Eating, Retreating
         "brain": {
             "initial": "wandering",
             "states": [
                 {"name": "wandering", "max_speed": 2.33, "target_speed": 1.0, "weights": {"chase_food": 0.0}},
                 {"name": "preparing", "max_speed": 3.5, "target_speed": 3.0, "weights": {"chase_food": 0.5}},
                 {"name": "attacking", "emergency": True},
                 {"name": "eating", "max_speed": 1.75, "target_speed": 0.0, "weights": {"chase_food": 0.0}},
                 {"name": "retreating", "max_speed": 2.33, "weights": {"chase_food": 0.0}},
             ],
             "transitions": [
                 {"from": "wandering", "to": "preparing",
                  "when": [{"count": {"targets": ["zebra"], "within": 60.0}, "op": ">=", "value": 1}]},
                 {"from": "preparing", "to": "attacking",
                  "when": [{"count": {"targets": ["zebra"], "within": 20.0}, "op": ">=", "value": 1}]},
                 {"from": "attacking", "to": "eating", "when": [{"event": "caught_prey"}]},
                 {"from": "attacking", "to": "retreating", "when": [{"var": "stamina", "op": "<", "value": 10}]},
                 {"from": "eating", "to": "wandering", "when": [{"var": "time_in_state", "op": ">", "value": 30}]},
                 {"from": "retreating", "to": "wandering", "when": [{"var": "stamina", "op": ">", "value": 30}]},
             ]}},
    ],
}


def test_the_savannah_lion_is_a_brain_too(build):
    sim, eco = build(SAVANNAH)
    lion = sim.population("lion")
    seen = [sim.inspect("lion", int(lion.uid[0]))["state"]]
    for _ in range(900):
        sim.step()
        state = sim.inspect("lion", int(lion.uid[0]))["state"]
        if not seen or seen[-1] != state:
            seen.append(state)
        if state in ("eating", "retreating"):
            break
    assert seen == ["wandering", "preparing", "attacking", "eating"]
    assert eco.counters["lion"]["caught"] == 1 and eco.counters["zebra"]["deaths"] == 1
    assert lion.component("stamina")[0] < 40  # the chase cost stamina (drained only while attacking)
    carcass = sim.population("carcass")
    assert carcass.n == 1 and carcass.component("food")[0] == pytest.approx(45.0)  # 50 minus one bite
