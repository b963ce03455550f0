"""Order parameters of collective motion.

* polarization: ``|Σ v̂_i| / n`` — 1 when everyone heads the same way, ~0 when random.
* milling: ``|Σ (r_i − c) × v_i| / Σ |r_i − c| |v_i|`` — 1 for a perfect mill
  (rotation about the centre of mass ``c``), ~0 for a polarised or random group.
* local polarization: the mean cosine between each animal's heading and the headings
  of its ``k`` nearest others — order inside a group, whatever the groups do globally;
* nearest-neighbour distance: the mean distance of each animal to its nearest other
  (a cKDTree; large groups are subsampled to keep it cheap in live views).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
from scipy.spatial import cKDTree


def polarization(velocity: np.ndarray) -> float:
    v = np.asarray(velocity, np.float64)
    if len(v) == 0:
        return 0.0
    speed = np.linalg.norm(v, axis=1)
    moving = speed > 1e-9
    if not moving.any():
        return 0.0
    units = v[moving] / speed[moving, None]
    return float(np.linalg.norm(units.sum(axis=0)) / len(v))


def milling(position: np.ndarray, velocity: np.ndarray) -> float:
    p = np.asarray(position, np.float64)
    v = np.asarray(velocity, np.float64)
    if len(p) < 2:
        return 0.0
    r = p - p.mean(axis=0)
    denom = float(np.sum(np.linalg.norm(r, axis=1) * np.linalg.norm(v, axis=1)))
    if denom <= 1e-12:
        return 0.0
    return float(np.linalg.norm(np.cross(r, v).sum(axis=0)) / denom)


def nearest_neighbor_distance(position: np.ndarray, sample: Optional[int] = 2000,
                              rng: Optional[np.random.Generator] = None) -> float:
    p = np.asarray(position, np.float64)
    if len(p) < 2:
        return 0.0
    tree = cKDTree(p)
    query = p
    if sample is not None and len(p) > sample:
        rng = rng or np.random.default_rng(0)
        query = p[rng.choice(len(p), sample, replace=False)]
    d, _ = tree.query(query, k=2)
    return float(d[:, 1].mean())


def local_polarization(position: np.ndarray, velocity: np.ndarray, k: int = 7, sample: Optional[int] = 2000,
                       rng: Optional[np.random.Generator] = None) -> float:
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
    _, idx = cKDTree(p).query(p[rows], k=k + 1)
    return float(np.mean(np.einsum("ij,ikj->ik", units[rows], units[idx[:, 1:]])))
