"""Named scenario parameters: one name for one or more config paths, checked and reported by name."""
import subprocess
import sys

import pytest

import starling
from starling.config import ConfigError, load_scenario_config, validate_scenario
from starling.config.io import read_scenario_data


def test_every_builtin_parameter_is_bound_to_fields_the_scenario_has():
    for name in starling.scenario_names():
        scenario = load_scenario_config(name)
        assert scenario.parameters, f"{name} declares no named parameters"
        for pname, spec in scenario.parameters.items():
            assert spec.description, (name, pname)


def test_a_parameter_sets_its_path():
    scenario = load_scenario_config("flock", ["n=321", "separation=2.5"])
    bird = scenario.species[0]
    assert bird.count == 321
    assert next(b for b in bird.groups[0].behaviors if b.kind == "separation").max_distance == 2.5


def test_a_parameter_bound_to_two_paths_sets_both():
    scenario = load_scenario_config("classroom", ["breathing_period=4"])
    periods = {b.kind: b.breathing_period for b in scenario.species[0].groups[0].behaviors
               if b.kind in ("boid_separation", "boid_cohesion")}
    assert periods == {"boid_separation": 4.0, "boid_cohesion": 4.0}


def test_a_whole_number_written_as_a_float_is_accepted_for_an_integer():
    assert load_scenario_config("flock", ["n=300.0"]).species[0].count == 300


@pytest.mark.parametrize("text, message", [
    ("eta=3", r"eta: unknown parameter or scenario field \(this scenario's parameters: n, neighbors, reach, "
              r"roost_radius, separation"),
    ("n=abc", r"n: expects a number \(it sets species.bird.count\), got 'abc'"),
    ("n=2.5", r"n: expects a whole number"),
    ("n=-1", r"n: species.bird.count: Input should be greater than or equal to 0"),
    ("separation=0", r"separation: species.bird.groups.0.behaviors.2.separation.max_distance"),
])
def test_a_wrong_name_or_value_is_reported_under_the_parameters_name(text, message):
    with pytest.raises(ConfigError, match=message):
        load_scenario_config("flock", [text])


def test_scenario_fields_still_take_bare_names():
    assert load_scenario_config("flock", ["seed=7", "steps=5"]).seed == 7


def test_a_running_simulation_takes_parameters_and_names_them_when_wrong():
    sim = starling.load_scenario("flock", overrides=["n=200"])
    sim.step(2)
    sim.set("n=250")
    assert sim.population("bird").n == 250
    with pytest.raises(ConfigError, match=r"^n: species.bird.count"):
        sim.set("n=-1")
    assert sim.population("bird").n == 250 and sim.scenario.species[0].count == 250


def test_declarations_are_checked_when_the_scenario_loads():
    data, _ = read_scenario_data("flock")
    data["parameters"] = {"typo": {"path": "species.bird.groups.flocking.query.max_distanse"}}
    with pytest.raises(ConfigError, match=r"parameters.typo.path: .*max_distanse is not a field"):
        validate_scenario(data)
    data["parameters"] = {"seed": {"path": "species.bird.count"}}
    with pytest.raises(ConfigError, match=r"parameters: .*'seed' is a scenario field"):
        validate_scenario(data)
    data["parameters"] = {"2fast": {"path": "species.bird.count"}}
    with pytest.raises(ConfigError, match=r"parameters: .*'2fast' is not a name"):
        validate_scenario(data)
    # a field left at its default may be bound (alignment's max_speed defaults to the mover's)
    data["parameters"] = {"align_speed": {"path": "species.bird.groups.flocking.behaviors.alignment.max_speed"}}
    scenario = validate_scenario(data)
    assert "align_speed" in scenario.parameters


def test_the_cli_lists_a_scenarios_parameters_and_runs_with_them():
    run = lambda *a: subprocess.run([sys.executable, "-m", "starling", *a], capture_output=True, text=True)
    listed = run("scenarios", "classroom")
    assert listed.returncode == 0, listed.stderr
    assert "breathing_period" in listed.stdout and "8.0" in listed.stdout
    ok = run("run", "flock", "--steps", "2", "--set", "n=150", "--json")
    assert ok.returncode == 0, ok.stderr
    assert '"alive": 150' in ok.stdout
    bad = run("run", "flock", "--steps", "2", "--set", "neighbours=6")
    assert bad.returncode == 2 and "neighbours: unknown parameter" in bad.stderr and "Traceback" not in bad.stderr
