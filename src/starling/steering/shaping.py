"""Scalar shaping functions used by the steering behaviours.

Two kinds of shaping appear in the behaviour model of the thesis
(sections 6.4.2 to 6.4.5):

* **Activation** turns a normalised measurement (for example, how far an
  animal is from the centroid of its neighbours, divided by its vision
  radius) into the *desire* of a behaviour, a number in ``[0, 1]`` that is
  later multiplied by the behaviour's weight.  The candidates are the easing
  curves of section 6.4.3: power curves ``f_q1``..``f_q4``, S-curves
  ``f_s1``..``f_s5`` and bell curves ``f_b1``..``f_b6``.  Any of them can be
  shifted and rescaled with the range remapping of equation 6.8
  (:func:`remap`).  Separation needs an activation whose input is unbounded;
  :func:`f_sep` (used in equation 6.13) rises from 0 towards 1 as its input
  grows.
* **Observability** (section 6.4.4) weights each neighbour by how well the
  animal can see it.  The weight is the product of a distance factor,
  :func:`f_ip` of the normalised distance, and an angle factor, ``f_q2`` of
  the normalised angle off the animal's heading (:func:`observability`).  It
  vanishes at the edge of the vision radius and at the edge of the field of
  view, so neighbours fade in and out of a behaviour smoothly.

Every function here is a scalar ``numba.njit`` function that computes in
``float64`` (``int64`` for easing codes) whatever numbers it is given, and
returns ``float64``.  They can be called from other jitted kernels and from
plain Python alike.  Each converts its arguments itself instead of being
compiled eagerly for those types: an eager signature loads its compiled code
from the cache when the module is imported (25 functions, a quarter of a
second of every ``import starling``), while a kernel loaded from the cache
needs none of them; now they compile only when a kernel that calls them does.

Domain handling
---------------
The easing curves are defined on ``[0, 1]``.  Each of them clamps its input
into that interval before evaluating, so an out-of-range input yields the
value at the nearest end point.  This matters inside kernels: a slightly
negative input raised to a fractional power would otherwise produce NaN and
silently poison a whole simulation step.  The power parameter ``l`` is
expected to be positive; validating it is the job of the configuration layer.

Easing functions are also addressable by a small integer code (see
:data:`EASING_CODES` and :func:`ease`) so that a kernel can select the curve
named in a configuration file without Python-level dispatch.
"""

from __future__ import annotations

import math

import numba

__all__ = [
    "EASING_CODES",
    "EASING_NAMES",
    "EPSILON",
    "clamp01",
    "ease",
    "easing_code",
    "f_b1",
    "f_b2",
    "f_b3",
    "f_b4",
    "f_b5",
    "f_b6",
    "f_ip",
    "f_q1",
    "f_q2",
    "f_q3",
    "f_q4",
    "f_s1",
    "f_s2",
    "f_s3",
    "f_s4",
    "f_s5",
    "f_sep",
    "observability",
    "remap",
    "remap_input",
    "remap_output",
]

#: Smallest normalised distance :func:`f_ip` evaluates.  The inverse power
#: curve diverges at 0, so a neighbour closer than ``EPSILON`` times the
#: vision radius (including one at exactly the same position) is treated as
#: if it were at that distance.  Its weight is then large but finite:
#: ``EPSILON ** -l - 1``, i.e. about 1e6 for ``l = 2``.
EPSILON = 1e-3

#: Easing function names in code order; ``EASING_NAMES[code]`` names the
#: curve that :func:`ease` evaluates for ``code``.
EASING_NAMES = (
    "q1",
    "q2",
    "q3",
    "q4",
    "s1",
    "s2",
    "s3",
    "s4",
    "s5",
    "b1",
    "b2",
    "b3",
    "b4",
    "b5",
    "b6",
)

#: Map from easing function name (``"q1"`` .. ``"b6"``) to its integer code.
EASING_CODES = {name: code for code, name in enumerate(EASING_NAMES)}

# The decorator of every curve below: compiled when a kernel first calls it (or Python does), then
# cached on disk; each curve converts its own arguments to float64 (see the module docstring).
_scalar = numba.njit(cache=True, fastmath=False, no_cfunc_wrapper=True)


