"""``starling warm`` (the kernel cache) and ``starling bench`` (measurements)."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
import time
from typing import List, Optional

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..config import ConfigError
from .common import (
    PLUGIN_HELP,
    THREADS_FROM_HELP,
    _apply_threads_from,
    _config_fail,
    _fail,
    _float_list,
    _int_list,
    _load_plugins,
    app,
    err,
    out,
)


@app.command()
def warm(
    scenarios: Optional[List[str]] = typer.Argument(None, help="Scenario names or TOML paths (default: every built-in)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1,
                                       help="Processes compiling side by side (default: one per core, up to 4)."),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Compile the kernels of every built-in scenario (or the named ones) into the kernel cache, so that
    later runs and the live app start at once (`make setup` runs it)."""
    from .. import warm as warming
    from ..kernel_cache import cache_dir

    _load_plugins(plugin)
    try:
        names = warming.check_names(scenarios or [])
    except ConfigError as e:
        _config_fail(e)
    workers = warming.processes(jobs, len(names))
    t0 = time.perf_counter()
    done: list = []
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=err, transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("kernel cache" if workers == 1 else f"warming in {workers} processes",
                                 total=len(names))
        current = [""]

        def on_start(name: str) -> None:
            current[0] = name
            progress.update(task, description=f"warming {name}")

        def on_kernel(kernel: str) -> None:
            if kernel:  # Numba's own overloads are unnamed: the last name stays
                progress.update(task, description=f"warming {current[0]}: compiling {kernel}")

        def on_done(result) -> None:
            done.append(result)
            progress.advance(task)
            if result.compiled:  # one line per scenario that needed compiling (kept in logs without a terminal)
                progress.console.print(f"{result.scenario}: compiled {result.compiled} kernels in "
                                       f"{result.seconds:.1f} s", highlight=False)

        try:
            warming.warm(names, jobs=workers, plugins=plugin, on_start=on_start,
                         on_kernel=on_kernel if err.is_terminal else None, on_done=on_done)
        except ConfigError as e:
            progress.stop()
            _config_fail(e)
        except KeyboardInterrupt:
            progress.stop()
            err.print(f"interrupted: {len(done)} of {len(names)} scenarios warmed; the kernels compiled so far "
                      "stay in the cache", highlight=False)
            raise typer.Exit(130)
    compiled = sum(r.compiled for r in done)
    where = cache_dir() or "__pycache__ beside the sources"
    processes = "" if workers == 1 else f", {workers} processes"
    if compiled:
        err.print(f"kernel cache warmed: {compiled} kernels compiled for {len(done)} scenarios in "
                  f"{time.perf_counter() - t0:.1f} s{processes} ({where})", highlight=False)
    else:
        err.print(f"kernel cache already warm: {', '.join(names)} ({time.perf_counter() - t0:.1f} s)",
                  highlight=False)


THESIS_TABLE_5_5 = {10: 185, 20: 142, 30: 106, 40: 71, 50: 42, 60: 17}
"""The savannah thesis' stress test: frames per second with n zebras alone (Unity, with rendering)."""
HERD_SIDE, HERD_SIZE, GROUND = 30.0, 30, 380.0
"""The savannah's big herd spawns on a 30 m square; the stress test keeps its density for more
zebras (side 30 · sqrt(n / 30)), up to the 400 m ground less a margin."""


