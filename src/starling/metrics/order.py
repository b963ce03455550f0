"""Order parameters and group statistics of collective motion.

* polarization: ``|Σ v̂_i| / n`` — 1 when everyone heads the same way, ~0 when random.
* milling: ``|Σ (r_i − c) × v_i| / Σ |r_i − c| |v_i|`` — 1 for a perfect mill
  (rotation about the centre of mass ``c``), ~0 for a polarised or random group.
* local polarization: the mean cosine between each animal's heading and the headings
  of its ``k`` nearest others — order inside a group, whatever the groups do globally;
* nearest-neighbour distance: the mean distance of each animal to its nearest other
  (a cKDTree; large groups are subsampled to keep it cheap in live views);
* groups: the connected groups of the graph linking animals closer than a radius
  (single linkage): how many, and the largest one's share of the population.

Every metric that reads positions takes ``box``: the side lengths of a periodic
(wrap-around) world (``World.box``), or None. In a periodic world distances are
minimum-image distances, so two animals 1 m apart across the seam are 1 m apart, and a
group straddling the seam is one group with its centre where the animals are.
``box`` is a scalar or three lengths; an axis with length 0 or ``inf`` does not wrap
(the neighbour queries' convention).
"""
from __future__ import annotations

from typing import Optional

import numpy as np


def _periods(box) -> Optional[np.ndarray]:
    """(3,) float64 periods with 0 on axes that do not wrap, or None when none wraps."""
    if box is None:
        return None
    L = np.broadcast_to(np.asarray(box, np.float64), (3,)).copy()
    L[~(np.isfinite(L) & (L > 0))] = 0.0
    return L if L.any() else None


def _wrapped(p: np.ndarray, L: Optional[np.ndarray]) -> np.ndarray:
    """Positions folded into ``[0, L)`` on the wrapping axes (cKDTree's ``boxsize`` demands it)."""
    if L is None:
        return p
    out = p.copy()
    for a in np.flatnonzero(L):
        x = np.mod(out[:, a], L[a])
        x[x >= L[a]] = 0.0  # a tiny negative x rounds to L itself
        out[:, a] = x
    return out


def _tree(p: np.ndarray, L: Optional[np.ndarray]) -> "cKDTree":
    from scipy.spatial import cKDTree  # here, not at the top: importing SciPy's spatial and sparse
    # modules takes about 0.3 s, which commands that compute no metric need not pay

    return cKDTree(_wrapped(p, L), boxsize=L)


def polarization(velocity: np.ndarray) -> float:
    """``|Σ v̂_i| / n`` over every animal (a standing animal counts in ``n``, adds no heading)."""
    v = np.asarray(velocity, np.float64)
    if len(v) == 0:
        return 0.0
    speed = np.linalg.norm(v, axis=1)
    moving = speed > 1e-9
    if not moving.any():
        return 0.0
    units = v[moving] / speed[moving, None]
    return float(np.linalg.norm(units.sum(axis=0)) / len(v))


def center_of_mass(position: np.ndarray, box=None) -> np.ndarray:
    """The centre of mass; on a wrapping axis the circular mean (Bai & Breen 2008).

    Each coordinate is mapped to an angle ``θ = 2π x / L`` on a circle, the angles'
    mean direction is taken and mapped back, so a group straddling the seam has its
    centre among its animals, not in the middle of the box. Exact for a group symmetric
    about its centre as long as the angles' mean resultant stays positive (a ring of
    radius R: ``J0(2πR/L) > 0``, so R < 0.38 L); a group spread over the whole period
    has no meaningful centre on that axis.
    """
    p = np.asarray(position, np.float64)
    c = p.mean(axis=0)
    L = _periods(box)
    if L is None:
        return c
    for a in np.flatnonzero(L):
        theta = 2.0 * np.pi * p[:, a] / L[a]
        angle = np.arctan2(np.sin(theta).mean(), np.cos(theta).mean())
        c[a] = np.mod(angle * L[a] / (2.0 * np.pi), L[a])
    return c


def minimum_image(offset: np.ndarray, box=None) -> np.ndarray:
    """Offsets ``(…, 3)`` replaced by their nearest periodic images (``x − L·rint(x/L)``)."""
    r = np.array(offset, np.float64)
    L = _periods(box)
    if L is None:
        return r
    for a in np.flatnonzero(L):
        r[..., a] -= L[a] * np.rint(r[..., a] / L[a])
    return r


def milling(position: np.ndarray, velocity: np.ndarray, box=None) -> float:
    """``|Σ (r_i − c) × v_i| / Σ |r_i − c| |v_i|``, with ``c`` and ``r_i − c`` periodic where the world wraps."""
    p = np.asarray(position, np.float64)
    v = np.asarray(velocity, np.float64)
    if len(p) < 2:
        return 0.0
    r = minimum_image(p - center_of_mass(p, box), box)
    denom = float(np.sum(np.linalg.norm(r, axis=1) * np.linalg.norm(v, axis=1)))
    if denom <= 1e-12:
        return 0.0
    return float(np.linalg.norm(np.cross(r, v).sum(axis=0)) / denom)


def nearest_neighbor_distance(position: np.ndarray, sample: Optional[int] = 2000,
                              rng: Optional[np.random.Generator] = None, box=None) -> float:
    """Mean distance to the nearest other animal (over ``sample`` random animals when there are more)."""
    p = np.asarray(position, np.float64)
    if len(p) < 2:
        return 0.0
    L = _periods(box)
    tree = _tree(p, L)
    query = tree.data
    if sample is not None and len(p) > sample:
        rng = rng or np.random.default_rng(0)
        query = query[rng.choice(len(p), sample, replace=False)]
    d, _ = tree.query(query, k=2)
    return float(d[:, 1].mean())


def local_polarization(position: np.ndarray, velocity: np.ndarray, k: int = 7, sample: Optional[int] = 2000,
                       rng: Optional[np.random.Generator] = None, box=None) -> float:
    """Mean cosine between an animal's heading and each of its ``k`` nearest others' headings."""
    p = np.asarray(position, np.float64)
    v = np.asarray(velocity, np.float64)
    n = len(p)
    if n < 2:
        return 0.0
    speed = np.linalg.norm(v, axis=1, keepdims=True)
    units = np.divide(v, speed, out=np.zeros_like(v), where=speed > 1e-9)
    rows = np.arange(n)
    if sample is not None and n > sample:
        rows = (rng or np.random.default_rng(0)).choice(n, sample, replace=False)
    k = min(k, n - 1)
    tree = _tree(p, _periods(box))
    _, idx = tree.query(tree.data[rows], k=k + 1)
    return float(np.mean(np.einsum("ij,ikj->ik", units[rows], units[idx[:, 1:]])))


def groups(position: np.ndarray, radius: float, box=None) -> tuple[int, float]:
    """Connected groups when animals closer than ``radius`` are linked (single linkage).

    Returns ``(count, largest_fraction)``: the number of groups (a lone animal is a
    group of one) and the share of the animals in the largest. Exact: every pair
    within ``radius`` is enumerated (cKDTree), so the cost grows with the number of
    such pairs — about 0.3 s for 20,000 birds at flock density with a 5 m radius.
    """
    p = np.asarray(position, np.float64)
    n = len(p)
    if n == 0:
        return 0, 0.0
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    pairs = _tree(p, _periods(box)).query_pairs(float(radius), output_type="ndarray")
    graph = coo_matrix((np.ones(len(pairs), np.int8), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    count, label = connected_components(graph, directed=False)
    return int(count), float(np.bincount(label).max() / n)
