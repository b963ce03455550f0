"""What Ray itself costs on this machine, with no Starling in it: the floor under ``--backend ray``.

Usage::

    PYTHONPATH=src .venv/bin/python scripts/ray_floor.py [--address HOST:PORT] [--cpus 2] [--tasks 10] [--repeat 3]

Each repeat is a fresh process that imports Ray, starts it here with ``--cpus`` CPUs (or
connects to the cluster at ``--address``, e.g. one started with ``ray start --head``), runs
``--tasks`` tasks that return at once, and shuts Ray down, with the options a sweep uses
(``starling.experiments.backends.RAY_INIT_OPTIONS``). Printed, one JSON line a repeat: the
seconds of each phase and their total. Only this script imports Starling (for the options);
the measured processes do not. A sweep on the Ray backend pays at least this total
more than the local backend (whose workers fork from the command and start in milliseconds),
plus its workers importing Starling; compare it with the local backend's ``wall_s`` for the
same sweep to see how close Ray can come on this machine (``docs/sweeps.md``). It is a tool
for measurement, not part of the tests.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

_ONE = r"""
import json, sys, time
address, cpus, tasks, options = sys.argv[1] or None, int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
t0 = time.perf_counter()
import ray
t1 = time.perf_counter()
ray.init(address=address, **options) if address else ray.init(num_cpus=cpus, **options)
t2 = time.perf_counter()

@ray.remote(num_cpus=1)
def nothing(i):
    return i

ray.get([nothing.remote(i) for i in range(tasks)])
t3 = time.perf_counter()
ray.shutdown()
t4 = time.perf_counter()
print(json.dumps({"import_ray_s": round(t1 - t0, 2), "init_s": round(t2 - t1, 2),
                  "empty_tasks_s": round(t3 - t2, 2), "shutdown_s": round(t4 - t3, 2),
                  "total_s": round(t4 - t0, 2)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", default="", help="a running cluster (default: start Ray here)")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs for a Ray started here")
    parser.add_argument("--tasks", type=int, default=10, help="empty tasks to run")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes to measure")
    args = parser.parse_args()
    from starling.experiments.backends import RAY_INIT_OPTIONS

    options = json.dumps(RAY_INIT_OPTIONS)
    for _ in range(args.repeat):
        done = subprocess.run([sys.executable, "-c", _ONE, args.address, str(args.cpus), str(args.tasks), options],
                              capture_output=True, text=True)
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            sys.exit(f"ray_floor: the measuring process failed:\n{done.stderr.strip()[-2000:]}")
        print(json.dumps({"address": args.address or "here", **json.loads(lines[-1])}))


if __name__ == "__main__":
    main()
