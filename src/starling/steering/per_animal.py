"""Reading a behaviour parameter that may differ from animal to animal, inside a kernel.

A behaviour parameter written as a distribution (:mod:`starling.steering.distributions`)
reaches the kernel as a per-animal array instead of a number. Kernels read every
numeric parameter through :func:`at`, so one kernel source serves both: Numba compiles
a specialisation per argument type, and for a plain number ``at`` compiles away to the
number itself (no cost for the common case).
"""
import numpy as np
from numba import types
from numba.extending import overload


def at(value, i):
    """``value[i]`` when the parameter is drawn per animal, else ``value`` itself."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return value[i]
    return value


@overload(at, inline="always")
def _at(value, i):
    if isinstance(value, types.Array) and value.ndim == 1:
        return lambda value, i: value[i]
    return lambda value, i: value
