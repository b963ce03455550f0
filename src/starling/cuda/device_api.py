"""Device versions of what kernels call that the CUDA compiler does not take as the CPU one does.

Kernels and their helpers are compiled for the device from their own source
(:mod:`starling.cuda.translate`), and the translation swaps in these stand-ins:

* ``at``, ``emit`` and ``no_opinion`` are Numba ``@overload``s inlined into every CPU
  kernel; numba-cuda keeps its own compiler pipeline and cannot inline the CPU
  pipeline's code, so the device gets the same implementations registered for the
  ``cuda`` target (called, not inlined);
* NumPy's scalar functions (``np.floor``, ``np.rint``, ``np.sqrt``, …) have no device
  implementation; :data:`numpy_on_device` is NumPy's namespace with those replaced by
  libdevice's (the float32 one for float32, the float64 one otherwise), so
  ``np.rint(x)`` in a helper rounds exactly as on the CPU.

Imported only when a real device compiles kernels (never on the simulator, which runs
the Python versions).
"""
from __future__ import annotations

import functools
import math
import types as pytypes

import numpy as np
from numba import types
from numba.cuda import libdevice

from ..steering.per_animal import _at, at
from ..steering.results import _emit, _no_opinion, emit, no_opinion

__all__ = ["at_device", "emit_device", "no_opinion_device", "numpy_on_device"]


def _cuda_overload():
    try:  # numba-cuda (what `pip install starling[cuda]` installs): its own registry
        from numba.cuda.extending import overload

        return overload
    except ImportError:  # Numba's built-in CUDA target shares the core registry
        from numba.core.extending import overload

        return functools.partial(overload, target="cuda")


overload = _cuda_overload()


# Each stand-in is, called from Python, the CPU function it stands for; inside a CUDA kernel
# the device compiler uses the implementation registered for it below (Numba's @overload).

def at_device(value, i):
    """``starling.steering.per_animal.at``, with a ``cuda``-target implementation."""
    return at(value, i)


def emit_device(out, i, dx, dy, dz, direction_desire, speed, speed_desire):
    """``starling.steering.results.emit``, with a ``cuda``-target implementation."""
    emit(out, i, dx, dy, dz, direction_desire, speed, speed_desire)


def no_opinion_device(out, i):
    """``starling.steering.results.no_opinion``, with a ``cuda``-target implementation."""
    no_opinion(out, i)


overload(at_device)(_at)
overload(emit_device)(_emit)
overload(no_opinion_device)(_no_opinion)


# ---------------------------------------------------------------------------------------------- numpy

def _stub(name: str):
    """A function that is NumPy's ``np.<name>`` from Python; its device version is registered on it."""
    numpy_function = getattr(np, name)

    def stub(*args):
        return numpy_function(*args)

    stub.__name__ = f"np_{name}_on_device"
    return stub


def _unary(name: str, single, double, *, integer_as_float: bool = True):
    """A device ``np.<name>``: libdevice's ``single`` for float32, ``double`` for float64 (and integers)."""
    stub = _stub(name)

    @overload(stub)
    def _impl(x):
        if x == types.float32:
            return lambda x: single(x)
        if isinstance(x, types.Float) or (integer_as_float and isinstance(x, types.Integer)):
            return lambda x: double(float(x))
        return None

    return stub


def _finite(name: str, single, double):
    stub = _stub(name)

    @overload(stub)
    def _impl(x):
        if x == types.float32:
            return lambda x: single(x) != 0
        if isinstance(x, types.Float):
            return lambda x: double(x) != 0
        if isinstance(x, types.Integer):
            return lambda x: name == "isfinite"
        return None

    return stub


def _radians_factor(name: str, factor: float):
    stub = _stub(name)

    @overload(stub)
    def _impl(x):
        if x == types.float32:
            f32 = np.float32(factor)
            return lambda x: x * f32
        if isinstance(x, (types.Float, types.Integer)):
            return lambda x: float(x) * factor
        return None

    return stub


def _absolute():
    stub = _stub("abs")

    @overload(stub)
    def _impl(x):
        if x == types.float32:
            return lambda x: libdevice.fabsf(x)
        if isinstance(x, types.Float):
            return lambda x: libdevice.fabs(x)
        if isinstance(x, types.Integer):
            return lambda x: x if x >= 0 else -x
        return None

    return stub


_REPLACED = {
    "floor": _unary("floor", libdevice.floorf, libdevice.floor),
    "ceil": _unary("ceil", libdevice.ceilf, libdevice.ceil),
    "trunc": _unary("trunc", libdevice.truncf, libdevice.trunc),
    "rint": _unary("rint", libdevice.rintf, libdevice.rint),
    "sqrt": _unary("sqrt", libdevice.sqrtf, libdevice.sqrt),
    "exp": _unary("exp", libdevice.expf, libdevice.exp),
    "log": _unary("log", libdevice.logf, libdevice.log),
    "sin": _unary("sin", libdevice.sinf, libdevice.sin),
    "cos": _unary("cos", libdevice.cosf, libdevice.cos),
    "tan": _unary("tan", libdevice.tanf, libdevice.tan),
    "arctan": _unary("arctan", libdevice.atanf, libdevice.atan),
    "isfinite": _finite("isfinite", libdevice.finitef, libdevice.isfinited),
    "isnan": _finite("isnan", libdevice.isnanf, libdevice.isnand),
    "radians": _radians_factor("radians", math.pi / 180.0),
    "deg2rad": _radians_factor("deg2rad", math.pi / 180.0),
    "degrees": _radians_factor("degrees", 180.0 / math.pi),
    "rad2deg": _radians_factor("rad2deg", 180.0 / math.pi),
}
_REPLACED["abs"] = _REPLACED["absolute"] = _REPLACED["fabs"] = _absolute()

#: NumPy's namespace for device code: the scalar functions above replaced, everything else NumPy's own
numpy_on_device = pytypes.ModuleType("numpy_on_device", "NumPy for device kernels (see starling.cuda.device_api)")
numpy_on_device.__dict__.update({k: v for k, v in vars(np).items() if not k.startswith("__")})
numpy_on_device.__dict__.update(_REPLACED)
