"""Per-pair quantities every neighbour behaviour needs, computed the same way everywhere.

A pair is (animal ``i`` of the acting species, neighbour ``j`` of the group's targets).
``pair(...)`` returns the offset from i to j (minimum image in a periodic box), its
length, and the angle between i's forward vector and that offset — the inputs of the
combined observability o(d, α) of seed 000, 6.4.4.
"""
import math

from numba import njit


@njit(cache=True, inline="always")
def wrapped(d, size):
    """Minimum-image component of an offset in a periodic box of side ``size`` (0 = no wrap)."""
    if size > 0.0:
        return d - size * math.floor(d / size + 0.5)
    return d


@njit(cache=True, inline="always")
def pair(agents, others, box, i, j):
    """Offset i→j, its length, and the angle (rad) between i's forward and the offset."""
    dx = wrapped(others.position[j, 0] - agents.position[i, 0], box[0])
    dy = wrapped(others.position[j, 1] - agents.position[i, 1], box[1])
    dz = wrapped(others.position[j, 2] - agents.position[i, 2], box[2])
    d = math.sqrt(dx * dx + dy * dy + dz * dz)
    fx = agents.forward[i, 0]
    fy = agents.forward[i, 1]
    fz = agents.forward[i, 2]
    fl = math.sqrt(fx * fx + fy * fy + fz * fz)
    if d < 1e-9 or fl < 1e-9:
        return dx, dy, dz, d, 0.0
    c = (dx * fx + dy * fy + dz * fz) / (d * fl)
    c = min(1.0, max(-1.0, c))
    return dx, dy, dz, d, math.acos(c)


@njit(cache=True, inline="always")
def no_opinion(out, i):
    out.direction[i, 0] = 0.0
    out.direction[i, 1] = 0.0
    out.direction[i, 2] = 0.0
    out.direction_desire[i] = 0.0
    out.speed[i] = 0.0
    out.speed_desire[i] = 0.0
