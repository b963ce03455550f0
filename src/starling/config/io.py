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
from ..errors import ConfigError, Problem, name_species, problems_from_validation, species_names
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
            raw = path.read_bytes()
        except OSError as e:
            raise ConfigError([Problem("", f"cannot read {text}: {e.strerror}")]) from None
        data = scenario_text(raw, text)
        label = text
    try:
        return tomllib.loads(data), label
    except tomllib.TOMLDecodeError as e:
        raise ConfigError([Problem("", f"not valid TOML: {e}")], label) from None


def scenario_text(raw: bytes, label: str) -> str:
    """The text of a scenario file, or one clear error for a binary or non-UTF-8 one (TOML is UTF-8)."""
    if b"\x00" in raw[:8192]:
        raise ConfigError([Problem("", "a binary file, not a scenario (scenarios are TOML text)")], label)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError([Problem("", f"not UTF-8 text (byte {e.start} is 0x{raw[e.start]:02x}); "
                                       "TOML files are UTF-8")], label) from None


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
    Problem paths name a species by its name (``species.fish.count``) where it has a valid,
    unique one, by its index otherwise.
    """
    Scenario = scenario_model()
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as err:
        names = species_names(data.get("species") if isinstance(data, dict) else None)
        raise ConfigError(name_species(problems_from_validation(err), names), source) from None
    scenario.with_base_dir(base_dir if base_dir is not None else scenario_base_dir(source))
    problems = cross_check(scenario)
    if problems:
        raise ConfigError(name_species(problems, species_names(scenario.species)), source)
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
                            f"behaviour {params.kind!r} needs component {comp!r}; declare it in species.{sp.name}.components",
                        ))
    for sec in registry.sections():  # rules a section spans (the ecology's states, foods, events, …)
        check = getattr(sec.model, "cross_check", None)
        if check is not None:
            problems.extend(check(scenario))
    problems.extend(_check_parameters(scenario))
    problems.extend(_check_stops(scenario, seen))
    if not problems:
        problems.extend(_check_set_events(scenario))
    return problems


def _check_stops(scenario, species: set) -> list[Problem]:
    """A stop condition names a species of the scenario, and states its brain has."""
    problems = []
    by_name = {sp.name: sp for sp in scenario.species}
    for i, stop in enumerate(getattr(scenario, "stop", ())):
        name = getattr(stop, "species", None)
        if name is None:
            continue
        if name not in species:
            problems.append(Problem(f"stop.{i}.species", f"unknown species {name!r}; known: {', '.join(sorted(species))}"))
            continue
        if stop.when == "all_in_state":
            brain = getattr(by_name[name], "brain", None)
            known = [st.name for st in brain.states] if brain is not None else []
            for j, state in enumerate(stop.states):
                if state not in known:
                    problems.append(Problem(f"stop.{i}.states.{j}", (
                        f"{name} has no brain state {state!r}; its states: {', '.join(known)}" if known
                        else f"{name} has no brain, so no state {state!r}")))
    return problems


def _check_parameters(scenario) -> list[Problem]:
    """Every path a named parameter is bound to must be a field of the scenario (set or not)."""
    out = []
    for name, spec in (getattr(scenario, "parameters", None) or {}).items():
        for p, path in enumerate(spec.paths):
            if not _model_has_path(scenario, [k for k in path.split(".") if k]):
                where = f"parameters.{name}.path" + ("" if isinstance(spec.path, str) else f".{p}")
                out.append(Problem(where, f"{path} is not a field of this scenario"))
    return out


def _model_has_path(node: Any, keys: list[str]) -> bool:
    for key in keys:
        if isinstance(node, (list, tuple)):
            if key.lstrip("-").isdigit():
                i = int(key)
                if not -len(node) <= i < len(node):
                    return False
                node = node[i]
            else:
                node = next((item for item in node if key in (getattr(item, "name", None), getattr(item, "label", None),
                                                             getattr(item, "kind", None))), None)
                if node is None:
                    return False
        elif isinstance(node, BaseModel):
            if key not in type(node).model_fields:
                return False
            node = getattr(node, key)
        elif isinstance(node, dict):
            if key not in node:
                return False
            node = node[key]
        else:
            return False
    return True


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
    try:
        named = [n for n in (apply_override(data, text) for text in overrides) if n is not None]
    except ConfigError as err:
        raise ConfigError(err.problems, label) from None
    for key, value in fields.items():
        if value is not None:
            data[key] = value
    try:
        return validate_scenario(data, label)
    except ConfigError as err:
        raise name_problems(err, named) from None


def changed_paths(old, new, prefix: str = "", limit: int = 50) -> dict:
    """``{"species.bird.count": [old, new], …}``: the leaves that differ between two configs' plain data,
    named by the paths ``--set`` takes (what an edit did, for the journal)."""
    out: dict = {}

    def walk(a, b, path):
        if len(out) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=str):
                walk(a.get(key), b.get(key), f"{path}.{key}" if path else str(key))
        elif _named_list(a) and _named_list(b):  # species and groups: by name, as --set spells them
            walk({x["name"]: x for x in a}, {x["name"]: x for x in b}, path)
        elif a != b:
            out[path] = [a, b]

    walk(old, new, prefix)
    return out


def _named_list(x) -> bool:
    return isinstance(x, list) and bool(x) and all(isinstance(i, dict) and "name" in i for i in x)


def apply_override(data: dict, text: str) -> Optional[tuple[str, list[str]]]:
    """Apply ``a.b.0.c=value``; list items can be named by index, ``name``, ``label`` or ``kind``.

    The value is read as TOML (``5``, ``2.5``, ``true``, ``[1, 2, 3]``, ``"text"``); a
    bare word that is not TOML is taken as a string. A bare name declared in the
    scenario's ``[parameters]`` (``eta=3``) sets every path it is bound to, after checking
    that the value is of the kind found there; it returns ``(name, index paths)`` so a
    later validation error can name the parameter (see :func:`name_problems`).
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
    if len(keys) == 1:
        bound = _parameter_paths(data, keys[0])
        if bound is not None:
            return keys[0], [_set_parameter(data, keys[0], p, value, raw.strip()) for p in bound]
        if keys[0] not in scenario_model().model_fields:
            declared = sorted((data.get("parameters") or {}) if isinstance(data, dict) else ())
            known = f"this scenario's parameters: {', '.join(declared)}" if declared else "this scenario declares no parameters"
            raise ConfigError([Problem(keys[0], f"unknown parameter or scenario field ({known}; "
                                                "or give a config path such as species.NAME.count)")])
    _set_path(data, keys, value)
    return None


