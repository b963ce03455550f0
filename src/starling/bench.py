"""The benchmark harness behind ``starling bench`` (seed 000, 9.6.1 method).

Animals at constant density in a wrap-around cube (so no boundary effects), random
start, the thesis' flocking pipeline (one k-nearest query within radius and field of
view, cohesion, alignment, separation, the desire merger, the 3D mover). After a
warm-up (compilation, caches), steps are timed one by one and reported as medians and
95th percentiles. The stages are also timed separately on the same state, so the
report says where the time goes.
"""
from __future__ import annotations

import time
from typing import Iterable, Optional

import numba
import numpy as np

from .config import validate_scenario
from .simulation import Simulation
from .steering.mergers import merge
from .parallel import threads_from
from .steering.groups import FusedRun
from .steering.pipeline import pair_box
from .steering.queries.neighbors import find_neighbors, normalize_box
from .steering.queries.verlet import FIRST_GRID_CALLS


def bench_scenario(n: int, *, density: float = 0.01, radius: float = 5.0, k: int = 5, fov_deg: float = 270.0,
                   method: str = "grid", seed: int = 0) -> dict:
    """Scenario data of the benchmark: ``n`` animals at ``density`` per m³ in a periodic cube."""
    side = (n / density) ** (1.0 / 3.0)
    return {
        "name": f"bench-{n}",
        "seed": seed,
        "dt": 1.0 / 60.0,
        "world": {"bounds_min": [0.0, 0.0, 0.0], "bounds_max": [side] * 3, "wrap": True},
        "species": [{
            "name": "boid",
            "count": n,
            "spawn": {"shape": "box", "center": [side / 2] * 3, "size": [side] * 3, "speed": [2.0, 4.0]},
            "mover": {"kind": "free", "max_speed": 6.0},
            "groups": [{
                "label": "flocking",
                "query": {"max_distance": radius, "k": k, "fov_deg": fov_deg, "method": method},
                "behaviors": [
                    {"kind": "cohesion", "priority": 0, "weight_direction": 0.5},
                    {"kind": "alignment", "priority": 1, "weight_direction": 0.6, "weight_speed": 0.3},
                    {"kind": "separation", "priority": 2, "weight_direction": 0.7},
                ],
            }],
        }],
    }


def bench_simulation(n: int, **scenario) -> Simulation:
    """The benchmark's simulation of ``n`` animals (``scenario``: :func:`bench_scenario`'s options)."""
    return Simulation(validate_scenario(bench_scenario(n, **scenario)), record_debug=False)


def _stats(samples_s: list[float]) -> dict:
    a = np.asarray(samples_s) * 1000.0
    return {"median": round(float(np.median(a)), 4), "p95": round(float(np.percentile(a, 95)), 4)}


def _lists_counters(lists) -> tuple:
    return lists.calls, lists.rebuilds, lists.grid_calls


def _lists_report(lists, before: tuple, times: list) -> dict:
    """How a self-query answered over the timed steps from its neighbour lists
    (``steering/queries/verlet.py``): the share of its calls the lists answered, steps per
    rebuild, and its calls' median and mean in the step (the mean shares the rebuilds out).
    ``before``: :func:`_lists_counters` when timing began; ``times``: each call's wall time, s."""
    calls, rebuilds, grid_calls = (a - b for a, b in zip(_lists_counters(lists), before))
    return {"answered_by_lists": round(1.0 - grid_calls / max(calls, 1), 3),
            "steps_per_rebuild": round(calls / rebuilds, 1) if rebuilds else None,
            "query_median_ms": round(1e3 * float(np.median(times)), 4),
            "query_mean_ms": round(1e3 * float(np.mean(times)), 4)}


