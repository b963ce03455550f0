"""Behaviour results: the desire contract (seed 000, 4.4.2, 6.4.1, 9.4.3).

Every velocity behaviour writes, per animal, the tuple
``(direction, direction_desire, speed, speed_desire, priority)``:

* ``direction``: unit vector (or zero when the behaviour has no opinion),
* ``direction_desire``: how much the behaviour wants that direction, in [0, weight],
* ``speed``: desired speed in m/s (>= 0),
* ``speed_desire``: how much it wants that speed, in [0, weight],
* ``priority``: small integer used by the priority allocation of the merger.

A species' results live in one stacked buffer of shape ``(behaviours, capacity, ...)``
so the merger reads every behaviour of an animal from neighbouring memory.

A kernel finishes each animal with exactly one of the two helpers below, which are
the only places a result row is written (the pipeline writes ``priority`` itself):

* :func:`emit` ``(out, i, dx, dy, dz, direction_desire, speed, speed_desire)`` writes the
  row and enforces the cheap part of the contract: a negative desire or speed becomes 0
  and a non-finite value anywhere makes the whole row "no opinion", so one bad animal
  never poisons the merger;
* :func:`no_opinion` ``(out, i)`` writes the zero row.

Both take scalars besides ``out`` and are inlined into the kernel (no call, no
reference counting); from Python they run as plain functions. The direction is written as given: normalising it (or passing
zeros) stays the kernel's job, as does keeping desires below the weight.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba.core import cgutils, types
from numba.extending import intrinsic, overload

__all__ = ["ResultView", "VelocityResults", "emit", "no_opinion"]

ResultView = namedtuple(
    "ResultView", ["direction", "direction_desire", "speed", "speed_desire", "priority"]
)
ResultView.__doc__ = """One behaviour's results for the first ``n`` animals (views, no copies).

direction (n,3) float32, direction_desire (n,) float32, speed (n,) float32,
speed_desire (n,) float32, priority (n,) int16.
"""


class VelocityResults:
    """Stacked per-behaviour result arrays of one species, grown by capacity."""

    def __init__(self, behaviours: int, capacity: int = 0):
        self.behaviours = behaviours
        self.capacity = 0
        # each behaviour's priority, written over its whole row whenever the rows are allocated:
        # priorities are constant per behaviour, so a step writes none
        self.row_priority = np.zeros(behaviours, np.int16)
        self._allocate(max(capacity, 16))

    def set_priorities(self, priorities) -> None:
        """Behaviour ``j``'s results carry ``priorities[j]`` (the merger's priority allocation reads it)."""
        self.row_priority[:] = priorities
        self.priority[:] = self.row_priority[:, None]

    def _allocate(self, capacity: int) -> None:
        m = self.behaviours
        self.direction = np.zeros((m, capacity, 3), np.float32)
        self.direction_desire = np.zeros((m, capacity), np.float32)
        self.speed = np.zeros((m, capacity), np.float32)
        self.speed_desire = np.zeros((m, capacity), np.float32)
        self.priority = np.empty((m, capacity), np.int16)
        self.priority[:] = self.row_priority[:, None]
        self.capacity = capacity
        self._views: dict[tuple[int, int], ResultView] = {}  # (behaviour, n) -> view, until reallocated

    def ensure(self, n: int) -> None:
        """Make room for ``n`` animals; grows geometrically so steps never reallocate."""
        if n > self.capacity:
            self._allocate(max(n, int(self.capacity * 1.5) + 1))

    def __getstate__(self) -> dict:
        # cached views would unpickle as copies, no longer looking at the arrays
        state = self.__dict__.copy()
        state["_views"] = {}
        return state

    def view(self, j: int, n: int) -> ResultView:
        """Behaviour ``j``'s rows for the first ``n`` animals (kept: a step builds no new views)."""
        view = self._views.get((j, n))
        if view is None:
            if len(self._views) > 4 * self.behaviours:  # counts come and go: keep recent ones only
                self._views.clear()
            view = self._views[(j, n)] = self._view(j, n)
        return view

    def _view(self, j: int, n: int) -> ResultView:
        return ResultView(
            self.direction[j, :n],
            self.direction_desire[j, :n],
            self.speed[j, :n],
            self.speed_desire[j, :n],
            self.priority[j, :n],
        )

    def stacked(self, n: int):
        """All behaviours' arrays for the first ``n`` animals, for the merger (kept like :meth:`view`)."""
        key = (-1, n)
        stacked = self._views.get(key)
        if stacked is None:
            stacked = self._views[key] = (
                self.direction[:, :n],
                self.direction_desire[:, :n],
                self.speed[:, :n],
                self.speed_desire[:, :n],
                self.priority[:, :n],
            )
        return stacked

    def clear(self, j: int, n: int) -> None:
        """Reset behaviour ``j`` to "no opinion" (a disabled behaviour)."""
        self.direction[j, :n] = 0.0
        self.direction_desire[j, :n] = 0.0
        self.speed[j, :n] = 0.0
        self.speed_desire[j, :n] = 0.0



