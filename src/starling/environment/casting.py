"""What the batched scene queries share: ray casts (:mod:`~starling.environment.raycast`), sphere casts
(:mod:`~starling.environment.spherecast`) and inside tests (:mod:`~starling.environment.inside`).

* the Numba decorator presets of their kernels and the chunking of a batch over threads
  (:data:`PARALLEL_THRESHOLD`, :func:`chunk_bounds`, :func:`stack_size`);
* :func:`solids`, the geometry arrays the sphere sweeps and proximity queries read (also used by
  :mod:`~starling.environment.collide`);
* :class:`RayHits`, the result rows of ray and sphere casts, and the checks of the Python entry points'
  arguments.

It imports none of the query modules, so each of them (and :mod:`~starling.environment.collide`) can build
on it without import cycles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..parallel import PARALLEL_MIN_RAYS

PARALLEL_THRESHOLD = PARALLEL_MIN_RAYS  # see starling.parallel
"""Batches with at least this many rays (or spheres, or points) use the parallel kernels."""

MAX_DISTANCE = 1e12
"""Longer rays (``max_distance = inf`` included) are cut to this many metres, which keeps every parameter
along a ray finite (an infinite ``t`` times a zero direction component would make a NaN)."""

_CHUNK = 256

# Kernels of the queries never allocate, so they are compiled without Numba's reference counting (``_nrt=False``):
# otherwise every array handed to an inlined helper is incref'd and decref'd with atomic operations on
# each call, which costs more than the geometry itself (measured: 40 ns per ray cast on the terrain).
_jit = njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True, _nrt=False)
_ijit = njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True, inline="always", _nrt=False)
# Kernels called only from other kernels get no Python or C entry points: Numba would otherwise build, for each
# one, a wrapper that unboxes every array of its arguments (the geometry holds 47), which costs more compile time
# than the kernel itself. Big helpers are called, not inlined: Numba inlines a function by copying its IR into
# every caller, which makes the caller's compilation many times slower (cold start, docs/performance.md).
_hjit = njit(cache=True, error_model="numpy", nogil=True, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
_pjit = njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", parallel=True)
_sjit = njit(cache=True, no_cfunc_wrapper=True, error_model="numpy")


@dataclass
class RayHits:
    """Results of a batch of ray (or sphere) casts, one row per ray.

    Attributes
    ----------
    hit: ``(r,) bool``
    distance: ``(r,) float32`` — metres along the ray (for sphere casts: the centre's travel); ``inf`` on a miss.
    point: ``(r, 3) float32`` — the hit point (sphere casts: the contact point on the surface); the ray's
        end point on a miss.
    normal: ``(r, 3) float32`` — unit normal facing the ray origin (sphere casts: from the surface to the
        sphere centre); zero on a miss.
    layer: ``(r,) int16`` — layer index of the shape hit, ``-1`` on a miss.
    """

    hit: np.ndarray
    distance: np.ndarray
    point: np.ndarray
    normal: np.ndarray
    layer: np.ndarray

    @staticmethod
    def allocate(n: int) -> "RayHits":
        """Buffers for ``n`` rays, to be reused through the ``out`` argument of the casts."""
        return RayHits(
            hit=np.zeros(n, np.bool_),
            distance=np.full(n, np.inf, np.float32),
            point=np.zeros((n, 3), np.float32),
            normal=np.zeros((n, 3), np.float32),
            layer=np.full(n, -1, np.int16),
        )

    def __len__(self) -> int:
        return int(self.hit.shape[0])

    def view(self, n: int) -> "RayHits":
        """The first ``n`` rows (views, no copy)."""
        return RayHits(self.hit[:n], self.distance[:n], self.point[:n], self.normal[:n], self.layer[:n])


# ----------------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------------


@_ijit
def chunk_bounds(c, n, size):
    """``(lo, hi)`` of chunk ``c`` of ``size`` items out of ``n``, as int64 whatever the integer type of ``c``
    (prange indices are unsigned; mixing types would compile every range function twice)."""
    lo = np.int64(c) * np.int64(size)
    return lo, min(np.int64(n), lo + np.int64(size))


@_ijit
def _chunk(c, n):
    return chunk_bounds(c, n, _CHUNK)


@_ijit
def stack_size(g):
    """Entries a BVH traversal stack of ``g`` needs (depth of the deeper BVH plus slack)."""
    return max(g.depth[0], g.depth[1]) + 4


@_ijit
def solids(g):
    """The arrays the sphere sweeps and proximity queries read, unpacked once (see :class:`GeometryArrays`):
    ``(pl_f, pl_i, ter_h, ter_cmin, ter_cmax, ter_f, prim_f, prim_i, pb_box, pb_node, tri_f, tri_i, tb_box,
    tb_node)``."""
    return (g.pl_f, g.pl_i, g.ter_h, g.ter_cmin, g.ter_cmax, g.ter_f, g.prim_f, g.prim_i, g.pb_box, g.pb_node,
            g.tri_f, g.tri_i, g.tb_box, g.tb_node)


# ----------------------------------------------------------------------------------------------------
# arguments of the Python entry points
# ----------------------------------------------------------------------------------------------------


def _as_rows(a, name: str, dtype=np.float32) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must have shape (r, 3), got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=dtype)


def _per_row(value, r: int, name: str) -> np.ndarray:
    arr = np.ascontiguousarray(np.atleast_1d(np.asarray(value, dtype=np.float32)))
    if arr.ndim != 1 or (arr.shape[0] != 1 and arr.shape[0] != r):
        raise ValueError(f"{name} must be a scalar or have shape ({r},), got {np.shape(value)}")
    return arr  # a length-1 array is broadcast by the kernels


def _outputs(out: RayHits | None, r: int) -> RayHits:
    if out is None:
        return RayHits.allocate(r)
    if len(out) < r:
        raise ValueError(f"out holds {len(out)} rows but {r} rays were given")
    return out.view(r) if len(out) != r else out
