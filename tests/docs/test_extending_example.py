"""The tutorial's behaviour (docs/extending.md) works as the tutorial says."""
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import starling
from starling.config import ConfigError, load_scenario_config

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "avoid_center.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("avoid_center", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    # a module Numba can find again by name: cached kernels refer to their module
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ZONE = ["species.bird.behaviors.3.kind=avoid_zone"]


def test_the_new_behaviour_is_registered_and_in_the_schema(example):
    assert "avoid_zone" in json.dumps(starling.json_schema())


def test_the_new_behaviour_empties_the_zone(example, tmp_path):
    # replace wandering (the 4th simple behaviour) by a strong zone around where the flock starts
    overrides = [
        'species.bird.behaviors.3={kind = "avoid_zone", priority = 6, weight_direction = 1.0, center = [0.0, 45.0, -30.0], radius = 14.0}',
    ]
    sim = starling.load_scenario("flock", overrides=overrides)
    centre = np.array(sim.scenario.species[0].spawn.center)
    start = np.sum(np.linalg.norm(sim.population("bird").position - centre, axis=1) < 8)
    sim.step(150)
    end = np.sum(np.linalg.norm(sim.population("bird").position - centre, axis=1) < 8)
    assert start > 20 and end < start / 4
    assert sim.health()["nan"] == 0


def test_a_typo_in_its_parameters_names_the_field(example):
    with pytest.raises(ConfigError, match=r"species.bird.behaviors.3.avoid_zone.radus: unknown field"):
        load_scenario_config("flock", ['species.bird.behaviors.3={kind = "avoid_zone", radus = 15}'])
