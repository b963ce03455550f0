"""What each system hook and each species' steering costs a call, on a scene's state.

Usage::

    PYTHONPATH=src .venv/bin/python scripts/hook_costs.py SCENE [--steps 300] [--calls 200] [--repeats 7]

The scene is stepped ``--steps`` times (its kernels compiled or loaded on the way), then each
system's ``before_behaviors`` and ``after_move`` and each pipeline's ``compute`` is called again
and again on that state: ``--calls`` calls at a time, ``--repeats`` times, and the fastest time a
call is printed (µs). Repeating a hook moves the state a little (hunger grows, a memory fades),
which a cost per call does not mind. The fastest of several repeats is steadier than a whole
step's median on a machine whose speed moves, so it is the tool for Python trimmed a few
microseconds at a time; the bench's kernel share says what it adds up to on a quiet machine.
A tool for performance work, not part of the tests.
"""
from __future__ import annotations

import argparse
import timeit

from starling.simulation import load_scenario


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scene", help="a built-in scenario or a scenario file")
    parser.add_argument("--steps", type=int, default=300, help="steps taken before the hooks are timed")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    sim = load_scenario(args.scene, seed=args.seed, record_debug=False)
    sim.step(args.steps)
    world, dt = sim.world, sim.dt
    timed = []
    before, after, _ = sim._systems_read()[1]  # the systems whose hooks a step calls, in its order
    for hook, systems in (("before_behaviors", before), ("after_move", after)):
        for system in systems:
            timed.append((f"{system.name}.{hook}", lambda f=getattr(system, hook): f(sim, dt)))
    for pipeline in sim.pipelines:
        timed.append((f"{pipeline.name} steering", lambda p=pipeline: p.compute(
            world, world.clock.time, dt, record=False, gathered={})))
    print(f"{args.scene} after {args.steps} steps: "
          + ", ".join(f"{name} {pop.n}" for name, pop in world.populations.items() if pop.n))
    for name, call in timed:
        seconds = min(timeit.repeat(call, number=args.calls, repeat=args.repeats)) / args.calls
        print(f"  {name:32s} {seconds * 1e6:8.2f} µs")


if __name__ == "__main__":
    main()
