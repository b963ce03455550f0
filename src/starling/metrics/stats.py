"""Distributions over the animals: nearest-neighbour distances, local density, speeds, states.

* nearest-neighbour statistics: each animal's distance to its nearest other, summarised
  as mean, median, population standard deviation, minimum and the 5th/95th percentiles
  (NumPy's linear interpolation between order statistics);
* density: the mean, over the animals, of the number of *others* within ``radius``
  divided by the disc's area ``π r²`` (``flat``: animals on a plane or on the ground,
  measured in the x–z plane, y being up) or the ball's volume ``4/3 π r³``. It is the
  local density an animal sees around it, in animals per m² or m³: near an open
  (non-wrapping) edge part of the disc is empty, so a flock pressed against a wall reads
  lower than its interior;
* speed statistics: mean, population standard deviation, minimum, maximum of ``|v|``;
* occupancy: the share of the animals in each brain state.

Positions follow ``order.py``'s ``box`` convention (periodic side lengths, 0 or inf: no
wrap); distances are minimum-image distances. Statistics of fewer animals than they need
(a nearest neighbour needs two) are NaN, never a made-up 0.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from .order import _periods, _tree

NAN = float("nan")
NN_KEYS = ("mean", "median", "sd", "min", "p5", "p95")
SPEED_KEYS = ("mean", "sd", "min", "max")


def _rows(n: int, sample: Optional[int], rng: Optional[np.random.Generator]) -> Optional[np.ndarray]:
    """Row indices of a random subsample when ``n`` exceeds ``sample`` (keeps live views cheap), else None."""
    if sample is None or n <= sample:
        return None
    return (rng or np.random.default_rng(0)).choice(n, sample, replace=False)


def nearest_neighbor_distances(position: np.ndarray, box=None, sample: Optional[int] = None,
                               rng: Optional[np.random.Generator] = None) -> np.ndarray:
    """Each animal's distance to its nearest other (over ``sample`` random animals when there are more).

    The neighbour is searched among all animals, so a sampled distance is exact; an
    empty array when there are fewer than two animals.
    """
    p = np.asarray(position, np.float64).reshape(-1, 3)
    if len(p) < 2:
        return np.zeros(0)
    tree = _tree(p, _periods(box))
    query = tree.data
    rows = _rows(len(p), sample, rng)
    if rows is not None:
        query = query[rows]
    d, _ = tree.query(query, k=2)
    return d[:, 1]


def distribution(values: np.ndarray) -> dict[str, float]:
    """mean, median, sd (population), min, p5, p95 of ``values``; NaN for each when empty."""
    v = np.asarray(values, np.float64)
    if v.size == 0:
        return dict.fromkeys(NN_KEYS, NAN)
    p5, median, p95 = np.percentile(v, [5.0, 50.0, 95.0])
    return {"mean": float(v.mean()), "median": float(median), "sd": float(v.std()), "min": float(v.min()),
            "p5": float(p5), "p95": float(p95)}


def nearest_neighbor_stats(position: np.ndarray, box=None, sample: Optional[int] = 2000,
                           rng: Optional[np.random.Generator] = None) -> dict[str, float]:
    """:func:`distribution` of the nearest-neighbour distances (NaN when fewer than two animals)."""
    return distribution(nearest_neighbor_distances(position, box, sample, rng))


def density(position: np.ndarray, radius: float, box=None, flat: bool = False, sample: Optional[int] = 2000,
            rng: Optional[np.random.Generator] = None) -> float:
    """Mean number of others within ``radius`` per unit area (``flat``, x–z plane) or volume.

    NaN without animals. ``radius`` must be positive: it sets the scale the density is
    seen at (``Simulation.metrics`` uses the group radius, what an animal perceives).
    """
    if not radius > 0:
        raise ValueError(f"density: radius must be positive, got {radius}")
    p = np.asarray(position, np.float64).reshape(-1, 3)
    if len(p) == 0:
        return NAN
    L = _periods(box)
    if flat:
        p = p[:, [0, 2]]
        L = None if L is None else L[[0, 2]]
        L = L if L is not None and L.any() else None
        size = math.pi * radius ** 2
    else:
        size = 4.0 / 3.0 * math.pi * radius ** 3
    tree = _tree(p, L)
    rows = _rows(len(p), sample, rng)
    probe = tree if rows is None else type(tree)(tree.data[rows], boxsize=L)
    pairs = probe.count_neighbors(tree, float(radius))  # dual-tree count; each animal pairs with itself once
    return float((pairs - probe.n) / probe.n / size)


def speed_stats(velocity: np.ndarray) -> dict[str, float]:
    """mean, sd (population), min, max of the speeds ``|v|``; NaN for each when there are no animals."""
    v = np.asarray(velocity, np.float64).reshape(-1, 3)
    if len(v) == 0:
        return dict.fromkeys(SPEED_KEYS, NAN)
    s = np.linalg.norm(v, axis=1)
    return {"mean": float(s.mean()), "sd": float(s.std()), "min": float(s.min()), "max": float(s.max())}


def occupancy(state: np.ndarray, names: Sequence[str]) -> dict[str, float]:
    """Share of the animals in each state: ``{names[i]: count(state == i) / n}``.

    An animal whose state is not an index of ``names`` (``-1``: no brain) is in none,
    so the shares then sum to less than 1; NaN for each state when there are no animals.
    """
    s = np.asarray(state).reshape(-1).astype(np.int64)
    if s.size == 0:
        return dict.fromkeys(names, NAN)
    counts = np.bincount(s[(s >= 0) & (s < len(names))], minlength=len(names))
    return {name: float(c) / s.size for name, c in zip(names, counts)}


def occupancy_series(state: np.ndarray, alive: np.ndarray, n_states: int) -> np.ndarray:
    """Occupancy over time: ``(F, n_states)`` shares from ``state``/``alive`` arrays of shape ``(F, capacity)``.

    Row ``f`` is :func:`occupancy` of the animals alive in frame ``f`` (NaN when none is).
    """
    s = np.asarray(state).astype(np.int64)
    a = np.asarray(alive, bool)
    if s.shape != a.shape or s.ndim != 2:
        raise ValueError(f"occupancy_series: state {s.shape} and alive {a.shape} must be the same (F, capacity)")
    alive_n = a.sum(axis=1).astype(np.float64)
    out = np.empty((s.shape[0], n_states))
    for i in range(n_states):
        out[:, i] = np.count_nonzero((s == i) & a, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(alive_n[:, None] > 0, out / np.maximum(alive_n, 1.0)[:, None], NAN)
