"""Where a scene's step spends its time, kernel by kernel and inside one kernel, with Linux ``perf``.

Usage::

    PYTHONPATH=src .venv/bin/python scripts/kernel_hotspots.py SCENE [--steps N] [--set PATH=VALUE ...]
                                                              [--kernel NAME] [--top K]

The scene is built and warmed (its kernels loaded or compiled), then ``perf record`` samples
this process while it steps ``N`` times. Numba's compiled code has no symbols for ``perf``, so
the script writes ``perf``'s map of JIT code (``/tmp/perf-PID.map``) from every compiled
overload in the process: the report then names each kernel (``starling.steering.queries.grid
._query_serial``) beside the interpreter's own functions, which is the Python between the
kernels. A helper a kernel calls out of line (rather than inlined) is counted as "other
native code": its copy inside the kernel's code has no name in the map. With ``--kernel`` (a substring of a kernel's name), the kernel's machine code is
disassembled and its hottest address ranges are printed with their instructions, which is
how one tells, say, the candidate loop of a neighbour query from its ranking.

Needs ``perf`` (``apt install linux-perf``) and a ``perf_event_paranoid`` that lets a process
sample itself; it is a tool for performance work, not part of the tests. The shares count
only the stepping (perf starts after the warm-up), so they add up to the step.
"""
from __future__ import annotations

import argparse
import collections
import ctypes
import gc
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def _overloads():
    """(address, name) of every compiled overload's entry (and threaded loop body) in this process."""
    from numba.core.dispatcher import Dispatcher

    found = {}
    for obj in gc.get_objects():
        if not isinstance(obj, Dispatcher):
            continue
        name = f"{obj.py_func.__module__}.{obj.py_func.__qualname__}"
        for cres in list(obj.overloads.values()):
            library = cres.library
            try:
                found[library.get_pointer_to_function(cres.fndesc.llvm_func_name)] = name
                for fn in library._final_module.functions:  # the threaded kernels' loop bodies
                    if not fn.is_declaration and "__numba_parfor_gufunc" in fn.name:
                        found[library.get_pointer_to_function(fn.name)] = name + ".<parfor>"
            except Exception:  # an overload without code of its own (inlined, or not finalized)
                continue
    return sorted((a, n) for a, n in found.items() if a)


def _write_map(entries) -> str:
    path = f"/tmp/perf-{os.getpid()}.map"
    with open(path, "w") as fh:
        for i, (address, name) in enumerate(entries):
            size = (entries[i + 1][0] - address) if i + 1 < len(entries) else 1 << 16
            fh.write(f"{address:x} {min(size, 1 << 20):x} {name}\n")
    return path


def _regions(offsets, bucket=64, gap=128):
    """Contiguous hot address ranges: ``[(start, end, samples)]``, hottest first."""
    counts = collections.Counter(o // bucket * bucket for o in offsets)
    regions = []
    for offset in sorted(counts):
        if regions and offset - regions[-1][1] <= gap:
            regions[-1][1] = offset
            regions[-1][2] += counts[offset]
        else:
            regions.append([offset, offset, counts[offset]])
    return sorted(((a, b + bucket, n) for a, b, n in regions), key=lambda r: -r[2])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scene")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    ap.add_argument("--kernel", help="disassemble the hottest ranges of the kernel whose name contains this")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    perf = shutil.which("perf")
    if perf is None:
        print("perf is not installed (apt install linux-perf)", file=sys.stderr)
        return 2

    from starling.simulation import load_scenario

    sim = load_scenario(args.scene, overrides=tuple(args.set), record_debug=False)
    sim.step(50)
    fd, data = tempfile.mkstemp(prefix="starling-perf-", suffix=".data")
    os.close(fd)
    recorder = subprocess.Popen([perf, "record", "-q", "-F", "4999", "-p", str(os.getpid()), "-o", data],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # perf attaches
    t0 = time.perf_counter()
    sim.step(args.steps)
    per_step = (time.perf_counter() - t0) / args.steps
    recorder.send_signal(signal.SIGINT)
    _, err = recorder.communicate(timeout=60)
    if recorder.returncode not in (0, -signal.SIGINT) or not os.path.exists(data):
        print(f"perf record failed: {err.decode(errors='replace').strip()}", file=sys.stderr)
        return 2
    entries = _overloads()
    map_path = _write_map(entries)
    try:
        script = subprocess.run([perf, "script", "-i", data, "-F", "ip,sym"], capture_output=True, text=True,
                                check=True).stdout
    finally:
        os.unlink(data)
    samples = []
    for line in script.splitlines():
        parts = line.split(None, 1)
        if parts:
            samples.append((int(parts[0], 16), parts[1].strip() if len(parts) > 1 else "?"))
    total = len(samples)
    print(f"{args.scene}: {per_step * 1e3:.3f} ms a step while sampled, {total} samples over {args.steps} steps")
    shares = collections.Counter(sym if not sym.startswith("[unknown]") else "(other native code)"
                                 for _, sym in samples)
    for sym, n in shares.most_common(args.top):
        print(f"{100 * n / total:6.1f} %  {n / total * per_step * 1e6:8.1f} µs  {sym}")
    if args.kernel:
        matches = [(a, n) for a, n in entries if args.kernel in n]
        if not matches:
            print(f"no compiled kernel's name contains {args.kernel!r}", file=sys.stderr)
            return 2
        start, name = matches[0]
        later = [a for a, _ in entries if a > start]
        size = min((later[0] - start) if later else 1 << 16, 1 << 16)
        offsets = [ip - start for ip, _ in samples if start <= ip < start + size]
        code = ctypes.string_at(start, size)
        with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as fh:
            fh.write(code)
        asm = subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64", fh.name], capture_output=True,
                             text=True).stdout
        os.unlink(fh.name)
        lines = {}
        for row in asm.splitlines():
            head = row.split(":", 1)
            if len(head) == 2 and head[0].strip() and all(c in "0123456789abcdef" for c in head[0].strip()):
                lines[int(head[0].strip(), 16)] = row
        print(f"\n{name}: {len(offsets)} samples ({100 * len(offsets) / max(total, 1):.1f} % of the step)")
        for a, b, n in _regions(offsets)[:6]:
            print(f"\n--- +{a:#x}..+{b:#x}: {100 * n / max(len(offsets), 1):.1f} % of the kernel")
            for offset in sorted(o for o in lines if a <= o < b):
                print(lines[offset])
    os.unlink(map_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
