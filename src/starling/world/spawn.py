"""Where newcomers start and how they move: sampling of spawn regions, spacings and headings.

Kept apart from the simulation so it is plain NumPy on plain arguments: the same draws
from the same generator give the same animals, whichever face asked for them.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

# Random sequential addition jams near a volume fraction of 0.38 for spheres of diameter
# ``min_spacing``, but redrawing the points that break the spacing slows down long before:
# a new point must miss a ball of radius ``min_spacing`` (8x that volume) around each other.
MAX_PACKING = 0.1
_ROUNDS = 200


class SpawnError(ValueError):
    """The spawn rules cannot be met (for example, too many animals for the spacing asked)."""


def region_volume(shape: str, size: Sequence[float], radius: float, planar: bool) -> float:
    """Volume (area where ``planar``) the animals are spread over."""
    if shape == "box":
        sx, sy, sz = (float(v) for v in size)
        return sx * sz if planar else sx * sy * sz
    return np.pi * radius ** 2 if planar else 4.0 / 3.0 * np.pi * radius ** 3


def packing_fraction(n: int, min_spacing: float, volume: float, planar: bool) -> float:
    """Share of the region the animals' exclusion discs (or balls) of diameter ``min_spacing`` cover."""
    if min_spacing <= 0.0 or n == 0:
        return 0.0
    if volume <= 0.0:
        return float("inf")
    one = np.pi / 4.0 * min_spacing ** 2 if planar else np.pi / 6.0 * min_spacing ** 3
    return n * one / volume


def _points(rng: np.random.Generator, shape: str, center: np.ndarray, size, radius: float,
            planar: bool, n: int) -> np.ndarray:
    if shape == "box":
        pos = center + (rng.random((n, 3)) - 0.5) * np.asarray(size, np.float64)
    else:
        d = rng.normal(size=(n, 3))
        d /= np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-12)
        pos = center + d * radius * rng.random((n, 1)) ** (1.0 / 3.0)
    if planar:
        # walkers: the ball's points dropped onto its middle plane (the ground mover settles them)
        pos[:, 1] = center[1]
    return pos


def spawn_positions(rng: np.random.Generator, n: int, *, shape: str, center: Sequence[float],
                    size: Sequence[float], radius: float, planar: bool = False,
                    min_spacing: float = 0.0) -> np.ndarray:
    """``n`` points uniform in a box or a ball, float64 (n, 3); on the middle plane where ``planar``.

    With ``min_spacing`` no two points are closer than it: points that break it are drawn
    again until none does (a few rounds). The spacing is a wish bounded by room: where
    ``n`` such animals would cover more than :data:`MAX_PACKING` of the region (a flock
    scaled to 10,000 birds in the same sky), it shrinks to the spacing that covers
    exactly that, so a bigger count never turns a working scenario into an error.
    Raises :class:`SpawnError` only if the rounds run out.
    """
    center = np.asarray(center, np.float64)
    pos = _points(rng, shape, center, size, radius, planar, n)
    if min_spacing <= 0.0 or n < 2:
        return pos
    volume = region_volume(shape, size, radius, planar)
    fraction = packing_fraction(n, min_spacing, volume, planar)
    if fraction > MAX_PACKING:
        # more animals than fit that far apart: the spacing shrinks to what fits
        min_spacing *= (MAX_PACKING / fraction) ** (0.5 if planar else 1.0 / 3.0)
    from scipy.spatial import cKDTree  # only a spawn with a spacing pays for importing SciPy's trees

    pairs = cKDTree(pos).query_pairs(min_spacing, output_type="ndarray")
    if len(pairs) == 0:
        return pos
    # keep the earlier animal of each close pair and redraw the later ones, each round
    # checking the candidates against the kept animals (one tree, built once) and the
    # animals placed in earlier rounds (a small tree), so a million costs a few trees
    redo = np.unique(pairs.max(axis=1))
    kept = cKDTree(np.delete(pos, redo, axis=0))
    placed = np.empty((0, 3))
    for _ in range(_ROUNDS):
        todo = len(redo) - len(placed)
        if todo == 0:
            pos[redo] = placed
            return pos
        cand = _points(rng, shape, center, size, radius, planar, todo)
        ok = kept.query(cand, k=1, distance_upper_bound=min_spacing)[0] >= min_spacing
        if len(placed):
            ok &= cKDTree(placed).query(cand, k=1, distance_upper_bound=min_spacing)[0] >= min_spacing
        close = cKDTree(cand).query_pairs(min_spacing, output_type="ndarray")
        if len(close):
            ok[close.max(axis=1)] = False
        placed = np.concatenate([placed, cand[ok]])
    raise SpawnError(f"could not place {n} animals {min_spacing:g} m apart in {_ROUNDS} rounds; "
                     "enlarge the spawn region or lower min_spacing")


def spawn_headings(rng: np.random.Generator, n: int, *, flat: bool,
                   direction: Optional[Sequence[float]] = None, spread_deg: float = 180.0) -> np.ndarray:
    """Unit headings (n, 3): isotropic, or within ``spread_deg`` of a common ``direction``.

    A shared direction is how a flock arrives at its roost: already moving together, so
    the first seconds are not spent untangling head-on collisions. Headings are uniform
    on the cap of half-angle ``spread_deg`` around the direction (on the arc, where ``flat``).
    """
    if direction is None:
        heading = rng.normal(size=(n, 3))
        if flat:
            heading[:, 1] = 0.0
        return heading / np.maximum(np.linalg.norm(heading, axis=1, keepdims=True), 1e-12)
    axis = np.asarray(direction, np.float64).copy()
    if flat:
        axis[1] = 0.0
    axis /= max(float(np.linalg.norm(axis)), 1e-12)
    spread = np.radians(min(max(spread_deg, 0.0), 180.0))
    # any two unit vectors completing the axis to an orthonormal frame
    helper = np.array([0.0, 1.0, 0.0]) if abs(axis[1]) < 0.9 else np.array([1.0, 0.0, 0.0])
    e1 = np.cross(axis, helper)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    if flat:
        # in the horizontal plane: e1 is horizontal when the axis is (helper is +y)
        angle = rng.uniform(-spread, spread, size=(n, 1))
        return np.cos(angle) * axis + np.sin(angle) * e1
    cos_t = rng.uniform(np.cos(spread), 1.0, size=(n, 1))
    sin_t = np.sqrt(np.maximum(0.0, 1.0 - cos_t ** 2))
    phi = rng.uniform(0.0, 2.0 * np.pi, size=(n, 1))
    return cos_t * axis + sin_t * (np.cos(phi) * e1 + np.sin(phi) * e2)