def lists_summary(r: dict) -> str:
    """One size's ``neighbor_lists`` report in words (``starling bench`` and ``--profile``)."""
    lists = r["neighbor_lists"]
    every = lists["steps_per_rebuild"]
    rebuilt = f"rebuilt every {every:g} steps" if every else "not rebuilt while timed"
    return (f"{r['n']:,} animals: neighbour lists kept over steps answered {100 * lists['answered_by_lists']:.0f} % "
            f"of the queries, {rebuilt}; query median {lists['query_median_ms']:.4f} ms, mean "
            f"{lists['query_mean_ms']:.4f} ms with the rebuilds; step mean {r['step_ms']['mean']:.4f} ms.")


def _timed(fn, repeats: int, before=None) -> list[float]:
    """``repeats`` wall times of ``fn()``; ``before()``, untimed, ahead of each (a stage that
    changes its own input is put back where it started)."""
    out = []
    for _ in range(repeats):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


PHASES = ("query", "pair_geometry", "behaviours", "merger", "mover", "bookkeeping")
"""The phases of a step ``bench`` reports: what the per-kernel profile does not account for is
bookkeeping (Python between the kernels, result views, the clock, the grid's reordering)."""


def breakdown(n: int, step_median_ms: float, profile_ms: dict, behaviours: list[str], threads: Optional[int]) -> dict:
    """The step split into :data:`PHASES` (median ms), the cost per animal and the CPU threads used
    (None on the GPU)."""
    phases = {
        "query": profile_ms.get("grid", 0.0) + profile_ms["query"],
        "pair_geometry": profile_ms["pair_geometry"],
        "behaviours": sum(profile_ms[name] for name in behaviours),
        "merger": profile_ms["merger"],
        "mover": profile_ms["mover"],
    }
    phases["bookkeeping"] = step_median_ms - sum(phases.values())
    return {
        "phases_ms": {k: round(v, 4) for k, v in phases.items()},
        "ns_per_animal": round(step_median_ms * 1e6 / max(n, 1), 2),
        "threads": threads,
    }


def profile_report(report: dict) -> str:
    """``starling bench --profile``: the breakdown of every size as Markdown a user can read."""
    lines = [f"# starling bench: where a step goes ({report.get('backend', 'cpu')}"
             + (f", {report['device']}" if report.get("device") else f", {report['threads']} threads") + ")", "",
             f"The thesis' flocking step (radius {report['radius']} m, field of view {report['fov_deg']}°, "
             f"query {report['query']}); medians after warm-up, each phase timed on its own. "
             "Bookkeeping is the step less its kernels: Python between them, result views, the clock.", ""]
    for r in report["results"]:
        step = r["step_ms"]["median"]
        lines += [f"## {r['n']:,} animals (density {r.get('density', '–')}, k = {r.get('k', '–')}): "
                  f"{step:.3f} ms a step, {r['ns_per_animal']:,.0f} ns an animal, "
                  + (f"{r['threads']} thread(s)" if r["threads"] else "on the GPU"), "",
                  "| phase | ms | share | ns / animal |", "|---|---|---|---|"]
        for phase, ms in r["phases_ms"].items():
            lines.append(f"| {phase} | {ms:.4f} | {100 * ms / step:.0f} % | {ms * 1e6 / r['n']:,.1f} |")
        detail = ", ".join(f"{name} {ms:.4f}" for name, ms in r["profile_ms"].items())
        lines += ["", f"Each kernel (ms): {detail}."]
        if r.get("neighbor_lists"):
            lines.append(lists_summary(r))
        if "download_ms" in r:
            lines.append(f"Copy back to the host (not in the step): {r['download_ms']['median']:.4f} ms.")
        lines.append("")
    return "\n".join(lines)


def _repeats_for(n: int, budget_s: float) -> int:
    # rough per-step estimate (1 µs per animal) to fit the time budget, within [5, 200]
    return int(min(200, max(5, budget_s / max(n * 1e-6, 1e-5))))


