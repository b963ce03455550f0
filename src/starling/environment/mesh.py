"""Triangle meshes: loading with trimesh, triangle kernels, and the bounding volume hierarchy (BVH).

Meshes are loaded from any format trimesh reads (obj, stl, ply, glb/gltf, off, …), transformed to world
coordinates (scale, then rotation, then translation), stripped of degenerate triangles and concatenated
into one triangle soup with a layer and a mesh id per triangle.  The soup is indexed by a BVH
(:func:`build_bvh`): binned surface-area-heuristic splits, nodes flattened into arrays with the two children
of an inner node stored next to each other, triangles reordered into leaf order so that a leaf is a
contiguous range, and a per-node union of layer bits so that traversal skips subtrees that the query's
layer mask excludes.  The same builder indexes the finite primitives of a scene.

Triangles are surfaces (two-sided).  A mesh can also be marked solid (watertight meshes are, by default);
inside tests then count surface crossings along a ray (parity).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from .errors import EnvironmentFileError
from .primitives import INF, ray_capsule, unit3

# Kernels here never allocate, so they are compiled without Numba's reference counting (``_nrt=False``):
# otherwise every array handed to an inlined helper is incref'd and decref'd with atomic operations on
# each call, which costs more than the geometry itself (measured: 40 ns per ray cast on the terrain).
_jit = njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True, _nrt=False)
_ajit = njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True)  # the BVH builder allocates

APPROACH_EPS = 1e-6
"""A sphere overlapping a surface counts as moving into it only when ``dot(direction, normal)`` is below
``-APPROACH_EPS``; grazing and sliding motions (dot ~ 0 up to rounding) must not register as contacts, or
a sphere resting in a skin-width gap would stick (seed 000, 7.2.2)."""

CONTACT_EPS = 1e-9
"""Metres.  A sphere whose distance to a surface is below ``radius + CONTACT_EPS`` is treated as touching
it, so the overlap rule (not the sweep) decides what happens: a start exactly on the inflated surface is
ambiguous to rounding, and the sweep alone would report a contact at ``t = 0`` even for a motion that
slides along the surface."""


# ----------------------------------------------------------------------------------------------------
# triangle kernels; a triangle is v0, e1 = v1 - v0, e2 = v2 - v0 and its unit normal n = e1 x e2 / |..|
# ----------------------------------------------------------------------------------------------------


@_jit
def ray_triangle(ox, oy, oz, dx, dy, dz, tmax, v0x, v0y, v0z, e1x, e1y, e1z, e2x, e2y, e2z):
    """Möller–Trumbore: the parameter ``t`` in ``[0, tmax]`` where the ray crosses the triangle (either
    side), ``inf`` when it does not."""
    px = dy * e2z - dz * e2y
    py = dz * e2x - dx * e2z
    pz = dx * e2y - dy * e2x
    det = e1x * px + e1y * py + e1z * pz
    if abs(det) <= 1e-300:
        return INF
    inv = 1.0 / det
    tx, ty, tz = ox - v0x, oy - v0y, oz - v0z
    u = (tx * px + ty * py + tz * pz) * inv
    if u < 0.0 or u > 1.0:
        return INF
    qx = ty * e1z - tz * e1y
    qy = tz * e1x - tx * e1z
    qz = tx * e1y - ty * e1x
    v = (dx * qx + dy * qy + dz * qz) * inv
    if v < 0.0 or u + v > 1.0:
        return INF
    t = (e2x * qx + e2y * qy + e2z * qz) * inv
    if t < 0.0 or t > tmax:
        return INF
    return t


@_jit
def closest_on_triangle(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Closest point of the triangle ``abc`` to ``p`` (Ericson, *Real-Time Collision Detection*, 5.1.5)."""
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    apx, apy, apz = px - ax, py - ay, pz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az
    bpx, bpy, bpz = px - bx, py - by, pz - bz
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        return bx, by, bz
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return ax + v * abx, ay + v * aby, az + v * abz
    cpx, cpy, cpz = px - cx, py - cy, pz - cz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        return cx, cy, cz
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return ax + w * acx, ay + w * acy, az + w * acz
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return bx + w * (cx - bx), by + w * (cy - by), bz + w * (cz - bz)
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    return ax + abx * v + acx * w, ay + aby * v + acy * w, az + abz * v + acz * w


