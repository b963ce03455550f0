"""Commands about scenarios themselves: list them, validate a file, print the schema."""
from __future__ import annotations

import json
import sys
from typing import List, Optional

import typer
from rich.table import Table

from ..config import (
    ConfigError,
    json_schema,
    read_scenario_data,
    scenario_names,
    validate_scenario,
)
from ..config.io import parameter_value, toml_value
from .common import PLUGIN_HELP, _config_fail, _load_plugins, app, err, out


@app.command()
def scenarios(name: Optional[str] = typer.Argument(None, help="A scenario (built-in or TOML path): list its parameters."),
              plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP)) -> None:
    """List the built-in scenarios, or one scenario's named parameters (what --set NAME=VALUE takes)."""
    _load_plugins(plugin)
    if name is None:
        table = Table("name", "description", box=None)
        for known in scenario_names():
            data, _ = read_scenario_data(known)
            table.add_row(known, str(data.get("description", "")))
        out.print(table)
        return
    try:
        data, label = read_scenario_data(name)
        scenario = validate_scenario(data, label)
    except ConfigError as e:
        _config_fail(e)
    out.print(f"{scenario.name}: {scenario.description}", highlight=False, markup=False)
    if not scenario.parameters:
        out.print("no named parameters; set any field by its path (--set species.NAME.count=500)", markup=False)
        return
    dumped = scenario.model_dump(mode="json", exclude_none=True)
    table = Table(box=None)
    for column in ("parameter", "value", "sets", "description"):
        table.add_column(column, overflow="fold")
    for pname, spec in scenario.parameters.items():
        values = [parameter_value(dumped, p) for p in spec.paths]
        shown = values[0] if all(v == values[0] for v in values) else values
        table.add_row(pname, toml_value(shown) if shown is not None else "(default)", "\n".join(spec.paths),
                      spec.description)
    out.print(table)
    out.print(f"set one with --set NAME=VALUE, e.g. --set {next(iter(scenario.parameters))}=...", markup=False)


@app.command()
def validate(file: str = typer.Argument(..., help="Scenario TOML file or built-in name."),
             plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP)) -> None:
    """Check a scenario: exit 0 when valid, 2 with one line per problem when not."""
    _load_plugins(plugin)
    try:
        data, label = read_scenario_data(file)
        scenario = validate_scenario(data, label)
    except ConfigError as e:
        _config_fail(e)
    out.print(f"{label}: valid ({len(scenario.species)} species, "
              f"{sum(s.count for s in scenario.species)} animals)", highlight=False)
    from ..config.cost import estimate_step_cost

    warning = estimate_step_cost(scenario).warning()  # valid, but far too heavy to keep real time
    if warning is not None:
        err.print(f"{label}: {warning}", highlight=False, markup=False, soft_wrap=True)


@app.command()
def schema(plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP)) -> None:
    """Print the JSON Schema of scenario files (every registered behaviour and mover)."""
    _load_plugins(plugin)
    sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")
