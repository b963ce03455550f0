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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scene", help="a built-in scenario or a scenario file")
    parser.add_argument("--top", type=int, default=30, help="kernels and modules to list")
    parser.add_argument("--passes", action="store_true", help="time compiler passes and lowering's pieces instead")
    args = parser.parse_args()
    if args.passes:
        return by_pass(args.scene, args.top)

    from numba.core import event

    own: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    stack: list = []  # [name, start, time spent in nested compilations]

    class Timer(event.Listener):
        def on_start(self, ev):
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            name = f"{func.__module__}.{func.__qualname__}" if func else "?"
            stack.append([name, time.perf_counter(), 0.0])

        def on_end(self, ev):
            name, start, nested = stack.pop()
            spent = time.perf_counter() - start
            own[name] += spent - nested
            count[name] += 1
            if stack:
                stack[-1][2] += spent

    event.register("numba:compile", Timer())
    from starling.config import load_scenario_config
    from starling.simulation import Simulation

    start = time.perf_counter()
    Simulation(load_scenario_config(args.scene), record_debug=False).step(2)
    total = time.perf_counter() - start
    print(f"{args.scene}: built and stepped in {total:.1f} s; {sum(count.values())} compilations of "
          f"{len(count)} functions took {sum(own.values()):.1f} s")
    print("\n  own s  times  function")
    for name, seconds in own.most_common(args.top):
        print(f"{seconds:7.2f}  {count[name]:5d}  {name}")
    modules: collections.Counter = collections.Counter()
    for name, seconds in own.items():
        modules[name.rsplit(".", 1)[0]] += seconds
    print("\n  own s  module")
    for name, seconds in modules.most_common(args.top):
        print(f"{seconds:7.2f}  {name}")


def by_pass(scene: str, top: int) -> None:
    """Build and step ``scene`` twice, timing Numba's compiler passes and lowering's pieces (see the module)."""
    from numba.core import codegen, compiler_machinery, lowering

    own: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    nested: list = []  # per open piece, the time spent in pieces inside it

    def timed(cls, name, label=None):
        original = getattr(cls, name)

        def piece(*args, **kwargs):
            key = label or getattr(args[2], "name", lambda: "?")()  # a pass: _runPass(self, index, pass, state)
            nested.append(0.0)
            start = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent = time.process_time() - start
                own[key] += spent - nested.pop()
                calls[key] += 1
                if nested:
                    nested[-1] += spent

        setattr(cls, name, piece)

    timed(compiler_machinery.PassManager, "_runPass")
    timed(lowering.Lower, "lower_normal_function", "lowering: building the LLVM IR")
    timed(lowering.Lower, "create_cpython_wrapper", "lowering: CPython wrappers")
    timed(codegen.CPUCodeLibrary, "add_ir_module", "lowering: IR as text, parsed, linked")
    timed(codegen.CPUCodeLibrary, "_optimize_functions", "LLVM: function passes")
    timed(codegen.CPUCodeLibrary, "_optimize_final_module", "LLVM: module passes")
    timed(codegen.JITCodeLibrary, "_finalize_specific", "LLVM: machine code")
    from starling.config import load_scenario_config
    from starling.simulation import Simulation

    start = time.process_time()
    Simulation(load_scenario_config(scene), record_debug=False).step(2)
    total = time.process_time() - start
    print(f"{scene}: built and stepped in {total:.1f} s of CPU; the pieces below {sum(own.values()):.1f} s")
    print("\n  own s  times  pass or piece")
    for name, seconds in own.most_common(top):
        print(f"{seconds:7.2f}  {calls[name]:5d}  {name}")


if __name__ == "__main__":
    main()