def easing_code(name: str) -> int:
    """Return the integer code of the easing function called ``name``.

    Names are the thesis' subscripts without the ``f_`` prefix (``"q1"``,
    ``"s3"``, ``"b6"``, ...) and are matched exactly.  An unknown name raises
    ``ValueError`` listing the accepted names.
    """
    try:
        return EASING_CODES[name]
    except (KeyError, TypeError):
        valid = ", ".join(EASING_NAMES)
        raise ValueError(
            f"unknown easing function {name!r}; expected one of: {valid}"
        ) from None


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


@_scalar
def clamp01(x: float) -> float:
    """Clamp ``x`` into ``[0, 1]``.

    Negative zero comes back as ``0.0``; NaN is passed through unchanged.
    """
    x = float(x)
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return x


@_scalar
def _pow(x: float, l: float) -> float:
    """``x ** l`` with shortcuts for the common powers 2, 1 and 0.5.

    ``x * x`` and ``sqrt(x)`` are correctly rounded, so a shortcut never changes
    a result compared with a correctly rounded ``pow`` (glibc's ``pow(x, 0.5)``
    gave ``sqrt(x)`` for all of 80 million sampled doubles); it only avoids a
    library call for the thesis' recommended default ``l = 2`` and the
    murmuration's ``l = 0.5`` (the call was 6 % of ``flock``'s step).
    """
    x, l = float(x), float(l)
    if l == 2.0:
        return x * x
    if l == 1.0:
        return x
    if l == 0.5:
        return math.sqrt(x)
    return x**l


@_scalar
def _fold(x: float) -> float:
    """Fold ``[0, 1]`` onto itself as a tent: 0 at both ends, 1 at 0.5.

    This is the ``1 - |2x - 1|`` argument that turns an increasing easing
    curve into a bell curve.
    """
    x = float(x)
    return 1.0 - abs(2.0 * clamp01(x) - 1.0)


# ---------------------------------------------------------------------------
# Power curves (section 6.4.3)
# ---------------------------------------------------------------------------


@_scalar
def f_q1(x: float, l: float) -> float:
    """Power ease-in ``x ** l``: flat start for ``l > 1``, rising to 1."""
    x, l = float(x), float(l)
    return _pow(clamp01(x), l)


@_scalar
def f_q2(x: float, l: float) -> float:
    """``1 - x ** l``: falls from 1 to 0, staying high for small ``x``."""
    x, l = float(x), float(l)
    return 1.0 - _pow(clamp01(x), l)


@_scalar
def f_q3(x: float, l: float) -> float:
    """``(1 - x) ** l``: falls from 1 to 0, steepest near ``x = 0``."""
    x, l = float(x), float(l)
    return _pow(1.0 - clamp01(x), l)


@_scalar
def f_q4(x: float, l: float) -> float:
    """Power ease-out ``1 - (1 - x) ** l``: fast start, flat finish."""
    x, l = float(x), float(l)
    return 1.0 - _pow(1.0 - clamp01(x), l)


# ---------------------------------------------------------------------------
# S-curves (section 6.4.3)
# ---------------------------------------------------------------------------


@_scalar
def f_s1(x: float) -> float:
    """Cubic smoothstep ``3x^2 - 2x^3`` (zero slope at both ends).

    Rounding in the polynomial can overshoot 1 by a few ulps next to
    ``x = 1``, so the result is clamped as well.
    """
    x = float(x)
    x = clamp01(x)
    return clamp01(x * x * (3.0 - 2.0 * x))


@_scalar
def f_s2(x: float) -> float:
    """Quintic smootherstep ``6x^5 - 15x^4 + 10x^3``.

    Both first and second derivatives vanish at the end points.  As with
    :func:`f_s1`, the result is clamped to absorb rounding overshoot.
    """
    x = float(x)
    x = clamp01(x)
    return clamp01(x * x * x * (x * (6.0 * x - 15.0) + 10.0))


@_scalar
def f_s3(x: float, l: float) -> float:
    """Symmetric ease-in-out assembled from two power curves.

    The lower half is ``f_q1`` squeezed into ``[0, 0.5] -> [0, 0.5]``, the
    upper half is ``f_q4`` squeezed into ``[0.5, 1] -> [0.5, 1]``; for
    ``l = 2`` this is the familiar quadratic ease-in-out.
    """
    x, l = float(x), float(l)
    x = clamp01(x)
    if x <= 0.5:
        return 0.5 * f_q1(2.0 * x, l)
    return 0.5 * (f_q4(2.0 * x - 1.0, l) + 1.0)


