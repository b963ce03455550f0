"""``starling experiment`` (a published curve) and ``starling sweep`` (a sweep file, locally or on Ray)."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import List, Optional

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
    _config_fail,
    _fail,
    _load_plugins,
    _number_list,
    app,
    err,
    out,
)


@app.command()
def experiment(
    name: str = typer.Argument(..., help="Experiment: vicsek, couzin or savannah (starling.experiments.catalogue)."),
    values: Optional[str] = typer.Option(None, "--values", help="Comma-separated parameter values (default: the experiment's)."),
    seeds: Optional[int] = typer.Option(None, "--seeds", min=1, help="Seeds per value: 1..N (default 3)."),
    steps: Optional[int] = typer.Option(None, "--steps", min=1, help="Steps per run."),
    average: Optional[int] = typer.Option(None, "--average", min=1, help="Final steps the metrics are averaged over."),
    set_: List[str] = typer.Option([], "--set", help="Override a field or named parameter of every run; repeatable."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Folder for NAME.csv, NAME_summary.csv, NAME.png "
                                           "(default experiments; savannah: experiments/savannah)."),
    runs_per_setup: int = typer.Option(50, "--runs-per-setup", min=1, help="savannah: runs of each of the six "
                                       "setups (the thesis: 50)."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="savannah: local worker processes "
                                          "(default: one per CPU)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Run a published experiment: a sweep of a named parameter (CSV, summary, plot), or the
    savannah's predation table (Collado 2013, Table 5.1)."""
    from ..experiments.catalogue import EXPERIMENTS, PROTOCOLS
    from ..experiments.sweeps import plot, run_sweep, with_options, write_summary

    _load_plugins(plugin)
    _fork_workers_here()
    if name == "savannah":
        unused = [flag for flag, given in (("--values", values), ("--seeds", seeds), ("--average", average))
                  if given is not None]
        if unused:
            _fail(f"experiment savannah: {', '.join(unused)} do not apply (its setups are fixed; runs per setup: "
                  "--runs-per-setup, seeds 1..N)")
        _savannah(runs_per_setup, workers, out_dir or Path("experiments") / "savannah", as_json, tuple(set_),
                  steps)
        return
    if name not in EXPERIMENTS:
        _fail(f"experiment: unknown {name!r}; known: {', '.join(sorted([*EXPERIMENTS, *PROTOCOLS]))}")
    out_dir = out_dir or Path("experiments")
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


#: set by the console script (``cli.main``), whose process runs this one command; not by a
#: program that invokes the app in its own process (a test's CliRunner), which goes on after it
OWN_PROCESS = False


def _auth_hint(message: str) -> str:
    """Why a cluster that listens may still refuse this sweep: Ray 2.59+ starts clusters with token
    authentication, and a client sends its token only under RAY_AUTH_MODE=token (Ray's own error
    says only that it failed to connect, after half a minute of retries)."""
    if message.startswith("nothing answers") or os.environ.get("RAY_AUTH_MODE", "") == "token":
        return ""
    return ("; if the cluster uses token authentication (what `ray start` does since Ray 2.59), "
            "set RAY_AUTH_MODE=token here too, with its token in ~/.ray/auth_token or RAY_AUTH_TOKEN")


def _fork_workers_here() -> None:
    """This process only sweeps: its local workers may fork from it (no second import of Starling)."""
    from ..experiments.backends import LocalBackend

    if OWN_PROCESS:
        LocalBackend.fork_from_driver = True


def _savannah(runs_per_setup: int, workers: Optional[int], out_dir: Path, as_json: bool,
              overrides: tuple[str, ...] = (), steps: Optional[int] = None) -> None:
    """The savannah's 6 setups × ``runs_per_setup`` runs with a progress bar, then the thesis' tables."""
    from ..experiments import savannah

    state: dict = {}
    with Progress(TextColumn("[bold]savannah"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TextColumn("{task.fields[caught]} caught"), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=err, transient=as_json, disable=not err.is_terminal and as_json) as progress:

        def on_start(total: int, done: int) -> None:
            state["task"] = progress.add_task("savannah", total=total, completed=done, caught=0)
            state["caught"] = 0

        def on_row(row: dict) -> None:
            state["caught"] += row.get("outcome") == "caught"
            progress.update(state["task"], advance=1, caught=state["caught"])

        try:
            result = savannah.run(runs_per_setup, workers, out_dir, on_start=on_start, on_row=on_row,
                                  overrides=overrides, **({} if steps is None else {"steps": steps}))
        except ConfigError as e:
            _config_fail(e)
    result["files"] = savannah.write_outputs(result, out_dir)
    if as_json:
        sys.stdout.write(json.dumps({"experiment": "savannah", **result}) + "\n")
        return

    def pct(x):
        return "–" if x is None else f"{x:.2f}"

    for title, lines in (("Table 5.1: per setup", result["setups"]), ("Table 5.2: per number of lions", result["by_lions"]),
                         ("Table 5.3: pack against alone", result["strategy"]),
                         ("Table 5.4: per herd size", result["by_herd"]), ("Total", [result["total"]])):
        table = Table("setup", "success", "fail", "runs", "rate", "95 % (Wilson)", "published", title=title, box=None)
        for line in lines:
            table.add_row(line["setup"], str(line["successes"]), str(line["failures"]), str(line["runs"]),
                          pct(line["rate"]), f"{pct(line['ci_low'])}–{pct(line['ci_high'])}",
                          f"{line['published_successes']}/{line['published_runs']} = {line['published_rate']:.2f}")
        out.print(table)
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(result["outcomes"].items()))
    out.print(f"outcomes: {outcomes}; files: {', '.join(result['files'].values())}", highlight=False)