# In kernels, emit and no_opinion compile to a few stores through an ``@intrinsic``
# (:func:`_store_row`) that Numba calls from a plain ``@overload`` and LLVM inlines. The
# intrinsic reads the arrays out of ``out`` in LLVM IR without binding them to variables, so
# a kernel counts no references per animal: an ``@overload(..., inline="always")`` is inlined
# in Numba's IR, where binding ``out`` to the inlined body's argument increments every array
# of the tuple, and the decrements land after the kernel's branches join, where Numba's
# reference-count pruning cannot pair them -- about five atomic increments and decrements
# per animal and behaviour, 15 % of the ``flock`` step. The CUDA target keeps the inlined
# versions (``_emit`` and ``_no_opinion`` below; starling.cuda.device_api).
#
# Two Numba 0.68 bugs shaped those inlined versions and still hold for them:
#
# * they are not ``@njit(inline="always")``: Numba then loses the writes of such a function
#   when it writes through a named tuple inside a branch and the caller also inlines an
#   ``@overload`` (every kernel does: ``at``) -- the row is silently left as it was;
# * they reach the arrays by position (``out[1]``), never by name (``out.direction_desire``):
#   inside a ``prange`` loop of a ``parallel=True`` compilation, a write through a named
#   tuple's attribute is lost (numba/numba#5872, #7135, #10338); by position it is not.

_DIRECTION = ResultView._fields.index("direction")
_DIRECTION_DESIRE = ResultView._fields.index("direction_desire")
_SPEED = ResultView._fields.index("speed")
_SPEED_DESIRE = ResultView._fields.index("speed_desire")


def no_opinion(out, i):
    """Write animal ``i``'s "no opinion" row: zero direction, desires and speed."""
    out.direction[i, 0] = 0.0
    out.direction[i, 1] = 0.0
    out.direction[i, 2] = 0.0
    out.direction_desire[i] = 0.0
    out.speed[i] = 0.0
    out.speed_desire[i] = 0.0


def emit(out, i, dx, dy, dz, direction_desire, speed, speed_desire):
    """Write animal ``i``'s result row: direction ``(dx, dy, dz)`` (unit, or zeros for no
    opinion on direction), its desire, the desired speed and its desire.

    The values are checked as stored (float32): a negative desire or speed is written
    as 0, and if any value is NaN or infinite (including a float64 too large for float32)
    the row becomes "no opinion". Valid values are stored exactly as a direct assignment
    would store them.
    """
    with np.errstate(over="ignore"):
        row = np.array([dx, dy, dz, direction_desire, speed, speed_desire], np.float64).astype(np.float32)
    if not np.all(np.isfinite(row)):
        no_opinion(out, i)
        return
    out.direction[i, 0] = row[0]
    out.direction[i, 1] = row[1]
    out.direction[i, 2] = row[2]
    out.direction_desire[i] = row[3] if row[3] >= 0.0 else 0.0
    out.speed[i] = row[4] if row[4] >= 0.0 else 0.0
    out.speed_desire[i] = row[5] if row[5] >= 0.0 else 0.0


def _no_opinion(out, i):
    def impl(out, i):
        direction = out[_DIRECTION]
        direction[i, 0] = 0.0
        direction[i, 1] = 0.0
        direction[i, 2] = 0.0
        out[_DIRECTION_DESIRE][i] = 0.0
        out[_SPEED][i] = 0.0
        out[_SPEED_DESIRE][i] = 0.0

    return impl


