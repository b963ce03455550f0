"""Sweep files: a base scenario, parameters with their values, a design, replicates, metrics.

The smallest one::

    scenario = "vicsek"
    steps = 200
    replicates = 2
    design = "grid"
    [parameters]
    eta = [0.5, 4.0]

means four runs (two values × two seeds). A parameter is a name from the scenario's
``[parameters]`` table or a config path (``species.bird.count``); its values are a list,
a range (``{range = [0, 6], num = 13}``, ``{range = [0, 6], step = 0.5}``, ``log = true``
for geometric spacing) or, with ``design = "random"``, a distribution
(``{distribution = "uniform", low = 0, high = 6}``; also ``loguniform``, ``normal``
with ``mean``/``sd``, ``integers``). A random design draws ``samples`` parameter sets from
the sweep's ``seed``, so the same file always means the same runs.

Everything is checked before any run starts: the file's fields by the models here,
each parameter by applying its first value to the scenario and validating it, each
metric against what the scenario reports — a mistake is one error naming the field.
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..config import ConfigError, Problem
from ..config.io import apply_override, read_scenario_data, scenario_base_dir, toml_value, validate_scenario

Number = Union[int, float]
Value = Union[int, float, bool, str]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ValueRange(_Strict):
    """``{range = [lo, hi], num = N}`` (N values, ends included) or ``step = s``; ``log`` spaces geometrically."""

    range: tuple[Number, Number]
    num: Optional[int] = Field(None, ge=1, le=100_000)
    step: Optional[float] = Field(None, gt=0)
    log: bool = False
    integer: bool = False

    @model_validator(mode="after")
    def _one_spacing(self):
        if (self.num is None) == (self.step is None):
            raise ValueError("give exactly one of 'num' or 'step'")
        if self.log and (self.range[0] <= 0 or self.range[1] <= 0):
            raise ValueError("a log range needs both ends above 0")
        if self.log and self.step is not None:
            raise ValueError("a log range is spaced by 'num', not 'step'")
        return self

    def values(self) -> list:
        lo, hi = float(self.range[0]), float(self.range[1])
        if self.num is not None:
            v = np.geomspace(lo, hi, self.num) if self.log else np.linspace(lo, hi, self.num)
        else:
            count = int(np.floor((hi - lo) / self.step + 1e-9)) + 1
            v = lo + self.step * np.arange(max(count, 0))
        return [int(round(x)) for x in v] if self.integer else [round(float(x), 12) for x in v]


class Distribution(_Strict):
    """A distribution to draw from (``design = "random"`` only)."""

    distribution: Literal["uniform", "loguniform", "normal", "integers"]
    low: Optional[float] = None
    high: Optional[float] = None
    mean: Optional[float] = None
    sd: Optional[float] = Field(None, gt=0)

    @model_validator(mode="after")
    def _fields(self):
        if self.distribution == "normal":
            if self.mean is None or self.sd is None:
                raise ValueError("a normal distribution needs 'mean' and 'sd'")
        else:
            if self.low is None or self.high is None or not self.low < self.high:
                raise ValueError(f"a {self.distribution} distribution needs 'low' < 'high'")
            if self.distribution == "loguniform" and self.low <= 0:
                raise ValueError("a loguniform distribution needs 'low' above 0")
        return self

    def draw(self, rng: np.random.Generator) -> Value:
        if self.distribution == "uniform":
            return float(rng.uniform(self.low, self.high))
        if self.distribution == "loguniform":
            return float(np.exp(rng.uniform(np.log(self.low), np.log(self.high))))
        if self.distribution == "normal":
            return float(rng.normal(self.mean, self.sd))
        return int(rng.integers(int(self.low), int(self.high), endpoint=True))


class MetricSpec(_Strict):
    """One number kept per run: a metric's ``final`` value, or its ``mean`` over the last ``window`` steps."""

    name: str
    species: Optional[str] = Field(None, description="Default: every species.")
    how: Literal["final", "mean"] = "final"
    window: Optional[int] = Field(None, ge=1, description="Steps averaged by 'mean' (default: the last fifth).")

    @model_validator(mode="after")
    def _window(self):
        if self.window is not None and self.how != "mean":
            raise ValueError("'window' goes with how = \"mean\"")
        return self


