"""The ``starling`` command line: a thin layer over the Python API.

Every error a user can cause (a bad scenario, a bad ``--set``, a bad option) ends in
one clear message and exit status 2, never a traceback.
"""
from __future__ import annotations

import contextlib
import json
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import List, Optional

import numpy as np
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from .config import ConfigError, json_schema, read_scenario_data, scenario_names, validate_scenario
from .config.io import parameter_value, toml_value

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Starling: realtime simulation of animal flocking and small ecosystems.",
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)
out = Console()


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


#: ``--plugin`` on every command: modules whose behaviours, movers, … the scenario may name
PLUGIN_HELP = "Load a module first (dotted name from the working directory, or a .py file); repeatable."


class _StopRequest:
    """Ctrl-C or SIGTERM asks a run to stop after the step it is in; a second one stops it at once."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True


@contextlib.contextmanager
def _stop_between_steps():
    """Install :class:`_StopRequest` for SIGINT and SIGTERM (a scheduler's stop) while a run goes."""
    stop = _StopRequest()
    try:
        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread (a test runner's worker): Ctrl-C stays an exception
        yield stop
        return
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _load_plugins(specs: List[str]) -> None:
    from .plugins import PluginError, load_plugin

    for spec in specs:
        try:
            load_plugin(spec)
        except PluginError as e:
            _fail(str(e))


def _config_fail(e: ConfigError) -> None:
    for line in e.format().splitlines():
        err.print(line, highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(2)


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
        out.print("no named parameters; set any field by its path (--set species.0.count=500)", markup=False)
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


@app.command()
def schema(plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP)) -> None:
    """Print the JSON Schema of scenario files (every registered behaviour and mover)."""
    _load_plugins(plugin)
    sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")


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
    }
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
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Run a scenario headless and summarise it: per species polarization, milling, groups."""
    from .simulation import load_scenario

    _load_plugins(plugin)
    if precision not in ("float32", "float16"):
        _fail(f"--precision: {precision!r} is not float32 or float16")
    if record_to is not None and record_to.exists():
        _fail(f"--record: {record_to} already exists; choose a new path (a recording is never overwritten)")
    try:
        sim = load_scenario(scenario, seed=seed, dt=dt, overrides=set_, record_debug=False)
    except ConfigError as e:
        _config_fail(e)
    total = sim.scenario.steps if steps is None else steps
    if average is not None and average > total:
        _fail(f"--average: {average} steps is more than the {total} steps run; lower it or raise --steps")
    recorder = None
    if record_to is not None:
        from .recording import Recorder

        try:
            recorder = Recorder(sim, record_to, every=every, precision=precision, metrics_every=metrics_every,
                                scenario_name=scenario)
        except OSError as e:
            _fail(f"--record: cannot write {record_to}: {e.strerror or e}")
    samples: Optional[dict] = None if average is None else {name: [] for name in sim.species}
    step_ms: list[float] = []
    t0 = time.perf_counter()
    interrupted = False
    try:
        with _stop_between_steps() as stop, Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=as_json,
                disable=not err.is_terminal and as_json) as progress:
            task = progress.add_task(sim.scenario.name, total=total)
            for i in range(total):
                if stop.requested:
                    break
                sim.step()
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
    summary = _summary(sim, sim.scenario.name, total, wall, step_ms, samples)
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
    out.print(f"{total} steps in {wall:.2f} s — step median {summary['step_ms']['median']:.3f} ms, "
              f"p95 {summary['step_ms']['p95']:.3f} ms; health {summary['health']}", highlight=False)
    if recorder is not None:
        out.print(f"recorded {recorder.frames} frames into {record_to}", highlight=False)


@app.command()
def experiment(
    name: str = typer.Argument(..., help="Experiment: vicsek or couzin (starling.experiments.catalogue)."),
    values: Optional[str] = typer.Option(None, "--values", help="Comma-separated parameter values (default: the experiment's)."),
    seeds: Optional[int] = typer.Option(None, "--seeds", min=1, help="Seeds per value: 1..N (default 3)."),
    steps: Optional[int] = typer.Option(None, "--steps", min=1, help="Steps per run."),
    average: Optional[int] = typer.Option(None, "--average", min=1, help="Final steps the metrics are averaged over."),
    set_: List[str] = typer.Option([], "--set", help="Override a field or named parameter of every run; repeatable."),
    out_dir: Path = typer.Option(Path("experiments"), "--out", help="Folder for NAME.csv, NAME_summary.csv, NAME.png."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Run a published experiment: a sweep of a named parameter, with CSV, summary and plot."""
    from .experiments.catalogue import EXPERIMENTS
    from .experiments.sweeps import plot, run_sweep, with_options, write_summary

    _load_plugins(plugin)
    if name not in EXPERIMENTS:
        _fail(f"experiment: unknown {name!r}; known: {', '.join(sorted(EXPERIMENTS))}")
    sweep = with_options(
        EXPERIMENTS[name],
        values=tuple(_number_list(values, "--values")) if values is not None else None,
        seeds=tuple(range(1, seeds + 1)) if seeds is not None else None,
        steps=steps, average=average, overrides=tuple(set_) or None)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows_path = out_dir / f"{name}.csv"
    try:
        result = run_sweep(sweep, rows_path, progress=None if as_json else (lambda line: err.print(line, highlight=False)))
    except ConfigError as e:
        _config_fail(e)
    write_summary(result, out_dir / f"{name}_summary.csv")
    plot(result, out_dir / f"{name}.png", title=sweep.description)
    summary = result.summary()
    if as_json:
        sys.stdout.write(json.dumps({"experiment": name, "parameter": sweep.parameter, "summary": summary}) + "\n")
        return
    table = Table(box=None)
    for column in ("branch", sweep.parameter, *[f"{m} (mean ± sd)" for m in sweep.metrics]):
        table.add_column(column)
    for s in summary:
        table.add_row(s["branch"], f"{s['value']:g}", *[
            f"{s[m]:.3f} ± {s[m + '_sd']:.3f}" if s[m] is not None else "–" for m in sweep.metrics])
    out.print(table)
    out.print(f"rows {rows_path}, summary {out_dir / (name + '_summary.csv')}, plot {out_dir / (name + '.png')}",
              highlight=False)


@app.command()
def sweep(
    file: Path = typer.Argument(..., help="Sweep file (TOML): scenario, parameters, design, replicates, metrics."),
    backend: str = typer.Option("local", "--backend", help="local (worker processes here) or ray."),
    address: Optional[str] = typer.Option(None, "--address", help="--backend ray: a running cluster "
                                          "(host:port of `ray start --head`); default: start Ray here."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="Worker processes (local; default 1) "
                                          "or CPUs for a Ray started here (default: all)."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Output folder (default sweeps/FILE-STEM)."),
    resume: bool = typer.Option(False, "--resume", help="Finish an interrupted sweep: run only what --out lacks."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (counts, paths, summary)."),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Run a sweep file: every parameter set × replicate, locally or on Ray; Parquet rows, summary, plots."""
    from .experiments.backends import make_backend
    from .experiments.driver import run_sweep_file
    from .experiments.sweep_file import load_sweep

    _load_plugins(plugin)
    if backend not in ("local", "ray"):
        _fail(f"--backend: {backend!r} is not local or ray")
    if address is not None and backend != "ray":
        _fail("--address: only with --backend ray")
    try:
        plan = load_sweep(file)
    except ConfigError as e:
        _config_fail(e)
    target = out_dir or Path("sweeps") / file.stem
    counts = {"ok": 0, "failed": 0}
    state: dict = {}
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=err, transient=as_json, disable=not err.is_terminal and as_json) as progress:

        def on_start(total: int, done: int) -> None:
            state["task"] = progress.add_task(file.stem, total=total, completed=done, failed=0)
            state["total"], state["skipped"] = total, done

        def on_row(row: dict) -> None:
            counts["ok" if row["status"] == "ok" else "failed"] += 1
            progress.update(state["task"], advance=1, failed=counts["failed"])
            if row["status"] != "ok" and not as_json:
                progress.console.print(f"run {row['index']} (seed {row['seed']}) failed: {row['error']}",
                                       highlight=False, markup=False)

        t0 = time.perf_counter()
        try:
            output, summary = run_sweep_file(plan, make_backend(backend, workers, address), target, resume=resume,
                                             on_start=on_start, on_row=on_row)
        except ConfigError as e:
            _config_fail(e)
        except KeyboardInterrupt:
            err.print(f"interrupted: {counts['ok'] + counts['failed']} runs kept in {target}; "
                      "--resume runs the rest", highlight=False)
            raise typer.Exit(130)
        except ConnectionError as e:
            _fail(f"--address: cannot reach the Ray cluster at {address}: {e}")
    wall = time.perf_counter() - t0
    result = {"sweep": str(file), "backend": backend, "runs": state.get("total", 0), "skipped": state.get("skipped", 0),
              "ok": counts["ok"], "failed": counts["failed"], "wall_s": round(wall, 3), "out": str(target),
              "summary": summary}
    if as_json:
        sys.stdout.write(json.dumps(result) + "\n")
        return
    params = list(plan.spec.parameters)
    columns = plan.columns()
    table = Table(*params, "runs", *columns, box=None)
    for s in summary:
        cells = []
        for c in columns:
            mean, low, high = s[f"{c}.mean"], s[f"{c}.ci_low"], s[f"{c}.ci_high"]
            cells.append("–" if mean is None else f"{mean:.3g}" + ("" if low is None else f" ± {(high - low) / 2:.2g}"))
        table.add_row(*[f"{s[p]:g}" if isinstance(s[p], (int, float)) else str(s[p]) for p in params],
                      f"{s['runs'] - s['failed']}/{s['runs']}", *cells)
    out.print(table)
    out.print(f"{counts['ok']} runs ok, {counts['failed']} failed"
              + (f", {state['skipped']} already done" if state.get("skipped") else "")
              + f" in {wall:.1f} s; results in {target}", highlight=False)


DEFAULT_SCENE_ORDER = ("meadow", "lagoon", "pasture", "pond", "flock")


def default_scene() -> str:
    """The richest built-in scene available (the app's default)."""
    names = scenario_names()
    return next((n for n in DEFAULT_SCENE_ORDER if n in names), names[0])


@app.command()
def serve(
    scenario: Optional[str] = typer.Argument(None, help="Scenario name or path (default: the richest built-in)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (127.0.0.1 keeps it on this machine)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    no_browser: bool = typer.Option(False, "--no-browser", help="Do not open a browser."),
    realtime: bool = typer.Option(True, "--realtime/--fast", help="Pace to real time, or run as fast as possible."),
    set_: List[str] = typer.Option([], "--set", help="Override a field (path=value) or a named parameter (NAME=value); repeatable."),
    record_to: Optional[Path] = typer.Option(None, "--record", help=(
        "Record the live session into this Zarr directory, edits and player actions included; "
        "another scenario loaded in the app goes to NAME-2.zarr, NAME-3.zarr, …")),
    every: int = typer.Option(1, "--every", min=1, help="With --record: keep every K-th step."),
    precision: str = typer.Option("float32", "--precision", help="With --record: float32 or float16 arrays."),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Run the live app: the simulation streamed to a 3D view in the browser."""
    from .config import load_scenario_config
    from .server import serve as run_server

    _load_plugins(plugin)
    name = scenario or default_scene()
    try:
        load_scenario_config(name, set_)  # fail fast, with the field named, before binding a port
    except ConfigError as e:
        _config_fail(e)
    recorder = None
    if record_to is not None:
        if precision not in ("float32", "float16"):
            _fail(f"--precision: {precision!r} is not float32 or float16")
        if record_to.exists():
            _fail(f"--record: {record_to} already exists; choose a new path (a recording is never overwritten)")
        recorder = _session_recorder(record_to, every, precision)
    try:
        run_server(name, host=host, port=port, open_browser=not no_browser, realtime=realtime, overrides=set_,
                   recorder=recorder)
    except OSError as e:
        _fail(f"cannot listen on {host}:{port}: {e.strerror or e}")


def _session_recorder(path: Path, every: int, precision: str):
    """What the live server calls for each scenario it loads: a recorder to the next free path."""
    from .recording import Recorder

    taken = [0]

    def start(sim, name: str):
        while True:
            taken[0] += 1
            target = path if taken[0] == 1 else path.with_name(f"{path.stem}-{taken[0]}{path.suffix}")
            if not target.exists():
                break
        recorder = Recorder(sim, target, every=every, precision=precision, scenario_name=name, flush_seconds=2.0)
        err.print(f"recording '{name}' into {target}", highlight=False)
        return recorder

    return start


@app.command()
def demo(
    scenario: Optional[str] = typer.Argument(None, help="Scenario (default: the richest built-in)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535),
    no_browser: bool = typer.Option(False, "--no-browser"),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """The main job: the live app on the default scene (what `make demo` runs)."""
    serve(scenario, host="127.0.0.1", port=port, no_browser=no_browser, realtime=True, set_=[], record_to=None, every=1,
          precision="float32", plugin=plugin)


@app.command()
def replay(
    file: str = typer.Argument(..., help="A recording written by `starling run --record FILE`."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (127.0.0.1 keeps it on this machine)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    no_browser: bool = typer.Option(False, "--no-browser", help="Do not open a browser."),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Replay a recording in the app: scrub, play, change speed, jump between events."""
    from .config import validate_scenario
    from .recording import RecordingError, open_recording
    from .server import serve_replay

    _load_plugins(plugin)
    try:
        rec = open_recording(file)
        rec.frame(0), rec.frame(len(rec) - 1)  # a damaged first or last block is refused now, not mid-replay
    except RecordingError as e:
        _fail(str(e))
    try:  # the scene is rebuilt from the recorded config: check it before binding a port
        validate_scenario(dict(rec.config), str(rec.scenario))
    except ConfigError as e:
        _config_fail(e)
    try:
        serve_replay(rec, Path(file).name, host=host, port=port, open_browser=not no_browser)
    except OSError as e:
        _fail(f"cannot listen on {host}:{port}: {e.strerror or e}")


@app.command()
def warm(
    scenarios: Optional[List[str]] = typer.Argument(None, help="Scenario names or TOML paths (default: every built-in)."),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Compile the kernels of every built-in scenario (or the named ones) into the kernel cache, so that
    later runs and the live app start at once (`make setup` runs it)."""
    from . import warm as warming
    from .kernel_cache import cache_dir

    _load_plugins(plugin)
    try:
        names = warming.check_names(scenarios or [])
    except ConfigError as e:
        _config_fail(e)
    t0 = time.perf_counter()
    done: list = []
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("kernel cache", total=len(names))
        current = [""]

        def on_start(name: str) -> None:
            current[0] = name
            progress.update(task, description=f"warming {name}")

        def on_kernel(kernel: str) -> None:
            progress.update(task, description=f"warming {current[0]}: compiling {kernel}")

        def on_done(result) -> None:
            done.append(result)
            progress.advance(task)
            if result.compiled:  # one line per scenario that needed compiling (kept in logs without a terminal)
                progress.console.print(f"{result.scenario}: compiled {result.compiled} kernels in "
                                       f"{result.seconds:.1f} s", highlight=False)

        try:
            warming.warm(names, on_start=on_start, on_kernel=on_kernel if err.is_terminal else None,
                         on_done=on_done)
        except ConfigError as e:
            progress.stop()
            _config_fail(e)
    compiled = sum(r.compiled for r in done)
    where = cache_dir() or "__pycache__ beside the sources"
    if compiled:
        err.print(f"kernel cache warmed: {compiled} kernels compiled for {len(done)} scenarios in "
                  f"{time.perf_counter() - t0:.1f} s ({where})", highlight=False)
    else:
        err.print(f"kernel cache already warm: {', '.join(names)} ({time.perf_counter() - t0:.1f} s)",
                  highlight=False)


def _int_list(text: str, name: str) -> list[int]:
    try:
        values = [int(float(x)) for x in text.split(",") if x.strip()]
    except ValueError:
        _fail(f"{name}: expected comma-separated numbers, got {text!r}")
    if not values or min(values) < 1:
        _fail(f"{name}: expected positive numbers, got {text!r}")
    return values


def _number_list(text: str, name: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values:
        _fail(f"{name}: expected comma-separated numbers, got {text!r}")
    return values


def _float_list(text: str, name: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        _fail(f"{name}: expected comma-separated numbers, got {text!r}")
    if not values or min(values) <= 0:
        _fail(f"{name}: expected positive numbers, got {text!r}")
    return values


@app.command()
def bench(
    sizes: Optional[str] = typer.Option(None, "--sizes", help="Animal counts, comma-separated (default "
                                        "1000,10000,100000; with --scenario: the largest species' counts)."),
    query: Optional[str] = typer.Option(None, "--query", help="Neighbour search: a registered method (built in: "
                                        "grid, kdtree, brute, all_pairs); with --scenario it replaces every group's."),
    density: float = typer.Option(0.01, "--density", min=1e-9, help="Animals per m³."),
    radius: float = typer.Option(5.0, "--radius", min=1e-6, help="Vision radius, m."),
    k: int = typer.Option(5, "--k", min=1, max=256, help="Neighbours per animal."),
    fov: float = typer.Option(270.0, "--fov", min=1e-3, max=360.0, help="Field of view, degrees."),
    density_sweep: Optional[str] = typer.Option(None, "--density-sweep", help="Densities to sweep at the first size (thesis 9.6.1)."),
    k_sweep: Optional[str] = typer.Option(None, "--k-sweep", help="k values to sweep at the first size (thesis 9.6.1)."),
    budget: float = typer.Option(3.0, "--budget", min=0.1, help="Seconds of timed steps per size (roughly)."),
    rays: bool = typer.Option(False, "--rays", help="Measure ray casts on the pasture instead (seed 000, 7.1)."),
    animals: int = typer.Option(100_000, "--animals", min=1, help="--rays: animals on the pasture."),
    rays_per_animal: int = typer.Option(8, "--rays-per-animal", min=1, max=4096, help="--rays: rays per animal."),
    obstacles: int = typer.Option(500, "--obstacles", min=0, help="--rays: trees and rocks on the pasture."),
    repeats: int = typer.Option(15, "--repeats", min=1, help="--rays: timed steps after the warm-up."),
    scenario: Optional[str] = typer.Option(None, "--scenario", help="Measure a whole scenario's step instead "
                                           "(built-in name or TOML): step medians, kernel share, phases, reconfigure."),
    steps: int = typer.Option(300, "--steps", min=1, help="--scenario: timed steps after the warm-up."),
    set_: List[str] = typer.Option([], "--set", help="--scenario: override a field (path=value) or a named parameter (NAME=value); repeatable."),
    record: Optional[str] = typer.Option(None, "--record", help="--scenario: measure what recording at this "
                                         "precision (float32 or float16) adds to the step."),
    record_every: int = typer.Option(1, "--record-every", min=1, help="--record: keep every K-th step."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Measure step and query times of the flocking pipeline, ray casts with --rays, or a whole
    scenario with --scenario (medians after warm-up)."""
    from .bench import bench_rays, bench_size

    _load_plugins(plugin)
    if query is not None:
        from .steering import registry

        methods = sorted(q.name for q in registry.queries())
        if query not in methods:
            _fail(f"--query: expected one of {', '.join(methods)}, got {query!r}")
    if record is not None and scenario is None:
        _fail("--record: measures a scenario's recording cost; give --scenario NAME too")
    if scenario is not None and record is not None:
        if record not in ("float32", "float16"):
            _fail(f"--record: {record!r} is not float32 or float16")
        from .recording.bench import bench_recording

        try:
            r = bench_recording(scenario, steps=steps, precision=record, every=record_every,
                                overrides=tuple(set_))
        except ConfigError as e:
            _config_fail(e)
        if as_json:
            sys.stdout.write(json.dumps(r) + "\n")
            return
        out.print(f"{r['scenario']}: {r['animals']}, recording {r['precision']} every {r['every']} step(s)",
                  highlight=False)
        out.print(f"mean step {r['step_ms']:.3f} ms plain, {r['recorded_step_ms']:.3f} ms recorded: "
                  f"{100 * r['overhead']:+.1f} %; {r['bytes_per_frame'] / 1e3:.1f} kB a frame "
                  f"({r['bytes_per_animal_frame']:.2f} B an animal)", highlight=False)
        return
    if scenario is not None:
        from .bench_scenario import bench_named_scenario, bench_scenario_sizes, scenario_overrides

        if sizes is not None:
            ns = _int_list(sizes, "--sizes")
            try:
                r = bench_scenario_sizes(scenario, ns, query=query, steps=steps, budget_s=budget,
                                         overrides=tuple(set_))
            except ConfigError as e:
                _config_fail(e)
            if as_json:
                sys.stdout.write(json.dumps(r) + "\n")
                return
            out.print(f"{r['scenario']}: {r['species']} at each size, query {r['query']}, "
                      f"{r['threads']} threads", highlight=False)
            table = Table("n", "step median ms", "step p95 ms", "steps", "pairs (n²)", "most neighbours",
                          "overflow", box=None)
            for x in r["results"]:
                table.add_row(str(x["n"]), f"{x['step_ms']['median']:.3f}", f"{x['step_ms']['p95']:.3f}",
                              str(x["step_ms"]["samples"]), f"{x['pairs']:,}", str(x["max_neighbors"]),
                              str(x["overflow"]))
            out.print(table)
            return
        try:
            extra = scenario_overrides(scenario, query=query, overrides=tuple(set_))
            r = bench_named_scenario(scenario, steps=steps, overrides=extra)
        except ConfigError as e:
            _config_fail(e)
        if as_json:
            sys.stdout.write(json.dumps(r) + "\n")
            return
        out.print(f"{r['scenario']}: {r['animals']}", highlight=False)
        out.print(f"step median {r['step_ms']['median']:.3f} ms, p95 {r['step_ms']['p95']:.3f} ms; "
                  f"{100 * r['kernel_share']:.0f} % in kernels ({r['kernel_calls_per_step']} calls a step)",
                  highlight=False)
        table = Table("phase", "ms / step", box=None)
        for phase, ms in r["phase_ms"].items():
            table.add_row(phase, f"{ms:.3f}")
        out.print(table)
        if r["reconfigure_ms"]:
            rc = r["reconfigure_ms"]
            out.print(f"reconfigure (one parameter of {rc['animals']} {rc['species']}): "
                      f"median {rc['median']:.2f} ms", highlight=False)
        return
    if rays:
        if not as_json:
            err.print(f"bench rays: {animals} animals x {rays_per_animal} rays, {obstacles} obstacles …",
                      highlight=False)
        r = bench_rays(animals, rays_per_animal, obstacles, repeats=repeats)
        if as_json:
            sys.stdout.write(json.dumps(r) + "\n")
            return
        table = Table("rays", "step median ms", "step p95 ms", "cast ms", "generate ms", "rays/s",
                      "serial rays/CPU-s", "threads", box=None)
        table.add_row(str(r["rays"]), f"{r['step_ms']['median']:.2f}", f"{r['step_ms']['p95']:.2f}",
                      f"{r['cast_ms']['median']:.2f}", f"{r['generate_ms']['median']:.2f}", f"{r['rays_per_s']:,}",
                      f"{r['serial_rays_per_cpu_s']:,}", str(r["threads"]))
        out.print(table)
        return
    query = query or "grid"
    ns = _int_list(sizes or "1000,10000,100000", "--sizes")
    runs = []
    if density_sweep:
        for rho in _float_list(density_sweep, "--density-sweep"):
            runs.append(("density", rho, dict(n=ns[0], density=rho, k=k)))
    if k_sweep:
        for kk in _int_list(k_sweep, "--k-sweep"):
            runs.append(("k", kk, dict(n=ns[0], density=density, k=kk)))
    if not runs:
        runs = [("n", n, dict(n=n, density=density, k=k)) for n in ns]
    results = []
    for label, value, kw in runs:
        if not as_json:
            err.print(f"bench {label}={value} …", highlight=False)
        r = bench_size(kw["n"], density=kw["density"], radius=radius, k=kw["k"], fov_deg=fov, method=query,
                       budget_s=budget)
        r.update(density=kw["density"], k=kw["k"])
        results.append(r)
    import numba

    report = {"query": query, "radius": radius, "fov_deg": fov, "threads": numba.get_num_threads(),
              "results": results}
    if as_json:
        sys.stdout.write(json.dumps(report) + "\n")
        return
    table = Table("n", "density", "k", "step median ms", "step p95 ms", "query ms", "profile (median ms)", box=None)
    for r in results:
        prof = ", ".join(f"{a} {b:.3f}" for a, b in r["profile_ms"].items())
        table.add_row(str(r["n"]), f"{r['density']:g}", str(r["k"]), f"{r['step_ms']['median']:.3f}",
                      f"{r['step_ms']['p95']:.3f}", f"{r['query_ms']['median']:.3f}", prof)
    out.print(table)


def _open_recording(path: Path):
    """The recording at ``path``, or exit 2 with the reader's one-line reason (it names the file)."""
    from .recording import RecordingError, open_recording

    try:
        return open_recording(path)
    except RecordingError as e:
        _fail(str(e))


@app.command()
def metrics(
    file: Path = typer.Argument(..., help="A recording (the directory `starling run --record` wrote)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Summarise a recording: per species every metric's final value and mean over the run, population,
    deaths by cause, catches, time to first catch and brain-state shares at the end."""
    from .recording import RecordingError
    from rich.text import Text

    from .recording.summary import metrics_table, run_text, species_table, states_text, summarize

    rec = _open_recording(file)
    try:
        summary = summarize(rec)
    except RecordingError as e:
        _fail(str(e))
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
        return
    out.print(run_text(summary), highlight=False, markup=False, soft_wrap=True)

    def print_table(header: list[str], rows: list[list[str]]) -> None:
        table = Table(*header, box=None)
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))  # names and causes are text, never markup
        out.print(table)

    print_table(*species_table(summary))
    for name, s in summary["species"].items():
        if s["occupancy"]:
            out.print(f"{name} states at the end: {states_text(s)}", highlight=False, markup=False)
    header, rows = metrics_table(summary)
    if rows:
        print_table(header, rows)
    else:
        out.print("no metric samples (recorded with --metrics-every 0)", highlight=False)
    if summary["entities"]:
        out.print("other populations at the end: " + ", ".join(
            f"{k} {v['final']}" for k, v in summary["entities"].items()), highlight=False, markup=False)


@app.command()
def report(
    file: Path = typer.Argument(..., help="A recording (the directory `starling run --record` wrote)."),
    out_dir: Path = typer.Option(..., "--out", help="Folder for index.html and the plots (created if missing)."),
) -> None:
    """Write an HTML report of a recording: order parameters, nearest-neighbour histogram, groups,
    population and deaths, brain states and a top view of trajectories (DIR/index.html)."""
    from .recording import RecordingError
    from .recording.report import write_report

    rec = _open_recording(file)
    if out_dir.exists() and not out_dir.is_dir():
        _fail(f"--out: {out_dir} is a file, not a folder")
    try:
        views = write_report(rec, out_dir)
    except RecordingError as e:
        _fail(str(e))
    except OSError as e:
        _fail(f"--out: cannot write {out_dir}: {e.strerror or e}")
    drawn = [k for k, why in views.items() if why is None]
    out.print(f"wrote {out_dir / 'index.html'} with {len(drawn)} plots ({', '.join(drawn) or 'none'})",
              highlight=False, soft_wrap=True)
    for name, why in views.items():
        if why is not None:
            out.print(f"  {name}: not drawn, {why}", highlight=False, soft_wrap=True)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
