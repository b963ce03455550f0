"""Finite primitives packed one per row of a float64 table, as the scene's primitive BVH stores them,
and the ray, distance and sweep kernels that dispatch a row on its kind.

The batched casts (:mod:`~starling.environment.raycast`, :mod:`~starling.environment.spherecast`,
:mod:`~starling.environment.inside`) walk the BVH's leaves and call these per primitive; the
shapes' own closed forms are in :mod:`~starling.environment.primitives`.
"""

from __future__ import annotations

from .primitives import (
    _ijit,
    _jit,
    ray_box,
    ray_capsule,
    ray_cylinder,
    ray_sphere,
    sd_box,
    sd_capsule,
    sd_cylinder,
    sd_sphere,
    sweep_box,
    sweep_capsule,
    sweep_cylinder,
    sweep_sphere,
)

# kinds of finite primitives as stored in the primitive BVH (``prim_i[:, 0]``)
KIND_SPHERE = 0
KIND_BOX = 1
KIND_CAPSULE = 2
KIND_CYLINDER = 3

PRIM_WIDTH = 16
"""Columns of the packed primitive table ``prim_f``.  Rows by kind:

* sphere: ``cx, cy, cz, r``
* box: ``cx, cy, cz, hx, hy, hz, r00, r01, r02, r10, r11, r12, r20, r21, r22`` (rotation row-major)
* capsule: ``ax, ay, az, bx, by, bz, r``
* cylinder: ``ax, ay, az, ux, uy, uz, height, r``
"""


@_ijit
def _box_rot(f, p):
    return (f[p, 6], f[p, 7], f[p, 8], f[p, 9], f[p, 10], f[p, 11], f[p, 12], f[p, 13], f[p, 14])


@_jit
def prim_ray(f, p, kind, ox, oy, oz, dx, dy, dz, tmax):
    """:func:`ray_sphere` & co. for packed primitive ``p`` of ``kind``."""
    if kind == KIND_SPHERE:
        return ray_sphere(ox, oy, oz, dx, dy, dz, tmax, f[p, 0], f[p, 1], f[p, 2], f[p, 3])
    if kind == KIND_BOX:
        return ray_box(ox, oy, oz, dx, dy, dz, tmax, f[p, 0], f[p, 1], f[p, 2], _box_rot(f, p), f[p, 3], f[p, 4],
                       f[p, 5])
    if kind == KIND_CAPSULE:
        return ray_capsule(ox, oy, oz, dx, dy, dz, tmax, f[p, 0], f[p, 1], f[p, 2], f[p, 3], f[p, 4], f[p, 5],
                           f[p, 6])
    return ray_cylinder(ox, oy, oz, dx, dy, dz, tmax, f[p, 0], f[p, 1], f[p, 2], f[p, 3], f[p, 4], f[p, 5], f[p, 6],
                        f[p, 7])


@_jit
def prim_sd(f, p, kind, px, py, pz):
    """:func:`sd_sphere` & co. for packed primitive ``p`` of ``kind``."""
    if kind == KIND_SPHERE:
        return sd_sphere(px, py, pz, f[p, 0], f[p, 1], f[p, 2], f[p, 3])
    if kind == KIND_BOX:
        return sd_box(px, py, pz, f[p, 0], f[p, 1], f[p, 2], _box_rot(f, p), f[p, 3], f[p, 4], f[p, 5])
    if kind == KIND_CAPSULE:
        return sd_capsule(px, py, pz, f[p, 0], f[p, 1], f[p, 2], f[p, 3], f[p, 4], f[p, 5], f[p, 6])
    return sd_cylinder(px, py, pz, f[p, 0], f[p, 1], f[p, 2], f[p, 3], f[p, 4], f[p, 5], f[p, 6], f[p, 7])


@_jit
def prim_sweep(f, p, kind, ox, oy, oz, dx, dy, dz, tmax, rs):
    """:func:`sweep_sphere` & co. for packed primitive ``p`` of ``kind``."""
    if kind == KIND_SPHERE:
        return sweep_sphere(ox, oy, oz, dx, dy, dz, tmax, rs, f[p, 0], f[p, 1], f[p, 2], f[p, 3])
    if kind == KIND_BOX:
        return sweep_box(ox, oy, oz, dx, dy, dz, tmax, rs, f[p, 0], f[p, 1], f[p, 2], _box_rot(f, p), f[p, 3],
                         f[p, 4], f[p, 5])
    if kind == KIND_CAPSULE:
        return sweep_capsule(ox, oy, oz, dx, dy, dz, tmax, rs, f[p, 0], f[p, 1], f[p, 2], f[p, 3], f[p, 4], f[p, 5],
                             f[p, 6])
    return sweep_cylinder(ox, oy, oz, dx, dy, dz, tmax, rs, f[p, 0], f[p, 1], f[p, 2], f[p, 3], f[p, 4], f[p, 5],
                          f[p, 6], f[p, 7])
