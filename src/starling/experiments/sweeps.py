"""Parameter sweeps of a scenario's named parameter: order parameters against its value.

The classic collective-motion results are curves: Vicsek's polarization against the noise
η, Couzin's polarization and milling against the width of the zone of orientation. A
:class:`Sweep` names the scenario, the parameter (a name from its ``[parameters]``
table), the values, how long each run lasts and over how many final steps the metrics
are averaged. Two kinds:

* independent runs: every value and seed starts fresh from the scenario;
* ``continuation`` (hysteresis): the values are swept up and then back down, each run
  starting from the previous run's final state (``Simulation.set`` on the running
  simulation), so a collective state that persists past the value that made it shows.

Rows are appended to a CSV as each run ends (a crashed sweep keeps what it finished);
the summary gives each value's mean and spread over seeds, and :func:`plot` draws it.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from ..config import ConfigError, Problem, load_scenario_config
from ..simulation import load_scenario

METRICS = ("polarization", "milling", "largest_group")


@dataclass(frozen=True)
class Sweep:
    """One experiment: ``parameter`` of ``scenario`` over ``values``."""

    scenario: str
    parameter: str
    values: tuple[float, ...]
    species: str
    steps: int = 1000
    average: int = 200
    seeds: tuple[int, ...] = (1, 2, 3)
    metrics: tuple[str, ...] = ("polarization",)
    continuation: bool = False
    overrides: tuple[str, ...] = ()
    description: str = ""

    def schedule(self) -> list[tuple[str, float]]:
        """(branch, value) in run order: the values, or up and then back down when continuing."""
        up = [("up", v) for v in self.values]
        return up + [("down", v) for v in reversed(self.values[:-1])] if self.continuation else up


@dataclass
class SweepResult:
    sweep: Sweep
    rows: list[dict] = field(default_factory=list)

    def summary(self) -> list[dict]:
        """Per (branch, value): mean and standard deviation over seeds of each metric."""
        out = []
        keys = []
        for r in self.rows:
            k = (r["branch"], r["value"])
            if k not in keys:
                keys.append(k)
        for branch, value in keys:
            runs = [r for r in self.rows if r["branch"] == branch and r["value"] == value]
            item = {"branch": branch, "value": value, "runs": len(runs)}
            for m in self.sweep.metrics:
                got = [r[m] for r in runs if r[m] is not None and not math.isnan(r[m])]
                item[m] = float(np.mean(got)) if got else None
                item[f"{m}_sd"] = float(np.std(got)) if len(got) > 1 else 0.0
            out.append(item)
        return out


def _measure(sim, species: str, metrics: Sequence[str], steps: int, average: int) -> dict:
    """Step ``steps`` times; the metrics averaged over the last ``average`` steps."""
    samples = {m: [] for m in metrics}
    for i in range(steps):
        sim.step()
        if i >= steps - average:
            stats = sim.metrics()[species]
            for m in metrics:
                if stats[m] is not None:
                    samples[m].append(stats[m])
    return {m: (float(np.mean(v)) if v else None) for m, v in samples.items()}


def run_sweep(sweep: Sweep, csv_path: Optional[Path] = None,
              progress: Optional[Callable[[str], None]] = None) -> SweepResult:
    """Run every (value, seed) of ``sweep``; each finished run is appended to ``csv_path``."""
    _check(sweep)
    result = SweepResult(sweep)
    columns = ["branch", "value", "seed", *sweep.metrics]
    handle = writer = None
    if csv_path is not None:
        csv_path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(csv_path, "w", newline="")
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        handle.flush()
    try:
        for seed in sweep.seeds:
            sim = None
            for branch, value in sweep.schedule():
                assignment = f"{sweep.parameter}={value!r}"
                if sim is None or not sweep.continuation:
                    sim = load_scenario(sweep.scenario, seed=seed, overrides=(*sweep.overrides, assignment),
                                        record_debug=False)
                else:
                    sim.set(assignment)  # the next value, from where the last run ended
                row = {"branch": branch, "value": float(value), "seed": seed,
                       **_measure(sim, sweep.species, sweep.metrics, sweep.steps, sweep.average)}
                result.rows.append(row)
                if writer is not None:
                    writer.writerow(row)
                    handle.flush()
                if progress is not None:
                    shown = ", ".join(f"{m} {row[m]:.3f}" for m in sweep.metrics if row[m] is not None)
                    progress(f"{sweep.parameter} = {value:g} ({branch}), seed {seed}: {shown}")
    finally:
        if handle is not None:
            handle.close()
    return result


def _check(sweep: Sweep) -> None:
    problems = []
    if not sweep.values:
        problems.append(Problem("values", "give at least one value"))
    if sweep.steps < 1:
        problems.append(Problem("steps", "must be at least 1"))
    if not 1 <= sweep.average <= sweep.steps:
        problems.append(Problem("average", f"must be between 1 and steps ({sweep.steps})"))
    if not sweep.seeds:
        problems.append(Problem("seeds", "give at least one seed"))
    unknown = [m for m in sweep.metrics if m not in METRICS]
    if unknown:
        problems.append(Problem("metrics", f"unknown {unknown}; known: {', '.join(METRICS)}"))
    if problems:
        raise ConfigError(problems)
    # the scenario, the parameter and the species, checked on the config before any run is built
    scenario = load_scenario_config(sweep.scenario, (*sweep.overrides, f"{sweep.parameter}={sweep.values[0]!r}"))
    if sweep.parameter not in scenario.parameters:
        raise ConfigError([Problem(sweep.parameter, f"is not a named parameter of {sweep.scenario}")])
    names = [sp.name for sp in scenario.species]
    if sweep.species not in names:
        raise ConfigError([Problem("species", f"{sweep.species!r} is not in {sweep.scenario} ({', '.join(names)})")])


def write_summary(result: SweepResult, path: Path) -> None:
    rows = result.summary()
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def plot(result: SweepResult, path: Path, title: str = "") -> None:
    """Each metric's mean ± spread against the value (up and down branches apart), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = result.sweep
    summary = result.summary()
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    styles = {"up": "-o", "down": "--s"}
    for m in sweep.metrics:
        for branch in ("up", "down"):
            pts = [s for s in summary if s["branch"] == branch and s[m] is not None]
            if not pts:
                continue
            label = m if not sweep.continuation else f"{m} ({'increasing' if branch == 'up' else 'decreasing'})"
            ax.errorbar([s["value"] for s in pts], [s[m] for s in pts], yerr=[s[f"{m}_sd"] for s in pts],
                        fmt=styles[branch], capsize=3, markersize=4, label=label)
    ax.set_xlabel(sweep.parameter)
    ax.set_ylabel("order parameter")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or f"{sweep.scenario}: {', '.join(sweep.metrics)} against {sweep.parameter} "
                          f"({len(sweep.seeds)} seeds)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def with_options(sweep: Sweep, **changes) -> Sweep:
    """``sweep`` with the given fields replaced (None leaves a field as it is)."""
    return replace(sweep, **{k: v for k, v in changes.items() if v is not None})
