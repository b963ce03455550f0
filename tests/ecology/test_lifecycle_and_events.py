"""Lifecycle through the command buffer, the scripted timeline and individual variation."""
import copy

import numpy as np
import pytest

DT = 1 / 30

MIXED = {
    "name": "life", "dt": DT, "seed": 5,
    "world": {"bounds_min": [-20, -20, -20], "bounds_max": [20, 20, 20]},
    "species": [
        {"name": "a", "count": 20, "spawn": {"center": [0, 0, 0], "size": [6, 6, 6], "speed": [1, 2]},
         "ecology": {},
         "groups": [
             {"label": "own", "query": {"targets": ["a"], "max_distance": 30.0, "k": 40, "fov_deg": 360},
              "behaviors": [{"kind": "cohesion"}]},
             {"label": "both", "query": {"targets": ["a", "b"], "max_distance": 30.0, "k": 60, "fov_deg": 360},
              "behaviors": [{"kind": "separation"}]},
             {"label": "tagged", "query": {"targets": ["b"], "tags": ["marked"], "max_distance": 30.0, "k": 40,
                                           "fov_deg": 360},
              "behaviors": [{"kind": "flee"}]},
         ]},
        {"name": "b", "count": 20, "spawn": {"center": [0, 0, 0], "size": [6, 6, 6], "speed": [1, 2]},
         "groups": [{"query": {"targets": ["b"], "max_distance": 30.0, "k": 40, "fov_deg": 360},
                     "behaviors": [{"kind": "alignment"}]}]},
    ],
}


def seen_uids(sim):
    """Every uid any neighbour group of any species looked at in the last step."""
    out = set()
    for pipeline in sim.pipelines:
        for group in pipeline.groups:
            out |= set(group.target_uids.tolist())
    return out


def test_a_killed_animal_disappears_from_every_neighbour_query_at_the_next_step(build):
    sim, eco = build(MIXED)
    b = sim.population("b")
    eco.retag("b", b.uid, add=["marked"])
    sim.step(2)
    victim = int(b.uid[3])
    assert victim in seen_uids(sim)
    assert eco.kill("b", [victim], cause="test") == 1
    assert eco.kill("b", [victim]) == 0  # already dying: not twice
    sim.step(1)  # the kill is applied at the end of this step ...
    assert victim in seen_uids(sim)  # ... so this step's queries still saw it
    assert victim not in b.uid and b.n == 19
    assert sim.metrics()["b"]["count"] == 19
    sim.step(1)
    assert victim not in seen_uids(sim)
    for name in ("a", "b"):
        for uid in sim.population(name).uid:
            info = sim.inspect(name, int(uid))
            assert all(n["uid"] != victim for n in info["neighbors"] if n["species"] == "b")
    assert sim.species_summary("b")["deaths"] == 1
    assert sim.species_summary("a")["deaths"] == 0


def test_spawn_despawn_and_tag_changes_take_effect_at_the_end_of_the_step(build):
    data = copy.deepcopy(MIXED)
    data["species"][0]["ecology"] = {"energy": {"start": {"uniform": [0.2, 0.4]}}}
    sim, eco = build(data)
    a = sim.population("a")
    eco.spawn("a", np.zeros((3, 3), np.float32), np.ones((3, 3), np.float32))
    eco.despawn("a", a.uid[:2])
    marked = a.uid[5:8].copy()
    eco.retag("a", marked, add=["leader"])
    assert a.n == 20
    sim.step(1)
    assert a.n == 21
    assert sim.species_summary("a")["deaths"] == 0  # leaving is not dying
    newborn = a.component("energy")[-3:]
    assert np.all((newborn >= 0.2) & (newborn <= 0.4))  # drawn at birth, not the component default
    bit = sim.world.tag_bit("leader")
    assert sorted(a.uid[(a.tags & bit) != 0].tolist()) == sorted(marked.tolist())


TIMELINE = {
    **copy.deepcopy(MIXED),
    "ecology": {"player": {"position": [15, 0, 0]}},
    "events": [
        {"at": 0.5, "kind": "sound", "position": [0, 0, 0], "loudness": 0.5},
        {"at": 1.0, "kind": "spawn", "species": "b", "count": 5, "center": [0, 0, 0], "radius": 1.0},
        {"at": 1.0, "kind": "kill", "species": "a", "count": 3},
        {"at": 1.5, "kind": "tag", "species": "b", "add": ["marked"]},
        {"at": 2.0, "kind": "set", "path": "species.a.groups.own.behaviors.cohesion.weight_direction", "value": 0.9},
        {"at": 2.0, "kind": "apple", "target": [0, 0, 5], "flight_time": 1.0},
        {"at": 2.5, "kind": "gunshot", "target": [15, 0, 20]},
        {"at": 2.5, "kind": "move_player", "to": [15, 0, 3]},
        {"at": 3.0, "kind": "despawn", "species": "b", "uids": [25]},
    ],
}


