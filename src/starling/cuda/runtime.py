"""Whether a CUDA device can run Starling here, and Numba's CUDA module when it can.

Nothing in Starling requires a GPU: ``numba.cuda`` is imported only when a simulation
asks for ``backend = "cuda"`` (or a test runs the device kernels on Numba's simulator,
``NUMBA_ENABLE_CUDASIM=1``, which runs every thread as Python on the CPU).
"""
from __future__ import annotations

import functools
import os


def simulated() -> bool:
    """True when Numba's CUDA simulator stands in for a GPU (``NUMBA_ENABLE_CUDASIM=1``)."""
    from numba import config

    return bool(config.ENABLE_CUDASIM)


def cuda_module():
    from numba import cuda

    return cuda


@functools.lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """Why the CUDA backend cannot run here, or None when it can."""
    if os.environ.get("STARLING_NO_CUDA"):
        return "STARLING_NO_CUDA is set"
    try:
        cuda = cuda_module()
    except Exception as exc:  # noqa: BLE001 - an import failure of any kind means no GPU support
        return f"numba.cuda cannot be imported ({exc}); install the GPU extra: pip install 'starling[cuda]'"
    if simulated():
        return None
    try:
        if not cuda.is_available():
            return "no CUDA GPU or driver was found (numba.cuda.is_available() is False)"
        cuda.get_current_device()
    except Exception as exc:  # noqa: BLE001 - the driver's own error is the reason
        return f"the CUDA driver could not start ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    return None


def device_name() -> str:
    """The GPU's name (``"simulator"`` on Numba's CUDA simulator)."""
    if simulated():
        return "simulator"
    dev = cuda_module().get_current_device()
    name = dev.name
    return name.decode() if isinstance(name, bytes) else str(name)
