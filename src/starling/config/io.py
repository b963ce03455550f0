"""Loading, validating, overriding and saving scenarios (TOML)."""
from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Optional, Union

import tomli_w
from pydantic import BaseModel, ValidationError

from ..steering import registry
from ..errors import ConfigError, Problem, problems_from_validation
from .models import scenario_model

BUILTIN_PACKAGE = "starling.scenarios"


def scenario_names() -> list[str]:
    """Names of the built-in scenarios (``src/starling/scenarios/*.toml``)."""
    files = resources.files(BUILTIN_PACKAGE)
    return sorted(p.name[:-5] for p in files.iterdir() if p.name.endswith(".toml"))


def read_scenario_data(name_or_path: Union[str, Path]) -> tuple[dict, str]:
    """Raw TOML data of a built-in name or a file path, and a label for errors."""
    text = str(name_or_path)
    path = Path(text)
    if text in scenario_names() and not path.exists():
        data = resources.files(BUILTIN_PACKAGE).joinpath(f"{text}.toml").read_text()
        label = text
    else:
        if not path.exists():
            known = ", ".join(scenario_names())
            raise ConfigError([Problem("", f"no scenario file or built-in named {text!r} (built-ins: {known})")])
        try:
            data = path.read_text()
        except OSError as e:
            raise ConfigError([Problem("", f"cannot read {text}: {e.strerror}")]) from None
        label = text
    try:
        return tomllib.loads(data), label
    except tomllib.TOMLDecodeError as e:
        raise ConfigError([Problem("", f"not valid TOML: {e}")], label) from None


def scenario_base_dir(source: Union[str, Path, None]) -> Optional[Path]:
    """The folder relative paths of a scenario are resolved against: the file's folder, the
    built-in scenarios' folder for a built-in name, None (the working directory) otherwise."""
    if not source:
        return None
    path = Path(str(source))
    if path.is_file():
        return path.resolve().parent
    if str(source) in scenario_names():
        return Path(str(resources.files(BUILTIN_PACKAGE)))
    return None


def validate_scenario(data: dict, source: str = "", base_dir: Union[str, Path, None] = None) -> BaseModel:
    """Validate raw data into a Scenario model; raises :class:`ConfigError` listing every problem.

    ``base_dir`` is where relative file paths (meshes, height maps) live; by default the
    folder of ``source`` when it names a file or a built-in scenario.
    """
    Scenario = scenario_model()
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as err:
        raise ConfigError(problems_from_validation(err), source) from None
    scenario.with_base_dir(base_dir if base_dir is not None else scenario_base_dir(source))
    problems = cross_check(scenario)
    if problems:
        raise ConfigError(problems, source)
    return scenario


def cross_check(scenario) -> list[Problem]:
    """Rules between fields: unique names, known targets, declared components."""
    problems = []
    names = [s.name for s in scenario.species]
    # populations made by systems (sounds, apples, the player, …) can be query targets too
    provided = set()
    for sec in registry.sections():
        present = (getattr(scenario, sec.name, None) is not None if sec.scope == "scenario"
                   else any(getattr(sp, sec.name, None) is not None for sp in scenario.species))
        if present:
            provided.update(sec.provides)
    seen = set()
    for i, name in enumerate(names):
        if name in seen:
            problems.append(Problem(f"species.{i}.name", f"duplicate species name {name!r}"))
        seen.add(name)
    for i, sp in enumerate(scenario.species):
        for g, group in enumerate(sp.groups):
            for t, target in enumerate(group.query.targets):
                if target not in seen and target not in provided:
                    problems.append(Problem(
                        f"species.{i}.groups.{g}.query.targets.{t}",
                        f"unknown species {target!r}; known: {', '.join(names + sorted(provided))}",
                    ))
        declared = set(sp.components)
        for sec in registry.sections("species"):  # components a species section provides (ecology: energy, …)
            provide = getattr(sec.model, "provided_components", None)
            if provide is not None:
                declared |= set(provide(sp))
        lists = [("behaviors", getattr(sp, "behaviors", []))]
        lists += [(f"groups.{g}.behaviors", getattr(group, "behaviors", [])) for g, group in enumerate(sp.groups)]
        lists += [(f"ray_groups.{g}.behaviors", getattr(group, "behaviors", []))
                  for g, group in enumerate(sp.ray_groups)]
        for where, items in lists:
            for b, params in enumerate(items):
                spec = registry.get_behavior(params.kind)
                for comp in spec.components:
                    if comp not in declared:
                        problems.append(Problem(
                            f"species.{i}.{where}.{b}",
                            f"behaviour {params.kind!r} needs component {comp!r}; declare it in species.{i}.components",
                        ))
    for sec in registry.sections():  # rules a section spans (the ecology's states, foods, events, …)
        check = getattr(sec.model, "cross_check", None)
        if check is not None:
            problems.extend(check(scenario))
    if not problems:
        problems.extend(_check_set_events(scenario))
    return problems


