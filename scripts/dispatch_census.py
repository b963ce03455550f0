"""Which kernel calls of a step still go through Numba's dispatcher, and what its typing costs each.

Usage::

    PYTHONPATH=src .venv/bin/python scripts/dispatch_census.py SCENE [--top K] [--all]

The scene is built and warmed; then every module-level kernel of ``starling`` is wrapped
so that one step records each call made from Python with its arguments (calls from
kernel to kernel stay inside compiled code and are not seen). Calls that a
:class:`starling.kernel_calls.CallSite` sends straight to an entry point are not seen
either, unless ``--all`` sends every call through the dispatcher (``dispatching()``).
Each recorded call is then repeated, through the dispatcher and through the compiled
entry point its argument types select, and the difference is the typing the dispatcher
adds to that call (best of five, thread CPU time). This is how the call sites' gain was
found (``docs/performance.md``): it lists the calls worth a site. A behaviour's kernel
lives in the registry, not in a module, so it is caught by wrapping
``BehaviorSpec.compiled``. It is a tool for performance work, not part of the tests.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scene", help="a built-in scenario or a scenario file")
    parser.add_argument("--top", type=int, default=25, help="calls to list")
    parser.add_argument("--all", action="store_true", help="send every call through the dispatcher, sites too")
    args = parser.parse_args()

    from numba.core.dispatcher import Dispatcher

    import starling
    from starling import kernel_calls
    from starling.steering import registry

    sim = starling.load_scenario(args.scene, record_debug=False)
    sim.step(60)
    calls: list = []

    class Recorder:
        """Stands in for a dispatcher: records the call, then makes it."""

        def __init__(self, kernel, label):
            self.kernel, self.label = kernel, label

        def __call__(self, *a, **kw):
            calls.append((self.label, self.kernel, a, kw))
            return self.kernel(*a, **kw)

        def __getattr__(self, name):
            return getattr(self.kernel, name)

    wrapped = []
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("starling"):
            for attr, value in list(vars(module).items()):
                if isinstance(value, Dispatcher):
                    setattr(module, attr, Recorder(value, f"{module_name}.{attr}"))
                    wrapped.append((module, attr, value))
    compiled = registry.BehaviorSpec.compiled
    recorders: dict = {}

    def recorded(spec, parallel):
        key = (spec.name, bool(parallel))
        if key not in recorders:  # one recorder per kernel, so a site keys it like the kernel
            recorders[key] = Recorder(compiled(spec, parallel), f"behaviour {spec.name}")
        return recorders[key]

    registry.BehaviorSpec.compiled = recorded
    try:
        with kernel_calls.dispatching() if args.all else contextlib.nullcontext():
            sim.step(1)  # sites type their first calls of the recorders
            calls.clear()
            sim.step(1)
    finally:
        registry.BehaviorSpec.compiled = compiled
        for module, attr, value in wrapped:
            setattr(module, attr, value)

    def best(fn, a, repeat=300):
        out = float("inf")
        for _ in range(5):
            t = time.thread_time()
            for _ in range(repeat):
                fn(*a)
            out = min(out, (time.thread_time() - t) / repeat)
        return out * 1e6

    saved: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    for label, kernel, a, kw in calls:
        count[label] += 1
        if kw:
            continue
        try:
            entry = kernel.overloads[tuple(kernel.typeof_pyval(x) for x in a)].entry_point
        except (KeyError, AttributeError):
            continue
        saved[label] += best(kernel, a) - best(entry, a)
    print(f"{args.scene}: {len(calls)} calls through the dispatcher in a step; its typing costs "
          f"{sum(saved.values()):.0f} µs of thread time in all")
    for label, us in saved.most_common(args.top):
        print(f"{us:8.1f} µs  {count[label]:3d} calls  {label}")


if __name__ == "__main__":
    main()
