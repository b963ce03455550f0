"""Water bodies: horizontal surfaces over regions of the x–z plane.

A water body is a region (a polygon — rectangles are stored as polygons — or a circle) and the height of
its surface.  A point is *in water* when its ``(x, z)`` lies in the region and its ``y`` is at or below
the surface (the terrain decides where the bottom is; a point below the terrain is also inside the
terrain's solid).

Rays whose mask contains a water body's layer hit its surface plane within the region, from above (a bird
looking for water, an avoid-ground query) or from below (a fish keeping under the surface); the reported
normal faces the ray's origin as for every other hit.  Water is not solid: sphere sweeps, collide and
slide and inside tests ignore it, so animals can enter it unless a behaviour or a ``fake_walls`` shape
keeps them out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .primitives import INF

# Kernels here never allocate, so they are compiled without Numba's reference counting (``_nrt=False``):
# otherwise every array handed to an inlined helper is incref'd and decref'd with atomic operations on
# each call, which costs more than the geometry itself (measured: 40 ns per ray cast on the terrain).
_jit = njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True, _nrt=False)
_ijit = njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True, inline="always", _nrt=False)

KIND_POLYGON = 0
KIND_CIRCLE = 1


@_jit
def point_in_polygon(poly, start, count, x, z):
    """Even–odd rule: whether ``(x, z)`` lies inside ``poly[start:start + count]`` (``(P, 2)`` vertices)."""
    inside = False
    j = start + count - 1
    for i in range(start, start + count):
        xi, zi = poly[i, 0], poly[i, 1]
        xj, zj = poly[j, 0], poly[j, 1]
        if (zi > z) != (zj > z):
            x_cross = xi + (z - zi) * (xj - xi) / (zj - zi)
            if x < x_cross:
                inside = not inside
        j = i
    return inside


@_jit
def in_region(wf, wi, poly, w, x, z):
    """Whether ``(x, z)`` lies in the region of water body ``w`` (packed tables, see :class:`WaterBodies`)."""
    if x < wf[w, 5] or x > wf[w, 7] or z < wf[w, 6] or z > wf[w, 8]:
        return False
    if wf[w, 1] == KIND_CIRCLE:
        ddx = x - wf[w, 2]
        ddz = z - wf[w, 3]
        return ddx * ddx + ddz * ddz <= wf[w, 4] * wf[w, 4]
    return point_in_polygon(poly, wi[w, 0], wi[w, 1], x, z)


@_jit
def ray_water(ox, oy, oz, dx, dy, dz, tmax, wf, wi, poly, w):
    """Crossing of the ray with the surface of water body ``w`` inside its region; ``(t, 0, 1, 0)``."""
    if abs(dy) <= 1e-300:
        return INF, 0.0, 0.0, 0.0
    t = (wf[w, 0] - oy) / dy
    if t < 0.0 or t > tmax:
        return INF, 0.0, 0.0, 0.0
    if not in_region(wf, wi, poly, w, ox + t * dx, oz + t * dz):
        return INF, 0.0, 0.0, 0.0
    return t, 0.0, 1.0, 0.0


@_jit
def _in_water_kernel(points, wf, wi, poly, mask, out):
    for p in range(points.shape[0]):
        x, y, z = points[p, 0], points[p, 1], points[p, 2]
        res = False
        for w in range(wf.shape[0]):
            if (mask >> wi[w, 2]) & 1 and y <= wf[w, 0]:
                if in_region(wf, wi, poly, w, x, z):
                    res = True
                    break
        out[p] = res


@_jit
def _surface_kernel(xs, zs, wf, wi, poly, out):
    for p in range(xs.shape[0]):
        best = np.nan
        for w in range(wf.shape[0]):
            if in_region(wf, wi, poly, w, xs[p], zs[p]):
                if np.isnan(best) or wf[w, 0] > best:
                    best = wf[w, 0]
        out[p] = best


@dataclass(frozen=True)
class WaterBodies:
    """All water bodies of a scene as flat arrays.

    ``surface (w,) float64`` heights; ``kind (w,) int8`` (0 polygon, 1 circle); ``circle (w, 3)``
    ``(x, z, radius)``; ``box (w, 4)`` ``(x_min, z_min, x_max, z_max)`` bounds; ``poly (P, 2)`` polygon
    vertices with ``start, count (w,) int32`` ranges; ``layer (w,) int16``.
    """

    surface: np.ndarray
    kind: np.ndarray
    circle: np.ndarray
    box: np.ndarray
    poly: np.ndarray
    start: np.ndarray
    count: np.ndarray
    layer: np.ndarray

    @staticmethod
    def empty() -> "WaterBodies":
        return WaterBodies.from_regions([])

    @staticmethod
    def from_regions(bodies: list[tuple[float, str, object, int]]) -> "WaterBodies":
        """Build from ``(surface_height, form, data, layer)`` tuples, ``form`` being ``"circle"`` with
        ``(x, z, r)``, ``"rectangle"`` with ``(x_min, z_min, x_max, z_max)`` or ``"polygon"`` with a list of
        ``(x, z)``."""
        n = len(bodies)
        surface = np.zeros(n)
        kind = np.zeros(n, np.int8)
        circle = np.zeros((n, 3))
        box = np.zeros((n, 4))
        start = np.zeros(n, np.int32)
        count = np.zeros(n, np.int32)
        layer = np.zeros(n, np.int16)
        verts: list[tuple[float, float]] = []
        for w, (height, form, data, lay) in enumerate(bodies):
            surface[w] = height
            layer[w] = lay
            if form == "circle":
                cx, cz, r = data  # type: ignore[misc]
                kind[w] = KIND_CIRCLE
                circle[w] = (cx, cz, r)
                box[w] = (cx - r, cz - r, cx + r, cz + r)
                continue
            if form == "rectangle":
                x0, z0, x1, z1 = data  # type: ignore[misc]
                pts = [(x0, z0), (x1, z0), (x1, z1), (x0, z1)]
            elif form == "polygon":
                pts = [tuple(map(float, p)) for p in data]  # type: ignore[union-attr]
            else:
                raise ValueError(f"unknown water region form {form!r}")
            kind[w] = KIND_POLYGON
            start[w] = len(verts)
            count[w] = len(pts)
            verts.extend(pts)  # type: ignore[arg-type]
            arr = np.asarray(pts, dtype=np.float64)
            box[w] = (arr[:, 0].min(), arr[:, 1].min(), arr[:, 0].max(), arr[:, 1].max())
        poly = np.asarray(verts, dtype=np.float64).reshape(-1, 2)
        return WaterBodies(surface, kind, circle, box, poly, start, count, layer)

    def __len__(self) -> int:
        return int(self.surface.shape[0])

    def packed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The kernel form: ``wf (w, 9) float64`` rows ``[surface, kind, cx, cz, r, x_min, z_min, x_max,
        z_max]``, ``wi (w, 3) int64`` rows ``[poly start, poly count, layer]`` and ``poly (P, 2)``."""
        n = len(self)
        wf = np.zeros((n, 9))
        wf[:, 0] = self.surface
        wf[:, 1] = self.kind
        wf[:, 2:5] = self.circle
        wf[:, 5:9] = self.box
        wi = np.zeros((n, 3), np.int64)
        wi[:, 0] = self.start
        wi[:, 1] = self.count
        wi[:, 2] = self.layer
        return wf, wi, np.ascontiguousarray(self.poly)

    def in_water(self, points: np.ndarray, mask: int = 0xFFFFFFFF) -> np.ndarray:
        """``(n,) bool``: whether each ``(n, 3)`` point is in a water body whose layer is in ``mask``."""
        pts = np.ascontiguousarray(np.asarray(points, dtype=np.float64).reshape(-1, 3))
        out = np.zeros(pts.shape[0], np.bool_)
        if len(self):
            _in_water_kernel(pts, *self.packed(), np.int64(mask), out)
        return out

    def surface_height(self, x, z) -> np.ndarray:
        """``(n,)`` surface height of the water at ``(x, z)`` (the highest if several overlap), ``nan`` where
        there is no water."""
        xs = np.ascontiguousarray(np.atleast_1d(np.asarray(x, dtype=np.float64)).ravel())
        zs = np.ascontiguousarray(np.atleast_1d(np.asarray(z, dtype=np.float64)).ravel())
        xs, zs = (np.ascontiguousarray(a) for a in np.broadcast_arrays(xs, zs))
        out = np.full(xs.shape[0], np.nan)
        if len(self):
            _surface_kernel(xs, zs, *self.packed(), out)
        return out
