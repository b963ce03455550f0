"""Compile every GPU kernel of the given scenarios to PTX, on a machine without a GPU.

Usage: .venv/bin/python scripts/gpu_ptx_check.py [SCENARIO ...] [--cc 9.0]

The simulator (``make test``) runs the device kernels as Python, so it checks the
translation and the results but not the device compiler. This script asks the real one:
it builds each scenario with ``backend = "cuda"`` as the GPU would (every launch of the
step, with its argument types), then compiles each kernel with numba-cuda's
``compile_ptx`` for the given compute capability (Hopper, 9.0, by default), plus the grid
build's kernels. It needs numba-cuda and NVVM, not a GPU::

    pip install 'starling[cuda]'     # numba-cuda with the CUDA 12 toolkit wheels (NVVM, NVRTC)

and, when the toolkit's libraries are not found by themselves, ``LD_LIBRARY_PATH`` pointing
at ``nvidia/cuda_nvrtc/lib`` and ``nvidia/cuda_nvcc/nvvm/lib64`` of those wheels.
Exit status 1 when any kernel fails, with the reason.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


class _Device:
    """Stands in for the current device where numba-cuda asks for its compute capability."""

    compute_capability = (9, 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=["flock", "vicsek", "couzin", "classroom", "fish_tank"])
    parser.add_argument("--cc", default="9.0", help="compute capability, e.g. 8.0 or 9.0")
    args = parser.parse_args()
    cc = tuple(int(x) for x in args.cc.split("."))
    _Device.compute_capability = cc

    from numba import cuda, typeof
    from numba.cuda import compile_ptx

    if cuda.__name__ != "numba.cuda" or not hasattr(cuda, "compile_ptx"):
        print("numba-cuda is not installed: pip install 'starling[cuda]'", file=sys.stderr)
        return 2
    import numba.cuda.dispatcher as dispatcher

    dispatcher.get_current_device = _Device  # device functions compile for the current device's capability
    # arrays stay on the host: only their types matter here
    cuda.to_device = lambda a, *rest, **kw: np.array(a)
    cuda.device_array = lambda shape, dtype=np.float64, *rest, **kw: np.zeros(shape, dtype)
    cuda.synchronize = lambda: None

    from starling.cuda import neighbors, runtime, stepper

    runtime.unavailable_reason.cache_clear()
    runtime.unavailable_reason = lambda: None
    import starling.cuda as backend

    backend.unavailable_reason = lambda: None
    results: dict = {}

    def check(kernel, call_args, where: str) -> None:
        signature = tuple(typeof(a) for a in call_args)
        key = (kernel.py_func, signature)
        if key in results:
            return
        try:
            ptx, _ = compile_ptx(kernel.py_func, signature, cc=cc)
            results[key] = None
            print(f"ok    {where}: {kernel.py_func.__qualname__} ({len(ptx):,} characters of PTX)")
        except Exception as exc:  # noqa: BLE001 - report whatever the compiler raised
            lines = [line for line in str(exc).splitlines() if line.strip()]
            results[key] = lines[:6] or [type(exc).__name__]
            print(f"FAIL  {where}: {kernel.py_func.__qualname__}: " + " | ".join(results[key]))

    def compile_all(self) -> None:
        for launch in self.steer_launches + self.move_launches:
            if isinstance(launch, stepper._Launch):
                check(launch.kernel, launch.args, launch.where)
                continue
            n = launch.queriers[0].shape[0]  # the neighbour query, with a grid of the real shape
            origin, inverse, dims = neighbors.grid_shape(launch.query.max_distance, *self._bounds, n)
            cells = (np.zeros((n, 3), np.float32), np.zeros(n, np.int32), np.zeros(int(np.prod(dims)) + 1, np.int32),
                     origin, inverse, dims, launch.grid.box)
            check(stepper.kernel_for(neighbors.knn_range),
                  (0, n, *launch.queriers, *cells, *launch.thresholds, launch.same, launch.k, *launch.out),
                  "neighbour query")

    stepper.DeviceStepper._compile = compile_all
    import importlib.util

    import starling

    # the tutorial's behaviour (docs/extending.md), in a flock
    spec = importlib.util.spec_from_file_location("avoid_center", ROOT / "docs" / "examples" / "avoid_center.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    tutorial = ['species.bird.behaviors.3={kind = "avoid_zone", priority = 6, weight_direction = 1.0, '
                'center = [0.0, 45.0, -30.0], radius = 14.0}']
    for name, overrides in [(name, []) for name in args.scenarios] + [("flock", tutorial)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sim = starling.load_scenario(name, overrides=["backend=cuda", *overrides])
        if sim.device is None:
            print(f"--    {name}: runs on the CPU ({sim.backend_note})")
    m, cells = 100, 50
    pos = np.zeros((m, 3), np.float32)
    i32 = np.int32
    for kernel, call_args in [
        (neighbors.count_cells, (pos, np.zeros(3), np.zeros(3), np.zeros(3, np.int64), np.zeros(m, i32),
                                 np.zeros(cells, i32))),
        (neighbors.scan_blocks, (np.zeros(cells, i32), np.zeros(cells + 1, i32), np.zeros(1, i32))),
        (neighbors.scan_sums, (np.zeros(4, i32),)),
        (neighbors.scan_serial, (np.zeros(cells, i32), np.zeros(cells + 1, i32), np.zeros(cells, i32))),
        (neighbors.add_block_offsets, (np.zeros(cells + 1, i32), np.zeros(1, i32), np.zeros(cells, i32))),
        (neighbors.scatter, (pos, np.zeros(m, i32), np.zeros(cells + 1, i32), np.zeros(cells, i32), np.zeros(m, i32),
                             pos)),
        (neighbors.clear, (np.zeros(cells, i32),)),
    ]:
        check(kernel, call_args, "grid build")
    failed = sum(r is not None for r in results.values())
    print(f"{len(results) - failed} of {len(results)} kernels compiled to PTX for compute capability {args.cc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
