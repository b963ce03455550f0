"""Ray cast benchmark: a herd on a pasture casting obstacle-avoidance rays (seed 000, 7.1, 9.5.5).

The harness lives in the package (:func:`starling.bench.bench_rays`, what ``starling bench --rays`` runs);
this script is a shortcut to it for a source checkout::

    .venv/bin/python benchmarks/raycast.py            # the 100k x 8 target
    .venv/bin/python benchmarks/raycast.py --animals 10000 --repeats 5
"""

from __future__ import annotations

import argparse
import json

from starling.bench import bench_rays, pasture_herd

__all__ = ["make_herd", "time_raycasts"]

make_herd = pasture_herd


def time_raycasts(n_animals: int = 100_000, rays_per_animal: int = 8, obstacles: int = 500, **kw) -> dict:
    """Timings of one ray group's casts on the pasture (see :func:`starling.bench.bench_rays`)."""
    return bench_rays(n_animals, rays_per_animal, obstacles, **kw)


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
