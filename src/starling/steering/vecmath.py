"""Small 3-vector helpers for Numba kernels.

Kernels work on scalars and tuples instead of temporary arrays: a tuple of three
floats lives in registers, an array would be a heap allocation per animal.
"""
import math

from numba import njit

EPS = 1e-9


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def dot3(ax, ay, az, bx, by, bz):
    return ax * bx + ay * by + az * bz


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def norm3(x, y, z):
    return math.sqrt(x * x + y * y + z * z)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def normalize3(x, y, z):
    """Unit vector and the original length; (0, 0, 0, 0) for a (near) zero vector."""
    length = math.sqrt(x * x + y * y + z * z)
    if length < EPS:
        return 0.0, 0.0, 0.0, 0.0
    inv = 1.0 / length
    return x * inv, y * inv, z * inv, length


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def cross3(ax, ay, az, bx, by, bz):
    return ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def angle_between(ax, ay, az, bx, by, bz):
    """Angle in radians between two vectors (0 when either is zero)."""
    la = math.sqrt(ax * ax + ay * ay + az * az)
    lb = math.sqrt(bx * bx + by * by + bz * bz)
    if la < EPS or lb < EPS:
        return 0.0
    c = (ax * bx + ay * by + az * bz) / (la * lb)
    if c > 1.0:
        c = 1.0
    elif c < -1.0:
        c = -1.0
    return math.acos(c)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def fast_acos(x):
    """arccos with |error| <= 2e-8 rad (Abramowitz & Stegun 4.4.46), about 4x cheaper.

    The per-pair angle to a neighbour is the most frequent transcendental call of the
    neighbour behaviours; 2e-8 rad is far below what float32 state can resolve.
    """
    neg = x < 0.0
    a = -x if neg else x
    if a > 1.0:
        a = 1.0
    r = math.sqrt(1.0 - a) * (
        1.5707963050 + a * (-0.2145988016 + a * (0.0889789874 + a * (-0.0501743046 + a * (
            0.0308918810 + a * (-0.0170881256 + a * (0.0066700901 + a * -0.0012624911)))))))
    return math.pi - r if neg else r


_HALF_PI = math.pi / 2.0
# Taylor coefficients (-1)^k / (2k)! and (-1)^k / (2k+1)!, k = 0..10: on [-π/2, π/2] the first term
# left out, (π/2)^22 / 22! or (π/2)^23 / 23!, is below 2e-17
_COS = tuple((-1.0) ** k / math.factorial(2 * k) for k in range(11))
_SIN = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(11))


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def cos_sin_half_turn(theta):
    """``cos θ`` and ``sin θ`` for ``θ`` in [0, π], within a few 1e-16 of the C library.

    Polynomials about π/2 (``cos θ = −sin x``, ``sin θ = cos x``, ``x = θ − π/2``), without
    branches: LLVM vectorises a loop that calls them, where it calls the C library's ``cos``
    and ``sin`` one lane at a time. The slerps take their turning angle from it.
    """
    x = theta - _HALF_PI
    x2 = x * x
    c = _COS[10]
    s = _SIN[10]
    for k in range(9, -1, -1):  # Horner's rule (a loop of constant length: LLVM unrolls it)
        c = c * x2 + _COS[k]
        s = s * x2 + _SIN[k]
    return -(s * x), c


#: ``|a . b|`` past which :func:`slerp_unit` leaves the general formula (:func:`slerp_apart`)
SLERP_APART = 0.9995


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def slerp_apart(ax, ay, az, bx, by, bz, c, t):
    """:func:`slerp_unit` for unit vectors neither nearly the same nor nearly opposite
    (``|c| <= SLERP_APART``, ``c = a . b``): turn ``a`` by ``t`` of the angle between them in
    their plane. Branch free, so a kernel may run it over a block of animals in one loop
    and redo the few others with :func:`slerp_unit`, bit for bit the same."""
    theta = fast_acos(c) * t
    # orthonormal basis in the plane of a and b
    rx, ry, rz, n = normalize3(bx - ax * c, by - ay * c, bz - az * c)
    ct, st = cos_sin_half_turn(theta)
    return ax * ct + rx * st, ay * ct + ry * st, az * ct + rz * st


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def slerp_unit(ax, ay, az, bx, by, bz, t):
    """Spherical interpolation between unit vectors a and b by fraction t in [0, 1].

    Antiparallel inputs rotate about an axis perpendicular to a (any one), so the
    result is always a unit vector and never NaN.
    """
    c = ax * bx + ay * by + az * bz
    if c > SLERP_APART:
        x = ax + (bx - ax) * t
        y = ay + (by - ay) * t
        z = az + (bz - az) * t
        ux, uy, uz, n = normalize3(x, y, z)
        return ux, uy, uz
    if c < -SLERP_APART:
        # pick a perpendicular axis to rotate around
        px, py, pz = cross3(ax, ay, az, 0.0, 1.0, 0.0)
        if norm3(px, py, pz) < 1e-3:
            px, py, pz = cross3(ax, ay, az, 1.0, 0.0, 0.0)
        px, py, pz, n = normalize3(px, py, pz)
        # rotate a about p by pi * t (p is perpendicular to a)
        qx, qy, qz = cross3(px, py, pz, ax, ay, az)
        ct, st = cos_sin_half_turn(math.pi * t)
        return ax * ct + qx * st, ay * ct + qy * st, az * ct + qz * st
    return slerp_apart(ax, ay, az, bx, by, bz, c, t)
