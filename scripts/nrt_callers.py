"""Which kernels count references while a scene steps, and how often: ``gdb`` on Numba's ``NRT_incref``.

Usage::

    PYTHONPATH=src .venv/bin/python scripts/nrt_callers.py SCENE [--steps N] [--set PATH=VALUE ...]

A reference-count increment is an atomic operation. Once per kernel call it costs nothing;
once per animal (an array bound to an inlined helper's argument, see docs/performance.md,
"Reference counting in kernels") it was 15 % of the ``flock`` step. ``perf`` shows the time
in ``NRT_incref`` but not who calls it, because Numba's code keeps no frame pointers; this
script asks the debugger instead. A child process builds and warms the scene, names every
compiled function as :mod:`kernel_hotspots` does, and waits; ``gdb`` attaches, breaks on
the runtime's ``NRT_incref``, prints each call's return address while the child steps ``N``
times (default 1), and the return addresses are counted per function.

Needs ``gdb`` and a ``ptrace`` scope that lets a process debug its sibling; a tool for
performance work, not part of the tests. Each breakpoint hit costs microseconds, so keep N small.
"""
from __future__ import annotations

import argparse
import bisect
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _child(scene: str, steps: int, overrides: list[str], work: str) -> None:
    import kernel_hotspots

    kernel_hotspots._keep_object_code()
    from starling.simulation import load_scenario

    sim = load_scenario(scene, overrides=tuple(overrides), record_debug=False)
    sim.step(30)
    entries = kernel_hotspots._overloads()
    with open(os.path.join(work, "entries.json"), "w") as fh:
        json.dump(entries, fh)
    ready = os.path.join(work, "ready")
    go = os.path.join(work, "go")
    with open(ready, "w") as fh:
        fh.write(str(os.getpid()))
    while not os.path.exists(go):
        time.sleep(0.05)
    sim.step(steps)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scene")
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    ap.add_argument("--child", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.scene, args.steps, args.set, args.child)
        return 0
    if shutil.which("gdb") is None:
        print("gdb is not installed (apt install gdb)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="starling-nrt-") as work:
        command = [sys.executable, os.path.abspath(__file__), args.scene, "--steps", str(args.steps), "--child", work]
        for s in args.set:
            command += ["--set", s]
        child = subprocess.Popen(command)
        ready = os.path.join(work, "ready")
        while not os.path.exists(ready):
            if child.poll() is not None:
                print("the scene did not load", file=sys.stderr)
                return 2
            time.sleep(0.2)
        time.sleep(0.1)
        with open(os.path.join(work, "entries.json")) as fh:
            entries = json.load(fh)
        incref = [a for a, _, name in entries if name == "NRT_incref (in nrt)"]
        if not incref:
            print("Numba's runtime NRT_incref was not found among the loaded code", file=sys.stderr)
            child.kill()
            return 2
        script = os.path.join(work, "gdb.cmd")
        with open(script, "w") as fh:
            fh.write(f"set pagination off\nbreak *{incref[0]:#x}\ncommands\nsilent\n"
                     'printf "RA %lu\\n", *(unsigned long*)$rsp\ncontinue\nend\n'
                     f"shell touch {os.path.join(work, 'go')}\ncontinue\n")
        out = subprocess.run(["gdb", "-q", "-batch", "-p", str(child.pid), "-x", script],
                             capture_output=True, text=True).stdout
        child.wait()
    starts = [a for a, _, _ in entries]
    counts = collections.Counter()
    for line in out.splitlines():
        if not line.startswith("RA "):
            continue
        address = int(line.split()[1])
        at = bisect.bisect_right(starts, address) - 1
        inside = at >= 0 and address < entries[at][0] + entries[at][1]
        counts[entries[at][2] if inside else "(code outside Numba's libraries)"] += 1
    total = sum(counts.values())
    print(f"{args.scene}: {total} reference increments over {args.steps} step(s), {total / args.steps:.0f} a step")
    for name, n in counts.most_common(25):
        print(f"{n / args.steps:10.0f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
