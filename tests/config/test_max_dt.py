"""A scenario declares the largest time step it allows (max_dt, 0.5 s by default); dt is checked against it."""
import pytest

import starling
from starling.config import ConfigError, load_scenario_config
from starling.config.models import scenario_model

BASE = {"species": [{"name": "a"}]}


def test_dt_above_the_default_max_dt_is_an_error_naming_dt():
    with pytest.raises(ValueError) as err:
        scenario_model().model_validate({**BASE, "dt": 0.6})
    text = str(err.value)
    assert "\ndt\n" in text and "exceeds this scenario's max_dt = 0.5" in text


def test_a_scenario_may_declare_a_larger_max_dt():
    scenario = scenario_model().model_validate({**BASE, "max_dt": 1.0, "dt": 1.0})
    assert scenario.dt == 1.0 and scenario.max_dt == 1.0
    assert scenario_model().model_validate(BASE).max_dt == 0.5


def test_every_builtin_scene_is_valid_and_vicsek_steps_by_one():
    for name in starling.scenario_names():
        scenario = load_scenario_config(name)
        assert scenario.dt <= scenario.max_dt
    vicsek = load_scenario_config("vicsek")
    assert vicsek.dt == 1.0 and vicsek.max_dt == 1.0


def test_set_dt_beyond_max_dt_is_reported_under_dt():
    with pytest.raises(ConfigError, match=r"dt.*exceeds this scenario's max_dt = 1"):
        load_scenario_config("vicsek", ["dt=2"])
