"""Neighbour query benchmark: the set-up of thesis 9.6.1, for ``starling bench``.

``n`` animals at a fixed density in a wrap-around cube (a square in 2D, in the
x-z plane) whose side is chosen so that ``density = n / side**dims``; uniform
random positions and random unit forwards; every animal queries its own
population (``exclude_self=True``) with radius ``radius``, ``k`` neighbours
and field of view ``fov_deg``.  One timed call is one whole ``find_neighbors``
(grid build + query, or tree build + query), the cost a simulation step pays,
with the output table and workspace reused as a simulation would.
"""

from __future__ import annotations

import time

import numba
import numpy as np

from starling.steering.queries.neighbors import NeighborQuerySpec, Neighbors, find_neighbors

__all__ = ["make_cloud", "time_queries"]


def make_cloud(n: int, density: float = 0.01, dims: int = 3, seed: int = 0):
    """Uniform random cloud: ``(position (n,3) f32, forward (n,3) f32, box (3,), side)``.

    3D fills a cube of side ``(n / density) ** (1/3)``; 2D fills a square of
    side ``(n / density) ** (1/2)`` in the x-z plane at y = 0, whose box does
    not wrap in y.
    """
    if dims not in (2, 3):
        raise ValueError(f"dims must be 2 or 3, got {dims}")
    rng = np.random.default_rng(seed)
    side = (n / density) ** (1.0 / dims)
    position = rng.random((n, 3)) * side
    forward = rng.normal(size=(n, 3))
    if dims == 2:
        position[:, 1] = 0.0
        forward[:, 1] = 0.0
        box = np.array([side, np.inf, side])
    else:
        box = np.array([side, side, side])
    forward /= np.maximum(np.linalg.norm(forward, axis=1, keepdims=True), 1e-12)
    position = position.astype(np.float32)
    # float32 rounding may put a coordinate exactly on the far wall; wrap it.
    position[position >= np.float32(side)] = 0.0
    return position, forward.astype(np.float32), box, side


def time_queries(
    n: int,
    density: float = 0.01,
    radius: float = 5.0,
    k: int = 5,
    fov_deg: float = 270.0,
    method: str = "grid",
    dims: int = 3,
    repeats: int | None = None,
    warmup: int | None = None,
    mode: str = "knn",
    seed: int = 0,
) -> dict:
    """Time ``find_neighbors`` on a wrap-around cloud; returns a dict of statistics.

    ``repeats`` and ``warmup`` default to counts that keep one call of this
    function to a few seconds (many repeats for small ``n``, few for 1e6).
    Warm-up calls run first and are not timed (they also trigger Numba's
    compilation or cache load).  Keys: ``median_ms``, ``p95_ms``, ``mean_ms``,
    ``min_ms``, ``max_ms``, ``per_animal_us`` (median / n), ``cpu_median_ms``
    (process CPU time, all threads, per call: on a busy machine it separates
    our work from waiting for a core), ``mean_count``
    (neighbours per animal), ``overflow_fraction`` (animals with more candidates
    than ``k``), ``side``, ``threads``, and the parameters.
    """
    position, forward, box, side = make_cloud(n, density, dims, seed)
    spec = NeighborQuerySpec(max_distance=radius, k=k, fov_deg=fov_deg, mode=mode, method=method)
    if repeats is None:
        repeats = int(np.clip(2e6 / max(n, 1), 5, 300))
        if method == "brute":
            repeats = 3
    if warmup is None:
        warmup = max(2, repeats // 10)
    out = Neighbors()
    for _ in range(warmup):
        find_neighbors(position, forward, position, spec, exclude_self=True, box=box, out=out)
    times = np.empty(repeats)
    cpu = np.empty(repeats)
    for r in range(repeats):
        c0 = time.process_time()
        t0 = time.perf_counter()
        find_neighbors(position, forward, position, spec, exclude_self=True, box=box, out=out)
        times[r] = time.perf_counter() - t0
        cpu[r] = time.process_time() - c0
    ms = times * 1e3
    median = float(np.median(ms))
    return {
        "n": n,
        "density": density,
        "radius": radius,
        "k": k,
        "fov_deg": fov_deg,
        "method": method,
        "mode": mode,
        "dims": dims,
        "side": side,
        "repeats": repeats,
        "warmup": warmup,
        "threads": numba.get_num_threads(),
        "median_ms": median,
        "p95_ms": float(np.percentile(ms, 95)),
        "mean_ms": float(ms.mean()),
        "min_ms": float(ms.min()),
        "max_ms": float(ms.max()),
        "per_animal_us": median * 1e3 / max(n, 1),
        "cpu_median_ms": float(np.median(cpu)) * 1e3,
        "mean_count": float(out.count.mean()) if n else 0.0,
        "overflow_fraction": float((out.overflow > 0).mean()) if n else 0.0,
    }
