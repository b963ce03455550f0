"""The CUDA backend: the same scenario, the same behaviours, on an NVIDIA GPU (``backend = "cuda"``).

See ``docs/gpu.md``. Importing this package imports nothing of ``numba.cuda``;
:func:`unavailable_reason` says whether a GPU can be used here.
"""
from .runtime import device_name, simulated, unavailable_reason

__all__ = ["device_name", "simulated", "unavailable_reason"]