def test_the_timeline_fires_each_event_once_at_its_time(build):
    sim, eco = build(TIMELINE)
    sim.step(15)  # t = 0.5 s: the sound is queued in the step that starts at 0.5
    assert sim.population("sound").n == 0
    sim.step(1)
    assert sim.population("sound").n == 1
    sim.step(15)
    assert sim.population("b").n == 25 and sim.population("a").n == 17
    assert sim.species_summary("a")["deaths"] == 3
    sim.step(15)
    b = sim.population("b")
    assert np.all(b.tags & sim.world.tag_bit("marked"))
    sim.step(15)
    slot = sim.pipelines[0].groups[0].behaviors[0]
    assert slot.kernel_params.weight_direction == pytest.approx(0.9)
    apple = sim.population("apple")
    assert apple.n == 1 and apple.position[0] == pytest.approx([15, 1.6, 0])  # from the player's hand
    sim.step(30)  # thrown to arrive at [0, 0, 5] one second later (semi-implicit Euler: within g·dt/2)
    assert apple.position[0] == pytest.approx([0, 0, 5], abs=0.2)
    assert eco.shots == 1
    sim.step(60)
    assert 25 not in sim.population("b").uid
    assert sim.population("player").position[0] == pytest.approx([15, 0, 3])
    assert apple.position[0, 1] == pytest.approx(-20.0)  # it fell on to the floor


def test_events_are_validated_with_the_field_named(config_problems):
    def with_event(ev):
        data = copy.deepcopy(MIXED)
        data["events"] = [ev]
        return data

    assert config_problems(with_event({"at": 1, "kind": "sound", "position": [0, 0, 0], "lifetime": -2.0})) == [
        "events.0.sound.lifetime: Input should be greater than 0"]
    assert config_problems(with_event({"at": 1, "kind": "kill", "species": "c"})) == [
        "events.0.species: unknown species 'c'; known: a, b"]
    assert config_problems(with_event({"at": 1, "kind": "gunshot", "target": [0, 0, 0]})) == [
        "events.0.origin: needed: this scenario has no [ecology.player] to fire from"]
    assert config_problems(with_event({"at": 1, "kind": "set", "path": "dt", "value": 0.1}))[0].startswith(
        "events.0.path: 'dt' cannot be changed during a run")
    (line,) = config_problems(with_event({"at": 1, "kind": "set", "path": "species.a.groups.own.behaviors.cohesion"
                                                                           ".weight_direction", "value": 3}))
    assert line.startswith("events.0.value: species.a.groups.own.behaviors.cohesion.weight_direction = 3: "
                           "species.a.groups.0.behaviors.0.cohesion.weight_direction: Input should be less than")


def test_negative_lifetimes_are_rejected_with_the_field_named(config_problems):
    data = copy.deepcopy(MIXED)
    data["ecology"] = {"sounds": {"lifetime": -1.0}}
    assert config_problems(data) == ["ecology.sounds.lifetime: Input should be greater than 0"]
    data["ecology"] = {"apples": {"lifetime": -3}}
    assert config_problems(data) == ["ecology.apples.lifetime: Input should be greater than 0"]
    data = copy.deepcopy(MIXED)
    data["species"][0]["ecology"] = {"carcass": {"lifetime": 0}}
    assert config_problems(data) == ["species.a.ecology.carcass.lifetime: Input should be greater than 0"]


VARIED = {
    "name": "variety", "dt": DT, "seed": 9,
    "world": {"bounds_min": [-100, -20, -100], "bounds_max": [100, 20, 100]},
    "species": [{
        "name": "fish", "count": 400, "spawn": {"center": [0, 0, 0], "size": [150, 20, 150], "speed": [6, 6]},
        "mover": {"kind": "free", "max_speed": 5.0, "speed_up_acceleration": 20.0},
        "behaviors": [{"kind": "go_forward", "label": "swim", "speed": 10.0, "weight_direction": 1.0,
                       "weight_speed": 1.0}],
        "ecology": {"energy": {"drain": {"uniform": [0.1, 0.2]}, "recovery": 0.05},
                    "hunger": {"start": {"normal": [0.5, 0.1], "min": 0.2, "max": 0.8}}},
        "variation": {"max_speed": {"uniform": [0.8, 1.2]}, "weights": {"swim": {"uniform": [0.5, 1.0]}}},
    }],
}


