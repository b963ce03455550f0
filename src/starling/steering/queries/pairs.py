"""Per-pair geometry of a neighbour group, computed once and shared by its behaviours.

Every neighbour behaviour needs, for each (animal, neighbour) pair, the direction to
the neighbour, its distance and the angle between the animal's forward vector and
that direction (the inputs of the observability o(d, α), seed 000, 6.4.4). Computing
them once per group instead of once per behaviour is PySPH's precomputed-symbols idea:
with three flocking behaviours it halves the per-pair work.

The kernel works in float32 and in passes per animal: a gather of the neighbours' plain
offsets into three contiguous scratch rows, their minimum image only for a row that
crosses a periodic seam (a vectorised test finds those: the fold inside the scalar
gather was half the kernel), then the arithmetic over those rows, written without
data-dependent branches so LLVM turns it into SIMD (3–4× faster than one scalar pass
over the strided ``(k, 3)`` rows). It is compiled without
``fastmath``: a vector lane and the scalar remainder give bit-identical results, so a
pair's geometry does not depend on where it falls in its row.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

_F = np.float32
_TINY = np.float32(1e-9)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _acos32(x):
    """arccos in float32 (Abramowitz & Stegun 4.4.46, |error| <= 2e-8 rad before rounding), branch free."""
    a = min(abs(x), _F(1.0))
    r = math.sqrt(_F(1.0) - a) * (
        _F(1.5707963050) + a * (_F(-0.2145988016) + a * (_F(0.0889789874) + a * (_F(-0.0501743046) + a * (
            _F(0.0308918810) + a * (_F(-0.0170881256) + a * (_F(0.0066700901) + a * _F(-0.0012624911))))))))
    return _F(math.pi) - r if x < _F(0.0) else r


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _sides_and_inverses(box):
    """The box's sides and their inverses; a zero side (no wrap on that axis) gets a zero
    inverse, so :func:`_minimum_image` leaves that axis alone without a branch."""
    b0 = box[0]
    b1 = box[1]
    b2 = box[2]
    i0 = _F(1.0) / b0 if b0 > _F(0.0) else _F(0.0)
    i1 = _F(1.0) / b1 if b1 > _F(0.0) else _F(0.0)
    i2 = _F(1.0) / b2 if b2 > _F(0.0) else _F(0.0)
    return b0, b1, b2, i0, i1, i2


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _animal(position, forward, i):
    """Animal ``i``'s position, its unit forward vector, and whether it has one (a zero
    forward stays zero)."""
    fx = forward[i, 0]
    fy = forward[i, 1]
    fz = forward[i, 2]
    fl = math.sqrt(fx * fx + fy * fy + fz * fz)
    facing = fl > _TINY
    if facing:
        fx /= fl
        fy /= fl
        fz /= fl
    return position[i, 0], position[i, 1], position[i, 2], fx, fy, fz, facing


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _minimum_image(d, side, inverse):
    """One offset component folded into the periodic box (unchanged where ``side`` is 0)."""
    return d - side * np.floor(d * inverse + _F(0.5))


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _pair(dx, dy, dz, fx, fy, fz, facing):
    """Distance, unit direction and angle off the unit forward ``f`` of one offset, branch free.

    Coincident animals get distance 0, a zero direction and angle 0; so does any pair of an
    animal without a forward (``facing`` false) for its angle.
    """
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    apart = d >= _TINY
    inv = _F(1.0) / d if apart else _F(0.0)
    ux = dx * inv
    uy = dy * inv
    uz = dz * inv
    a = _acos32(ux * fx + uy * fy + uz * fz)
    return d, ux, uy, uz, (a if (apart and facing) else _F(0.0))


#: animals whose pairs are laid end to end and computed in one pass (see :func:`_geometry_range`)
BLOCK = 32


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy")
def _geometry_range(lo, hi, position, forward, target, index, count, box, direction, distance, angle):
    """The pairs of animals ``lo``..``hi``, :data:`BLOCK` animals at a time.

    A block's pairs are gathered end to end into scratch rows (the offset and the animal's
    forward vector per pair), then the fold test, the fold and the arithmetic run as loops
    over all of them, which vectorise: a row of its own is only the four or five pairs a
    flocking query keeps, where a vector loop is mostly its set-up and its tail (per animal,
    77 → 44 ns at 1,000 boids). The values are :func:`geometry_one_pass_range`'s bit for bit.
    """
    k = index.shape[1]
    room = BLOCK * k
    # per pair of the block: its offset, then its unit direction; its animal's unit forward and
    # whether it has one; its distance and angle
    sx = np.empty(room, np.float32)
    sy = np.empty(room, np.float32)
    sz = np.empty(room, np.float32)
    fxs = np.empty(room, np.float32)
    fys = np.empty(room, np.float32)
    fzs = np.empty(room, np.float32)
    facings = np.empty(room, np.bool_)
    sd = np.empty(room, np.float32)
    sa = np.empty(room, np.float32)
    b0, b1, b2, i0, i1, i2 = _sides_and_inverses(box)
    half = _F(0.5)
    for first in range(lo, hi, BLOCK):
        last = min(hi, first + BLOCK)
        m = 0
        for i in range(first, last):  # gather: plain offsets, end to end
            px, py, pz, fx, fy, fz, facing = _animal(position, forward, i)
            for q in range(count[i]):
                j = index[i, q]
                sx[m] = target[j, 0] - px
                sy[m] = target[j, 1] - py
                sz[m] = target[j, 2] - pz
                fxs[m] = fx
                fys[m] = fy
                fzs[m] = fz
                facings[m] = facing
                m += 1
        # An offset is its own minimum image when the fold's floor(d / side + 1/2) is 0, so a
        # block that never leaves [0, 1) there (no pair across a seam: nearly every block; every
        # block of a world that does not wrap, where the term is 1/2) skips the fold. Folded or
        # not, such an offset keeps its bits (d - side * 0), so a block folds whole when any of
        # its pairs crosses (an infinite offset fails the test and folds to NaN, as it always did).
        across = False
        for u in range(m):
            tx = sx[u] * i0 + half
            ty = sy[u] * i1 + half
            tz = sz[u] * i2 + half
            inside = ((tx >= _F(0.0)) & (tx < _F(1.0)) & (ty >= _F(0.0)) & (ty < _F(1.0))
                      & (tz >= _F(0.0)) & (tz < _F(1.0)))
            across |= not inside  # (a NaN is not inside: folded as before)
        if across:
            for u in range(m):
                sx[u] = _minimum_image(sx[u], b0, i0)
                sy[u] = _minimum_image(sy[u], b1, i1)
                sz[u] = _minimum_image(sz[u], b2, i2)
        for u in range(m):  # the arithmetic, over the block's pairs end to end (vectorised)
            sd[u], sx[u], sy[u], sz[u], sa[u] = _pair(sx[u], sy[u], sz[u], fxs[u], fys[u], fzs[u], facings[u])
        # written back by element: a row view (distance[i]) would cost two reference-count
        # updates per animal, which were as dear as a short row's arithmetic
        m = 0
        for i in range(first, last):
            for q in range(count[i]):
                distance[i, q] = sd[m]
                angle[i, q] = sa[m]
                direction[i, q, 0] = sx[m]
                direction[i, q, 1] = sy[m]
                direction[i, q, 2] = sz[m]
                m += 1


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy")
def geometry_one_pass_range(lo, hi, position, forward, target, index, count, box, direction, distance, angle):
    """The same arithmetic as ``_geometry_range`` in one scalar pass per pair, no scratch rows.

    The GPU's form (one thread per animal, where scratch rows would be per-thread
    memory), and the reference the SIMD kernel is tested against: both give the same
    float32 results bit for bit.
    """
    b0, b1, b2, i0, i1, i2 = _sides_and_inverses(box)
    for i in range(lo, hi):
        px, py, pz, fx, fy, fz, facing = _animal(position, forward, i)
        for q in range(count[i]):
            j = index[i, q]
            dx = _minimum_image(target[j, 0] - px, b0, i0)
            dy = _minimum_image(target[j, 1] - py, b1, i1)
            dz = _minimum_image(target[j, 2] - pz, b2, i2)
            d, ux, uy, uz, a = _pair(dx, dy, dz, fx, fy, fz, facing)
            distance[i, q] = d
            direction[i, q, 0] = ux
            direction[i, q, 1] = uy
            direction[i, q, 2] = uz
            angle[i, q] = a


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _geometry_parallel(position, forward, target, index, count, box, direction, distance, angle):
    n = position.shape[0]
    chunks = 64
    size = (n + chunks - 1) // chunks
    for c in prange(chunks):
        _geometry_range(c * size, min(n, (c + 1) * size), position, forward, target, index, count, box,
                        direction, distance, angle)


class PairGeometry:
    """Reusable ``(n, k)`` buffers: ``direction`` (unit, minimum image), ``distance``, ``angle`` (rad)."""

    def __init__(self):
        self.direction = np.zeros((0, 1, 3), np.float32)
        self.distance = np.zeros((0, 1), np.float32)
        self.angle = np.zeros((0, 1), np.float32)
        self._rows = None  # (n, the three views of n rows): a group asks for the same rows step after step

    def buffers(self, n: int, k: int):
        """The ``(direction, distance, angle)`` buffers of ``n`` rows of ``k`` pairs, as they are."""
        if self.distance.shape[0] < n or self.distance.shape[1] != k:
            cap = max(n, int(self.distance.shape[0] * 1.5))
            self.direction = np.zeros((cap, k, 3), np.float32)
            self.distance = np.zeros((cap, k), np.float32)
            self.angle = np.zeros((cap, k), np.float32)
            self._rows = None
        rows = self._rows
        if rows is None or rows[0] != n:
            rows = self._rows = (n, (self.direction[:n], self.distance[:n], self.angle[:n]))
        return rows[1]

    def __getstate__(self) -> dict:
        # the kept views would unpickle as copies, no longer looking at the buffers
        return {**self.__dict__, "_rows": None}

    def compute(self, position, forward, target, index, count, box, *, parallel: bool = False):
        n, k = index.shape
        direction, distance, angle = self.buffers(n, k)
        if n:
            args = (position, forward, target, index, count, box, direction, distance, angle)
            if parallel:
                _geometry_parallel(*args)
            else:
                _geometry_range(0, n, *args)
        return direction, distance, angle