def bench_size(n: int, *, density: float = 0.01, radius: float = 5.0, k: int = 5, fov_deg: float = 270.0,
               method: str = "grid", warmup: int = FIRST_GRID_CALLS + 5, repeats: Optional[int] = None, budget_s: float = 3.0) -> dict:
    """Time the full pipeline and each stage for ``n`` animals (the warm-up covers the first
    answer of the neighbour lists, which comes after the grid's first few calls)."""
    sim = bench_simulation(n, density=density, radius=radius, k=k, fov_deg=fov_deg, method=method)
    repeats = repeats or _repeats_for(n, budget_s)
    sim.step(warmup)
    pipe = sim.pipelines[0]
    group = pipe.groups[0]
    kept = group.neighbors.lists  # neighbour lists the query keeps over steps, or None
    if kept is not None:
        before = _lists_counters(kept)
        kept.call_times = query_times = []  # each call of the query, timed where it runs
    steps = _timed(lambda: sim.step(1), repeats)
    lists_report = None
    if kept is not None:
        kept.call_times = None
        lists_report = _lists_report(kept, before, query_times)

    # the stages, on the state the run left
    world = sim.world
    pop = world.population("boid")
    box = world.box
    parallel = n >= threads_from()
    stage_repeats = max(3, repeats // 2)
    profile = {}
    if kept is not None:
        # answered from neighbour lists kept over steps: a call on a state the lists were just
        # checked against would never rebuild, so the query is timed in the timed steps themselves
        profile["query"] = _stats(query_times)
    else:
        query = _timed(lambda: find_neighbors(pop.position, pop.forward, pop.position, group.query,
                                              exclude_self=True, box=box, out=group.neighbors), stage_repeats)
        profile["query"] = _stats(query)
    others, nbrs = pipe._query(world, pop, group, box, False, pair_box(box), normalize_box(box))
    # the pair geometry kernel on its own (a difference of two timings could come out negative);
    # nothing when the step skips it (behaviours that only filter by distance, or nobody in reach)
    if group.geometry_needed and not group.nobody:
        box32 = pair_box(box)
        profile["pair_geometry"] = _stats(_timed(lambda: group.geometry.compute(
            pop.position, pop.forward, others.position, nbrs.index, nbrs.count, box32, parallel=parallel), stage_repeats))
    else:
        profile["pair_geometry"] = {key: 0.0 for key in profile["query"]}
    agents = pop.agents()
    for run in group.runs:  # the behaviours as the step runs them: a fused kernel is timed as one
        # a behaviour's kernel is a fused kernel's of one: (agents, others, neighbours, params…, time, dt, out…)
        slots = run.slots if isinstance(run, FusedRun) else (run,)
        kernel = run.spec.compiled(parallel)
        params = [slot.params_for(pop) for slot in slots]
        outs = [pipe.results.view(slot.row, n) for slot in slots]
        profile[run.name] = _stats(_timed(
            lambda: kernel(agents, others, nbrs, *params, 0.0, sim.dt, *outs), stage_repeats))
    desired = pipe.desired[:n]
    profile["merger"] = _stats(_timed(
        lambda: merge("priority_desire", pipe.results.stacked(n), pop.velocity, pop.forward, desired,
                      parallel=parallel), stage_repeats))
    mover = sim.movers[0]
    lo, hi = world.bounds_min, world.bounds_max
    # the mover moves what it reads: each timed move starts from the state the run left, as a
    # step's would (moved again and again toward one fixed desire, the birds would soon fly
    # straight at it, and the mover's turns would cost less than in a step)
    moving = (pop.position, pop.velocity, pop.forward, pop.up)
    left = tuple(a.copy() for a in moving)

    def put_back():
        for a, b in zip(moving, left):
            a[...] = b

    profile["mover"] = _stats(_timed(
        lambda: mover.move(pop.position, pop.velocity, pop.forward, pop.up, desired, sim.dt,
                           wrap=(lo, hi - lo), parallel=parallel), stage_repeats, before=put_back))
    put_back()
    step = _stats(steps)
    profile_ms = {name: s["median"] for name, s in profile.items()}
    threads = numba.get_num_threads() if parallel else 1
    step["mean"] = round(1e3 * float(np.mean(steps)), 4)  # rebuilds of neighbour lists fall between the medians
    return {
        "n": n,
        "step_ms": step,
        "query_ms": profile["query"],
        "profile_ms": profile_ms,
        **breakdown(n, step["median"], profile_ms, [run.name for run in group.runs], threads),
        "neighbor_lists": lists_report,
        "steps_timed": repeats,
        "health": sim.health(),
    }


def bench_device_size(n: int, *, density: float = 0.01, radius: float = 5.0, k: int = 5, fov_deg: float = 270.0,
                      warmup: int = 3, repeats: Optional[int] = None, budget_s: float = 3.0) -> dict:
    """The same pipeline on the GPU (``backend = "cuda"``, docs/gpu.md): the step with the state kept on the
    device, each kernel timed on its own (synchronised), and what copying the state back to the host costs.

    Raises RuntimeError with the reason when the CUDA backend cannot run here.
    """
    from .cuda.runtime import cuda_module, device_name

    cfg = bench_scenario(n, density=density, radius=radius, k=k, fov_deg=fov_deg)
    cfg["backend"] = "cuda"
    sim = Simulation(validate_scenario(cfg), record_debug=False)
    if sim.device is None:
        raise RuntimeError(sim.backend_note or "the CUDA backend is not available")
    cuda = cuda_module()
    device = sim.device

    def step():
        sim._step_once()  # device only: no copy to the host
        cuda.synchronize()

    warm = _timed(step, warmup)  # the first compiles the kernels; the rest say how long a step takes
    per_step = min(warm[1:] or warm)
    repeats = repeats or int(min(200, max(5, budget_s / max(per_step, 1e-5))))
    steps = _timed(step, repeats)
    stage_repeats = max(3, repeats // 2)
    profile = {}

    def timed(fn):
        def run():
            fn()
            cuda.synchronize()
        return _stats(_timed(run, stage_repeats))

    lo, hi, box = device._bounds
    profile["grid"] = timed(lambda: [g.build(p, r, lo, hi, box) for g, p, r in device.grids])
    names = {"neighbour query": "query", "species.boid.groups pair geometry": "pair_geometry",
             "species.boid.merger": "merger"}
    for launch in device.steer_launches:
        name = names.get(launch.where) or launch.where.rsplit(".", 1)[-1]
        slot = next((s for s in sim.pipelines[0].slots if s.where == launch.where), None)
        profile[slot.name if slot is not None else name] = timed(lambda: launch(sim.time))
    profile["mover"] = timed(lambda: [launch() for launch in device.move_launches])
    download = _stats(_timed(device.download, stage_repeats))
    device.upload()  # the timed stages ran on the state again; start the host and device from one state
    step = _stats(steps)
    profile_ms = {name: s["median"] for name, s in profile.items()}
    return {
        "n": n,
        "backend": "cuda",
        "device": device_name(),
        "step_ms": step,
        "query_ms": {key: round(profile["grid"][key] + profile["query"][key], 4) for key in ("median", "p95")},
        "profile_ms": profile_ms,
        **breakdown(n, step["median"], profile_ms, [slot.name for slot in sim.pipelines[0].slots], None),
        "download_ms": download,
        "bytes_per_animal_downloaded": 4 * 3 * 4,
        "steps_timed": repeats,
        "health": sim.health(),
    }


def run_bench(sizes: Iterable[int], **kw) -> list[dict]:
    return [bench_size(int(n), **kw) for n in sizes]


# ---------------------------------------------------------------------------------------------- ray casts

def pasture_herd(env, n: int, region, eye_height: float = 0.6, seed: int = 0):
    """``n`` animals standing uniformly in ``region`` (x_min, z_min, x_max, z_max) of ``env``, their eyes
    ``eye_height`` above the terrain, facing random horizontal directions: ``(positions, forwards)``."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(region[0], region[2], n)
    z = rng.uniform(region[1], region[3], n)
    heading = rng.uniform(0.0, 2.0 * np.pi, n)
    positions = np.column_stack([x, env.height_at(x, z) + eye_height, z]).astype(np.float32)
    forwards = np.column_stack([np.sin(heading), np.zeros(n), np.cos(heading)]).astype(np.float32)
    return positions, forwards


def bench_rays(n_animals: int = 100_000, rays_per_animal: int = 8, obstacles: int = 500, *, size: float = 256.0,
               resolution: int = 257, fov_deg: float = 120.0, max_distance: float = 6.0, warmup: int = 2,
               repeats: int = 15, seed: int = 0) -> dict:
    """Ray-cast throughput of a grazing herd's obstacle-avoidance rays (seed 000, 7.1, 9.5.5).

    Scene: :func:`starling.environment.builders.pasture_config` — ``size`` m square of hills inside a
    mountain rim, a pond, ``obstacles`` trees and rocks. ``n_animals`` stand inside the rim, each casting
    ``rays_per_animal`` rays in a horizontal cone (``fov_deg``, ``max_distance``) against the terrain, the
    obstacles, the water and the fake walls — one ray group of a step. After ``warmup`` steps, each of
    ``repeats`` steps is timed as ray generation plus one batched cast into preallocated buffers (what the
    pipeline pays); medians and p95 in ms, throughput from the median. ``serial_cpu_ms`` is the serial
    kernel's thread CPU time: one core's throughput, which a loaded machine disturbs far less than the wall
    clock.
    """
    import numba

    from .environment import Environment, RayHits, cast_rays
    from .environment.builders import default_scatter_region, pasture_config
    from .steering.queries.rays import RayQuerySpec, generate_rays

    cfg = pasture_config(size=size, resolution=resolution, obstacles=obstacles, seed=seed)
    env = Environment.from_config(cfg)
    positions, forwards = pasture_herd(env, n_animals, default_scatter_region(cfg.terrain), seed=seed + 1)
    spec = RayQuerySpec(shape="cone2d", count=rays_per_animal, fov_deg=fov_deg, max_distance=max_distance,
                        layers=["terrain", "environment", "water", "fake_walls"])
    mask = spec.mask(env.layers)
    pattern = spec.pattern()
    rays = generate_rays(spec, positions, forwards, pattern=pattern)
    hits = RayHits.allocate(rays.origins.shape[0])

    def generate():
        generate_rays(spec, positions, forwards, out=rays, pattern=pattern)

    def cast(parallel=None):
        cast_rays(env, rays.origins, rays.directions, rays.max_distance, mask, out=hits, parallel=parallel)

    for _ in range(warmup):
        generate()
        cast()
    gen, casts, steps = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        generate()
        t1 = time.perf_counter()
        cast()
        t2 = time.perf_counter()
        gen.append(t1 - t0)
        casts.append(t2 - t1)
        steps.append(t2 - t0)
    cpu = []
    for _ in range(max(3, repeats // 3)):
        t0 = time.thread_time()
        cast(parallel=False)
        cpu.append(time.thread_time() - t0)
    n_rays = int(rays.origins.shape[0])
    a = env.arrays
    cast_median = float(np.median(casts))
    cpu_median = float(np.median(cpu))
    layers, counts = np.unique(hits.layer[hits.hit], return_counts=True)
    return {
        "animals": n_animals,
        "rays_per_animal": rays_per_animal,
        "rays": n_rays,
        "obstacles": obstacles,
        "primitives": int(len(a.sph_r) + len(a.box_h) + len(a.cap_r) + len(a.cyl_r)),
        "terrain": list(env.terrain.shape[::-1]),
        "fov_deg": fov_deg,
        "max_distance": max_distance,
        "threads": numba.get_num_threads(),
        "step_ms": _stats(steps),
        "cast_ms": _stats(casts),
        "generate_ms": _stats(gen),
        "rays_per_s": round(n_rays / cast_median),
        "serial_cpu_ms": round(cpu_median * 1000.0, 3),
        "serial_rays_per_cpu_s": round(n_rays / cpu_median),
        "hit_fraction": round(float(hits.hit.mean()), 4),
        "hits_by_layer": {env.layers.name(int(k)): int(v) for k, v in zip(layers, counts)},
        "steps_timed": repeats,
    }