DEFAULT_METRICS = ("count", "polarization", "milling", "largest_group")
COUNTERS = ("deaths", "eaten", "caught")


class SweepFile(_Strict):
    """A sweep file's fields (see the module)."""

    scenario: str = Field(..., min_length=1, description="Built-in scenario name, or a TOML path (relative to the sweep file).")
    steps: int = Field(..., ge=1, le=100_000_000)
    replicates: int = Field(1, ge=1, le=100_000, description="Seeds per parameter set: seed, seed+1, …")
    seed: int = Field(1, ge=0, description="First replicate's seed; also the random design's draws.")
    design: Literal["grid", "random"] = "grid"
    samples: Optional[int] = Field(None, ge=1, le=10_000_000, description="Parameter sets a random design draws.")
    parameters: dict[str, Union[list[Value], ValueRange, Distribution]] = Field(default_factory=dict)
    set: list[str] = Field(default_factory=list, description="Overrides of every run (the --set syntax).")
    metrics: Optional[list[MetricSpec]] = None
    dt: Optional[float] = Field(None, gt=0)
    description: str = ""

    @field_validator("parameters")
    @classmethod
    def _values(cls, v):
        for name, spec in v.items():
            if isinstance(spec, list) and not spec:
                raise ValueError(f"{name}: the value list is empty")
        return v

    @model_validator(mode="after")
    def _design(self):
        if self.design == "random" and self.samples is None:
            raise ValueError("a random design needs 'samples' (how many parameter sets to draw)")
        if self.design == "grid":
            if self.samples is not None:
                raise ValueError("'samples' goes with design = \"random\"")
            drawn = [n for n, s in self.parameters.items() if isinstance(s, Distribution)]
            if drawn:
                raise ValueError(f"parameters {', '.join(drawn)}: a distribution needs design = \"random\"")
        return self


@dataclass(frozen=True)
class Run:
    """One run of a sweep: its parameter values and seed, and the id that finds it again on resume."""

    index: int
    params: dict
    seed: int

    @property
    def id(self) -> str:
        text = json.dumps({"params": self.params, "seed": self.seed}, sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:12]


@dataclass
class Sweep:
    """A checked sweep file: the base scenario's data, its runs and the metric columns."""

    spec: SweepFile
    source: str
    data: dict
    label: str
    base_dir: Optional[str]
    species: list[str]
    metric_specs: list[MetricSpec]

    def runs(self) -> list[Run]:
        spec = self.spec
        names = list(spec.parameters)
        if spec.design == "grid":
            axes = [_values(spec.parameters[n]) for n in names]
            sets = [dict(zip(names, combo)) for combo in itertools.product(*axes)] if names else [{}]
        else:
            rng = np.random.default_rng(spec.seed)
            sets = []
            for _ in range(spec.samples):
                sets.append({n: (_draw_list(s, rng) if isinstance(s, (list, ValueRange)) else s.draw(rng))
                             for n, s in ((n, spec.parameters[n]) for n in names)})
        runs = []
        for params in sets:
            for r in range(spec.replicates):
                runs.append(Run(len(runs), params, spec.seed + r))
        return runs

    def columns(self) -> list[str]:
        """The metric columns each run fills, in order."""
        return [column_name(m, s) for m in self.metric_specs for s in self._species_of(m)]

    def _species_of(self, m: MetricSpec) -> list[str]:
        return [m.species] if m.species else self.species

    def task(self, run: Run) -> dict:
        """Everything a worker needs for ``run`` as plain data (it may be on another machine)."""
        return {
            "id": run.id, "index": run.index, "seed": run.seed, "params": run.params,
            "data": self.data, "label": self.label, "base_dir": self.base_dir,
            "overrides": [*self.spec.set, *(f"{k}={toml_value(v)}" for k, v in run.params.items())],
            "dt": self.spec.dt, "steps": self.spec.steps,
            "metrics": [(column_name(m, s), s, m.name, m.how, window(m, self.spec.steps))
                        for m in self.metric_specs for s in self._species_of(m)],
        }

    def fingerprint(self) -> str:
        """Identifies the sweep: ``--resume`` refuses an output made by a different one."""
        text = json.dumps({"spec": self.spec.model_dump(mode="json"), "data": self.data}, sort_keys=True, default=str)
        return hashlib.sha1(text.encode()).hexdigest()


