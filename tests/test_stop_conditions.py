"""Stop conditions: the first [[stop]] that holds decides the run, and says how."""
import copy
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from starling import Simulation
from starling.cli import app
from starling.config import ConfigError, read_scenario_data, validate_scenario


def _lagoon(stops, **fields):
    data, label = read_scenario_data("lagoon")
    data = copy.deepcopy(data)
    data["stop"] = stops
    data.update(fields)
    return Simulation(validate_scenario(data, label), record_debug=False)


def test_a_time_limit_decides_at_its_step():
    sim = _lagoon([{"outcome": "timeout", "when": "time", "at": 0.5}], dt=0.1)
    sim.step(4)
    assert sim.outcome is None
    sim.step(1)
    assert sim.outcome == {"outcome": "timeout", "step": 5, "time": pytest.approx(0.5)}
    sim.step(3)  # a live simulation carries on; the outcome stays the first
    assert sim.outcome["step"] == 5


def test_deaths_count_by_species_and_cause_and_the_first_condition_that_holds_wins():
    from starling.ecology import ecology_of

    sim = _lagoon([{"outcome": "shot", "when": "deaths", "species": "fish", "cause": "shot"},
                   {"outcome": "two fish", "when": "deaths", "species": "fish", "count": 2},
                   {"outcome": "late", "when": "time", "at": 100.0}])
    fish = sim.population("fish")
    ecology_of(sim).kill("fish", [int(fish.uid[0])], cause="starvation")
    sim.step(1)
    assert sim.outcome is None  # one death, not by a shot
    ecology_of(sim).kill("fish", [int(fish.uid[0])], cause="starvation")
    sim.step(1)
    assert sim.outcome["outcome"] == "two fish" and sim.outcome["step"] == 2


def test_every_animal_in_the_named_states_decides():
    sim = _lagoon([{"outcome": "calm", "when": "all_in_state", "species": "shark", "states": ["chill"]},
                   {"outcome": "never", "when": "time", "at": 0.01}])
    sim.step(1)  # sharks start chilling: the first condition holds before the time limit is tried
    assert sim.outcome["outcome"] == "calm"


def test_the_outcome_survives_a_snapshot_and_an_edit():
    sim = _lagoon([{"outcome": "timeout", "when": "time", "at": 0.2}], dt=0.1)
    sim.step(2)
    twin = Simulation.restore(sim.snapshot())
    assert twin.outcome == sim.outcome
    sim.set("species.fish.count=150")
    assert sim.outcome["outcome"] == "timeout"


@pytest.mark.parametrize("stop,field,words", [
    ({"outcome": "x", "when": "deaths", "species": "whale"}, "stop.0.species", "unknown species 'whale'"),
    ({"outcome": "x", "when": "all_in_state", "species": "shark", "states": ["asleep"]}, "stop.0.states.0",
     "no brain state 'asleep'"),
    ({"outcome": "x", "when": "sometimes"}, "stop.0", "when"),
    ({"outcome": "x", "when": "time", "at": -1}, "stop.0.time.at", "greater than 0"),
])
def test_a_wrong_stop_condition_names_its_field(stop, field, words):
    with pytest.raises(ConfigError) as info:
        _lagoon([stop])
    assert any(p.path.startswith(field) and words in p.message for p in info.value.problems), info.value.problems


def test_run_stops_at_the_outcome_and_reports_it(tmp_path):
    data, _ = read_scenario_data("lagoon")
    data = copy.deepcopy(data)
    data["stop"] = [{"outcome": "timeout", "when": "time", "at": 1.0}]
    path = tmp_path / "lagoon_stop.toml"
    import tomli_w

    path.write_text(tomli_w.dumps(data))
    result = CliRunner().invoke(app, ["run", str(path), "--steps", "500", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["outcome"] == "timeout" and out["stopped_at_s"] == pytest.approx(1.0, abs=1e-3)
    assert out["steps"] == int(np.round(1.0 / data.get("dt", 1 / 30)))