def _set_path(data: dict, keys: list[str], value) -> None:
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


def _parameter_paths(data: dict, name: str) -> Optional[list[str]]:
    params = data.get("parameters") if isinstance(data, dict) else None
    spec = params.get(name) if isinstance(params, dict) else None
    if not isinstance(spec, dict):
        return None
    path = spec.get("path")
    return [path] if isinstance(path, str) else [p for p in (path or []) if isinstance(p, str)]


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _set_parameter(data: dict, name: str, path: str, value, raw: str) -> str:
    """Set one bound path of parameter ``name``; returns the path with list items as indices
    (species by name where they have a valid, unique one: the form of validation problems)."""
    keys = [k for k in path.split(".") if k]
    node: Any = data
    canonical = []
    current = None
    try:
        for depth, key in enumerate(keys):
            if isinstance(node, list):
                i = _list_index(node, key, keys[: depth + 1])
                # the species by name, as validation problems name it (see validate_scenario)
                named = species_names(node)[i] if canonical == ["species"] else None
                canonical.append(named or str(i))
                node = node[i]
            elif depth == len(keys) - 1 and isinstance(node, dict) and key not in node:
                canonical.append(key)  # a field left at its default: validation judges the value
                node = None
            else:
                node = _child(node, key, keys[: depth + 1], create=False)
                canonical.append(key)
        current = node
    except ConfigError:
        raise ConfigError([Problem(name, f"is bound to {path}, which this scenario does not have")]) from None
    if isinstance(current, bool):
        ok, kind = isinstance(value, bool), "true or false"
    elif _number(current) or (isinstance(current, dict) and ({"uniform", "normal"} & set(current))):
        ok, kind = _number(value) or isinstance(value, dict), "a number"
        if ok and isinstance(current, int) and not isinstance(current, bool) and isinstance(value, float):
            ok, kind = value.is_integer(), "a whole number"
            value = int(value) if ok else value
    elif isinstance(current, str):
        ok, kind = isinstance(value, str), "text"
    elif isinstance(current, list):
        ok, kind = isinstance(value, list), "a list"
    else:
        ok, kind = True, ""
    if not ok:
        raise ConfigError([Problem(name, f"expects {kind} (it sets {path}), got {raw!r}")])
    _set_path(data, keys, value)
    return ".".join(canonical)


def parameter_value(data: dict, path: str):
    """The value at ``path`` in plain scenario data (None when unset)."""
    node: Any = data
    keys = [k for k in path.split(".") if k]
    try:
        for depth, key in enumerate(keys):
            node = _child(node, key, keys[: depth + 1], create=False)
    except ConfigError:
        return None
    return node


def _within(problem_path: str, path: str) -> bool:
    """Whether a validation problem's path lies at or under ``path`` (the form
    :func:`_set_parameter` returns). Pydantic
    puts the tag of a tagged union into its paths (``behaviors.2.separation.max_distance``),
    so ``path``'s segments must appear in order with at most one segment between two."""
    got, want = problem_path.split("."), path.split(".")
    if not got or got[0] != want[0]:
        return False
    at = 0
    for w in want[1:]:
        for skip in (1, 2):
            if at + skip < len(got) and got[at + skip] == w:
                at += skip
                break
        else:
            return False
    return True


def name_problems(err: ConfigError, named: list[tuple[str, list[str]]]) -> ConfigError:
    """``err`` with each problem at a parameter's path reported under the parameter's name."""
    if not named:
        return err
    out = []
    for problem in err.problems:
        for name, paths in named:
            hit = next((p for p in paths if _within(problem.path, p)), None)
            if hit is not None:
                problem = Problem(name, f"{problem.path}: {problem.message}")
                break
        out.append(problem)
    return ConfigError(out, getattr(err, "source", ""))


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
