"""Brain actions: what animals do when they enter a state (``on_enter``), built in and registered by users."""
import copy
from typing import Literal

import numpy as np
import pytest
from pydantic import Field

from starling.config import validate_scenario
from starling.steering import registry
from starling.steering.params import BrainActionParams

DT = 0.1


def scene(on_alarm, on_calm=(), components=None, when_alarm=None):
    """Two still fish that turn alarmed after 0.15 s calm and calm again after 0.15 s alarmed."""
    return {
        "name": "actions", "dt": DT, "seed": 1,
        "world": {"bounds_min": [-50, -50, -50], "bounds_max": [50, 50, 50]},
        "ecology": {"sounds": {"range": 30.0, "lifetime": 1.5}},
        "species": [{
            "name": "fish", "count": 2, "components": components or {},
            "spawn": {"center": [0, 0, 0], "size": [10, 2, 10], "speed": [0, 0]},
            "behaviors": [{"kind": "go_forward", "speed": 0.0, "weight_direction": 0.0, "weight_speed": 1.0}],
            "brain": {
                "states": [{"name": "calm", "on_enter": list(on_calm)},
                           {"name": "alarmed", "on_enter": list(on_alarm)}],
                "transitions": [
                    {"from": "calm", "to": "alarmed",
                     "when": when_alarm or [{"var": "time_in_state", "op": ">", "value": 0.15}]},
                    {"from": "alarmed", "to": "calm", "when": [{"var": "time_in_state", "op": ">", "value": 0.15}]},
                ]},
        }],
    }


def test_entering_a_state_makes_one_sound_per_animal_where_it_stands(build):
    sim, _ = build(scene([{"kind": "sound", "loudness": 0.5}]))
    sounds = sim.population("sound")
    sim.step(2)  # time in state 0 then 0.1 s: not yet (and being born into "calm" is not entering it)
    assert sounds.n == 0
    where = sim.population("fish").position.astype(np.float64).copy()
    sim.step(1)  # 0.2 s > 0.15 s: both enter "alarmed" before the behaviours; the sounds appear at the step's end
    assert sounds.n == 2
    order = np.lexsort(sounds.position.T)
    np.testing.assert_array_equal(sounds.position[order], where.astype(np.float32)[np.lexsort(where.T)])
    np.testing.assert_array_equal(sounds.component("loudness"), [0.5, 0.5])
    np.testing.assert_array_equal(sounds.component("sound_range"), [15.0, 15.0])  # 30 m × loudness 0.5
    np.testing.assert_array_equal(sounds.component("sound_lifetime"), [1.5, 1.5])
    np.testing.assert_array_equal(sounds.component("sound_age"), [0.0, 0.0])
    sim.step(1)  # staying alarmed makes no new sound; the two age by one step
    assert sounds.n == 2
    np.testing.assert_allclose(sounds.component("sound_age"), [DT, DT])


def test_tag_and_untag_go_through_the_command_buffer(build):
    sim, eco = build(scene([{"kind": "tag", "tag": "alarmed"}], on_calm=[{"kind": "untag", "tag": "alarmed"}]))
    fish = sim.population("fish")
    bit = sim.world.tag_bit("alarmed")
    sim.step(2)
    assert not (fish.tags & bit).any()
    sim.step(1)  # enters "alarmed" at the start of step 3, tagged at its end
    assert (fish.tags & bit).all()
    assert sim.species_summary("fish")["states"] == {"calm": 0, "alarmed": 2}
    sim.step(1)  # 0.1 s alarmed: still tagged
    assert (fish.tags & bit).all()
    sim.step(1)  # 0.2 s: back to "calm", untagged
    assert sim.species_summary("fish")["states"] == {"calm": 2, "alarmed": 0}
    assert not (fish.tags & bit).any()


class Mark(BrainActionParams):
    """Writes a number into the ``mark`` component of the animals entering the state."""

    kind: Literal["mark"] = "mark"
    value: float = Field(1.0, description="What is written.")


entered = []


def mark(ctx, rows, params):
    entered.append((ctx.species, ctx.state, rows.tolist(), round(ctx.time, 6)))
    ctx.population.component("mark")[rows] = params.value


@pytest.fixture
def mark_action():
    registry.brain_action("mark", params=Mark)(mark)
    entered.clear()
    yield
    registry._brain_actions.pop("mark", None)
    registry._version[0] += 1


def test_a_user_registered_action_runs_for_exactly_the_animals_entering_the_state(build, mark_action):
    data = scene([{"kind": "mark", "value": 7.5}], components={"mark": 0.0, "trigger": 0.0},
                 when_alarm=[{"var": "trigger", "op": ">", "value": 0.5}])
    sim, _ = build(data)
    fish = sim.population("fish")
    sim.step(1)
    assert entered == [] and fish.component("mark").tolist() == [0.0, 0.0]
    fish.component("trigger")[1] = 1.0  # only the second fish meets the condition
    sim.step(1)
    assert entered == [("fish", "alarmed", [1], round(DT, 6))]
    assert fish.component("mark").tolist() == [0.0, 7.5]


def test_actions_are_validated_as_a_union_of_the_registered_ones(config_problems, mark_action):
    data = scene([{"kind": "roar"}])
    (line,) = config_problems(data)
    assert line.startswith("species.fish.brain.states.1.on_enter.0.kind: unknown kind 'roar'")
    assert "'mark'" in line and "'sound'" in line and "'tag'" in line
    data = scene([{"kind": "sound", "loudness": -1.0}])
    assert config_problems(data) == ["species.fish.brain.states.1.on_enter.0.sound.loudness: "
                                     "Input should be greater than 0"]
    assert config_problems(scene([{"kind": "tag"}])) == ["species.fish.brain.states.1.on_enter.0.tag.tag: Field required"]


def test_actions_round_trip_through_toml_and_appear_in_the_schema():
    import tomllib

    from starling.config import scenario_to_toml
    from starling.config.models import scenario_model

    original = validate_scenario(copy.deepcopy(scene([{"kind": "sound", "loudness": 0.25},
                                                      {"kind": "tag", "tag": "loud"}])))
    text = scenario_to_toml(original)
    assert validate_scenario(tomllib.loads(text)) == original
    schema = str(scenario_model().model_json_schema())
    assert "SoundAction" in schema and "TagAction" in schema and "UntagAction" in schema


def test_registering_an_action_checks_its_model():
    class Bad(BrainActionParams):
        kind: Literal["other"] = "other"

    with pytest.raises(registry.RegistryError, match="must declare kind: Literal\\['bad'\\]"):
        registry.brain_action("bad", params=Bad)
    with pytest.raises(registry.RegistryError, match="must subclass BrainActionParams"):
        registry.brain_action("bad", params=dict)