def _emit(out, i, dx, dy, dz, direction_desire, speed, speed_desire):
    def impl(out, i, dx, dy, dz, direction_desire, speed, speed_desire):
        # the values as stored: the same rounding as assigning them to the float32 arrays
        x = np.float32(dx)
        y = np.float32(dy)
        z = np.float32(dz)
        dd = np.float32(direction_desire)
        sp = np.float32(speed)
        sd = np.float32(speed_desire)
        direction = out[_DIRECTION]
        desire = out[_DIRECTION_DESIRE]
        speeds = out[_SPEED]
        speed_desires = out[_SPEED_DESIRE]
        if (math.isfinite(x) and math.isfinite(y) and math.isfinite(z) and math.isfinite(dd)
                and math.isfinite(sp) and math.isfinite(sd)):
            direction[i, 0] = x
            direction[i, 1] = y
            direction[i, 2] = z
            # one store per branch (no reassignment: Numba's SSA pass trips on reassigned inlined locals)
            if dd < 0.0:
                desire[i] = 0.0
            else:
                desire[i] = dd
            if sp < 0.0:
                speeds[i] = 0.0
            else:
                speeds[i] = sp
            if sd < 0.0:
                speed_desires[i] = 0.0
            else:
                speed_desires[i] = sd
        else:
            direction[i, 0] = 0.0
            direction[i, 1] = 0.0
            direction[i, 2] = 0.0
            desire[i] = 0.0
            speeds[i] = 0.0
            speed_desires[i] = 0.0

    return impl


_VALUE_FIELDS = (_DIRECTION, _DIRECTION_DESIRE, _SPEED, _SPEED_DESIRE)


@intrinsic
def _store_row(typingctx, out, i, dx, dy, dz, direction_desire, speed, speed_desire):
    """Store animal ``i``'s row as :func:`emit` defines it, in LLVM IR and without branches.

    Each value is rounded to float32 as an assignment would; the row is zeroed unless all six
    are finite, and a negative desire or speed (not -0.0) is stored as 0 -- the same bits as
    the inlined :func:`_emit`, which ``tests/steering/test_results_emit.py`` compares.
    """
    values = (dx, dy, dz, direction_desire, speed, speed_desire)
    if not (isinstance(out, types.BaseTuple) and len(out) == len(ResultView._fields)
            and all(isinstance(out[k], types.Array) and out[k].dtype == types.float32 for k in _VALUE_FIELDS)
            and isinstance(i, types.Integer) and all(isinstance(v, (types.Number, types.Boolean)) for v in values)):
        return None
    signature = types.none(out, i, *values)

    def codegen(context, builder, sig, args):
        f32 = context.get_value_type(types.float32)
        zero = f32(0.0)
        fabs = builder.module.declare_intrinsic("llvm.fabs", [f32])
        stored = [context.cast(builder, v, t, types.float32) for v, t in zip(args[2:], sig.args[2:])]
        finite = cgutils.true_bit
        for v in stored:  # |v| < inf is false for NaN and the infinities
            finite = builder.and_(finite, builder.fcmp_ordered("<", builder.call(fabs, [v]), f32(float("inf"))))
        x, y, z, desire, speed_, speed_desire_ = (builder.select(finite, v, zero) for v in stored)
        row = context.cast(builder, args[1], sig.args[1], types.intp)

        def store(field, value, column=None):
            array_type = sig.args[0][field]
            array = context.make_array(array_type)(context, builder, builder.extract_value(args[0], field))
            index = [row] if column is None else [row, context.get_constant(types.intp, column)]
            builder.store(value, cgutils.get_item_pointer(context, builder, array_type, array, index))

        def not_negative(v):
            return builder.select(builder.fcmp_ordered("<", v, zero), zero, v)

        store(_DIRECTION, x, 0)
        store(_DIRECTION, y, 1)
        store(_DIRECTION, z, 2)
        store(_DIRECTION_DESIRE, not_negative(desire))
        store(_SPEED, not_negative(speed_))
        store(_SPEED_DESIRE, not_negative(speed_desire_))
        return context.get_dummy_value()

    return signature, codegen


@overload(emit)
def _emit_compiled(out, i, dx, dy, dz, direction_desire, speed, speed_desire):
    def impl(out, i, dx, dy, dz, direction_desire, speed, speed_desire):
        _store_row(out, i, dx, dy, dz, direction_desire, speed, speed_desire)

    return impl


@overload(no_opinion)
def _no_opinion_compiled(out, i):
    def impl(out, i):
        _store_row(out, i, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)

    return impl
