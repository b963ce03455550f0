"""Scenario configuration: pydantic models, TOML load/save, overrides, JSON Schema."""
from ..errors import ConfigError, Problem
from .io import (
    apply_override,
    json_schema,
    load_scenario_config,
    read_scenario_data,
    save_scenario,
    scenario_names,
    scenario_to_toml,
    validate_scenario,
)
from .models import scenario_model

__all__ = [
    "ConfigError", "Problem", "apply_override", "json_schema", "load_scenario_config",
    "read_scenario_data", "save_scenario", "scenario_names", "scenario_to_toml",
    "validate_scenario", "scenario_model",
]
