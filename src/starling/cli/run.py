"""``starling run``: a scenario headless, summarised, optionally recorded."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import List, Optional

import numpy as np
import typer
from rich.progress import (
    BarColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from ..config import ConfigError
from .common import (
    PLUGIN_HELP,
    THREADS_FROM_HELP,
    LoadingDisplay,
    _apply_threads_from,
    _config_fail,
    _fail,
    _load_plugins,
    _stop_between_steps,
    app,
    err,
    out,
)

ORDER_METRICS = ("polarization", "milling", "groups", "largest_group_fraction")


def _order(stats: dict) -> dict:
    """The collective-motion metrics of one species (periodic-aware, from ``Simulation.metrics``)."""
    return {"polarization": stats["polarization"], "milling": stats["milling"], "groups": stats["groups"],
            "largest_group_fraction": stats["largest_group"]}


def _rounded(values: dict) -> dict:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in values.items()}


def _averaged(samples: list[dict]) -> dict:
    """Mean of each metric over the samples (None where a species had no value)."""
    out: dict = {"steps": len(samples)}
    for key in ORDER_METRICS:
        values = [s[key] for s in samples if s[key] is not None]
        out[key] = float(np.mean(values)) if values else None
    return _rounded(out)


def _summary(sim, scenario_name: str, steps: int, wall: float, step_ms: list[float],
             averages: Optional[dict] = None) -> dict:
    species = {}
    metrics = sim.metrics()
    for name in sim.species:
        stats = metrics[name]
        species[name] = {
            "alive": stats["count"],
            "mean_speed": round(stats["mean_speed"], 4),
            **_rounded(_order(stats)),
            **sim.species_summary(name),
        }
        if averages is not None:
            species[name]["average"] = _averaged(averages[name])
    # populations made by systems (sounds, apples, carcasses, the player): counts only
    entities = {name: stats["count"] for name, stats in metrics.items() if name not in species}
    arr = np.asarray(step_ms) if step_ms else np.zeros(1)
    out = {
        "scenario": scenario_name,
        "steps": steps,
        "seed": sim.scenario.seed,
        "wall_s": round(wall, 4),
        "step_ms": {"median": round(float(np.median(arr)), 4), "p95": round(float(np.percentile(arr, 95)), 4)},
        "species": species,
        "health": sim.health(),
        "backend": sim.backend,
    }
    if sim.backend_note:
        out["backend_note"] = sim.backend_note
    if entities:
        out["entities"] = entities
    return out


@app.command()
def run(
    scenario: str = typer.Argument(..., help="Built-in scenario name or TOML path."),
    steps: Optional[int] = typer.Option(None, "--steps", min=0, help="Steps to run (default: the scenario's)."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, help="Random seed (default: the scenario's)."),
    dt: Optional[float] = typer.Option(None, "--dt", min=1e-6, help="Fixed time step, s (at most the scenario's max_dt)."),
    set_: List[str] = typer.Option([], "--set", help="Override a field (path=value) or a named parameter (NAME=value); repeatable."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON summary object on stdout."),
    average: Optional[int] = typer.Option(None, "--average", min=1, help=(
        "Also report the metrics averaged over the last K steps (species.NAME.average).")),
    record_to: Optional[Path] = typer.Option(None, "--record", help=(
        "Record the run into this Zarr directory (docs/recording.md); it must not exist yet.")),
    every: int = typer.Option(1, "--every", min=1, help="With --record: keep every K-th step."),
    precision: str = typer.Option("float32", "--precision", help="With --record: float32 or float16 arrays."),
    metrics_every: Optional[int] = typer.Option(None, "--metrics-every", min=0, help=(
        "With --record: sample metrics and counters every M steps (default max(10, --every); 0: never).")),
    backend: Optional[str] = typer.Option(None, "--backend", help=(
        "cpu or cuda (an NVIDIA GPU, docs/gpu.md); default: the scenario's. A scene the GPU cannot run says why "
        "and runs on the CPU.")),
    threads_from: Optional[int] = typer.Option(None, "--threads-from", min=0, help=THREADS_FROM_HELP),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Run a scenario headless and summarise it: per species polarization, milling, groups."""
    import warnings

    from ..simulation import load_scenario

    _load_plugins(plugin)
    _apply_threads_from(threads_from)
    if backend is not None:
        if backend not in ("cpu", "cuda"):
            _fail(f"--backend: expected cpu or cuda, got {backend!r}")
        set_ = [*set_, f"backend={backend}"]
    if precision not in ("float32", "float16"):
        _fail(f"--precision: {precision!r} is not float32 or float16")
    if record_to is not None and record_to.exists():
        _fail(f"--record: {record_to} already exists; choose a new path (a recording is never overwritten)")
    try:
        with warnings.catch_warnings():  # the CPU fallback's reason is printed below, once
            warnings.simplefilter("ignore", RuntimeWarning)
            sim = load_scenario(scenario, seed=seed, dt=dt, overrides=set_, record_debug=False)
    except ConfigError as e:
        _config_fail(e)
    if sim.backend_note:
        err.print(sim.backend_note, highlight=False)
    total = sim.scenario.steps if steps is None else steps
    if average is not None and average > total:
        _fail(f"--average: {average} steps is more than the {total} steps run; lower it or raise --steps")
    recorder = None
    if record_to is not None:
        from ..recording import Recorder

        try:
            recorder = Recorder(sim, record_to, every=every, precision=precision, metrics_every=metrics_every,
                                scenario_name=scenario)
        except OSError as e:
            _fail(f"--record: cannot write {record_to}: {e.strerror or e}")
    samples: Optional[dict] = None if average is None else {name: [] for name in sim.species}
    step_ms: list[float] = []
    t0 = time.perf_counter()
    interrupted = False
    done = 0
    try:
        with _stop_between_steps() as stop:
            # the first step compiles the kernels a cold cache lacks: when that takes over a second
            # its parts are shown as they go (one live display at a time: before the run's bar)
            first = 0
            if total:
                from ..prepare import prepare

                prepare(sim, on_progress=LoadingDisplay(err, delay=1.0), in_place=True)
                first = done = 1
                step_ms.append(sim.last_step_ms)
                if samples is not None and total - average <= 0:
                    metrics = sim.metrics()
                    for name in samples:
                        samples[name].append(_order(metrics[name]))
            with Progress(
                    TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=as_json,
                    disable=not err.is_terminal and as_json) as progress:
                task = progress.add_task(sim.scenario.name, total=total, completed=first)
                for i in range(first, total):
                    if stop.requested or sim.outcome is not None:  # [[stop]] may decide at the first step
                        break
                    sim.step(sync=False)  # on a GPU the host copy is refreshed when read (metrics, the summary)
                    done += 1
                    step_ms.append(sim.last_step_ms)
                    if samples is not None and i >= total - average:
                        metrics = sim.metrics()
                        for name in samples:
                            samples[name].append(_order(metrics[name]))
                    progress.advance(task)
            interrupted = stop.requested
    except KeyboardInterrupt:  # a second Ctrl-C: mid-step, so the recording keeps its last whole block
        interrupted = True
    if interrupted:
        if recorder is not None:
            recorder.close()
            err.print(f"interrupted at step {sim.step_count}: {record_to} holds {recorder.frames} frames "
                      "and is complete", highlight=False)
        else:
            err.print(f"interrupted at step {sim.step_count}", highlight=False)
        raise typer.Exit(130)
    if recorder is not None:
        recorder.close()
    wall = time.perf_counter() - t0
    summary = _summary(sim, sim.scenario.name, done, wall, step_ms, samples)
    if sim.scenario.stop:
        summary["outcome"] = None if sim.outcome is None else sim.outcome["outcome"]
        summary["stopped_at_s"] = None if sim.outcome is None else round(sim.outcome["time"], 4)
    if recorder is not None:
        summary["recording"] = {"path": str(record_to), "frames": recorder.frames, "every": every,
                                "precision": precision}
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
        return
    table = Table("species", "alive", "mean speed", "polarization", "milling", "groups", "largest group", box=None)
    for name, s in summary["species"].items():
        largest = s["largest_group_fraction"]
        table.add_row(name, str(s["alive"]), f"{s['mean_speed']:.2f} m/s", f"{s['polarization']:.3f}",
                      f"{s['milling']:.3f}", str(s["groups"] if s["groups"] is not None else "–"),
                      f"{largest:.0%}" if largest is not None else "–")
        if "average" in s:
            a = s["average"]
            table.add_row(f"  mean of {a['steps']}", "", "", f"{a['polarization']:.3f}", f"{a['milling']:.3f}",
                          f"{a['groups']:.1f}" if a["groups"] is not None else "–",
                          f"{a['largest_group_fraction']:.0%}" if a["largest_group_fraction"] is not None else "–")
    out.print(table)
    if sim.scenario.stop:
        decided = (f"outcome {summary['outcome']!r} at {summary['stopped_at_s']:g} s" if sim.outcome is not None
                   else "no stop condition held")
        out.print(f"{decided} (the scenario's [[stop]])", highlight=False)
    out.print(f"{done} steps in {wall:.2f} s — step median {summary['step_ms']['median']:.3f} ms, "
              f"p95 {summary['step_ms']['p95']:.3f} ms; health {summary['health']}", highlight=False)
    if recorder is not None:
        out.print(f"recorded {recorder.frames} frames into {record_to}", highlight=False)
