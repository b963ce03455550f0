"""Per-pair geometry every neighbour behaviour needs, computed the same way everywhere.

A pair is (animal ``i`` of the acting species, neighbour ``j`` of the group's
targets). :func:`pair` takes plain scalars — positions, i's forward vector and the
periodic box — and returns the offset from i to j (minimum image in a periodic box),
its length and the angle between i's forward vector and the offset: the inputs of the
combined observability o(d, α) of seed 000, 6.4.4.

Helpers take scalars, not arrays, on purpose: a Numba call that passes arrays pays
reference counting on every call, which in a per-pair loop costs more than the math.
"""
import math

from numba import njit

from ...vecmath import fast_acos


@njit(cache=True, inline="always")
def wrapped(d, size):
    """Minimum-image component of an offset in a periodic box of side ``size`` (0 = no wrap)."""
    if size > 0.0:
        return d - size * math.floor(d / size + 0.5)
    return d


@njit(cache=True, inline="always")
def pair(px, py, pz, fx, fy, fz, qx, qy, qz, bx, by, bz):
    """Offset p→q, its length, and the angle (rad) between forward f and the offset."""
    dx = wrapped(qx - px, bx)
    dy = wrapped(qy - py, by)
    dz = wrapped(qz - pz, bz)
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    fl = math.sqrt(fx * fx + fy * fy + fz * fz)
    if d < 1e-9 or fl < 1e-9:
        return dx, dy, dz, d, 0.0
    c = (dx * fx + dy * fy + dz * fz) / (d * fl)
    c = min(1.0, max(-1.0, c))
    return dx, dy, dz, d, fast_acos(c)
