"""Movers: desired velocity in, new velocity, orientation and position out.

Implements seed 000, eq. 3.5 with the improvements of 3.5.1: the desired change of
velocity is split into a part parallel to the current velocity (changing speed) and a
lateral part (turning), each applied at its own constant rate, with a faster rate for
slowing down than for speeding up, quadratic drag (eq. 3.7) and a hard maximum
speed. Each component moves by at most ``rate * dt`` and never overshoots, so a
desired velocity is reached in ``|v_d - v_c| / A`` seconds whatever the frame rate.

Rotation follows 3.6.2: the forward vector is slerped toward the velocity's direction
by the fraction ``1 - exp(-turn_rate * dt)`` (frame-rate independent smoothing). The
free mover banks like Reynolds' boids (9.5.7): the up vector leans toward the sum of
the lift that cancels gravity and the centripetal acceleration of the turn.

* ``free``: 3D flight or swimming.
* ``planar``: 2D motion in the x–z plane; y stays at the animal's height.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numba import njit, prange
from pydantic import Field

from ..steering.params import PerAnimalParams
from ..steering.registry import mover
from ..steering.vecmath import SLERP_APART, cross3, normalize3, slerp_apart, slerp_unit

_EPS = 1e-6


class MoverParams(PerAnimalParams):
    """Physical abilities shared by every mover (seed 000, 3.3 constraint 5).

    Any of them may be a distribution drawn per animal (``max_speed = { uniform = [4, 6] }``).
    """

    kind: str
    max_speed: float = Field(5.0, gt=0, description="Hard speed limit, m/s.")
    speed_up_acceleration: float = Field(4.0, gt=0, description="Parallel rate when speeding up, m/s².")
    slow_down_acceleration: float = Field(6.0, gt=0, description="Parallel rate when slowing down, m/s².")
    lateral_acceleration: float = Field(6.0, gt=0, description="Rate of turning (lateral change), m/s².")
    drag: float = Field(0.0, ge=0, description="Quadratic drag strength D of eq. 3.7, 1/m.")
    turn_rate: float = Field(8.0, gt=0, description="How fast forward follows the velocity, 1/s.")


class FreeMoverParams(MoverParams):
    """3D movement with banking (seed 000, 9.5.7 "3D Movement")."""

    kind: Literal["free"] = "free"
    banking: float = Field(1.0, ge=0, le=5, description="How strongly turns tilt the up vector (0 = never).")
    bank_rate: float = Field(4.0, gt=0, description="How fast up follows its target, 1/s.")
    gravity: float = Field(9.81, gt=0, description="Gravity the banking balances, m/s².")


class PlanarMoverParams(MoverParams):
    """2D movement in the x–z plane (seed 000, 9.5.7 "2D Movement")."""

    kind: Literal["planar"] = "planar"


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def wrap_coordinate(x, lo, size):
    """``lo + (x - lo) % size``, the periodic world's coordinate, bit for bit, without the float
    modulo's library call in the common case.

    An animal moves less than a period a step, so ``y = x - lo`` lies within one period of
    ``[0, size)``, and there Python's float modulo is exactly ``y``, ``y + size`` or ``y - size``:
    ``fmod`` returns ``y`` whenever ``|y| < size``, the sign fix-up then adds ``size``, and
    ``y - size`` is exact for ``size ≤ y ≤ 2 size`` (Sterbenz). Farther (a teleport, an infinity,
    a NaN) the modulo itself runs. The call cost 8 % of the flocking step at 100,000 animals.
    """
    y = x - lo
    if y < 0.0:
        if y >= -size:
            return lo + (y + size)
    elif y < size:
        return lo + y
    elif y < 2.0 * size:
        return lo + (y - size)
    return lo + y % size


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def accelerate(vx, vy, vz, dx, dy, dz, max_speed, a_up, a_down, a_lat, drag, dt):
    """One velocity update of the improved constant-acceleration mover.

    Returns the new velocity and the lateral velocity change (used for banking).
    """
    # clamp the desired velocity to what the animal can reach
    dl = math.sqrt(dx * dx + dy * dy + dz * dz)
    if dl > max_speed:
        s = max_speed / dl
        dx *= s
        dy *= s
        dz *= s
    ex = dx - vx
    ey = dy - vy
    ez = dz - vz
    fx, fy, fz, speed = normalize3(vx, vy, vz)
    lx = 0.0
    ly = 0.0
    lz = 0.0
    if speed > _EPS:
        par = ex * fx + ey * fy + ez * fz
        rx = ex - par * fx
        ry = ey - par * fy
        rz = ez - par * fz
        rate = a_up if par > 0.0 else a_down
        step = min(rate * dt, abs(par))
        sign = 1.0 if par > 0.0 else -1.0
        nvx = vx + fx * step * sign
        nvy = vy + fy * step * sign
        nvz = vz + fz * step * sign
        rl = math.sqrt(rx * rx + ry * ry + rz * rz)
        if rl > _EPS:
            k = min(a_lat * dt, rl) / rl
            lx = rx * k
            ly = ry * k
            lz = rz * k
            nvx += lx
            nvy += ly
            nvz += lz
        if drag > 0.0:
            loss = min(speed * speed * drag * dt, speed)
            nvx -= fx * loss
            nvy -= fy * loss
            nvz -= fz * loss
    else:
        # from rest every change is a speed-up along the desired direction
        ux, uy, uz, el = normalize3(ex, ey, ez)
        step = min(a_up * dt, el)
        nvx = vx + ux * step
        nvy = vy + uy * step
        nvz = vz + uz * step
    nl = math.sqrt(nvx * nvx + nvy * nvy + nvz * nvz)
    if nl > max_speed:
        s = max_speed / nl
        nvx *= s
        nvy *= s
        nvz *= s
    return nvx, nvy, nvz, lx, ly, lz


#: the length of ``u``'s part off the forward axis below which :func:`_orthonormal_up` falls back
_UP_DEGENERATE = 1e-4


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _project_off(ux, uy, uz, fx, fy, fz):
    """``u`` less its part along the unit forward ``f``, normalised, and its length before."""
    d = ux * fx + uy * fy + uz * fz
    return normalize3(ux - d * fx, uy - d * fy, uz - d * fz)


# called, not inlined: inlining its four calls into the mover copies its IR four times (compile time)
@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _orthonormal_up(ux, uy, uz, fx, fy, fz):
    """Project ``u`` off the forward axis; world up (or x) if that degenerates."""
    px, py, pz, length = _project_off(ux, uy, uz, fx, fy, fz)
    if length > _UP_DEGENERATE:
        return px, py, pz
    for cx, cy, cz in ((0.0, 1.0, 0.0), (1.0, 0.0, 0.0)):
        d = cx * fx + cy * fy + cz * fz
        px, py, pz, length = normalize3(cx - d * fx, cy - d * fy, cz - d * fz)
        if length > _UP_DEGENERATE:
            return px, py, pz
    return 0.0, 1.0, 0.0


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _bank_target(lx, ly, lz, banking, gravity, dt, fx, fy, fz):
    """The up vector a banking animal leans toward: the lift that cancels gravity plus the turn's
    centripetal acceleration (the velocity's lateral change ``l`` over ``dt``, times ``banking``),
    made perpendicular to forward."""
    bank = banking / dt
    return _orthonormal_up(lx * bank, gravity + ly * bank, lz * bank, fx, fy, fz)


# called, not inlined: the staged kernel redoes only a few animals' slerps with it, and a third and
# fourth inlined copy of the slerp there cost its compilation about two seconds
@njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def _slerp_redo(ax, ay, az, bx, by, bz, t):
    """:func:`slerp_unit` for the animals a stage's general case does not cover."""
    return slerp_unit(ax, ay, az, bx, by, bz, t)


#: animals moved together, stage by stage (see :func:`_move_range`)
BLOCK = 64


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy")
def _move_range(lo, hi, planar, position, velocity, forward, up, desired, p, dt, wrap, bmin, size, sscale, ascale):
    """Move animals ``lo``..``hi`` (one call per range: array-passing calls are not free).

    ``p`` is the parameter table: one shared row, or one row per animal.

    An animal's update is one long chain of square roots and divisions that each wait for the
    one before (the new velocity, its direction, forward, the bank's target, the current up,
    the slerp between them). So a block of :data:`BLOCK` animals goes through the chain stage
    by stage, each stage a loop whose iterations are independent, handing on float64 values in
    scratch rows, one row per quantity. The stages that carry most of the arithmetic (the
    direction, both slerps, the three projections of up) are branch free over the whole block
    and vectorise: each computes the general case for every animal (:func:`slerp_apart`,
    :func:`_project_off`) and a scalar pass then redoes the few animals in another case (a turn
    of under two degrees or straight about, a degenerate up) with the one-animal functions. The
    arithmetic is the one of an animal-at-a-time update, so the result is
    :func:`move_one_pass_range`'s bit for bit (see docs/performance.md for the speed).
    """
    shared_turn = 1.0 - math.exp(-p[0, 5] * dt)
    shared_bank = 1.0 - math.exp(-p[0, 7] * dt)
    per_animal = p.shape[0] > 1
    # the new velocity, then its direction, and its speed
    hx = np.empty(BLOCK)
    hy = np.empty(BLOCK)
    hz = np.empty(BLOCK)
    speed = np.empty(BLOCK)
    # the velocity's lateral change (the turn banking leans into)
    lx = np.empty(BLOCK)
    ly = np.empty(BLOCK)
    lz = np.empty(BLOCK)
    # forward before the step (f) and after it (n; ny holds the desire's y during the velocity step),
    # the turn's fraction, and each slerp's cosine in turn
    fx = np.empty(BLOCK)
    fy = np.empty(BLOCK)
    fz = np.empty(BLOCK)
    nx = np.empty(BLOCK)
    ny = np.empty(BLOCK)
    nz = np.empty(BLOCK)
    frac = np.empty(BLOCK)
    cos_turn = np.empty(BLOCK)
    # up: the one projected as the current up (the animal's, or world up when it does not bank),
    # the bank's target, and their projections off forward with their lengths
    ux = np.empty(BLOCK)
    uy = np.empty(BLOCK)
    uz = np.empty(BLOCK)
    gx = np.empty(BLOCK)
    gy = np.empty(BLOCK)
    gz = np.empty(BLOCK)
    cx = np.empty(BLOCK)
    cy = np.empty(BLOCK)
    cz = np.empty(BLOCK)
    c_len = np.empty(BLOCK)
    tx = np.empty(BLOCK)
    ty = np.empty(BLOCK)
    tz = np.empty(BLOCK)
    t_len = np.empty(BLOCK)
    bank_frac = np.empty(BLOCK)
    banked = np.empty(BLOCK, np.bool_)
    # the velocity and the desire, x and z as they are stored (float32) and y in float64: the
    # types the one-animal form's velocity step computes in, so the bits are its own
    vx = np.empty(BLOCK, np.float32)
    vz = np.empty(BLOCK, np.float32)
    dx = np.empty(BLOCK, np.float32)
    dz = np.empty(BLOCK, np.float32)
    # each animal's limits: top speed, the three rates, drag
    top = np.empty(BLOCK)
    a_up = np.empty(BLOCK)
    a_down = np.empty(BLOCK)
    a_lat = np.empty(BLOCK)
    drag = np.empty(BLOCK)
    for first in range(lo, hi, BLOCK):
        m = min(hi, first + BLOCK) - first
        # the new velocity (the improved constant-acceleration step): its inputs ...
        for k in range(m):
            i = first + k
            r = i if per_animal else 0
            vx[k] = velocity[i, 0]
            hy[k] = 0.0 if planar else velocity[i, 1]
            vz[k] = velocity[i, 2]
            dx[k] = desired[i, 0]
            ny[k] = 0.0 if planar else desired[i, 1]
            dz[k] = desired[i, 2]
            ss = sscale[i] if sscale.shape[0] > 0 else 1.0
            sa = ascale[i] if ascale.shape[0] > 0 else 1.0
            top[k] = p[r, 0] * ss
            a_up[k] = p[r, 1] * sa
            a_down[k] = p[r, 2] * sa
            a_lat[k] = p[r, 3] * sa
            drag[k] = p[r, 4]
            fx[k] = forward[i, 0]
            fy[k] = forward[i, 1]
            fz[k] = forward[i, 2]
            frac[k] = shared_turn if r == 0 else 1.0 - math.exp(-p[r, 5] * dt)
        # ... the step, over the block ...
        for k in range(m):
            hx[k], hy[k], hz[k], lx[k], ly[k], lz[k] = accelerate(
                vx[k], hy[k], vz[k], dx[k], ny[k], dz[k], top[k], a_up[k], a_down[k], a_lat[k], drag[k], dt)
        # ... and the new velocity
        for k in range(m):
            i = first + k
            if planar:
                hy[k] = 0.0
            velocity[i, 0] = hx[k]
            velocity[i, 1] = hy[k]
            velocity[i, 2] = hz[k]
        # its direction
        for k in range(m):
            hx[k], hy[k], hz[k], speed[k] = normalize3(hx[k], hy[k], hz[k])
        # forward follows the velocity's direction: the general slerp for every animal ...
        for k in range(m):
            c = fx[k] * hx[k] + fy[k] * hy[k] + fz[k] * hz[k]
            cos_turn[k] = c
            nx[k], ny[k], nz[k] = slerp_apart(fx[k], fy[k], fz[k], hx[k], hy[k], hz[k], c, frac[k])
        # ... then the animals at rest, nearly turned already or turning about, and the plane
        for k in range(m):
            i = first + k
            if not speed[k] > 1e-4:
                nx[k] = fx[k]
                ny[k] = fy[k]
                nz[k] = fz[k]
            elif not abs(cos_turn[k]) <= SLERP_APART:
                nx[k], ny[k], nz[k] = _slerp_redo(fx[k], fy[k], fz[k], hx[k], hy[k], hz[k], frac[k])
            if planar:
                ax, ay, az, al = normalize3(nx[k], 0.0, nz[k])
                if al == 0.0:
                    ax, ay, az = 0.0, 0.0, 1.0
                nx[k] = ax
                ny[k] = ay
                nz[k] = az
            forward[i, 0] = nx[k]
            forward[i, 1] = ny[k]
            forward[i, 2] = nz[k]
            # up: world up for planar movers and those that do not bank; else the bank's target
            # (the lift that cancels gravity plus the turn's centripetal acceleration) and the
            # current up, each made perpendicular to forward
            r = i if per_animal else 0
            banked[k] = not (planar or p[r, 6] == 0.0)
            if banked[k]:
                bank = p[r, 6] / dt
                gx[k] = lx[k] * bank
                gy[k] = p[r, 8] + ly[k] * bank
                gz[k] = lz[k] * bank
                # (float64 here as everywhere: one compilation; the float32 components only ever meet float64 ones)
                ux[k] = np.float64(up[i, 0])
                uy[k] = np.float64(up[i, 1])
                uz[k] = np.float64(up[i, 2])
                bank_frac[k] = shared_bank if r == 0 else 1.0 - math.exp(-p[r, 7] * dt)
            else:
                gx[k] = 0.0
                gy[k] = 1.0
                gz[k] = 0.0
                ux[k] = 0.0
                uy[k] = 1.0
                uz[k] = 0.0
                bank_frac[k] = 0.0
        # both ups projected off forward ...
        for k in range(m):
            cx[k], cy[k], cz[k], c_len[k] = _project_off(ux[k], uy[k], uz[k], nx[k], ny[k], nz[k])
            tx[k], ty[k], tz[k], t_len[k] = _project_off(gx[k], gy[k], gz[k], nx[k], ny[k], nz[k])
        # ... redone where that degenerates
        for k in range(m):
            if not c_len[k] > _UP_DEGENERATE:
                cx[k], cy[k], cz[k] = _orthonormal_up(ux[k], uy[k], uz[k], nx[k], ny[k], nz[k])
            if banked[k] and not t_len[k] > _UP_DEGENERATE:
                tx[k], ty[k], tz[k] = _orthonormal_up(gx[k], gy[k], gz[k], nx[k], ny[k], nz[k])
        # a banking up leans from the current toward the target (the general slerp, then the others),
        # into the rows u.., free since the current up was projected
        for k in range(m):
            c = cx[k] * tx[k] + cy[k] * ty[k] + cz[k] * tz[k]
            cos_turn[k] = c
            ux[k], uy[k], uz[k] = slerp_apart(cx[k], cy[k], cz[k], tx[k], ty[k], tz[k], c, bank_frac[k])
        for k in range(m):
            if banked[k] and not abs(cos_turn[k]) <= SLERP_APART:
                ux[k], uy[k], uz[k] = _slerp_redo(cx[k], cy[k], cz[k], tx[k], ty[k], tz[k], bank_frac[k])
        # and is made perpendicular to forward again, into the target's rows g.. (free since its projection)
        for k in range(m):
            gx[k], gy[k], gz[k], t_len[k] = _project_off(ux[k], uy[k], uz[k], nx[k], ny[k], nz[k])
        # the new up, and the move
        for k in range(m):
            i = first + k
            if banked[k]:
                if not t_len[k] > _UP_DEGENERATE:
                    gx[k], gy[k], gz[k] = _orthonormal_up(ux[k], uy[k], uz[k], nx[k], ny[k], nz[k])
                up[i, 0] = gx[k]
                up[i, 1] = gy[k]
                up[i, 2] = gz[k]
            else:
                up[i, 0] = cx[k]
                up[i, 1] = cy[k]
                up[i, 2] = cz[k]
            for a in range(3):
                x = position[i, a] + velocity[i, a] * dt
                if wrap:
                    x = wrap_coordinate(x, bmin[a], size[a])
                position[i, a] = x


@njit(cache=True, no_cfunc_wrapper=True)
def move_one_pass_range(lo, hi, planar, position, velocity, forward, up, desired, p, dt, wrap, bmin, size, sscale,
                        ascale):
    """The same update as :func:`_move_range`, animal after animal in one loop.

    The GPU's form (:mod:`starling.cuda` makes one thread of each animal of this loop, where
    the stages' scratch would be per-thread memory), and the reference the staged kernel is
    tested against: both give the same results bit for bit. The reading, stepping and writing
    of an animal's velocity and position are written out in both rather than shared: as a row
    helper taking the arrays (even one compiled without reference counting) they are a call
    per animal inside a stage's loop, and cost the staged kernel 10–45 %.
    """
    shared_turn = 1.0 - math.exp(-p[0, 5] * dt)
    shared_bank = 1.0 - math.exp(-p[0, 7] * dt)
    for i in range(lo, hi):
        r = i if p.shape[0] > 1 else 0
        t_turn = shared_turn if r == 0 else 1.0 - math.exp(-p[r, 5] * dt)
        t_bank = shared_bank if r == 0 else 1.0 - math.exp(-p[r, 7] * dt)
        vx = velocity[i, 0]
        vy = velocity[i, 1]
        vz = velocity[i, 2]
        dx = desired[i, 0]
        dy = desired[i, 1]
        dz = desired[i, 2]
        if planar:
            vy = 0.0
            dy = 0.0
        ss = sscale[i] if sscale.shape[0] > 0 else 1.0
        sa = ascale[i] if ascale.shape[0] > 0 else 1.0
        nvx, nvy, nvz, lx, ly, lz = accelerate(
            vx, vy, vz, dx, dy, dz, p[r, 0] * ss, p[r, 1] * sa, p[r, 2] * sa, p[r, 3] * sa, p[r, 4], dt
        )
        if planar:
            nvy = 0.0
        velocity[i, 0] = nvx
        velocity[i, 1] = nvy
        velocity[i, 2] = nvz
        fx = forward[i, 0]
        fy = forward[i, 1]
        fz = forward[i, 2]
        tx, ty, tz, speed = normalize3(nvx, nvy, nvz)
        if speed > 1e-4:
            fx, fy, fz = slerp_unit(fx, fy, fz, tx, ty, tz, t_turn)
        if planar:
            fx, fy, fz, fl = normalize3(fx, 0.0, fz)
            if fl == 0.0:
                fx, fy, fz = 0.0, 0.0, 1.0
        forward[i, 0] = fx
        forward[i, 1] = fy
        forward[i, 2] = fz
        if planar or p[r, 6] == 0.0:
            ux, uy, uz = _orthonormal_up(0.0, 1.0, 0.0, fx, fy, fz)
        else:
            gx, gy, gz = _bank_target(lx, ly, lz, p[r, 6], p[r, 8], dt, fx, fy, fz)
            cx, cy, cz = _orthonormal_up(np.float64(up[i, 0]), np.float64(up[i, 1]), np.float64(up[i, 2]), fx, fy, fz)
            ux, uy, uz = slerp_unit(cx, cy, cz, gx, gy, gz, t_bank)
            ux, uy, uz = _orthonormal_up(ux, uy, uz, fx, fy, fz)
        up[i, 0] = ux
        up[i, 1] = uy
        up[i, 2] = uz
        for a in range(3):
            x = position[i, a] + velocity[i, a] * dt
            if wrap:
                x = wrap_coordinate(x, bmin[a], size[a])
            position[i, a] = x


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _move_parallel(planar, position, velocity, forward, up, desired, p, dt, wrap, bmin, size, sscale, ascale):
    n = position.shape[0]
    chunks = 64
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        lo = np.int64(c) * step  # (prange counts unsigned: int64 keeps _move_range at the serial signature)
        _move_range(lo, min(n, lo + step), planar, position, velocity, forward, up, desired, p, dt,
                    wrap, bmin, size, sscale, ascale)


_NO_SCALE = np.zeros(0, np.float32)


class ParameterTable:
    """The numbers a mover kernel reads, as a ``(rows, columns)`` table: one shared row, or
    one row per animal when some parameters are drawn per animal.

    ``layout`` names each column's field and how its value is converted for the kernel
    (degrees to radians, …); a column without a field is a constant.
    """

    def __init__(self, params, layout):
        self.layout = layout
        self.shared = np.array([[convert(getattr(params, name) if name else None) for name, convert in layout]],
                               np.float64)
        self.column = {name: c for c, (name, _) in enumerate(layout) if name}
        self._rows = np.zeros((0, len(layout)), np.float64)

    def rows(self, n: int, drawn=None) -> np.ndarray:
        """The table for ``n`` animals: ``drawn`` maps a field to each animal's values."""
        if not drawn:
            return self.shared
        if self._rows.shape[0] < n:
            self._rows = np.zeros((max(n, int(self._rows.shape[0] * 1.5)), self.shared.shape[1]), np.float64)
        table = self._rows[:n]
        table[:] = self.shared
        for name, values in drawn.items():
            c = self.column[name]
            convert = self.layout[c][1]
            table[:, c] = convert(np.asarray(values[:n], np.float64))
        return table


def _same(x):
    return x


class Mover:
    """Applies one mover's physics to a population, in place."""

    #: the range kernel's one-loop form, which the GPU makes a thread of each animal of
    #: (:func:`_move_range` runs blocks of animals in stages)
    device_kernel = staticmethod(move_one_pass_range)

    def __init__(self, params: MoverParams, planar: bool):
        self.params = params
        self.planar = planar
        banked = not planar and hasattr(params, "banking")
        self.table = ParameterTable(params, [
            ("max_speed", _same),
            ("speed_up_acceleration", _same),
            ("slow_down_acceleration", _same),
            ("lateral_acceleration", _same),
            ("drag", _same),
            ("turn_rate", _same),
            ("banking" if banked else None, _same if banked else (lambda _: 0.0)),
            ("bank_rate" if banked else None, _same if banked else (lambda _: 1.0)),
            ("gravity" if banked else None, _same if banked else (lambda _: 9.81)),
        ])

    @property
    def max_speed(self) -> float:
        return self.params.max_speed

    def move(self, position, velocity, forward, up, desired, dt, *, wrap=None, parallel=False,
             speed_scale=None, accel_scale=None, drawn=None) -> None:
        """Advance velocity, orientation and position of the animals by one step of ``dt``.

        ``wrap``: None, or ``(lo (3,), size (3,))`` of a periodic world box.
        ``speed_scale``/``accel_scale``: optional (n,) per-animal factors on the maximum
        speed and on the acceleration rates (fatigue, an emergency state).
        ``drawn``: the parameters drawn per animal, field name → (n,) values.
        """
        if position.shape[0] == 0:
            return
        kernel, args = self.range_call(position, velocity, forward, up, desired, dt, wrap=wrap,
                                       speed_scale=speed_scale, accel_scale=accel_scale, drawn=drawn)
        if parallel:
            _move_parallel(*args)
        else:
            kernel(0, position.shape[0], *args)

    def range_call(self, position, velocity, forward, up, desired, dt, *, wrap=None, speed_scale=None,
                   accel_scale=None, drawn=None):
        """``(kernel, args)``: ``kernel(lo, hi, *args)`` moves rows ``lo``..``hi``. The arrays given are
        passed through as they are (another backend passes its own); the rest are NumPy arrays."""
        none = _NO_SCALE
        sscale = none if speed_scale is None else np.ascontiguousarray(speed_scale, np.float32)
        ascale = none if accel_scale is None else np.ascontiguousarray(accel_scale, np.float32)
        lo, size = (np.zeros(3), np.zeros(3)) if wrap is None else wrap
        table = self.table.rows(position.shape[0], drawn)
        return _move_range, (self.planar, position, velocity, forward, up, desired, table, float(dt),
                             wrap is not None, np.asarray(lo, np.float64), np.asarray(size, np.float64), sscale,
                             ascale)


@mover("free", params=FreeMoverParams)
def free_mover(params: FreeMoverParams) -> Mover:
    """3D mover with separate parallel/lateral rates, drag and banking."""
    return Mover(params, planar=False)


@mover("planar", params=PlanarMoverParams)
def planar_mover(params: PlanarMoverParams) -> Mover:
    """2D mover in the x–z plane."""
    return Mover(params, planar=True)