@app.command()
def sweep(
    file: Path = typer.Argument(..., help="Sweep file (TOML): scenario, parameters, design, replicates, metrics."),
    backend: str = typer.Option("local", "--backend", help="local (worker processes here) or ray."),
    address: Optional[str] = typer.Option(None, "--address", help="--backend ray: a running cluster "
                                          "(host:port of `ray start --head`); default: start Ray here."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="Worker processes (local; default: one per CPU) "
                                          "or CPUs for a Ray started here (default: all)."),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="Output folder (default sweeps/FILE-STEM)."),
    resume: bool = typer.Option(False, "--resume", help="Finish an interrupted sweep: run only what --out lacks."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (counts, paths, summary)."),
    plots: bool = typer.Option(False, "--plots", help="Also draw each metric against each parameter (PNGs in "
                               "OUT/plots; about a second; `starling sweep-plots OUT` draws them later)."),
    chunk: Optional[int] = typer.Option(None, "--chunk", min=1, help="--backend ray: runs per Ray task (default: "
                                        "a few tasks per CPU; 1 sends each run alone)."),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Run a sweep file: every parameter set × replicate, locally or on Ray; Parquet rows and a summary
    (and with --plots, plots)."""
    from ..experiments.backends import make_backend
    from ..experiments.driver import run_sweep_file
    from ..experiments.sweep_file import load_sweep

    _load_plugins(plugin)
    _fork_workers_here()
    if backend not in ("local", "ray"):
        _fail(f"--backend: {backend!r} is not local or ray")
    if address is not None and backend != "ray":
        _fail("--address: only with --backend ray")
    if chunk is not None and backend != "ray":
        _fail("--chunk: only with --backend ray")
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
            output, summary = run_sweep_file(plan, make_backend(backend, workers, address, chunk=chunk), target,
                                             resume=resume, on_start=on_start, on_row=on_row, plots=plots)
        except ConfigError as e:
            _config_fail(e)
        except KeyboardInterrupt:
            err.print(f"interrupted: {counts['ok'] + counts['failed']} runs kept in {target}; "
                      "--resume runs the rest", highlight=False)
            raise typer.Exit(130)
        except ConnectionError as e:
            _fail(f"--address: cannot reach the Ray cluster at {address}: {e}{_auth_hint(str(e))}")
    wall = time.perf_counter() - t0
    result = {"sweep": str(file), "backend": backend, "runs": state.get("total", 0), "skipped": state.get("skipped", 0),
              "ok": counts["ok"], "failed": counts["failed"], "wall_s": round(wall, 3),
              "timing": {k: round(v, 3) for k, v in output.timing.items()}, "out": str(target),
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
              + f" in {wall:.1f} s; results in {target}"
              + ("" if plots else f" (plots: starling sweep-plots {target})"), highlight=False)


@app.command("sweep-plots")
def sweep_plots(
    out_dir: Path = typer.Argument(..., help="A sweep's output folder (what `starling sweep` wrote)."),
    as_json: bool = typer.Option(False, "--json", help="Print the plots' paths as JSON."),
) -> None:
    """Draw a finished (or interrupted) sweep's plots: each metric against each parameter, OUT/plots/*.png."""
    from ..experiments.results import plot_folder

    try:
        paths = plot_folder(out_dir)
    except ConfigError as e:
        _config_fail(e)
    if as_json:
        sys.stdout.write(json.dumps({"out": str(out_dir), "plots": [str(p) for p in paths]}) + "\n")
        return
    out.print(f"{len(paths)} plots in {out_dir / 'plots'}", highlight=False)