@_scalar
def f_s4(x: float, l: float) -> float:
    """Asymmetric S-curve ``|x - 1|^(2l) - 2|x - 1|^l + 1``.

    With ``u = (1 - x) ** l`` the expression equals ``(1 - u) ** 2``, i.e.
    the square of ``f_q4``; it is evaluated in that form, which cannot
    cancel to a tiny negative number.
    """
    x, l = float(x), float(l)
    v = 1.0 - _pow(1.0 - clamp01(x), l)
    return v * v


@_scalar
def f_s5(x: float) -> float:
    """Half a cosine period, ``0.5 - 0.5 cos(pi x)``, rising from 0 to 1."""
    x = float(x)
    return 0.5 - 0.5 * math.cos(math.pi * clamp01(x))


# ---------------------------------------------------------------------------
# Bell curves (section 6.4.3): 0 at x = 0 and x = 1, peak of 1 at x = 0.5
# ---------------------------------------------------------------------------


@_scalar
def f_b1(x: float) -> float:
    """Full raised-cosine bell ``0.5 sin(2 pi x - pi/2) + 0.5``.

    Evaluated through the identity ``sin(t - pi/2) = -cos(t)``, which keeps
    both end points exactly 0.
    """
    x = float(x)
    return 0.5 - 0.5 * math.cos(2.0 * math.pi * clamp01(x))


@_scalar
def f_b2(x: float, l: float) -> float:
    """Bell built from ``f_q4``; the only bell with non-zero end slopes."""
    x, l = float(x), float(l)
    return f_q4(_fold(x), l)


@_scalar
def f_b3(x: float, l: float) -> float:
    """Bell built from the ease-in-out curve ``f_s3``."""
    x, l = float(x), float(l)
    return f_s3(_fold(x), l)


@_scalar
def f_b4(x: float, l: float) -> float:
    """Bell built from the asymmetric S-curve ``f_s4``."""
    x, l = float(x), float(l)
    return f_s4(_fold(x), l)


@_scalar
def f_b5(x: float) -> float:
    """Bell built from the cubic smoothstep ``f_s1``."""
    x = float(x)
    return f_s1(_fold(x))


@_scalar
def f_b6(x: float) -> float:
    """Bell built from the quintic smootherstep ``f_s2``."""
    x = float(x)
    return f_s2(_fold(x))


# ---------------------------------------------------------------------------
# Dispatch and range remapping (equation 6.8)
# ---------------------------------------------------------------------------


@_scalar
def ease(code: int, x: float, l: float) -> float:
    """Evaluate the easing function with integer ``code`` at ``x``.

    ``code`` indexes :data:`EASING_NAMES`.  Curves without a power parameter
    (``s1``, ``s2``, ``s5``, ``b1``, ``b5``, ``b6``) ignore ``l``.  An
    unknown code raises ``ValueError``.
    """
    code, x, l = int(code), float(x), float(l)
    if code == 0:
        return f_q1(x, l)
    if code == 1:
        return f_q2(x, l)
    if code == 2:
        return f_q3(x, l)
    if code == 3:
        return f_q4(x, l)
    if code == 4:
        return f_s1(x)
    if code == 5:
        return f_s2(x)
    if code == 6:
        return f_s3(x, l)
    if code == 7:
        return f_s4(x, l)
    if code == 8:
        return f_s5(x)
    if code == 9:
        return f_b1(x)
    if code == 10:
        return f_b2(x, l)
    if code == 11:
        return f_b3(x, l)
    if code == 12:
        return f_b4(x, l)
    if code == 13:
        return f_b5(x)
    if code == 14:
        return f_b6(x)
    raise ValueError("unknown easing code; valid codes are 0 to 14")


@_scalar
def remap_input(x: float, x_min: float, x_max: float) -> float:
    """Map ``x`` from ``[x_min, x_max]`` onto ``[0, 1]`` and clamp.

    This is the inner part of equation 6.8.  When ``x_max < x_min`` the
    direction is reversed (``x_min`` maps to 0, ``x_max`` to 1).  An empty
    interval (``x_max == x_min``) degenerates into a step: 0 below
    ``x_min`` and 1 at or above it.
    """
    x, x_min, x_max = float(x), float(x_min), float(x_max)
    width = x_max - x_min
    if width == 0.0:
        return 0.0 if x < x_min else 1.0
    return clamp01((x - x_min) / width)