def _check_set_events(scenario) -> list[Problem]:
    """A scripted ``set`` event must leave a valid scenario (it goes through ``Simulation.reconfigure``)."""
    out = []
    for e, ev in enumerate(getattr(scenario, "events", None) or ()):
        if getattr(ev, "kind", None) != "set":
            continue
        data = scenario.model_dump(mode="json", exclude_none=True)
        data.pop("events", None)
        try:
            apply_override(data, f"{ev.path}={toml_value(ev.value)}")
            validate_scenario(data)
        except ConfigError as err:
            for p in err.problems:
                out.append(Problem(f"events.{e}.value", f"{ev.path} = {ev.value!r}: {p}"))
    return out


def load_scenario_config(name_or_path: Union[str, Path], overrides: Iterable[str] = (),
                         **fields: Any) -> BaseModel:
    """Read, override (``path=value`` strings and keyword fields) and validate a scenario."""
    data, label = read_scenario_data(name_or_path)
    for text in overrides:
        apply_override(data, text)
    for key, value in fields.items():
        if value is not None:
            data[key] = value
    return validate_scenario(data, label)


def apply_override(data: dict, text: str) -> None:
    """Apply ``a.b.0.c=value``; list items can be named by index, ``name``, ``label`` or ``kind``.

    The value is read as TOML (``5``, ``2.5``, ``true``, ``[1, 2, 3]``, ``"text"``); a
    bare word that is not TOML is taken as a string.
    """
    if "=" not in text:
        raise ConfigError([Problem("--set", f"{text!r} is not path=value")])
    path, raw = text.split("=", 1)
    path = path.strip()
    keys = [k for k in path.split(".") if k]
    if not keys:
        raise ConfigError([Problem("--set", f"{text!r} has an empty path")])
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    node: Any = data
    for depth, key in enumerate(keys[:-1]):
        node = _child(node, key, keys[: depth + 1], create=True)
    last = keys[-1]
    if isinstance(node, list):
        node[_list_index(node, last, keys)] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ConfigError([Problem(".".join(keys[:-1]), "is a value, not a table; cannot set a field inside it")])


def _list_index(node: list, key: str, keys: list[str]) -> int:
    if key.lstrip("-").isdigit():
        i = int(key)
        if -len(node) <= i < len(node):
            return i % len(node)
        raise ConfigError([Problem(".".join(keys), f"index {i} out of range (the list has {len(node)} items)")])
    for i, item in enumerate(node):
        if isinstance(item, dict) and key in (item.get("name"), item.get("label"), item.get("kind")):
            return i
    raise ConfigError([Problem(".".join(keys), f"no item named {key!r} in this list")])


def _child(node: Any, key: str, keys: list[str], create: bool):
    if isinstance(node, list):
        return node[_list_index(node, key, keys)]
    if isinstance(node, dict):
        if key not in node:
            if not create:
                raise ConfigError([Problem(".".join(keys), "no such field")])
            node[key] = {}
        return node[key]
    raise ConfigError([Problem(".".join(keys[:-1]), "is a value, not a table")])


def scenario_to_toml(scenario: BaseModel) -> str:
    """Serialise a scenario to TOML that loads back to an equal scenario."""
    data = scenario.model_dump(mode="json", exclude_none=True)
    return tomli_w.dumps(data)


def save_scenario(scenario: BaseModel, path: Union[str, Path]) -> None:
    Path(path).write_text(scenario_to_toml(scenario))


def json_schema() -> dict:
    """JSON Schema of a scenario file with every registered behaviour and mover."""
    return scenario_model().model_json_schema()


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2)


def toml_value(value) -> str:
    """``value`` written as a TOML value (the right-hand side of ``--set``)."""
    import json
    import re

    import tomli_w

    if isinstance(value, dict):  # an inline table, e.g. a distribution { uniform = [0.7, 0.9] }
        keys = (k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k) for k in value)
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in zip(keys, value.values())) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()