def herd_spawn(n: int) -> tuple[str, ...]:
    """``--set`` overrides spawning ``n`` zebras at the big herd's density (never on a smaller square)."""
    side = min(GROUND, HERD_SIDE * math.sqrt(max(n, HERD_SIZE) / HERD_SIZE))
    return (f"species.zebra.spawn.size.0={side:g}", f"species.zebra.spawn.size.2={side:g}")


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
    zebras: Optional[str] = typer.Option(None, "--zebras", help="--scenario savannah: the thesis' stress test "
                                         "(Table 5.5): zebras alone at each count, steps per second beside the thesis'."),
    record: Optional[str] = typer.Option(None, "--record", help="--scenario: measure what recording at this "
                                         "precision (float32 or float16) adds to the step."),
    record_every: int = typer.Option(1, "--record-every", min=1, help="--record: keep every K-th step."),
    backend: str = typer.Option("cpu", "--backend", help="cpu, or cuda: the flocking pipeline (or --scenario) "
                                "on an NVIDIA GPU, with each kernel's time and the copy back to the host (docs/gpu.md)."),
    profile: Optional[Path] = typer.Option(None, "--profile", help="Also write where each size's step goes "
                                           "(phases, shares, ns per animal, every kernel) to this Markdown file."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    threads_from: Optional[int] = typer.Option(None, "--threads-from", min=0, help=THREADS_FROM_HELP),
    plugin: List[str] = typer.Option([], "--plugin", help=PLUGIN_HELP),
) -> None:
    """Measure step and query times of the flocking pipeline, ray casts with --rays, or a whole
    scenario with --scenario (medians after warm-up)."""
    from .. import parallel
    from ..bench import bench_device_size, bench_rays, bench_size, lists_summary, profile_report

    _load_plugins(plugin)
    _apply_threads_from(threads_from)
    if profile is not None and not profile.parent.is_dir():  # before minutes of measuring, not after
        _fail(f"--profile: cannot write {profile}: folder {profile.parent} does not exist")
    if backend not in ("cpu", "cuda"):
        _fail(f"--backend: expected cpu or cuda, got {backend!r}")
    if backend == "cuda":
        from ..cuda import unavailable_reason

        reason = unavailable_reason()
        if reason is not None:
            _fail(f"--backend cuda: the GPU backend cannot run here: {reason}")
        if rays or record is not None or zebras is not None or density_sweep or k_sweep or query is not None:
            _fail("--backend cuda: measures the flocking pipeline (--sizes) or a whole scenario (--scenario); "
                  "ray casts, recording, the zebra stress test, sweeps and --query run on the CPU")
        if scenario is not None:
            from ..simulation import load_scenario

            set_ = [*set_, "backend=cuda"]
            try:
                probe = load_scenario(scenario, overrides=set_, record_debug=False)
            except ConfigError as e:
                _config_fail(e)
            if probe.device is None:
                _fail(f"--backend cuda: {probe.backend_note}")
    if query is not None:
        from ..steering import registry

        methods = sorted(q.name for q in registry.queries())
        if query not in methods:
            _fail(f"--query: expected one of {', '.join(methods)}, got {query!r}")
    if zebras is not None:
        if scenario is None or Path(scenario).stem != "savannah":
            _fail("--zebras: the savannah's stress test; give --scenario savannah too")
        if sizes is not None:
            _fail("--zebras: gives the sizes itself; leave out --sizes")
        sizes = zebras
        set_ = [*set_, "lions=0", "species.elephant.count=0"]  # zebras alone, as Table 5.5 ran them
    if record is not None and scenario is None:
        _fail("--record: measures a scenario's recording cost; give --scenario NAME too")
    if scenario is not None and record is not None:
        if record not in ("float32", "float16"):
            _fail(f"--record: {record!r} is not float32 or float16")
        from ..recording.bench import bench_recording

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
        from ..bench_scenario import (
            bench_named_scenario,
            bench_scenario_sizes,
            scenario_overrides,
        )

        if sizes is not None:
            ns = _int_list(sizes, "--sizes")
            try:
                r = bench_scenario_sizes(scenario, ns, query=query, steps=steps, budget_s=budget,
                                         overrides=tuple(set_), per_size=herd_spawn if zebras is not None else None)
            except ConfigError as e:
                _config_fail(e)
            if zebras is not None:
                for x in r["results"]:
                    x["steps_per_s"] = 1e3 / max(x["step_ms"]["median"], 1e-9)
                    x["thesis_fps"] = THESIS_TABLE_5_5.get(x["n"])
            if as_json:
                sys.stdout.write(json.dumps(r) + "\n")
                return
            if zebras is not None:
                table = Table("zebras", "step median ms", "steps/s", "thesis fps (Table 5.5, with rendering)",
                              box=None)
                for x in r["results"]:
                    thesis = x["thesis_fps"]
                    table.add_row(str(x["n"]), f"{x['step_ms']['median']:.3f}", f"{x['steps_per_s']:,.0f}",
                                  "–" if thesis is None else str(thesis))
                out.print(table)
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
        if backend == "cuda":
            try:
                r = bench_device_size(kw["n"], density=kw["density"], radius=radius, k=kw["k"], fov_deg=fov,
                                      budget_s=budget)
            except RuntimeError as e:
                _fail(f"--backend cuda: {e}")
        else:
            r = bench_size(kw["n"], density=kw["density"], radius=radius, k=kw["k"], fov_deg=fov, method=query,
                           budget_s=budget)
        r.update(density=kw["density"], k=kw["k"])
        results.append(r)
    import numba

    report = {"query": query, "radius": radius, "fov_deg": fov, "threads": numba.get_num_threads(),
              "threads_from": parallel.threads_from(), "backend": backend, "results": results}
    if backend == "cuda":
        report["query"] = "device grid"
        report["device"] = results[0]["device"] if results else None
    if profile is not None:
        try:
            profile.write_text(profile_report(report))
        except OSError as e:
            _fail(f"--profile: cannot write {profile}: {e.strerror or e}")
        err.print(f"profile written to {profile}", highlight=False)
    if as_json:
        sys.stdout.write(json.dumps(report) + "\n")
        return
    if backend == "cuda":
        out.print(f"GPU: {report['device']} (state kept on the device; 'download' is the copy back to the host)",
                  highlight=False)
    table = Table("n", "density", "k", "step median ms", "step p95 ms", "ns / animal", "threads", box=None)
    phases = Table("n", "query", "geometry", "behaviours", "merger", "mover", "bookkeeping", box=None,
                   title="median ms of each phase", title_justify="left")
    for r in results:
        table.add_row(str(r["n"]), f"{r['density']:g}", str(r["k"]), f"{r['step_ms']['median']:.3f}",
                      f"{r['step_ms']['p95']:.3f}", f"{r['ns_per_animal']:,.0f}", str(r["threads"] or "GPU"))
        phases.add_row(str(r["n"]), *(f"{r['phases_ms'][name]:.3f}" for name in
                                      ("query", "pair_geometry", "behaviours", "merger", "mover", "bookkeeping")))
    out.print(table)
    out.print(phases)
    for r in results:
        if r.get("neighbor_lists"):
            out.print(lists_summary(r), highlight=False)
    if backend == "cuda":
        out.print("copy back to the host (ms): " + ", ".join(f"{r['n']:,}: {r['download_ms']['median']:.3f}"
                                                             for r in results), highlight=False)
