"""Analytic primitives: sphere, oriented box, capsule, capped cylinder, infinite plane.

Three families of scalar Numba kernels live here, one of each per shape, all in float64 and all free of
allocation so that the batched kernels (:mod:`~starling.environment.raycast`,
:mod:`~starling.environment.spherecast`, :mod:`~starling.environment.inside`) can call them per ray:

``ray_<shape>(o, d, tmax, ...) -> (t, nx, ny, nz)``
    The first parameter ``t`` in ``[0, tmax]`` at which the ray ``o + t d`` (``d`` unit) crosses the
    shape's surface, with the outward surface normal there; ``t = inf`` when there is none.  A ray that
    starts inside a solid therefore reports the exit point: every shape is treated as a surface, which is
    what an obstacle-avoidance ray (seed 000, 7.1.1) needs and what a brute-force oracle can check.

``sd_<shape>(p, ...) -> (d, nx, ny, nz)``
    The exact signed distance from ``p`` to the solid (negative inside) and the unit direction in which
    the distance grows fastest (the outward normal of the closest surface point).  Used by the inside
    tests and by the depenetration and overlap checks of collide-and-slide.

``sweep_<shape>(o, d, tmax, radius, ...) -> (t, nx, ny, nz)``
    The first centre travel ``t`` in ``[0, tmax]`` at which a sphere of ``radius`` moving from ``o`` along
    ``d`` touches the shape, with the contact normal (from the surface towards the sphere's centre).  The
    caller guarantees that the sphere does not overlap the shape at ``o`` (it checks ``sd < radius``
    first), so the answer is the entry of the ray into the Minkowski sum of the shape and the ball
    (seed 000, 7.2.2; Fauerby's and Linahan's swept-sphere formulation).

The normals returned by ``ray_*`` are the outward normals; the batched cast flips them to face the ray
origin once per ray.  The finite shapes packed one per table row, as the scene stores them, are in
:mod:`~starling.environment.packed`; the rotations of oriented shapes in :mod:`~starling.environment.rotations`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

INF = np.inf

# Kernels here never allocate, so they are compiled without Numba's reference counting (``_nrt=False``):
# otherwise every array handed to an inlined helper is incref'd and decref'd with atomic operations on
# each call, which costs more than the geometry itself (measured: 40 ns per ray cast on the terrain).
_jit = njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True, _nrt=False)
# one-line helpers are inlined where they are called: a separate compilation costs more than the helper
_ijit = njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True, inline="always", _nrt=False)

_EPS = 1e-12


# ----------------------------------------------------------------------------------------------------
# small vector helpers (scalars in, scalars out: no arrays are created)
# ----------------------------------------------------------------------------------------------------


@_jit
def unit3(x, y, z):
    """``(x, y, z) / |(x, y, z)|``, or ``(0, 1, 0)`` for a zero vector."""
    n = math.sqrt(x * x + y * y + z * z)
    if n <= 1e-300:
        return 0.0, 1.0, 0.0
    return x / n, y / n, z / n


@_jit
def any_perpendicular(x, y, z):
    """A unit vector perpendicular to the unit vector ``(x, y, z)``."""
    if abs(x) < 0.9:
        # cross with the x axis
        return unit3(0.0, z, -y)
    return unit3(-z, 0.0, x)


@_jit
def closest_on_segment(px, py, pz, ax, ay, az, bx, by, bz):
    """Closest point to ``p`` on the segment ``a``–``b`` (``a`` when the segment is degenerate)."""
    ex, ey, ez = bx - ax, by - ay, bz - az
    ee = ex * ex + ey * ey + ez * ez
    s = 0.0
    if ee > 1e-300:
        s = ((px - ax) * ex + (py - ay) * ey + (pz - az) * ez) / ee
        s = min(max(s, 0.0), 1.0)
    return ax + s * ex, ay + s * ey, az + s * ez


@_jit
def quadratic_roots(a, b, c):
    """Real roots ``(r0 <= r1)`` of ``a t^2 + 2 b t + c`` (note the half ``b``); ``(inf, inf)`` when none.

    Uses the cancellation-free form, so a root near zero stays accurate when the other is large.
    """
    if abs(a) <= 1e-300:
        if abs(b) <= 1e-300:
            return INF, INF
        r = -c / (2.0 * b)
        return r, r
    disc = b * b - a * c
    if disc < 0.0:
        return INF, INF
    s = math.sqrt(disc)
    q = -(b + s) if b >= 0.0 else -(b - s)
    if abs(q) <= 1e-300:
        return 0.0, 0.0
    r0 = q / a
    r1 = c / q
    if r0 > r1:
        return r1, r0
    return r0, r1


# ----------------------------------------------------------------------------------------------------
# sphere
# ----------------------------------------------------------------------------------------------------


@_jit
def ray_sphere(ox, oy, oz, dx, dy, dz, tmax, cx, cy, cz, r):
    """First crossing of the ray with the sphere ``|p - c| = r`` (see module docstring)."""
    px, py, pz = ox - cx, oy - cy, oz - cz
    b = px * dx + py * dy + pz * dz
    c = px * px + py * py + pz * pz - r * r
    if c > 0.0 and b > 0.0:
        return INF, 0.0, 0.0, 0.0  # outside and moving away
    t0, t1 = quadratic_roots(1.0, b, c)
    t = t0 if t0 >= 0.0 else t1
    if t < 0.0 or t > tmax:
        return INF, 0.0, 0.0, 0.0
    nx, ny, nz = unit3(px + t * dx, py + t * dy, pz + t * dz)
    return t, nx, ny, nz


@_jit
def sd_sphere(px, py, pz, cx, cy, cz, r):
    """Signed distance to the ball and the outward direction."""
    qx, qy, qz = px - cx, py - cy, pz - cz
    n = math.sqrt(qx * qx + qy * qy + qz * qz)
    if n <= 1e-300:
        return -r, 0.0, 1.0, 0.0
    return n - r, qx / n, qy / n, qz / n


@_jit
def sweep_sphere(ox, oy, oz, dx, dy, dz, tmax, rs, cx, cy, cz, r):
    """Sphere of radius ``rs`` swept against the ball: a ray against the ball of radius ``r + rs``."""
    return ray_sphere(ox, oy, oz, dx, dy, dz, tmax, cx, cy, cz, r + rs)


# ----------------------------------------------------------------------------------------------------
# oriented box; ``rot`` is the 3x3 rotation whose columns are the box's local axes in world coordinates,
# passed as a 9-tuple in row-major order (r00, r01, r02, r10, ..., r22) so that no array view is made
# ----------------------------------------------------------------------------------------------------


@_ijit
def _to_local(rot, x, y, z):
    return (
        rot[0] * x + rot[3] * y + rot[6] * z,
        rot[1] * x + rot[4] * y + rot[7] * z,
        rot[2] * x + rot[5] * y + rot[8] * z,
    )


@_ijit
def _to_world(rot, x, y, z):
    return (
        rot[0] * x + rot[1] * y + rot[2] * z,
        rot[3] * x + rot[4] * y + rot[5] * z,
        rot[6] * x + rot[7] * y + rot[8] * z,
    )


@_ijit
def _slab(o, d, h, tn, tf, an, af, sn, sf, axis):
    """One slab of the Kay–Kajiya test; returns updated (near, far, near axis, far axis, near sign, far
    sign, ok)."""
    if abs(d) <= 1e-300:
        if o < -h or o > h:
            return tn, tf, an, af, sn, sf, False
        return tn, tf, an, af, sn, sf, True
    inv = 1.0 / d
    t1 = (-h - o) * inv
    t2 = (h - o) * inv
    # entering through the face whose outward normal opposes d
    s = -1.0 if d > 0.0 else 1.0
    if t1 > t2:
        t1, t2 = t2, t1
    if t1 > tn:
        tn, an, sn = t1, axis, s
    if t2 < tf:
        tf, af, sf = t2, axis, -s
    return tn, tf, an, af, sn, sf, tn <= tf


@_jit
def _ray_aabb_local(lox, loy, loz, ldx, ldy, ldz, hx, hy, hz):
    """Entry and exit of a ray (in box coordinates) through the box ``|q_i| <= h_i``.

    Returns ``(t_near, t_far, near_axis, far_axis, near_sign, far_sign, hit)``; the signs give the outward
    normal of the entry/exit face along its axis.
    """
    tn, tf = -INF, INF
    an, af = -1, -1
    sn, sf = 0.0, 0.0
    tn, tf, an, af, sn, sf, ok = _slab(lox, ldx, hx, tn, tf, an, af, sn, sf, 0)
    if not ok:
        return tn, tf, an, af, sn, sf, False
    tn, tf, an, af, sn, sf, ok = _slab(loy, ldy, hy, tn, tf, an, af, sn, sf, 1)
    if not ok:
        return tn, tf, an, af, sn, sf, False
    tn, tf, an, af, sn, sf, ok = _slab(loz, ldz, hz, tn, tf, an, af, sn, sf, 2)
    return tn, tf, an, af, sn, sf, ok


@_ijit
def _axis_vec(axis, sign):
    if axis == 0:
        return sign, 0.0, 0.0
    if axis == 1:
        return 0.0, sign, 0.0
    return 0.0, 0.0, sign


@_jit
def ray_box(ox, oy, oz, dx, dy, dz, tmax, cx, cy, cz, rot, hx, hy, hz):
    """First crossing of the ray with the surface of an oriented box."""
    lox, loy, loz = _to_local(rot, ox - cx, oy - cy, oz - cz)
    ldx, ldy, ldz = _to_local(rot, dx, dy, dz)
    tn, tf, an, af, sn, sf, ok = _ray_aabb_local(lox, loy, loz, ldx, ldy, ldz, hx, hy, hz)
    if not ok or tf < 0.0:
        return INF, 0.0, 0.0, 0.0
    if tn >= 0.0:
        t, axis, sign = tn, an, sn
    else:
        t, axis, sign = tf, af, sf
    if t > tmax or axis < 0:
        return INF, 0.0, 0.0, 0.0
    nx, ny, nz = _axis_vec(axis, sign)
    nx, ny, nz = _to_world(rot, nx, ny, nz)
    return t, nx, ny, nz


@_jit
def sd_box(px, py, pz, cx, cy, cz, rot, hx, hy, hz):
    """Signed distance to the solid box and the outward direction."""
    qx, qy, qz = _to_local(rot, px - cx, py - cy, pz - cz)
    ex, ey, ez = abs(qx) - hx, abs(qy) - hy, abs(qz) - hz
    if ex > 0.0 or ey > 0.0 or ez > 0.0:
        gx = qx - min(max(qx, -hx), hx)
        gy = qy - min(max(qy, -hy), hy)
        gz = qz - min(max(qz, -hz), hz)
        d = math.sqrt(gx * gx + gy * gy + gz * gz)
        nx, ny, nz = _to_world(rot, gx / d, gy / d, gz / d)
        return d, nx, ny, nz
    # inside: the nearest face
    if ex >= ey and ex >= ez:
        nx, ny, nz = _to_world(rot, 1.0 if qx >= 0.0 else -1.0, 0.0, 0.0)
        return ex, nx, ny, nz
    if ey >= ez:
        nx, ny, nz = _to_world(rot, 0.0, 1.0 if qy >= 0.0 else -1.0, 0.0)
        return ey, nx, ny, nz
    nx, ny, nz = _to_world(rot, 0.0, 0.0, 1.0 if qz >= 0.0 else -1.0)
    return ez, nx, ny, nz


@_jit
def _ray_capsule_entry(ox, oy, oz, dx, dy, dz, tmax, ax, ay, az, bx, by, bz, r):
    """Entry of a ray starting outside the capsule (segment a–b, radius r); inf if none in [0, tmax]."""
    t, _, _, _ = ray_capsule(ox, oy, oz, dx, dy, dz, tmax, ax, ay, az, bx, by, bz, r)
    return t


@_jit
def sweep_box(ox, oy, oz, dx, dy, dz, tmax, rs, cx, cy, cz, rot, hx, hy, hz):
    """Sphere of radius ``rs`` swept against an oriented box (a ray against the rounded box).

    The rounded box is the union of the box grown by ``rs`` along one axis at a time and of twelve edge
    capsules.  The ray's entry into the box grown along all axes is the answer whenever it lands on a face
    region; otherwise the minimum entry over the pieces is taken (Ericson, RTCD 5.5.7).
    """
    lox, loy, loz = _to_local(rot, ox - cx, oy - cy, oz - cz)
    ldx, ldy, ldz = _to_local(rot, dx, dy, dz)
    tn, tf, an, af, sn, sf, ok = _ray_aabb_local(lox, loy, loz, ldx, ldy, ldz, hx + rs, hy + rs, hz + rs)
    if not ok or tf < 0.0 or tn > tmax:
        return INF, 0.0, 0.0, 0.0
    t = max(tn, 0.0)
    qx, qy, qz = lox + t * ldx, loy + t * ldy, loz + t * ldz
    outside = 0
    tol = 1e-9 * (1.0 + rs)
    if abs(qx) > hx + tol:
        outside += 1
    if abs(qy) > hy + tol:
        outside += 1
    if abs(qz) > hz + tol:
        outside += 1
    if outside > 1:
        # corner or edge region: minimum over the pieces
        t = INF
        for axis in range(3):
            ex = hx + (rs if axis == 0 else 0.0)
            ey = hy + (rs if axis == 1 else 0.0)
            ez = hz + (rs if axis == 2 else 0.0)
            tn2, tf2, _, _, _, _, ok2 = _ray_aabb_local(lox, loy, loz, ldx, ldy, ldz, ex, ey, ez)
            if ok2 and tf2 >= 0.0 and tn2 < t:
                t = max(tn2, 0.0)
        for e in range(12):
            # edge e: two fixed coordinates, one free axis
            free = e // 4
            s1 = 1.0 if (e & 1) else -1.0
            s2 = 1.0 if (e & 2) else -1.0
            if free == 0:
                a = (-hx, s1 * hy, s2 * hz)
                b = (hx, s1 * hy, s2 * hz)
            elif free == 1:
                a = (s1 * hx, -hy, s2 * hz)
                b = (s1 * hx, hy, s2 * hz)
            else:
                a = (s1 * hx, s2 * hy, -hz)
                b = (s1 * hx, s2 * hy, hz)
            tc = _ray_capsule_entry(lox, loy, loz, ldx, ldy, ldz, tmax, a[0], a[1], a[2], b[0], b[1], b[2], rs)
            if tc < t:
                t = tc
        if t > tmax:
            return INF, 0.0, 0.0, 0.0
        qx, qy, qz = lox + t * ldx, loy + t * ldy, loz + t * ldz
    # contact normal: from the closest box point to the sphere centre
    gx = qx - min(max(qx, -hx), hx)
    gy = qy - min(max(qy, -hy), hy)
    gz = qz - min(max(qz, -hz), hz)
    nx, ny, nz = unit3(gx, gy, gz)
    nx, ny, nz = _to_world(rot, nx, ny, nz)
    return t, nx, ny, nz


# ----------------------------------------------------------------------------------------------------
# capsule: segment a–b with radius r
# ----------------------------------------------------------------------------------------------------


@_jit
def ray_capsule(ox, oy, oz, dx, dy, dz, tmax, ax, ay, az, bx, by, bz, r):
    """First crossing of the ray with the surface of the capsule around segment ``a``–``b``."""
    ex, ey, ez = bx - ax, by - ay, bz - az
    ee = ex * ex + ey * ey + ez * ez
    if ee <= 1e-300:
        return ray_sphere(ox, oy, oz, dx, dy, dz, tmax, ax, ay, az, r)
    wx, wy, wz = ox - ax, oy - ay, oz - az
    ed = ex * dx + ey * dy + ez * dz
    ew = ex * wx + ey * wy + ez * wz
    dw = dx * wx + dy * wy + dz * wz
    ww = wx * wx + wy * wy + wz * wz
    best = INF
    # body: infinite cylinder around the axis, accepted where the axial coordinate is inside the segment
    qa = ee - ed * ed
    qb = ee * dw - ew * ed
    qc = ee * ww - ew * ew - r * r * ee
    if qa > 1e-12 * ee:
        t0, t1 = quadratic_roots(qa, qb, qc)
        for t in (t0, t1):
            if t >= 0.0 and t <= tmax and t < best:
                y = ew + t * ed
                if y >= 0.0 and y <= ee:
                    best = t
    # caps: spheres at both ends, accepted beyond the segment's ends
    for end in range(2):
        cx = ax if end == 0 else bx
        cy = ay if end == 0 else by
        cz = az if end == 0 else bz
        px, py, pz = ox - cx, oy - cy, oz - cz
        b = px * dx + py * dy + pz * dz
        c = px * px + py * py + pz * pz - r * r
        t0, t1 = quadratic_roots(1.0, b, c)
        for t in (t0, t1):
            if t >= 0.0 and t <= tmax and t < best:
                y = ew + t * ed
                if (end == 0 and y <= 0.0) or (end == 1 and y >= ee):
                    best = t
    if best == INF:
        return INF, 0.0, 0.0, 0.0
    hx, hy, hz = ox + best * dx, oy + best * dy, oz + best * dz
    sx, sy, sz = closest_on_segment(hx, hy, hz, ax, ay, az, bx, by, bz)
    nx, ny, nz = unit3(hx - sx, hy - sy, hz - sz)
    return best, nx, ny, nz


@_jit
def sd_capsule(px, py, pz, ax, ay, az, bx, by, bz, r):
    """Signed distance to the solid capsule and the outward direction."""
    sx, sy, sz = closest_on_segment(px, py, pz, ax, ay, az, bx, by, bz)
    gx, gy, gz = px - sx, py - sy, pz - sz
    n = math.sqrt(gx * gx + gy * gy + gz * gz)
    if n <= 1e-300:
        ux, uy, uz = unit3(bx - ax, by - ay, bz - az)
        qx, qy, qz = any_perpendicular(ux, uy, uz)
        return -r, qx, qy, qz
    return n - r, gx / n, gy / n, gz / n


@_jit
def sweep_capsule(ox, oy, oz, dx, dy, dz, tmax, rs, ax, ay, az, bx, by, bz, r):
    """Sphere of radius ``rs`` swept against a capsule: a ray against the capsule of radius ``r + rs``."""
    return ray_capsule(ox, oy, oz, dx, dy, dz, tmax, ax, ay, az, bx, by, bz, r + rs)


# ----------------------------------------------------------------------------------------------------
# capped cylinder: base a, unit axis u, height hgt, radius r
# ----------------------------------------------------------------------------------------------------


@_jit
def _cyl_local(px, py, pz, ax, ay, az, ux, uy, uz):
    """Axial coordinate and radial vector of ``p`` relative to the axis through ``a`` along ``u``."""
    wx, wy, wz = px - ax, py - ay, pz - az
    y = wx * ux + wy * uy + wz * uz
    return y, wx - y * ux, wy - y * uy, wz - y * uz


@_jit
def _ray_cylinder_pieces(ox, oy, oz, dx, dy, dz, tmax, ax, ay, az, ux, uy, uz, y_lo, y_hi, r, rho_cap):
    """Smallest crossing ``t`` in ``[0, tmax]`` with the cylinder of radius ``r`` between axial coordinates
    ``y_lo`` and ``y_hi`` (side) and with the two cap discs of radius ``rho_cap`` at those coordinates.

    Returns ``(t, where)`` with ``where`` 0 = side, 1 = low cap, 2 = high cap, -1 = none.
    """
    y0, qx, qy, qz = _cyl_local(ox, oy, oz, ax, ay, az, ux, uy, uz)
    dyax = dx * ux + dy * uy + dz * uz
    ex, ey, ez = dx - dyax * ux, dy - dyax * uy, dz - dyax * uz
    best = INF
    where = -1
    qa = ex * ex + ey * ey + ez * ez
    if qa > 1e-18:
        qb = qx * ex + qy * ey + qz * ez
        qc = qx * qx + qy * qy + qz * qz - r * r
        t0, t1 = quadratic_roots(qa, qb, qc)
        for t in (t0, t1):
            if t >= 0.0 and t <= tmax and t < best:
                y = y0 + t * dyax
                if y >= y_lo and y <= y_hi:
                    best = t
                    where = 0
    if abs(dyax) > 1e-300:
        for cap in range(2):
            yc = y_lo if cap == 0 else y_hi
            t = (yc - y0) / dyax
            if t >= 0.0 and t <= tmax and t < best:
                rx, ry, rz = qx + t * ex, qy + t * ey, qz + t * ez
                if rx * rx + ry * ry + rz * rz <= rho_cap * rho_cap:
                    best = t
                    where = 1 + cap
    return best, where


@_jit
def ray_cylinder(ox, oy, oz, dx, dy, dz, tmax, ax, ay, az, ux, uy, uz, hgt, r):
    """First crossing of the ray with the surface of a capped cylinder."""
    t, where = _ray_cylinder_pieces(ox, oy, oz, dx, dy, dz, tmax, ax, ay, az, ux, uy, uz, 0.0, hgt, r, r)
    if where < 0:
        return INF, 0.0, 0.0, 0.0
    if where == 1:
        return t, -ux, -uy, -uz
    if where == 2:
        return t, ux, uy, uz
    _, qx, qy, qz = _cyl_local(ox + t * dx, oy + t * dy, oz + t * dz, ax, ay, az, ux, uy, uz)
    nx, ny, nz = unit3(qx, qy, qz)
    return t, nx, ny, nz


@_jit
def _closest_on_cylinder(px, py, pz, ax, ay, az, ux, uy, uz, hgt, r):
    """Closest point of the solid cylinder to an outside point ``p``."""
    y, qx, qy, qz = _cyl_local(px, py, pz, ax, ay, az, ux, uy, uz)
    rho = math.sqrt(qx * qx + qy * qy + qz * qz)
    s = 1.0
    if rho > r:
        s = r / rho
    yc = min(max(y, 0.0), hgt)
    return ax + yc * ux + s * qx, ay + yc * uy + s * qy, az + yc * uz + s * qz


@_jit
def sd_cylinder(px, py, pz, ax, ay, az, ux, uy, uz, hgt, r):
    """Signed distance to the solid capped cylinder and the outward direction."""
    y, qx, qy, qz = _cyl_local(px, py, pz, ax, ay, az, ux, uy, uz)
    rho = math.sqrt(qx * qx + qy * qy + qz * qz)
    dr = rho - r
    dy = max(-y, y - hgt)
    if dr <= 0.0 and dy <= 0.0:
        if dr > dy:
            if rho <= 1e-300:
                nx, ny, nz = any_perpendicular(ux, uy, uz)
                return dr, nx, ny, nz
            return dr, qx / rho, qy / rho, qz / rho
        if y - hgt > -y:
            return dy, ux, uy, uz
        return dy, -ux, -uy, -uz
    cx, cy, cz = _closest_on_cylinder(px, py, pz, ax, ay, az, ux, uy, uz, hgt, r)
    gx, gy, gz = px - cx, py - cy, pz - cz
    d = math.sqrt(gx * gx + gy * gy + gz * gz)
    return d, gx / d, gy / d, gz / d


@_jit
def _poly_eval(c, n, t):
    """Evaluate ``c[0] t^n + ... + c[n]`` (Horner) for the coefficient tuple ``c`` of degree ``n``."""
    v = 0.0
    for i in range(n + 1):
        v = v * t + c[i]
    return v


@_jit
def _bisect_root(c, n, lo, hi, flo):
    """A root of the degree-``n`` polynomial in ``[lo, hi]`` where it changes sign (``flo`` = value at lo)."""
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        fm = _poly_eval(c, n, mid)
        if (fm <= 0.0) == (flo <= 0.0) and fm != 0.0:
            lo, flo = mid, fm
        else:
            hi = mid
        if hi - lo <= 1e-13 * (1.0 + abs(lo)):
            break
    return 0.5 * (lo + hi)


@_jit
def _derivative_cut(d1, u, v):
    """The root of the cubic ``d1`` in ``[u, v]`` if it changes sign there, else ``v``."""
    fu, fv = _poly_eval(d1, 3, u), _poly_eval(d1, 3, v)
    if (fu < 0.0 < fv) or (fv < 0.0 < fu):
        return _bisect_root(d1, 3, u, v, fu)
    return v


@_jit
def _first_root_quartic(c4, c3, c2, c1, c0, lo, hi):
    """Smallest root of the quartic in ``[lo, hi]`` (inf if none).

    The interval is cut at the roots of the derivatives (found degree by degree, starting from the
    closed-form quadratic) into pieces on which the polynomial is monotone; a sign change on such a piece
    brackets exactly one root, found by bisection.  Cuts that fall outside ``[lo, hi]`` are clamped onto
    its ends (making empty pieces, which is harmless), so everything stays in scalars.  Tangential double
    roots (no sign change) are grazes, not entries, and are skipped on purpose.
    """
    q = (c4, c3, c2, c1, c0)
    d1 = (4.0 * c4, 3.0 * c3, 2.0 * c2, c1)
    # roots of the second derivative 12 c4 t^2 + 6 c3 t + 2 c2 (closed form), clamped into [lo, hi]
    r0, r1 = quadratic_roots(12.0 * c4, 3.0 * c3, 2.0 * c2)
    a = min(max(r0, lo), hi)
    b = min(max(r1, lo), hi)
    # roots of the first derivative: at most one per monotone piece of it; without one, the piece's end
    e = (lo, _derivative_cut(d1, lo, a), _derivative_cut(d1, a, b), _derivative_cut(d1, b, hi), hi)
    for k in range(4):
        u, v = e[k], e[k + 1]
        if v < u:
            continue
        fu, fv = _poly_eval(q, 4, u), _poly_eval(q, 4, v)
        if fu == 0.0:
            return u
        if (fu < 0.0) != (fv < 0.0) or fv == 0.0:
            return _bisect_root(q, 4, u, v, fu)
    return INF


@_jit
def _ray_torus_entry(ox, oy, oz, dx, dy, dz, tmax, cx, cy, cz, ux, uy, uz, big, small):
    """First root in ``[0, tmax]`` of the ray with the torus of major radius ``big`` around axis ``u``
    through ``c`` and tube radius ``small`` (the rim of a swept cylinder)."""
    wx, wy, wz = ox - cx, oy - cy, oz - cz
    oa = wx * ux + wy * uy + wz * uz
    da = dx * ux + dy * uy + dz * uz
    m = wx * dx + wy * dy + wz * dz
    k = wx * wx + wy * wy + wz * wz + big * big - small * small
    perp_dd = 1.0 - da * da
    perp_od = m - oa * da
    perp_oo = wx * wx + wy * wy + wz * wz - oa * oa
    four_b2 = 4.0 * big * big
    c3 = 4.0 * m
    c2 = 4.0 * m * m + 2.0 * k - four_b2 * perp_dd
    c1 = 4.0 * m * k - 2.0 * four_b2 * perp_od
    c0 = k * k - four_b2 * perp_oo
    return _first_root_quartic(1.0, c3, c2, c1, c0, 0.0, tmax)


@_jit
def sweep_cylinder(ox, oy, oz, dx, dy, dz, tmax, rs, ax, ay, az, ux, uy, uz, hgt, r):
    """Sphere of radius ``rs`` swept against a capped cylinder.

    The Minkowski sum is the union of the cylinder widened by ``rs``, the cylinder lengthened by ``rs`` at
    both ends, and two solid tori around the rims.  The entry into the bounding cylinder (wider and longer)
    is the answer when it lands on the side or on a cap; otherwise the minimum over the pieces is taken,
    solving the rim quartics.
    """
    t, where = _ray_cylinder_pieces(
        ox, oy, oz, dx, dy, dz, tmax, ax, ay, az, ux, uy, uz, -rs, hgt + rs, r + rs, r + rs
    )
    if where < 0:
        return INF, 0.0, 0.0, 0.0
    px, py, pz = ox + t * dx, oy + t * dy, oz + t * dz
    y, qx, qy, qz = _cyl_local(px, py, pz, ax, ay, az, ux, uy, uz)
    rho2 = qx * qx + qy * qy + qz * qz
    tol = 1e-9 * (1.0 + rs)
    rim = (where == 0 and (y < -tol or y > hgt + tol)) or (where > 0 and rho2 > (r + tol) * (r + tol))
    if rim:
        t = INF
        ta, wa = _ray_cylinder_pieces(ox, oy, oz, dx, dy, dz, tmax, ax, ay, az, ux, uy, uz, 0.0, hgt, r + rs, r + rs)
        if wa >= 0:
            t = ta
        tb, wb = _ray_cylinder_pieces(ox, oy, oz, dx, dy, dz, tmax, ax, ay, az, ux, uy, uz, -rs, hgt + rs, r, r)
        if wb >= 0 and tb < t:
            t = tb
        for end in range(2):
            s = 0.0 if end == 0 else hgt
            tt = _ray_torus_entry(
                ox, oy, oz, dx, dy, dz, min(t, tmax), ax + s * ux, ay + s * uy, az + s * uz, ux, uy, uz, r, rs
            )
            if tt < t:
                t = tt
        if t > tmax:
            return INF, 0.0, 0.0, 0.0
        px, py, pz = ox + t * dx, oy + t * dy, oz + t * dz
    cx, cy, cz = _closest_on_cylinder(px, py, pz, ax, ay, az, ux, uy, uz, hgt, r)
    nx, ny, nz = unit3(px - cx, py - cy, pz - cz)
    return t, nx, ny, nz


# ----------------------------------------------------------------------------------------------------
# infinite plane through p0 with unit normal n; the solid is behind it
# ----------------------------------------------------------------------------------------------------


@_jit
def ray_plane(ox, oy, oz, dx, dy, dz, tmax, px, py, pz, nx, ny, nz):
    """Crossing of the ray with an infinite plane (either side)."""
    denom = dx * nx + dy * ny + dz * nz
    if abs(denom) <= 1e-300:
        return INF, 0.0, 0.0, 0.0
    t = ((px - ox) * nx + (py - oy) * ny + (pz - oz) * nz) / denom
    if t < 0.0 or t > tmax:
        return INF, 0.0, 0.0, 0.0
    return t, nx, ny, nz


@_jit
def sd_plane(qx, qy, qz, px, py, pz, nx, ny, nz):
    """Signed distance to the half-space behind the plane."""
    return (qx - px) * nx + (qy - py) * ny + (qz - pz) * nz, nx, ny, nz


@_jit
def sweep_plane(ox, oy, oz, dx, dy, dz, tmax, rs, px, py, pz, nx, ny, nz):
    """Sphere swept against the half-space behind a plane (the start is at least ``rs`` in front)."""
    denom = dx * nx + dy * ny + dz * nz
    if denom >= 0.0:
        return INF, 0.0, 0.0, 0.0
    d = (ox - px) * nx + (oy - py) * ny + (oz - pz) * nz
    t = (d - rs) / -denom
    if t > tmax:
        return INF, 0.0, 0.0, 0.0
    return max(t, 0.0), nx, ny, nz