def window(m: MetricSpec, steps: int) -> int:
    return 1 if m.how == "final" else min(steps, m.window or max(1, steps // 5))


def column_name(m: MetricSpec, species: str) -> str:
    return f"{species}.{m.name}" if m.how == "final" else f"{species}.{m.name}_mean"


def _values(spec) -> list:
    return list(spec) if isinstance(spec, list) else spec.values()


def _draw_list(spec, rng) -> Value:
    values = _values(spec)
    return values[int(rng.integers(len(values)))]


def load_sweep(path: Union[str, Path]) -> Sweep:
    """Read and check a sweep file; raises :class:`ConfigError` naming the field."""
    path = Path(path)
    label = str(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError([Problem("", f"no such file: {path}")], label) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([Problem("", f"cannot read it: {exc}")], label) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([Problem("", f"not valid TOML: {exc}")], label) from None
    return check_sweep(raw, label, relative_to=path.parent)


def check_sweep(raw: dict, label: str = "sweep", relative_to: Optional[Path] = None) -> Sweep:
    """Validate sweep data (parsed TOML) against the models and the scenario it names."""
    try:
        spec = SweepFile.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError([Problem(".".join(str(p) for p in e["loc"]), e["msg"].removeprefix("Value error, "))
                           for e in exc.errors()], label) from None
    scenario = spec.scenario
    if relative_to is not None and scenario.endswith(".toml") and not Path(scenario).is_absolute():
        scenario = str(relative_to / scenario)
    try:
        data, scenario_label = read_scenario_data(scenario)
    except ConfigError as err:
        raise ConfigError([Problem("scenario", p.message) for p in err.problems], label) from None
    base_dir = scenario_base_dir(scenario)
    base_dir = None if base_dir is None else str(base_dir)
    # every parameter: its first value applied alone, then all first values together, validated
    for name, values in spec.parameters.items():
        first = _values(values)[0] if not isinstance(values, Distribution) else values.draw(np.random.default_rng(0))
        _check_assignments(data, [f"{name}={toml_value(first)}"], label, f"parameters.{name}", base_dir)
    checked = _check_assignments(data, list(spec.set), label, "set", base_dir)
    species = [sp.name for sp in checked.species]
    metric_specs = spec.metrics if spec.metrics is not None else [MetricSpec(name=n) for n in DEFAULT_METRICS]
    for i, m in enumerate(metric_specs):
        if m.species is not None and m.species not in species:
            raise ConfigError([Problem(f"metrics.{i}.species",
                                       f"{m.species!r} is not a species of {spec.scenario} ({', '.join(species)})")],
                              label)
    return Sweep(spec, label, data, scenario_label, base_dir, species, list(metric_specs))


def _check_assignments(data: dict, assignments: list[str], label: str, field: str, base_dir):
    trial = copy.deepcopy(data)
    try:
        for text in assignments:
            apply_override(trial, text)
        return validate_scenario(trial, label, base_dir=base_dir)
    except ConfigError as err:
        raise ConfigError([Problem(field, f"{p.path + ': ' if p.path else ''}{p.message}")
                           for p in err.problems], label) from None


def check_metric_names(sweep: Sweep, available: dict[str, set]) -> None:
    """Refuse metrics the scenario does not report (``available``: per species, from a built run)."""
    for i, m in enumerate(sweep.metric_specs):
        for s in sweep._species_of(m):
            if m.name not in available.get(s, set()):
                known = ", ".join(sorted(available.get(s, set())))
                raise ConfigError([Problem(f"metrics.{i}.name", f"{m.name!r} is not a metric of {s}; known: {known}")],
                                  sweep.source)


def describe(sweep: Sweep) -> dict[str, Any]:
    """What a sweep is, for the output folder's ``sweep.json``."""
    return {"source": sweep.source, "fingerprint": sweep.fingerprint(), "spec": sweep.spec.model_dump(mode="json"),
            "columns": sweep.columns(), "runs": len(sweep.runs())}