def test_parameters_drawn_per_animal_stay_with_the_animal(build):
    sim, eco = build(VARIED)
    fish = sim.population("fish")
    drain = fish.component("var_energy_drain")
    assert drain.min() >= 0.1 and drain.max() <= 0.2 and np.unique(drain).size > 300
    hunger = fish.component("hunger")
    assert hunger.min() >= 0.2 and hunger.max() <= 0.8 and abs(hunger.mean() - 0.5) < 0.02
    factor = fish.component("var_max_speed").copy()
    by_uid = dict(zip(fish.uid.tolist(), factor.tolist()))
    sim.step(20)
    speed = np.linalg.norm(fish.velocity, axis=1)
    assert np.all(speed <= 5.0 * factor + 1e-4)  # each at its own top speed
    assert speed.max() > 5.5
    eco.kill("fish", fish.uid[::2])
    sim.step(1)
    assert fish.n == 200
    kept = dict(zip(fish.uid.tolist(), fish.component("var_max_speed").tolist()))
    assert all(by_uid[u] == v for u, v in kept.items())  # removal of others does not shuffle draws
    scale = sim.pipelines[0].desire_scale[0, :fish.n]
    assert scale.min() >= 0.5 and scale.max() <= 1.0 and np.unique(scale).size > 150


def test_distributions_are_validated(config_problems):
    data = copy.deepcopy(VARIED)
    data["species"][0]["ecology"]["energy"]["drain"] = {"uniform": [0.3, 0.1]}
    assert config_problems(data) == ["species.fish.ecology.energy.drain: uniform must be [low, high] with low <= high"]
    data["species"][0]["ecology"]["energy"]["drain"] = {"normal": [0.1, 0.1]}
    assert config_problems(data) == ["species.fish.ecology.energy.drain: every draw must be >= 0; "
                                     "raise the low end or set 'min'"]
    data["species"][0]["ecology"]["energy"]["drain"] = {"normal": [0.1, 0.1], "min": 0.0}
    assert not _problems_or_none(data)
    data["species"][0]["ecology"]["energy"]["drain"] = "fast"
    (line,) = config_problems(data)
    assert line.startswith("species.fish.ecology.energy.drain: Input should be a number or a distribution")
    data = copy.deepcopy(VARIED)
    data["species"][0]["variation"]["weights"] = {"sprint": {"uniform": [0.5, 1.0]}}
    (line,) = config_problems(data)
    assert line.startswith("species.fish.variation.weights.sprint: unknown behaviour 'sprint'")


def _problems_or_none(data):
    from starling.config import ConfigError, validate_scenario

    try:
        validate_scenario(copy.deepcopy(data))
    except ConfigError as e:
        return e.problems
    return None


def test_food_and_population_names_are_checked(config_problems):
    data = copy.deepcopy(MIXED)
    data["species"][0]["ecology"] = {"eating": {"food": ["b", "pizza"], "prey": ["c"]}}
    data["species"][1]["groups"][0]["behaviors"].append({"kind": "chase_food"})
    data["species"][1]["ecology"] = {}
    assert config_problems(data) == [
        "species.a.ecology.eating.food.0: 'b' is not food: give species 'b' an [ecology.food] table",
        "species.a.ecology.eating.food.1: unknown population 'pizza'; known: a, apple, b, carcass, player, sound",
        "species.a.ecology.eating.prey.0: unknown species 'c'; known: a, b",
        "species.b.groups.0.query.targets.0: chase_food needs food: 'b' has no food (give it an [ecology.food] table)",
    ]
    data = copy.deepcopy(MIXED)
    data["species"][1]["name"] = "sound"
    data["species"][0]["groups"][1]["query"]["targets"] = ["a", "sound"]
    data["species"][0]["groups"][2]["query"]["targets"] = ["sound"]
    data["species"][1]["groups"][0]["query"]["targets"] = ["sound"]
    assert config_problems(data) == ["species.sound.name: 'sound' is a population the ecology creates; choose another name"]
