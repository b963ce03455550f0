"""Where a cold start's compile time goes: every kernel Numba compiles for a scene, with its own time.

Usage::

    STARLING_CACHE_DIR=$(mktemp -d) PYTHONPATH=src .venv/bin/python scripts/compile_profile.py SCENE [--top K]

Run it on an empty kernel cache (a fresh ``STARLING_CACHE_DIR``), or it measures loading, not
compiling. The scene is built and stepped twice while a listener on Numba's ``numba:compile``
events times each compilation. A kernel's *own* time leaves out the helpers compiled while it
was (they are counted under their own names), so the column adds up to the compile time and
shows which bodies are dear to compile: the place to look when cutting a cold start. The
modules' totals follow. It is a tool for start-up work, not part of the tests.

``--passes`` says instead *what* the compiler spends that time on: the CPU time of each of
Numba's compiler passes and of the pieces of lowering (building LLVM IR, the CPython wrappers,
writing the IR out as text, LLVM's function passes, its module passes, emitting machine code),
each piece's own time with the pieces nested in it left out. Run it with
``STARLING_COMPILE_HELPER=0`` so that the whole compile happens in this process.
"""
from __future__ import annotations

import argparse
import collections
import time


class OwnTimes:
    """Each named piece's own time: the time between its start and end, less the time of the pieces
    started and ended inside it (nested compilations, nested passes), so the totals add up."""

    def __init__(self, clock):
        self.clock = clock
        self.own: collections.Counter = collections.Counter()
        self.count: collections.Counter = collections.Counter()
        self._open: list = []  # [name, start, time spent in pieces nested in it]

    def start(self, name: str) -> None:
        self._open.append([name, self.clock(), 0.0])

    def end(self) -> None:
        name, start, nested = self._open.pop()
        spent = self.clock() - start
        self.own[name] += spent - nested
        self.count[name] += 1
        if self._open:
            self._open[-1][2] += spent

    def print_top(self, top: int, heading: str) -> None:
        print(f"\n  own s  times  {heading}")
        for name, seconds in self.own.most_common(top):
            print(f"{seconds:7.2f}  {self.count[name]:5d}  {name}")


def build_and_step(scene: str, clock) -> float:
    """Build ``scene`` and step it twice; the time it took by ``clock``."""
    from starling.config import load_scenario_config
    from starling.simulation import Simulation

    start = clock()
    Simulation(load_scenario_config(scene), record_debug=False).step(2)
    return clock() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scene", help="a built-in scenario or a scenario file")
    parser.add_argument("--top", type=int, default=30, help="kernels and modules to list")
    parser.add_argument("--passes", action="store_true", help="time compiler passes and lowering's pieces instead")
    args = parser.parse_args()
    if args.passes:
        return by_pass(args.scene, args.top)

    from numba.core import event

    times = OwnTimes(time.perf_counter)

    class Timer(event.Listener):
        def on_start(self, ev):
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            times.start(f"{func.__module__}.{func.__qualname__}" if func else "?")

        def on_end(self, ev):
            times.end()

    event.register("numba:compile", Timer())
    total = build_and_step(args.scene, time.perf_counter)
    print(f"{args.scene}: built and stepped in {total:.1f} s; {sum(times.count.values())} compilations of "
          f"{len(times.count)} functions took {sum(times.own.values()):.1f} s")
    times.print_top(args.top, "function")
    modules: collections.Counter = collections.Counter()
    for name, seconds in times.own.items():
        modules[name.rsplit(".", 1)[0]] += seconds
    print("\n  own s  module")
    for name, seconds in modules.most_common(args.top):
        print(f"{seconds:7.2f}  {name}")


def by_pass(scene: str, top: int) -> None:
    """Build and step ``scene`` twice, timing Numba's compiler passes and lowering's pieces in CPU time
    (see the module)."""
    from numba.core import codegen, compiler_machinery, lowering

    times = OwnTimes(time.process_time)

    def timed(cls, method, name_of):
        original = getattr(cls, method)

        def piece(*args, **kwargs):
            times.start(name_of(args))
            try:
                return original(*args, **kwargs)
            finally:
                times.end()

        setattr(cls, method, piece)

    timed(compiler_machinery.PassManager, "_runPass", lambda args: args[2].name())  # (self, index, pass, state)
    for cls, method, name in [
            (lowering.Lower, "lower_normal_function", "lowering: building the LLVM IR"),
            (lowering.Lower, "create_cpython_wrapper", "lowering: CPython wrappers"),
            (codegen.CPUCodeLibrary, "add_ir_module", "lowering: IR as text, parsed, linked"),
            (codegen.CPUCodeLibrary, "_optimize_functions", "LLVM: function passes"),
            (codegen.CPUCodeLibrary, "_optimize_final_module", "LLVM: module passes"),
            (codegen.JITCodeLibrary, "_finalize_specific", "LLVM: machine code")]:
        timed(cls, method, lambda args, name=name: name)
    total = build_and_step(scene, time.process_time)
    print(f"{scene}: built and stepped in {total:.1f} s of CPU; the pieces below {sum(times.own.values()):.1f} s")
    times.print_top(top, "pass or piece")


if __name__ == "__main__":
    main()