@_jit
def distance_to_triangle(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz, nx, ny, nz):
    """Unsigned distance from ``p`` to the triangle and the unit direction from the closest point to
    ``p`` (the face normal on the side of ``p`` when ``p`` lies on the triangle)."""
    qx, qy, qz = closest_on_triangle(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz)
    gx, gy, gz = px - qx, py - qy, pz - qz
    dist = np.sqrt(gx * gx + gy * gy + gz * gz)
    if dist <= 1e-12:
        return dist, nx, ny, nz
    return dist, gx / dist, gy / dist, gz / dist


@_jit
def _inside_triangle(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Whether ``p`` (on the triangle's plane) lies inside the triangle ``abc``, edges included, whatever
    the triangle's winding: each edge's cross product with ``p`` must agree with ``(b - a) x (c - a)``."""
    ux, uy, uz = bx - ax, by - ay, bz - az
    vx, vy, vz = cx - ax, cy - ay, cz - az
    nx = uy * vz - uz * vy
    ny = uz * vx - ux * vz
    nz = ux * vy - uy * vx
    for k in range(3):
        if k == 0:
            sx, sy, sz, ex, ey, ez = ax, ay, az, bx - ax, by - ay, bz - az
        elif k == 1:
            sx, sy, sz, ex, ey, ez = bx, by, bz, cx - bx, cy - by, cz - bz
        else:
            sx, sy, sz, ex, ey, ez = cx, cy, cz, ax - cx, ay - cy, az - cz
        qx, qy, qz = px - sx, py - sy, pz - sz
        wx = ey * qz - ez * qy
        wy = ez * qx - ex * qz
        wz = ex * qy - ey * qx
        if wx * nx + wy * ny + wz * nz < 0.0:
            return False
    return True


@_jit
def sweep_triangle(ox, oy, oz, dx, dy, dz, tmax, rs, ax, ay, az, bx, by, bz, cx, cy, cz, nx, ny, nz):
    """Contact of a sphere of radius ``rs`` moving from ``o`` along unit ``d`` with a (two-sided) triangle.

    Returns ``(t, nx, ny, nz)``: the centre travel until contact in ``[0, tmax]`` (``inf`` for none) and the
    contact normal (from the triangle towards the centre).  A sphere that already overlaps the triangle
    reports ``t = 0`` if it moves into it and no contact if it moves away or slides along it; a sphere that
    does not overlap finds the entry into the triangle's Minkowski sum with the ball — the two offset faces
    first (a face contact inside the triangle is the entry), else the three edge capsules (Fauerby,
    *Improved Collision detection and Response*, 2003).
    """
    dist, gx, gy, gz = distance_to_triangle(ox, oy, oz, ax, ay, az, bx, by, bz, cx, cy, cz, nx, ny, nz)
    if dist < rs + CONTACT_EPS:
        if dist <= 1e-12:
            # on the triangle: the normal opposing the motion
            if dx * nx + dy * ny + dz * nz > 0.0:
                gx, gy, gz = -nx, -ny, -nz
            else:
                gx, gy, gz = nx, ny, nz
        if dx * gx + dy * gy + dz * gz < -APPROACH_EPS:
            return 0.0, gx, gy, gz
        return INF, 0.0, 0.0, 0.0
    sd = (ox - ax) * nx + (oy - ay) * ny + (oz - az) * nz
    s = 1.0 if sd >= 0.0 else -1.0
    dn = s * (dx * nx + dy * ny + dz * nz)
    if abs(sd) >= rs and dn < 0.0:
        t = (abs(sd) - rs) / -dn
        if t <= tmax:
            qx = ox + t * dx - s * rs * nx
            qy = oy + t * dy - s * rs * ny
            qz = oz + t * dz - s * rs * nz
            if _inside_triangle(qx, qy, qz, ax, ay, az, bx, by, bz, cx, cy, cz):
                return max(t, 0.0), s * nx, s * ny, s * nz
    best = INF
    for k in range(3):
        if k == 0:
            ux, uy, uz, wx, wy, wz = ax, ay, az, bx, by, bz
        elif k == 1:
            ux, uy, uz, wx, wy, wz = bx, by, bz, cx, cy, cz
        else:
            ux, uy, uz, wx, wy, wz = cx, cy, cz, ax, ay, az
        t, _, _, _ = ray_capsule(ox, oy, oz, dx, dy, dz, min(best, tmax), ux, uy, uz, wx, wy, wz, rs)
        if t < best:
            best = t
    if best > tmax:
        return INF, 0.0, 0.0, 0.0
    px, py, pz = ox + best * dx, oy + best * dy, oz + best * dz
    qx, qy, qz = closest_on_triangle(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz)
    gx, gy, gz = unit3(px - qx, py - qy, pz - qz)
    return best, gx, gy, gz


# ----------------------------------------------------------------------------------------------------
# BVH
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BVH:
    """A flattened bounding volume hierarchy.

    Attributes
    ----------
    node_min, node_max: ``(m, 3) float64``
        Node bounds.
    node_start, node_count: ``(m,) int32``
        For a leaf (``count > 0``) the range ``[start, start + count)`` of item positions; for an inner
        node (``count == 0``) ``start`` is the index of the left child, the right child is ``start + 1``.
    node_mask: ``(m,) int64``
        Union of the layer bits of the items below the node.
    order: ``(k,) int32``
        ``order[i]`` is the original index of the item at position ``i``.
    depth: int
        Number of levels (the traversal stack needs at most ``depth + 1`` entries).
    """

    node_min: np.ndarray
    node_max: np.ndarray
    node_start: np.ndarray
    node_count: np.ndarray
    node_mask: np.ndarray
    order: np.ndarray
    depth: int

    @property
    def n_nodes(self) -> int:
        return int(self.node_start.shape[0])

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """The kernel form: ``box (m, 6) float64`` rows ``[min xyz, max xyz]`` and ``node (m, 3) int64`` rows
        ``[start, count, mask]``."""
        box = np.ascontiguousarray(np.concatenate([self.node_min, self.node_max], axis=1).reshape(-1, 6))
        node = np.ascontiguousarray(np.stack([self.node_start, self.node_count, self.node_mask], axis=1)
                                    .astype(np.int64).reshape(-1, 3))
        return box, node


_N_BINS = 16
#: BVHs over at most this many items are built by the builder's own Python, uncompiled: the same code,
#: so the same tree bit for bit (``tests/environment/test_bvh_build.py``). For a scene's hundred or so
#: primitives (11 ms) that costs about what loading the compiled builder from the cache costs, and it
#: spares an empty cache the builder's compilation (about 5 s of a cold start). Python's time grows
#: with the items (120 ms for 800), so more items use the compiled builder.
INTERPRETED_MAX_ITEMS = 256


@_ajit
def _build_bvh_kernel(bmin, bmax, leaf_size, max_leaf):
    k = bmin.shape[0]
    cap = max(2 * k - 1, 1)
    node_min = np.empty((cap, 3))
    node_max = np.empty((cap, 3))
    node_start = np.zeros(cap, np.int32)
    node_count = np.zeros(cap, np.int32)
    node_depth = np.zeros(cap, np.int32)
    order = np.arange(k).astype(np.int32)
    if k == 0:
        return node_min[:0], node_max[:0], node_start[:0], node_count[:0], order, 0
    cent = (bmin + bmax) * 0.5
    node_count[0] = k
    n_nodes = 1
    stack = np.empty(k + 2, np.int64)
    stack[0] = 0
    sp = 1
    bin_cnt = np.zeros(_N_BINS, np.int64)
    bin_lo = np.empty((_N_BINS, 3))
    bin_hi = np.empty((_N_BINS, 3))
    right_area = np.empty(_N_BINS)
    right_cnt = np.empty(_N_BINS, np.int64)
    max_depth = 0
    while sp > 0:
        sp -= 1
        ni = stack[sp]
        s = node_start[ni]
        c = node_count[ni]
        if node_depth[ni] > max_depth:
            max_depth = node_depth[ni]
        lo = np.full(3, np.inf)
        hi = np.full(3, -np.inf)
        clo = np.full(3, np.inf)
        chi = np.full(3, -np.inf)
        for p in range(s, s + c):
            it = order[p]
            for a in range(3):
                lo[a] = min(lo[a], bmin[it, a])
                hi[a] = max(hi[a], bmax[it, a])
                clo[a] = min(clo[a], cent[it, a])
                chi[a] = max(chi[a], cent[it, a])
        node_min[ni] = lo
        node_max[ni] = hi
        if c <= leaf_size:
            continue
        axis = 0
        ext = chi[0] - clo[0]
        for a in range(1, 3):
            if chi[a] - clo[a] > ext:
                ext = chi[a] - clo[a]
                axis = a
        mid = c // 2
        if ext > 1e-12:
            # binned SAH along the widest centroid axis
            bin_cnt[:] = 0
            bin_lo[:] = np.inf
            bin_hi[:] = -np.inf
            scale = _N_BINS / ext
            for p in range(s, s + c):
                it = order[p]
                b = min(int((cent[it, axis] - clo[axis]) * scale), _N_BINS - 1)
                bin_cnt[b] += 1
                for a in range(3):
                    bin_lo[b, a] = min(bin_lo[b, a], bmin[it, a])
                    bin_hi[b, a] = max(bin_hi[b, a], bmax[it, a])
            # sweep from the right
            rlo = np.full(3, np.inf)
            rhi = np.full(3, -np.inf)
            rc = 0
            for b in range(_N_BINS - 1, 0, -1):
                rc += bin_cnt[b]
                for a in range(3):
                    rlo[a] = min(rlo[a], bin_lo[b, a])
                    rhi[a] = max(rhi[a], bin_hi[b, a])
                right_cnt[b] = rc
                right_area[b] = _half_area(rlo, rhi) if rc > 0 else 0.0
            llo = np.full(3, np.inf)
            lhi = np.full(3, -np.inf)
            lc = 0
            best_cost = np.inf
            best_split = -1
            for b in range(1, _N_BINS):
                lc += bin_cnt[b - 1]
                for a in range(3):
                    llo[a] = min(llo[a], bin_lo[b - 1, a])
                    lhi[a] = max(lhi[a], bin_hi[b - 1, a])
                if lc == 0 or right_cnt[b] == 0:
                    continue
                cost = _half_area(llo, lhi) * lc + right_area[b] * right_cnt[b]
                if cost < best_cost:
                    best_cost = cost
                    best_split = b
            node_area = _half_area(lo, hi)
            # SAH with traversal cost 1 and intersection cost 1, relative to the node's area
            if best_split < 0 or (c <= max_leaf and 1.0 + best_cost / max(node_area, 1e-300) >= c):
                if c <= max_leaf:
                    continue
            if best_split >= 0:
                i = s
                j = s + c - 1
                while i <= j:
                    it = order[i]
                    b = min(int((cent[it, axis] - clo[axis]) * scale), _N_BINS - 1)
                    if b < best_split:
                        i += 1
                    else:
                        order[i], order[j] = order[j], order[i]
                        j -= 1
                mid = i - s
                if mid == 0 or mid == c:
                    mid = c // 2
        left = n_nodes
        n_nodes += 2
        node_start[left] = s
        node_count[left] = mid
        node_start[left + 1] = s + mid
        node_count[left + 1] = c - mid
        node_depth[left] = node_depth[ni] + 1
        node_depth[left + 1] = node_depth[ni] + 1
        node_start[ni] = left
        node_count[ni] = 0
        stack[sp] = left + 1
        stack[sp + 1] = left
        sp += 2
    return (
        node_min[:n_nodes].copy(),
        node_max[:n_nodes].copy(),
        node_start[:n_nodes].copy(),
        node_count[:n_nodes].copy(),
        order,
        max_depth + 1,
    )


@_ajit
def _half_area(lo, hi):
    ex = max(hi[0] - lo[0], 0.0)
    ey = max(hi[1] - lo[1], 0.0)
    ez = max(hi[2] - lo[2], 0.0)
    return ex * ey + ey * ez + ez * ex


@_ajit
def _node_masks(node_start, node_count, order, item_layer):
    m = node_start.shape[0]
    mask = np.zeros(m, np.int64)
    for ni in range(m - 1, -1, -1):
        c = node_count[ni]
        if c > 0:
            acc = 0
            for p in range(node_start[ni], node_start[ni] + c):
                acc |= np.int64(1) << np.int64(item_layer[order[p]])
            mask[ni] = acc
        else:
            left = node_start[ni]
            mask[ni] = mask[left] | mask[left + 1]
    return mask


def build_bvh(item_min: np.ndarray, item_max: np.ndarray, item_layer: np.ndarray, leaf_size: int = 4,
              max_leaf: int = 8) -> BVH:
    """Build a BVH over ``k`` axis-aligned boxes.

    Parameters
    ----------
    item_min, item_max: ``(k, 3)`` float
        Bounds of the items.
    item_layer: ``(k,)`` int
        Layer index (bit) of each item, for the per-node masks.
    leaf_size:
        Nodes with at most this many items are never split.
    max_leaf:
        Nodes with at most this many items become leaves when the SAH says splitting does not pay.
    """
    item_min = np.ascontiguousarray(item_min, dtype=np.float64).reshape(-1, 3)
    item_max = np.ascontiguousarray(item_max, dtype=np.float64).reshape(-1, 3)
    # a scene's hundred or so primitives by the kernels' own Python (see INTERPRETED_MAX_ITEMS)
    compiled = item_min.shape[0] > INTERPRETED_MAX_ITEMS
    build = _build_bvh_kernel if compiled else _build_bvh_kernel.py_func
    masks = _node_masks if compiled else _node_masks.py_func
    nmin, nmax, start, count, order, depth = build(item_min, item_max, int(leaf_size), int(max_leaf))
    mask = masks(start, count, order, np.ascontiguousarray(item_layer, dtype=np.int64))
    return BVH(nmin, nmax, start, count, mask, order, int(depth))


@_jit
def ray_aabb(ox, oy, oz, ix, iy, iz, tmax, box, ni):
    """Slab test of a ray (origin ``o``, inverse direction ``i``) against ``box[ni]`` (a row ``[x_min, y_min,
    z_min, x_max, y_max, z_max]``); returns the entry parameter clipped at 0, or ``inf`` when the box is
    missed within ``[0, tmax]``.

    Zero direction components are given as a huge finite inverse (see :func:`safe_inverse`), which keeps
    the products finite even for an origin lying on a slab plane.
    """
    return ray_aabb_grown(ox, oy, oz, ix, iy, iz, tmax, box, ni, 0.0)


@_jit
def ray_aabb_grown(ox, oy, oz, ix, iy, iz, tmax, box, ni, g):
    """:func:`ray_aabb` against ``box[ni]`` grown by ``g`` on every side (sphere sweeps).

    A ray with a zero direction component (inverse ``±1e300``) lies in the box's slab along that axis when
    its origin does, faces included: a horizontal ray at exactly the height of a box's top still reaches
    the box (the product ``(top - o) * 1e300 = 0`` alone would end the slab at ``t = 0``).
    """
    tn = -INF
    tf = INF
    lo = box[ni, 0] - g
    hi = box[ni, 3] + g
    if abs(ix) < 1e300:
        t1 = (lo - ox) * ix
        t2 = (hi - ox) * ix
        tn = min(t1, t2)
        tf = max(t1, t2)
    elif ox < lo or ox > hi:
        return INF
    lo = box[ni, 1] - g
    hi = box[ni, 4] + g
    if abs(iy) < 1e300:
        t1 = (lo - oy) * iy
        t2 = (hi - oy) * iy
        tn = max(tn, min(t1, t2))
        tf = min(tf, max(t1, t2))
    elif oy < lo or oy > hi:
        return INF
    lo = box[ni, 2] - g
    hi = box[ni, 5] + g
    if abs(iz) < 1e300:
        t1 = (lo - oz) * iz
        t2 = (hi - oz) * iz
        tn = max(tn, min(t1, t2))
        tf = min(tf, max(t1, t2))
    elif oz < lo or oz > hi:
        return INF
    tn = max(tn, 0.0)
    if tn > tf or tn > tmax:
        return INF
    return tn


@_jit
def point_in_box(px, py, pz, box, ni, g):
    """Whether ``p`` lies in ``box[ni]`` grown by ``g``."""
    return (box[ni, 0] - g <= px <= box[ni, 3] + g and box[ni, 1] - g <= py <= box[ni, 4] + g
            and box[ni, 2] - g <= pz <= box[ni, 5] + g)


@_jit
def safe_inverse(d):
    """``1 / d``, or ``±1e300`` for a zero component (finite, so ``0 * inv`` stays 0)."""
    if abs(d) > 1e-300:
        return 1.0 / d
    return 1e300


# ----------------------------------------------------------------------------------------------------
# loading
# ----------------------------------------------------------------------------------------------------


def load_mesh_file(path: str | Path) -> tuple[np.ndarray, np.ndarray, bool]:
    """Load a triangle mesh with trimesh.

    Returns ``(vertices (v, 3) float64, faces (f, 3) int64, watertight)``.  Scenes (glb/gltf with several
    nodes) are flattened with their node transforms.  A missing file, a file trimesh cannot decode, or a
    file without triangles raises :class:`EnvironmentFileError` naming the path.
    """
    import trimesh

    p = Path(path)
    if not p.is_file():
        raise EnvironmentFileError("mesh", p, "no such file")
    try:
        loaded = trimesh.load(str(p), force="mesh", process=True)
    except Exception as exc:  # trimesh raises many types for bad input
        raise EnvironmentFileError("mesh", p, f"{type(exc).__name__}: {exc}") from None
    if isinstance(loaded, trimesh.Scene):  # pragma: no cover - force="mesh" normally concatenates
        loaded = loaded.to_mesh()
    vertices = np.asarray(getattr(loaded, "vertices", np.zeros((0, 3))), dtype=np.float64)
    faces = np.asarray(getattr(loaded, "faces", np.zeros((0, 3))), dtype=np.int64)
    if faces.ndim != 2 or faces.shape[0] == 0 or faces.shape[1] != 3:
        raise EnvironmentFileError("mesh", p, "the file contains no triangles")
    if not np.all(np.isfinite(vertices)):
        raise EnvironmentFileError("mesh", p, "the file contains non-finite vertex coordinates")
    return vertices, faces, bool(getattr(loaded, "is_watertight", False))


def transform_vertices(vertices: np.ndarray, rotation: np.ndarray, translation, scale) -> np.ndarray:
    """Apply scale, then rotation, then translation to ``(v, 3)`` vertices."""
    s = np.broadcast_to(np.asarray(scale, dtype=np.float64), (3,))
    return (vertices * s) @ np.asarray(rotation).T + np.asarray(translation, dtype=np.float64)


def triangles_from(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """``(f, 3, 3)`` triangle corners, without degenerate (near zero-area) triangles."""
    tris = vertices[faces]
    cross = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    area2 = np.linalg.norm(cross, axis=1)
    scale = max(float(np.ptp(vertices, axis=0).max()) if len(vertices) else 1.0, 1e-9)
    return tris[area2 > 1e-12 * scale * scale]