@_scalar
def remap_output(y: float, y_min: float, y_max: float) -> float:
    """Scale ``y`` from ``[0, 1]`` onto ``[y_min, y_max]`` (no clamping).

    This is the outer part of equation 6.8.
    """
    y, y_min, y_max = float(y), float(y_min), float(y_max)
    return y * (y_max - y_min) + y_min


@_scalar
def remap(
    code: int,
    x: float,
    l: float,
    x_min: float,
    x_max: float,
    y_min: float,
    y_max: float,
) -> float:
    """Evaluate easing ``code`` with remapped input and output (eq. 6.8).

    The input window ``[x_min, x_max]`` is stretched onto the curve's domain
    (see :func:`remap_input`), and the curve's ``[0, 1]`` output is scaled
    onto ``[y_min, y_max]``.  With ``x_min, x_max, y_min, y_max = 0, 1, 0, 1``
    this is just ``ease(code, x, l)``.
    """
    code, x, l = int(code), float(x), float(l)
    x_min, x_max, y_min, y_max = float(x_min), float(x_max), float(y_min), float(y_max)
    t = remap_input(x, x_min, x_max)
    return remap_output(ease(code, t, l), y_min, y_max)


# ---------------------------------------------------------------------------
# Observability (section 6.4.4) and separation activation (section 6.4.5)
# ---------------------------------------------------------------------------


@_scalar
def f_ip(x: float, l: float) -> float:
    """Inverse power distance weight ``1 / x**l - 1``.

    ``x`` is a distance normalised by the vision radius.  The weight is 0 at
    ``x = 1`` and grows without bound towards ``x = 0``, so ``x`` is clamped
    into ``[EPSILON, 1]`` first: coincident animals get a large finite
    weight instead of infinity, and anything beyond the radius gets 0.
    ``l = 2`` gives Reynolds' inverse-square falloff.
    """
    x, l = float(x), float(l)
    if x < EPSILON:
        x = EPSILON
    elif x > 1.0:
        x = 1.0
    return 1.0 / _pow(x, l) - 1.0


@_scalar
def f_sep(x: float, k: float, l: float) -> float:
    """Separation activation ``1 - 1 / (k x + 1) ** l``.

    Maps an unbounded, non-negative observability onto ``[0, 1)``: it is 0
    at ``x = 0``, increases monotonically and approaches 1 as ``x`` grows.
    ``k`` stretches the curve horizontally (the thesis suggests 0.01) and
    ``l`` makes it rise faster.  Inputs ``x <= 0`` return 0.  ``k`` and
    ``l`` are expected to be positive.
    """
    x, k, l = float(x), float(k), float(l)
    if x <= 0.0:
        return 0.0
    return 1.0 - 1.0 / _pow(k * x + 1.0, l)


@_scalar
def observability(
    distance: float,
    angle: float,
    max_distance: float,
    fov: float,
    l_distance: float,
    l_angle: float,
) -> float:
    """Combined observability ``o(d, a)`` of one neighbour.

    ``o(d, a) = f_ip(d / max_distance, l_distance) * f_q2(2 a / fov, l_angle)``

    ``distance`` is the distance to the neighbour and ``angle`` (radians) the
    angle between the animal's forward direction and the direction to the
    neighbour; its sign is ignored.  ``fov`` is the *full* field of view in
    radians, so the neighbour is visible while ``|angle| < fov / 2``.  The
    result is 0 when ``distance >= max_distance`` or ``2 |angle| >= fov``
    (and when ``max_distance`` or ``fov`` is not positive); otherwise it is
    positive and largest for close neighbours straight ahead.

    The angle is normalised by ``fov`` exactly as written, even for
    ``fov >= 2 pi``.  With ``fov = 2 pi`` a neighbour directly behind
    (``angle = pi``) therefore sits on the edge of vision and has weight 0;
    a wider ``fov`` would give it a positive weight.
    """
    distance, angle, max_distance = float(distance), float(angle), float(max_distance)
    fov, l_distance, l_angle = float(fov), float(l_distance), float(l_angle)
    if max_distance <= 0.0 or fov <= 0.0:
        return 0.0
    if distance >= max_distance:
        return 0.0
    a2 = 2.0 * abs(angle)
    if a2 >= fov:
        return 0.0
    return f_ip(distance / max_distance, l_distance) * f_q2(a2 / fov, l_angle)
