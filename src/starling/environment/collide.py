"""Collide and slide: collision resolution of moving spheres against the static environment
(seed 000, 7.2.2 and 9.5.8).

Each animal is a sphere of radius ``R`` that wants to move from ``p`` to ``p + v dt``.  The algorithm is the
numerically careful variant of collide-and-slide the thesis adopts (Linahan's improvement of Fauerby's
method):

1. **Depenetration.**  If the sphere starts overlapping a solid (closer than ``R + skin/2`` to a surface,
   or with its centre below the terrain), it is pushed out along the surface normal to its resting gap
   (``1.1 skin``, see 3.); up to four pushes resolve corners where two surfaces overlap it.  A sphere wedged
   between two surfaces closer together than its diameter cannot be freed this way and stays overlapping
   (no such place exists for it); collide and slide never moves a sphere *into* that state.
2. **At most three sweeps**, never more — no "magic" iteration count:

   * sweep the sphere towards the destination; on a hit, move up to the contact and project the rest of
     the way onto the first surface's plane (slide along it);
   * sweep again; on a second hit, slide along the second surface if that does not lead back into the
     first, otherwise along the *crease* ``n1 x n2`` of the two (the line parallel to both).  Sliding along
     the crease is what stops the classic corner jitter, where the sphere would bounce from one wall onto
     the other and back;
   * a third hit stops the sphere where it is.

3. **Skin width.**  Sweeps use the radius ``R + skin`` and a contact leaves the sphere a further
   ``0.1 skin`` out along the contact normal, so a sphere resting against a surface keeps a gap between
   ``skin`` and ``1.1 skin`` from it: the next sweep does not start in floating-point contact, and a
   surface that the sphere touches but moves along or away from is ignored (see
   :func:`starling.environment.spherecast.sweep_one`).

Because every displacement is swept, a sphere cannot tunnel through thin geometry however fast it moves.
The returned velocity has the component into every contacted surface removed (zero after a third
contact).  Water is not solid and is ignored.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import prange

from ..world.layers import ALL_LAYERS
# kernels here never allocate: compiled without reference counting, like the queries' (see casting)
from .casting import PARALLEL_THRESHOLD, _hjit, _ijit, _jit, _pjit, _sjit, chunk_bounds, solids, stack_size
from .inside import nearest_one
from .primitives import INF
from .spherecast import sweep_one

DEFAULT_SKIN_WIDTH = 0.01
"""Default gap kept between a sphere and the surfaces it rests against, metres.  It must stay well above
float32 rounding of positions (about 1e-5 m at 100 m from the origin)."""

BACKOFF = 0.1
"""After each contact the sphere is moved ``BACKOFF * skin`` further out along the contact normal, so that
it rests strictly outside the inflated surfaces (a gap between ``skin`` and ``1.1 skin``).  Resting exactly
on the inflated radius would leave it, after float32 rounding, a hair inside the inflated neighbours of a
flat triangulated floor, whose edge capsules would then catch it (the "internal edge" snag)."""

_CHUNK = 128


@_ijit
def _chunk(c, n):
    return chunk_bounds(c, n, _CHUNK)


class SlideResult(NamedTuple):
    """Output of :func:`collide_and_slide`.

    ``positions (n, 3) float32`` after the move; ``velocities (n, 3) float32`` with the into-surface
    components removed; ``contacts (n,) int8`` number of surfaces hit during the move (0–3; depenetration
    pushes are not counted).
    """

    positions: np.ndarray
    velocities: np.ndarray
    contacts: np.ndarray


@_jit
def _clip(vx, vy, vz, nx, ny, nz):
    """Remove the component of ``v`` that points into the surface with normal ``n``."""
    d = vx * nx + vy * ny + vz * nz
    if d < 0.0:
        return vx - d * nx, vy - d * ny, vz - d * nz
    return vx, vy, vz


@_hjit
def collide_one(geo, px, py, pz, vx, vy, vz, dt, radius, skin, mask, st_n, st_t):
    """Collide and slide for one sphere; returns ``(px, py, pz, vx, vy, vz, contacts)`` (float64).

    ``geo`` is :func:`starling.environment.casting.solids` of the environment; ``st_n``/``st_t`` are
    traversal stacks of at least twice the BVH depth.
    """
    rs = radius + skin
    backoff = BACKOFF * skin
    # 1. depenetration
    for _ in range(4):
        d, nx, ny, nz = nearest_one(geo, px, py, pz, rs, mask, st_n)
        if d >= radius + 0.5 * skin:
            break
        push = rs + backoff - d
        px += push * nx
        py += push * ny
        pz += push * nz
    # 2. up to three sweeps
    qx, qy, qz = px + vx * dt, py + vy * dt, pz + vz * dt  # destination
    n1x, n1y, n1z = 0.0, 0.0, 0.0
    contacts = 0
    for it in range(3):
        mx, my, mz = qx - px, qy - py, qz - pz
        length = np.sqrt(mx * mx + my * my + mz * mz)
        if length <= 1e-12:
            break
        dx, dy, dz = mx / length, my / length, mz / length
        t, cnx, cny, cnz, _ = sweep_one(geo, px, py, pz, dx, dy, dz, length, rs, mask, st_n, st_t)
        if t == INF:
            px, py, pz = qx, qy, qz
            break
        px += t * dx + backoff * cnx
        py += t * dy + backoff * cny
        pz += t * dz + backoff * cnz
        contacts += 1
        rx, ry, rz = qx - px, qy - py, qz - pz  # the part of the way not yet travelled
        if it == 0:
            # slide along the first surface
            n1x, n1y, n1z = cnx, cny, cnz
            k = rx * n1x + ry * n1y + rz * n1z
            rx, ry, rz = rx - k * n1x, ry - k * n1y, rz - k * n1z
            vx, vy, vz = _clip(vx, vy, vz, n1x, n1y, n1z)
        elif it == 1:
            k = rx * cnx + ry * cny + rz * cnz
            sx, sy, sz = rx - k * cnx, ry - k * cny, rz - k * cnz
            wx, wy, wz = _clip(vx, vy, vz, cnx, cny, cnz)
            into_first = sx * n1x + sy * n1y + sz * n1z < -1e-9 * (1.0 + np.sqrt(sx * sx + sy * sy + sz * sz))
            if not into_first:
                # sliding along the second surface keeps clear of the first one
                rx, ry, rz = sx, sy, sz
                vx, vy, vz = _clip(wx, wy, wz, n1x, n1y, n1z)
            else:
                # slide along the crease of the two surfaces
                ex = n1y * cnz - n1z * cny
                ey = n1z * cnx - n1x * cnz
                ez = n1x * cny - n1y * cnx
                el = np.sqrt(ex * ex + ey * ey + ez * ez)
                if el <= 1e-9:
                    # opposite surfaces (a gap narrower than the sphere): nowhere to go
                    rx, ry, rz = 0.0, 0.0, 0.0
                    vx, vy, vz = 0.0, 0.0, 0.0
                else:
                    ex, ey, ez = ex / el, ey / el, ez / el
                    k = rx * ex + ry * ey + rz * ez
                    rx, ry, rz = k * ex, k * ey, k * ez
                    k = vx * ex + vy * ey + vz * ez
                    vx, vy, vz = k * ex, k * ey, k * ez
        else:
            # a third surface: stop here
            vx, vy, vz = 0.0, 0.0, 0.0
            break
        qx, qy, qz = px + rx, py + ry, pz + rz
    return px, py, pz, vx, vy, vz, contacts


@_ijit
def _masked_bounds(geo, mask):
    """What bounds the solids of ``mask``, for :func:`_clear_of_solids` (once per batch, not per sphere):
    ``(unbounded, terrain_top, prim_root, tri_root)``. ``unbounded``: a masked plane, which no box
    bounds; ``terrain_top``: the masked terrain's highest point (-inf without one); ``prim_root`` and
    ``tri_root``: whether the primitive and triangle bounding-volume roots hold masked solids."""
    pl_f, pl_i, ter_h, ter_cmin, ter_cmax, tf, prim_f, prim_i, pb_box, pb_node, tri_f, tri_i, tb_box, tb_node = geo
    unbounded = False
    for p in range(pl_i.shape[0]):
        if (mask >> pl_i[p]) & 1:
            unbounded = True
    terrain_top = tf[6] if tf[0] > 0.0 and (mask >> np.int64(tf[7])) & 1 else -np.inf
    prim_root = pb_node.shape[0] > 0 and (pb_node[0, 2] & mask) != 0
    tri_root = tb_node.shape[0] > 0 and (tb_node[0, 2] & mask) != 0
    return unbounded, terrain_top, prim_root, tri_root


@_ijit
def _outside_root(box, lo_x, lo_y, lo_z, hi_x, hi_y, hi_z):
    """Whether the box ``lo``–``hi`` misses a bounding-volume root ``box[0]``."""
    return (hi_x < box[0, 0] or lo_x > box[0, 3] or hi_y < box[0, 1] or lo_y > box[0, 4]
            or hi_z < box[0, 2] or lo_z > box[0, 5])


@_ijit
def _clear_of_solids(geo, bounds, px, py, pz, qx, qy, qz, reach):
    """Whether the box around the segment ``p``–``q`` grown by ``reach`` misses every masked solid's
    bounds (``bounds``: :func:`_masked_bounds`): no masked plane, above the masked terrain's highest
    point, outside the masked bounding-volume roots. Then nothing is within reach of a sphere moving
    from ``p`` to ``q``."""
    unbounded, terrain_top, prim_root, tri_root = bounds
    if unbounded:
        return False
    pl_f, pl_i, ter_h, ter_cmin, ter_cmax, tf, prim_f, prim_i, pb_box, pb_node, tri_f, tri_i, tb_box, tb_node = geo
    lo_x = min(px, qx) - reach
    lo_y = min(py, qy) - reach
    lo_z = min(pz, qz) - reach
    hi_x = max(px, qx) + reach
    hi_y = max(py, qy) + reach
    hi_z = max(pz, qz) + reach
    if not math.isfinite(lo_x + lo_y + lo_z + hi_x + hi_y + hi_z) or not lo_y > terrain_top:
        return False
    if prim_root and not _outside_root(pb_box, lo_x, lo_y, lo_z, hi_x, hi_y, hi_z):
        return False
    return not (tri_root and not _outside_root(tb_box, lo_x, lo_y, lo_z, hi_x, hi_y, hi_z))


@_ijit  # small: inlined into the loop (one compilation less); collide_one is a call
def _collide_into(geo, bounds, pos, vel, dt, radii, skin, mask, active, k, st_n, st_t, out_p, out_v, out_c):
    if active.shape[0] > 1 and not active[k]:
        for a in range(3):
            out_p[k, a] = pos[k, a]
            out_v[k, a] = vel[k, a]
        out_c[k] = 0
        return
    rad = np.float64(radii[k] if radii.shape[0] > 1 else radii[0])
    px, py, pz = np.float64(pos[k, 0]), np.float64(pos[k, 1]), np.float64(pos[k, 2])
    vx, vy, vz = np.float64(vel[k, 0]), np.float64(vel[k, 1]), np.float64(vel[k, 2])
    qx, qy, qz = px + vx * dt, py + vy * dt, pz + vz * dt
    # Far from every solid (a bird high in the air), collide_one would find nothing to push out of
    # and nothing to hit: its free move, written out here, skips its calls (which pass the whole
    # geometry: most of the cost for such a sphere). The margin on the reach only makes the test
    # more careful; the result is collide_one's, bit for bit.
    if _clear_of_solids(geo, bounds, px, py, pz, qx, qy, qz, (rad + skin) * 1.001 + 1e-3):
        mx, my, mz = qx - px, qy - py, qz - pz
        if np.sqrt(mx * mx + my * my + mz * mz) > 1e-12:  # (collide_one stays put for a shorter move)
            px, py, pz = qx, qy, qz
        c = 0
    else:
        px, py, pz, vx, vy, vz, c = collide_one(geo, px, py, pz, vx, vy, vz, dt, rad, skin, mask, st_n, st_t)
    out_p[k, 0] = px
    out_p[k, 1] = py
    out_p[k, 2] = pz
    out_v[k, 0] = vx
    out_v[k, 1] = vy
    out_v[k, 2] = vz
    out_c[k] = c


@_hjit
def collide_range(g, lo, hi, pos, vel, dt, radii, skin, mask, active, st_n, st_t, out_p, out_v, out_c):
    """Collide and slide spheres ``lo .. hi - 1`` (the geometry is unpacked once per chunk)."""
    geo = solids(g)
    bounds = _masked_bounds(geo, mask)
    for k in range(lo, hi):
        _collide_into(geo, bounds, pos, vel, dt, radii, skin, mask, active, k, st_n, st_t, out_p, out_v, out_c)


@_pjit
def _collide_parallel(g, pos, vel, dt, radii, skin, mask, active, out_p, out_v, out_c):
    n = pos.shape[0]
    n_chunks = (n + _CHUNK - 1) // _CHUNK
    size = 2 * stack_size(g)
    for c in prange(n_chunks):
        st_n = np.empty(size, np.int32)
        st_t = np.empty(size)
        lo, hi = _chunk(c, n)
        collide_range(g, lo, hi, pos, vel, dt, radii, skin, mask, active, st_n, st_t,
                      out_p, out_v, out_c)


@_sjit
def _collide_serial(g, pos, vel, dt, radii, skin, mask, active, out_p, out_v, out_c):
    size = 2 * stack_size(g)
    st_n = np.empty(size, np.int32)
    st_t = np.empty(size)
    collide_range(g, np.int64(0), np.int64(pos.shape[0]), pos, vel, dt, radii, skin, mask, active, st_n, st_t, out_p,
                  out_v, out_c)


@_sjit
def slide_moves(g, pos, vel, start, dt, dt32, wrap, size, radii, skin, mask, active, moved, out_p, out_v, out_c):
    """A body system's step for a species (:class:`~starling.environment.system.EnvironmentSystem`), serially.

    Each sphere's move this step, ``pos - start`` (its minimum image on a ``size`` box where the
    world wraps), over ``dt32`` is the velocity :func:`collide_and_slide` sweeps from ``start``;
    ``pos`` takes where it ended and ``vel`` the slid velocity where it touched something. The
    same float32 numbers, in the same order, as NumPy's passes around :func:`collide_and_slide`
    (one call a species and step instead of nine: the Python between them cost more than the sweep).
    """
    n = pos.shape[0]
    for i in range(n):
        for a in range(3):
            m = pos[i, a] - start[i, a]
            if wrap:
                m -= size[a] * np.rint(m / size[a])
            moved[i, a] = m / dt32
    depth = 2 * stack_size(g)
    st_n = np.empty(depth, np.int32)
    st_t = np.empty(depth)
    collide_range(g, np.int64(0), np.int64(n), start, moved, dt, radii, skin, mask, active, st_n, st_t, out_p,
                  out_v, out_c)
    for i in range(n):
        pos[i, 0] = out_p[i, 0]
        pos[i, 1] = out_p[i, 1]
        pos[i, 2] = out_p[i, 2]
        if out_c[i] > 0:
            vel[i, 0] = out_v[i, 0]
            vel[i, 1] = out_v[i, 1]
            vel[i, 2] = out_v[i, 2]


def collide_and_slide(env, positions: np.ndarray, velocities: np.ndarray, dt: float, radius,
                      mask: int = ALL_LAYERS, skin_width: float = DEFAULT_SKIN_WIDTH,
                      active: np.ndarray | None = None, out: SlideResult | None = None,
                      parallel: bool | None = None) -> SlideResult:
    """Move ``n`` spheres by ``velocities * dt`` through the static environment, sliding along what they
    hit (seed 000, 7.2.2).

    Parameters
    ----------
    env: :class:`~starling.environment.scene.Environment`
    positions: ``(n, 3) float32`` sphere centres at the start of the step, metres.
    velocities: ``(n, 3) float32`` velocities, metres per second.
    dt: time step, seconds (>= 0).
    radius: sphere radius, metres: a scalar or ``(n,)``.
    mask: ``uint32`` layer mask of the solids to collide with.
    skin_width: gap kept from surfaces, metres (> 0).
    active: optional ``(n,) bool``; inactive rows are copied through unchanged.
    out: optional preallocated :class:`SlideResult` (``(n, 3)``, ``(n, 3)``, ``(n,)``) written in place;
        it may alias the inputs (each row is read before it is written).
    parallel: force the parallel or serial kernel (default: parallel from
        :data:`~starling.environment.casting.PARALLEL_THRESHOLD` spheres).
    """
    pos = np.ascontiguousarray(positions, dtype=np.float32)
    vel = np.ascontiguousarray(velocities, dtype=np.float32)
    if pos.ndim != 2 or pos.shape[1] != 3 or vel.shape != pos.shape:
        raise ValueError(f"positions and velocities must both have shape (n, 3), got {pos.shape} and {vel.shape}")
    if not dt >= 0:
        raise ValueError(f"dt must be >= 0, got {dt}")
    if not skin_width > 0:
        raise ValueError(f"skin_width must be > 0, got {skin_width}")
    n = pos.shape[0]
    radii = np.ascontiguousarray(np.atleast_1d(np.asarray(radius, dtype=np.float64)))
    if radii.ndim != 1 or radii.shape[0] not in (1, n):
        raise ValueError(f"radius must be a scalar or have shape ({n},)")
    if np.any(radii < 0):
        raise ValueError("radius must be >= 0")
    act = np.ones(1, np.bool_) if active is None else np.ascontiguousarray(active, dtype=np.bool_)
    if active is not None and act.shape != (n,):
        raise ValueError(f"active must have shape ({n},)")
    if out is None:
        out = SlideResult(np.empty((n, 3), np.float32), np.empty((n, 3), np.float32), np.zeros(n, np.int8))
    if n == 0:
        return out
    use_parallel = n >= PARALLEL_THRESHOLD if parallel is None else parallel
    kernel = _collide_parallel if use_parallel else _collide_serial
    args = (env.arrays, pos, vel, float(dt), radii, float(skin_width), np.int64(int(mask) & ALL_LAYERS), act,
            out.positions, out.velocities, out.contacts)
    # every argument's type is fixed above, so the environment's call site may skip Numba's typing
    # of its geometry on each call (starling.kernel_calls)
    env.kernel_calls(kernel, n, *args)
    return out
