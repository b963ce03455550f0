"""What the constant-speed movers share: the current heading, the step along it, the Python side.

``halfway`` (seed 003) and ``constant_speed`` (Vicsek 1995) differ only in how far the
heading turns toward the desire each step. Everything else — reading the heading from the
velocity (or the forward vector at rest), writing velocity, forward and up, moving and
wrapping, and the Python class that hands a population to the kernels — lives here once.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from numba import njit

from ..steering.vecmath import normalize3
from .movers import ParameterTable, wrap_coordinate

EPS = 1e-9
_NO_SCALE = np.zeros(0, np.float32)


# The two helpers take the population's arrays, so they are plain calls compiled without
# reference counting (they allocate nothing), which LLVM inlines: inlined into Numba's IR
# instead, each array bound to an argument counted a reference per animal (an atomic
# increment and decrement, about five per animal and step).
@njit(cache=True, no_cfunc_wrapper=True, _nrt=False)
def current_heading(i, planar, velocity, forward):
    """Unit heading of animal ``i``: its velocity's direction, else its forward vector, else +z."""
    vy = 0.0 if planar else velocity[i, 1]
    hx, hy, hz, hl = normalize3(velocity[i, 0], vy, velocity[i, 2])
    if hl < EPS:
        fy = 0.0 if planar else forward[i, 1]
        hx, hy, hz, hl = normalize3(forward[i, 0], fy, forward[i, 2])
        if hl < EPS:
            hx, hy, hz = 0.0, 0.0, 1.0
    return hx, hy, hz


@njit(cache=True, no_cfunc_wrapper=True, _nrt=False)
def move_along(i, hx, hy, hz, speed, position, velocity, forward, up, dt, wrap, bmin, size):
    """Velocity ``speed`` along the unit heading, forward = heading, up = world up made
    perpendicular to it (x when heading straight up or down); then move, wrapping if asked."""
    velocity[i, 0] = hx * speed
    velocity[i, 1] = hy * speed
    velocity[i, 2] = hz * speed
    forward[i, 0] = hx
    forward[i, 1] = hy
    forward[i, 2] = hz
    ax, ay, az, al = normalize3(-hy * hx, 1.0 - hy * hy, -hy * hz)
    if al < 1e-4:
        ax, ay, az, al = normalize3(1.0 - hx * hx, -hx * hy, -hx * hz)
    up[i, 0] = ax
    up[i, 1] = ay
    up[i, 2] = az
    for a in range(3):
        x = position[i, a] + velocity[i, a] * dt
        if wrap:
            x = wrap_coordinate(x, bmin[a], size[a])
        position[i, a] = x


class HeadingMover:
    """A constant-speed mover's Python side (the interface of :class:`starling.motion.movers.Mover`).

    A subclass names its parameter table's fields (``fields``: ``(name, converter)``, the
    speed first) and its two compiled kernels, each taking ``(planar, position, velocity,
    forward, up, desired, table, dt, wrap, bmin, size, sscale)``: ``serial`` with a leading
    ``lo, hi`` row range, ``parallel`` over all rows.
    """

    fields: tuple = ()
    serial: Callable
    parallel: Callable

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        missing = [name for name in ("fields", "serial", "parallel") if not cls.__dict__.get(name)]
        if missing:
            raise TypeError(f"{cls.__name__} must set {', '.join(missing)} (see HeadingMover)")

    def __init__(self, params):
        self.params = params
        self.planar = bool(params.planar)
        self.table = ParameterTable(params, list(self.fields))

    @property
    def max_speed(self) -> float:
        return self.params.max_speed

    def move(self, position, velocity, forward, up, desired, dt, *, wrap=None, parallel=False,
             speed_scale=None, accel_scale=None, drawn=None) -> None:
        """One step of ``dt``: turn toward ``desired``'s direction, move at the constant speed.

        ``speed_scale`` (n,) scales each animal's speed (fatigue); ``accel_scale`` has no
        rate to scale here and is ignored; ``drawn`` maps a field to per-animal values.
        """
        if position.shape[0] == 0:
            return
        kernel, args = self.range_call(position, velocity, forward, up, desired, dt, wrap=wrap,
                                       speed_scale=speed_scale, drawn=drawn)
        if parallel:
            type(self).parallel(*args)
        else:
            kernel(0, position.shape[0], *args)

    def range_call(self, position, velocity, forward, up, desired, dt, *, wrap=None, speed_scale=None, drawn=None):
        """``(kernel, args)``: ``kernel(lo, hi, *args)`` moves rows ``lo``..``hi``. The arrays given are
        passed through as they are (another backend passes its own); the rest are NumPy arrays."""
        sscale = _NO_SCALE if speed_scale is None else np.ascontiguousarray(speed_scale, np.float32)
        lo, size = (np.zeros(3), np.zeros(3)) if wrap is None else wrap
        return type(self).serial, (self.planar, position, velocity, forward, up, desired,
                                   self.table.rows(position.shape[0], drawn), float(dt), wrap is not None,
                                   np.asarray(lo, np.float64), np.asarray(size, np.float64), sscale)
