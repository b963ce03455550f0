"""Ray cast benchmark: a herd on a pasture casting obstacle-avoidance rays (seed 000, 7.1, 9.5.5).

Scene: :func:`starling.environment.builders.pasture_config` — a square pasture of ``size`` metres sampled on
a ``(resolution x resolution)`` heightfield with random hills, a rough mountain rim and a pond with water,
plus ``obstacles`` scattered obstacles (60 % trees: a cylinder trunk with a sphere canopy; 40 % box rocks).

Animals: ``n_animals`` sheep-like animals at uniform random places inside the rim, 0.6 m above the ground
(their eye height), facing random horizontal directions.  Each casts ``rays_per_animal`` rays in a 2D cone
of ``fov_deg`` degrees reaching ``max_distance`` metres, against the terrain, obstacle and water layers —
the ray query of the thesis' obstacle avoidance.

One timed call is one batched :func:`~starling.environment.raycast.cast_rays` into preallocated outputs
(what a simulation step pays); ray generation is timed separately.  Besides wall-clock times with all of
Numba's threads, the serial kernel's CPU time (``time.thread_time``) is reported: on a shared machine the
wall clock measures the neighbours as much as the code, the thread's CPU time much less so.  Run it as a
script::

    .venv/bin/python benchmarks/raycast.py            # the 100k x 8 target
    .venv/bin/python benchmarks/raycast.py --animals 10000 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import time

import numba
import numpy as np

from starling.environment import Environment, RayHits, cast_rays
from starling.environment.builders import default_scatter_region, pasture_config
from starling.steering.queries.rays import RayQuerySpec, generate_rays

__all__ = ["make_herd", "time_raycasts"]


def make_herd(env: Environment, n: int, region, eye_height: float = 0.6, seed: int = 0):
    """``(positions (n, 3) f32, forwards (n, 3) f32)``: uniform in ``region`` (x_min, z_min, x_max, z_max),
    ``eye_height`` above the terrain, random horizontal headings."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(region[0], region[2], n)
    z = rng.uniform(region[1], region[3], n)
    y = env.height_at(x, z) + eye_height
    angle = rng.uniform(0, 2 * np.pi, n)
    positions = np.column_stack([x, y, z]).astype(np.float32)
    forwards = np.column_stack([np.sin(angle), np.zeros(n), np.cos(angle)]).astype(np.float32)
    return positions, forwards


def time_raycasts(n_animals: int = 100_000, rays_per_animal: int = 8, obstacles: int = 500, *, size: float = 256.0,
                  resolution: int = 257, fov_deg: float = 120.0, max_distance: float = 6.0, repeats: int = 15,
                  warmup: int = 2, seed: int = 0) -> dict:
    """Median time of one batched cast of ``n_animals * rays_per_animal`` rays on the pasture.

    Returns a dict with the configuration, ``median_ms`` / ``p95_ms`` / ``min_ms`` of the cast (wall clock,
    all threads), ``rays_per_s`` (from the median), ``serial_cpu_ms`` / ``serial_rays_per_cpu_s`` (the serial
    kernel's CPU time: one core's throughput), ``generate_median_ms`` (ray generation), ``hit_fraction``,
    ``hits_by_layer``, the scene's shape counts and ``threads`` (Numba's thread count).
    """
    env = Environment.from_config(pasture_config(size=size, resolution=resolution, obstacles=obstacles, seed=seed))
    region = default_scatter_region(pasture_config(size=size, resolution=resolution, obstacles=0, seed=seed).terrain)
    positions, forwards = make_herd(env, n_animals, region, seed=seed + 1)
    spec = RayQuerySpec(shape="cone2d", count=rays_per_animal, fov_deg=fov_deg, max_distance=max_distance,
                        layers=["terrain", "environment", "water", "fake_walls"])
    mask = spec.mask(env.layers)
    pattern = spec.pattern()
    rays = generate_rays(spec, positions, forwards, pattern=pattern)
    out = RayHits.allocate(rays.origins.shape[0])

    for _ in range(warmup):
        generate_rays(spec, positions, forwards, out=rays, pattern=pattern)
        cast_rays(env, rays.origins, rays.directions, rays.max_distance, mask, out=out)

    gen_samples, cast_samples = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        generate_rays(spec, positions, forwards, out=rays, pattern=pattern)
        t1 = time.perf_counter()
        cast_rays(env, rays.origins, rays.directions, rays.max_distance, mask, out=out)
        t2 = time.perf_counter()
        gen_samples.append(t1 - t0)
        cast_samples.append(t2 - t1)
    cpu_samples = []
    for _ in range(max(3, repeats // 3)):
        t0 = time.thread_time()
        cast_rays(env, rays.origins, rays.directions, rays.max_distance, mask, out=out, parallel=False)
        cpu_samples.append(time.thread_time() - t0)
    cast_ms = np.asarray(cast_samples) * 1e3
    gen_ms = np.asarray(gen_samples) * 1e3
    cpu_ms = float(np.median(cpu_samples)) * 1e3
    n_rays = rays.origins.shape[0]
    a = env.arrays
    return {
        "n_animals": n_animals,
        "rays_per_animal": rays_per_animal,
        "rays": n_rays,
        "obstacles": obstacles,
        "primitives": int(len(a.sph_r) + len(a.box_h) + len(a.cap_r) + len(a.cyl_r)),
        "terrain": list(env.terrain.shape[::-1]),
        "fov_deg": fov_deg,
        "max_distance": max_distance,
        "threads": numba.get_num_threads(),
        "median_ms": round(float(np.median(cast_ms)), 3),
        "p95_ms": round(float(np.percentile(cast_ms, 95)), 3),
        "min_ms": round(float(cast_ms.min()), 3),
        "rays_per_s": round(n_rays / (float(np.median(cast_ms)) / 1e3)),
        "serial_cpu_ms": round(cpu_ms, 3),
        "serial_rays_per_cpu_s": round(n_rays / (cpu_ms / 1e3)),
        "generate_median_ms": round(float(np.median(gen_ms)), 3),
        "hit_fraction": round(float(out.hit.mean()), 4),
        "hits_by_layer": {env.layers.name(int(k)): int(v) for k, v in zip(*np.unique(out.layer[out.hit],
                                                                                     return_counts=True))},
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--animals", type=int, default=100_000)
    parser.add_argument("--rays", type=int, default=8)
    parser.add_argument("--obstacles", type=int, default=500)
    parser.add_argument("--max-distance", type=float, default=6.0)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    print(json.dumps(time_raycasts(args.animals, args.rays, args.obstacles, max_distance=args.max_distance,
                                   repeats=args.repeats), indent=2))


if __name__ == "__main__":
    main()
