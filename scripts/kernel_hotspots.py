"""Where a scene's step spends its time, kernel by kernel and inside one kernel, with Linux ``perf``.

Usage::

    PYTHONPATH=src .venv/bin/python scripts/kernel_hotspots.py SCENE [--steps N] [--set PATH=VALUE ...]
                                                              [--kernel NAME] [--top K]

The scene is built and warmed (its kernels loaded or compiled), then ``perf record`` samples
this process while it steps ``N`` times. Numba's compiled code has no symbols for ``perf``, so
the script writes ``perf``'s map of JIT code (``/tmp/perf-PID.map``) from the symbol table of every
library Numba compiled or loaded (it keeps their object code as they load): the report then names
each kernel (``starling.steering.queries.grid_query._query_serial``) beside the interpreter's own
functions, which is the Python between the kernels, and a helper compiled out of line into a
kernel's code under its own name with its kernel (``NRT_incref (in ….align_up)``); code in no
library (Numba's runtime, libm) keeps its own symbol or counts as "other native code".
With ``--kernel`` (a substring of a kernel's name), the kernel's machine code is
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


_OBJECTS = []  # (library, object code) of every library compiled or loaded from the cache


def _keep_object_code() -> None:
    """Keep each compiled library's object code, whose symbol table gives every function's extent.

    Numba hands the object code to LLVM's loader and forgets it; the two hooks below are where it
    passes. They must be in place before the first kernel loads (``import starling`` loads none).
    """
    from numba.core import codegen

    library_class = codegen.CPUCodeLibrary
    compiled, getbuffer = library_class.__dict__["_object_compiled_hook"], library_class.__dict__["_object_getbuffer_hook"]

    def on_compiled(cls, ll_module, buf):
        _remember(ll_module, buf)
        return compiled.__func__(cls, ll_module, buf)

    def on_loaded(cls, ll_module):
        buf = getbuffer.__func__(cls, ll_module)
        if buf:
            _remember(ll_module, buf)
        return buf

    library_class._object_compiled_hook = classmethod(on_compiled)
    library_class._object_getbuffer_hook = classmethod(on_loaded)


def _remember(ll_module, buf) -> None:
    library = getattr(ll_module, "_CPUCodeLibrary__library", None)
    if library is not None:
        _OBJECTS.append((library, bytes(buf)))


def _text_symbols(buf: bytes):
    """``[(offset, size, mangled name, is_global)]`` of the functions in an object's code section."""
    with tempfile.NamedTemporaryFile(suffix=".o") as fh:
        fh.write(buf)
        fh.flush()
        table = subprocess.run(["objdump", "-t", fh.name], capture_output=True, text=True).stdout
    found = []
    for row in table.splitlines():
        # "0000000000004ed0  w    F .ltext\t000000000000000a NRT_incref"
        head, sep, rest = row.partition("\t")
        if not sep or head.split()[-1] not in (".text", ".ltext"):  # .ltext: Numba's large code model
            continue
        size_text, _, name = rest.partition(" ")
        size = int(size_text, 16)
        if size and name:
            found.append((int(head[:16], 16), size, name.strip(), head[17] == "g" or head[18] == "w"))
    return found


def _short(mangled: str) -> str:
    """A Numba symbol's dotted name: ``_ZN8starling…13_query_serialB4v208…`` → ``starling.….grid_query._query_serial``.

    Numba mangles like C++ (length-prefixed parts after ``_ZN``), then appends ABI tags and
    argument types, which are dropped here; other symbols (``NRT_incref``) are kept as they are.
    """
    if not mangled.startswith("_ZN"):
        return mangled
    parts, at = [], 3
    while at < len(mangled) and mangled[at].isdigit():
        end = at
        while mangled[end].isdigit():
            end += 1
        length = int(mangled[at:end])
        parts.append(mangled[end:end + length])
        at = end + length
    return ".".join(parts).replace("_3clocals_3e", "<locals>")


def _overloads():
    """``[(address, size, name)]`` of every compiled function in this process, from each library's symbols.

    A kernel's entry is named after the kernel; a helper compiled out of line into a kernel's library
    (``NRT_incref``, a callee Numba did not inline, a threaded loop body) is named with the kernel it
    belongs to, so its time is not counted as the kernel's own nor lost as unnamed code.
    """
    found = {}
    for library, buf in _OBJECTS:
        symbols = _text_symbols(buf)
        base = None
        for offset, _, name, is_global in symbols:
            if not is_global:
                continue
            try:
                address = library.get_pointer_to_function(name)
            except Exception:
                continue
            if address:
                base = address - offset
                break
        if base is None:
            continue
        owner = None
        for offset, size, name, _ in symbols:
            short = _short(name)
            if short.rsplit(".", 1)[-1] == library.name and not short.startswith(("cpython.", "cfunc.")):
                owner = short
        owner = owner or library.name
        for offset, size, name, _ in symbols:
            short = _short(name)
            if short == owner:
                label = owner
            elif "__numba_parfor_gufunc" in name:
                label = owner + ".<parfor>"
            elif short.startswith("cpython."):
                label = owner + " (Python wrapper)"
            else:
                label = f"{short} (in {owner})"
            found[base + offset] = (size, label)
    return sorted((a, size, label) for a, (size, label) in found.items())


def _write_map(entries) -> str:
    path = f"/tmp/perf-{os.getpid()}.map"
    with open(path, "w") as fh:
        for address, size, name in entries:
            fh.write(f"{address:x} {size:x} {name}\n")
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
    ap.add_argument("scene", help="a scenario, or bench:N for starling bench's flocking step of N animals")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    ap.add_argument("--kernel", help="disassemble the hottest ranges of the kernel whose name contains this")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    perf = shutil.which("perf")
    if perf is None:
        print("perf is not installed (apt install linux-perf)", file=sys.stderr)
        return 2

    _keep_object_code()
    from starling.simulation import load_scenario

    if args.scene.startswith("bench:"):  # the flocking bench's scenario (starling bench --sizes N)
        from starling.bench import bench_simulation

        sim = bench_simulation(int(args.scene.split(":", 1)[1]))
    else:
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
        matches = [(a, size, n) for a, size, n in entries if args.kernel in n and " (in " not in n]
        if not matches:
            print(f"no compiled kernel's name contains {args.kernel!r}", file=sys.stderr)
            return 2
        start, size, name = matches[0]
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
