#!/usr/bin/env bash
# The GPU backend on a real GPU: its tests on the device, then the measurements (docs/gpu.md).
#
# Usage: scripts/gpu_check.sh [OUTDIR]      (default OUTDIR: gpu-check)
#
# Run from the repository root on a machine with an NVIDIA GPU and `pip install '.[cuda]'`
# (or numba-cuda already installed). Writes to OUTDIR: versions.txt (Python, Numba,
# numba-cuda, the GPU), tests.txt (`pytest tests/gpu` with STARLING_TEST_GPU=1), the GPU
# bench at 1,000 to 10,000,000 animals as JSON and as a Markdown profile, and the CPU bench
# on the same machine for comparison. Each part runs even if an earlier one failed.
set -uo pipefail
out=${1:-gpu-check}
mkdir -p "$out"
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python=${PYTHON:-python3}
status=0
"$python" - <<'PY' 2>&1 | tee "$out/versions.txt" || status=1
import platform
import numba
from numba import cuda
print("python", platform.python_version(), "numba", numba.__version__, "numba.cuda from", cuda.__file__)
try:
    import numba_cuda
    print("numba-cuda", getattr(numba_cuda, "__version__", "?"))
except ImportError:
    print("numba-cuda not installed (Numba's built-in CUDA target)")
device = cuda.get_current_device()
print("GPU", device.name.decode() if isinstance(device.name, bytes) else device.name,
      "compute capability", device.compute_capability)
PY
STARLING_TEST_GPU=1 "$python" -m pytest -q -p no:cacheprovider tests/gpu 2>&1 | tee "$out/tests.txt" || status=1
"$python" -m starling bench --backend cuda --sizes 1000,100000,1000000,10000000 --json \
    --profile "$out/gpu_profile.md" > "$out/gpu_bench.json" || status=1
"$python" -m starling bench --sizes 1000,100000,1000000 --json --profile "$out/cpu_profile.md" \
    > "$out/cpu_bench.json" || status=1
echo "results in $out (exit $status)"
exit $status
