"""The ground mover: walking on the surface of the environment ("2.5D", seed 000, 9.5.7).

An animal is in one of three states, decided each step from two downward ray probes into
the environment (layers ``ground_layers``) and the water bodies; no state is stored, so
the populations can be reordered and resized freely:

* **grounded** — ground lies between ``snap_distance`` below the feet and ``step_height``
  above them. The desired velocity is projected on the ground's tangent plane and scaled
  back to its length, then scaled by the grade of the path (the angle ``β`` of the
  projected direction above the horizontal): uphill by ``1 → 0`` as ``β`` goes from
  ``min_slope_deg`` to ``max_slope_deg``, downhill by ``1 → 2`` (the top speed too), so
  an animal slows on a climb, stops on a grade steeper than the maximum and hurries down
  a descent. The current velocity is laid on the same plane (keeping its speed), then the
  constant-rate acceleration of :func:`~starling.motion.movers.accelerate` follows.
* **falling** — no ground within reach below: gravity pulls, the horizontal velocity is
  kept (no steering in the air) until the feet reach the ground again.
* **swimming** — on a water body whose depth lets the animal float (the ground lies more
  than ``center_height`` below its floating position): it moves horizontally at
  ``swim_speed_factor`` of its abilities, its centre held at the surface plus
  ``float_height``.

After the move a second probe at the new place settles the animal: snapped to the ground
(centre ``center_height`` above it) — which also steps it up onto an obstacle at most
``step_height`` tall and keeps it on the ground walking downhill — landed after a fall,
or floated on the water. A taller obstacle is left to collision resolution, which runs
after every mover (``starling.environment.system``).

Rotation (seed 000, 9.5.7, after Chou's swing-twist interpolation): the up vector turns
toward the ground normal (world up in the air and in water) at ``align_rate`` — the
*swing*, which carries the forward vector along — then the forward vector turns about the
new up toward the velocity at ``turn_rate`` — the *twist*. Both fractions are
``1 − exp(−rate · dt)``, so alignment is frame-rate independent and the two rates are
independent of each other.

The mover needs the environment: it declares ``needs_environment = True`` and the
environment system calls :meth:`GroundMover.attach_environment` when it is built.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numba import njit, prange
from pydantic import Field

from ..motion.movers import MoverParams, ParameterTable, _same, accelerate, wrap_coordinate
from ..steering.registry import mover
from ..steering.vecmath import normalize3, slerp_unit
from .casting import RayHits
from .raycast import cast_rays
from .water import in_region

GROUNDED = 0
FALLING = 1
SWIMMING = 2

_DOWN_EPS = 1e-3  # a falling animal lands when its feet are this close above the ground
_NO_WATER = -np.inf


class GroundMoverParams(MoverParams):
    """Walking on terrain: slope limits, falling, stepping, surface alignment, swimming (9.5.7)."""

    kind: Literal["ground"] = "ground"
    min_slope_deg: float = Field(10.0, ge=0, lt=90, description="Grades below this do not change the speed, degrees.")
    max_slope_deg: float = Field(40.0, gt=0, le=90,
                                 description="Uphill grades from here on stop the animal (downhill: double speed), degrees.")
    gravity: float = Field(9.81, gt=0, description="Acceleration of a falling animal, m/s².")
    step_height: float = Field(0.3, ge=0, description="Tallest obstacle the animal steps onto, m.")
    snap_distance: float = Field(0.5, ge=0, description="Ground this far below the feet is still walked on, m.")
    center_height: float = Field(0.5, gt=0, description="Height of the animal's position above its feet, m.")
    align_rate: float = Field(6.0, gt=0, description="How fast up follows the ground normal (swing), 1/s.")
    swim_speed_factor: float = Field(0.35, gt=0, le=1, description="Speed and acceleration factor in water.")
    float_height: float = Field(-0.1, description="Height of the position above the water surface when swimming, m.")
    ground_layers: list[str] = Field(default_factory=lambda: ["terrain", "ground", "environment"],
                                     description="Layers the animal can stand on.")

    ordered = (("min_slope_deg", "max_slope_deg", True),)


@njit(cache=True, no_cfunc_wrapper=True, _nrt=False)
def _water_surface(wf, wi, poly, x, z):
    """Highest water surface over ``(x, z)``, -inf where there is none.

    A plain call without reference counting (it allocates nothing), which LLVM inlines:
    inlined into Numba's IR, its three array arguments counted references per animal.
    """
    best = _NO_WATER
    for w in range(wf.shape[0]):
        if wf[w, 0] > best and in_region(wf, wi, poly, w, x, z):
            best = wf[w, 0]
    return best


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _grade_factor(sin_beta, lo, hi):
    """1 → 0 uphill and 1 → 2 downhill as the grade goes from ``lo`` to ``hi`` (radians)."""
    beta = math.asin(min(1.0, max(-1.0, sin_beta)))
    x = (abs(beta) - lo) / (hi - lo)
    x = min(1.0, max(0.0, x))
    return 1.0 - x if beta > 0.0 else 1.0 + x


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _on_plane(x, y, z, nx, ny, nz, keep_length):
    """``v`` projected on the plane with unit normal ``n``; optionally rescaled to ``|v|``."""
    d = x * nx + y * ny + z * nz
    px = x - d * nx
    py = y - d * ny
    pz = z - d * nz
    if keep_length:
        length = math.sqrt(x * x + y * y + z * z)
        pl = math.sqrt(px * px + py * py + pz * pz)
        if pl > 1e-9:
            k = length / pl
            return px * k, py * k, pz * k
        return 0.0, 0.0, 0.0
    return px, py, pz


@njit(cache=True, no_cfunc_wrapper=True)
def _probe_before(position, p, origins, maxd):
    """Down probes from ``step_height`` above the feet to ``snap_distance`` below them."""
    for i in range(position.shape[0]):
        r = i if p.shape[0] > 1 else 0
        origins[i, 0] = position[i, 0]
        origins[i, 1] = position[i, 1] - p[r, 10] + p[r, 8]
        origins[i, 2] = position[i, 2]
        maxd[i] = p[r, 8] + p[r, 9]


@njit(cache=True, no_cfunc_wrapper=True)
def _walk_range(lo, hi, position, velocity, desired, hit, dist, normal, origins, maxd, wf, wi, poly, p, dt,
                sscale, ascale, state, wrap, bmin, size):
    """Velocity and position update of animals ``lo``..``hi`` from the first probe; writes the second
    probe (``origins``, ``maxd``) at the new place."""
    for i in range(lo, hi):
        r = i if p.shape[0] > 1 else 0  # a row per animal when parameters are drawn per animal
        ch = p[r, 10]
        x = np.float64(position[i, 0])
        y = np.float64(position[i, 1])
        z = np.float64(position[i, 2])
        vx = np.float64(velocity[i, 0])
        vy = np.float64(velocity[i, 1])
        vz = np.float64(velocity[i, 2])
        dx = np.float64(desired[i, 0])
        dy = np.float64(desired[i, 1])
        dz = np.float64(desired[i, 2])
        ss = sscale[i] if sscale.shape[0] > 0 else 1.0
        sa = ascale[i] if ascale.shape[0] > 0 else 1.0
        surface = _water_surface(wf, wi, poly, x, z)
        float_y = surface + p[r, 14]
        ground_y = -np.inf
        if hit[i]:
            ground_y = origins[i, 1] - dist[i]
        if surface > _NO_WATER and y <= float_y + p[r, 9] and ground_y < float_y - ch:
            s = SWIMMING
        elif hit[i]:
            s = GROUNDED
        else:
            s = FALLING
        state[i] = s
        if s == GROUNDED:
            nx = np.float64(normal[i, 0])
            ny = np.float64(normal[i, 1])
            nz = np.float64(normal[i, 2])
            qx, qy, qz = _on_plane(dx, dy, dz, nx, ny, nz, True)
            ux, uy, uz, ql = normalize3(qx, qy, qz)
            k = 1.0
            if ql > 1e-9:
                k = _grade_factor(uy, p[r, 11], p[r, 12])
            top = p[r, 0] * ss * max(k, 1.0)
            vx, vy, vz = _on_plane(vx, vy, vz, nx, ny, nz, True)
            vx, vy, vz, _, _, _ = accelerate(vx, vy, vz, qx * k, qy * k, qz * k, top, p[r, 1] * sa, p[r, 2] * sa,
                                             p[r, 3] * sa, p[r, 4], dt)
        elif s == SWIMMING:
            f = p[r, 13]
            hl = math.sqrt(dx * dx + dz * dz)
            dl = math.sqrt(dx * dx + dy * dy + dz * dz)
            if hl > 1e-9:
                dx *= dl / hl
                dz *= dl / hl
            vx, vy, vz, _, _, _ = accelerate(vx, 0.0, vz, dx * f, 0.0, dz * f, p[r, 0] * ss * f, p[r, 1] * sa * f,
                                             p[r, 2] * sa * f, p[r, 3] * sa * f, p[r, 4], dt)
            vy = 0.0
        else:
            vy -= p[r, 7] * dt
        velocity[i, 0] = vx
        velocity[i, 1] = vy
        velocity[i, 2] = vz
        x += vx * dt
        y += vy * dt
        z += vz * dt
        if wrap:
            x = wrap_coordinate(x, bmin[0], size[0])
            z = wrap_coordinate(z, bmin[2], size[2])
        # the second probe: from above the higher of the old and new feet down past the new feet
        top = max(position[i, 1], y) - ch + p[r, 8]
        reach = top - (y - ch)
        if s == GROUNDED or s == SWIMMING:
            reach += p[r, 9]
        else:
            reach += _DOWN_EPS
        origins[i, 0] = x
        origins[i, 1] = top
        origins[i, 2] = z
        maxd[i] = reach
        position[i, 0] = x
        position[i, 1] = y
        position[i, 2] = z


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _swing(fx, fy, fz, ax, ay, az, bx, by, bz):
    """Rotate ``f`` by the smallest rotation that takes unit ``a`` to unit ``b`` (Rodrigues)."""
    kx = ay * bz - az * by
    ky = az * bx - ax * bz
    kz = ax * by - ay * bx
    s2 = kx * kx + ky * ky + kz * kz
    c = ax * bx + ay * by + az * bz
    if s2 < 1e-18:
        return fx, fy, fz
    cx = ky * fz - kz * fy
    cy = kz * fx - kx * fz
    cz = kx * fy - ky * fx
    w = (kx * fx + ky * fy + kz * fz) * (1.0 - c) / s2
    return fx * c + cx + kx * w, fy * c + cy + ky * w, fz * c + cz + kz * w


@njit(cache=True, no_cfunc_wrapper=True)
def _settle_range(lo, hi, position, velocity, forward, up, hit, dist, normal, origins, wf, wi, poly, p, dt,
                  state):
    """Snap, land or float animals ``lo``..``hi`` after the second probe, then turn them."""
    shared_turn = 1.0 - math.exp(-p[0, 5] * dt)
    shared_align = 1.0 - math.exp(-p[0, 6] * dt)
    for i in range(lo, hi):
        r = i if p.shape[0] > 1 else 0  # a row per animal when parameters are drawn per animal
        ch = p[r, 10]
        t_turn = shared_turn if r == 0 else 1.0 - math.exp(-p[r, 5] * dt)
        t_align = shared_align if r == 0 else 1.0 - math.exp(-p[r, 6] * dt)
        x = np.float64(position[i, 0])
        y = np.float64(position[i, 1])
        z = np.float64(position[i, 2])
        vx = np.float64(velocity[i, 0])
        vy = np.float64(velocity[i, 1])
        vz = np.float64(velocity[i, 2])
        surface = _water_surface(wf, wi, poly, x, z)
        float_y = surface + p[r, 14]
        tx, ty, tz = 0.0, 1.0, 0.0  # target up
        ground_y = -np.inf
        if hit[i]:
            ground_y = origins[i, 1] - dist[i]
        floats = surface > _NO_WATER and ground_y < float_y - ch
        if floats and (y <= float_y + (p[r, 9] if state[i] != FALLING else 0.0)):
            y = float_y
            vy = 0.0
            state[i] = SWIMMING
        elif hit[i]:
            nx = np.float64(normal[i, 0])
            ny = np.float64(normal[i, 1])
            nz = np.float64(normal[i, 2])
            y = ground_y + ch
            # lay the velocity on the ground: a walker keeps its speed over a crest, a landing loses the impact
            vx, vy, vz = _on_plane(vx, vy, vz, nx, ny, nz, state[i] == GROUNDED)
            state[i] = GROUNDED
            tx, ty, tz = nx, ny, nz
        else:
            state[i] = FALLING
        position[i, 1] = y
        velocity[i, 0] = vx
        velocity[i, 1] = vy
        velocity[i, 2] = vz
        # swing: up toward the target, carrying forward along
        ux = np.float64(up[i, 0])
        uy = np.float64(up[i, 1])
        uz = np.float64(up[i, 2])
        ux, uy, uz, ul = normalize3(ux, uy, uz)
        if ul == 0.0:
            ux, uy, uz = 0.0, 1.0, 0.0
        nux, nuy, nuz = slerp_unit(ux, uy, uz, tx, ty, tz, t_align)
        fx, fy, fz = _swing(np.float64(forward[i, 0]), np.float64(forward[i, 1]), np.float64(forward[i, 2]),
                            ux, uy, uz, nux, nuy, nuz)
        # twist: forward about the new up toward the velocity
        d = fx * nux + fy * nuy + fz * nuz
        fx, fy, fz, fl = normalize3(fx - d * nux, fy - d * nuy, fz - d * nuz)
        if fl == 0.0:  # forward along up: any horizontal heading will do
            fx, fy, fz, fl = normalize3(nuz, 0.0, -nux)
            if fl == 0.0:
                fx, fy, fz = 0.0, 0.0, 1.0
        d = vx * nux + vy * nuy + vz * nuz
        hx, hy, hz, speed = normalize3(vx - d * nux, vy - d * nuy, vz - d * nuz)
        if speed > 1e-4:
            fx, fy, fz = slerp_unit(fx, fy, fz, hx, hy, hz, t_turn)
            d = fx * nux + fy * nuy + fz * nuz
            fx, fy, fz, fl = normalize3(fx - d * nux, fy - d * nuy, fz - d * nuz)
        forward[i, 0] = fx
        forward[i, 1] = fy
        forward[i, 2] = fz
        up[i, 0] = nux
        up[i, 1] = nuy
        up[i, 2] = nuz


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _walk_parallel(position, velocity, desired, hit, dist, normal, origins, maxd, wf, wi, poly, p, dt, sscale,
                   ascale, state, wrap, bmin, size):
    n = position.shape[0]
    chunks = 64
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        lo = np.int64(c) * step  # (prange counts unsigned: int64 keeps _walk_range at the serial signature)
        _walk_range(lo, min(n, lo + step), position, velocity, desired, hit, dist, normal, origins,
                    maxd, wf, wi, poly, p, dt, sscale, ascale, state, wrap, bmin, size)


@njit(cache=True, no_cfunc_wrapper=True, parallel=True)
def _settle_parallel(position, velocity, forward, up, hit, dist, normal, origins, wf, wi, poly, p, dt, state):
    n = position.shape[0]
    chunks = 64
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        lo = np.int64(c) * step  # (prange counts unsigned: int64 keeps _settle_range at the serial signature)
        _settle_range(lo, min(n, lo + step), position, velocity, forward, up, hit, dist, normal,
                      origins, wf, wi, poly, p, dt, state)


_NO_SCALE = np.zeros(0, np.float32)


class GroundMover:
    """Applies the ground mover's physics to a population, in place (needs :meth:`attach_environment`)."""

    planar = False
    needs_environment = True

    def __init__(self, params: GroundMoverParams):
        self.params = params
        self.environment = None
        self.mask = 0
        self.table = ParameterTable(params, [(name, np.radians if name.endswith("_deg") else _same) for name in (
            "max_speed", "speed_up_acceleration", "slow_down_acceleration", "lateral_acceleration", "drag",
            "turn_rate", "align_rate", "gravity", "step_height", "snap_distance", "center_height",
            "min_slope_deg", "max_slope_deg", "swim_speed_factor", "float_height")])
        self._cap = 0
        self._grow(16)

    @property
    def max_speed(self) -> float:
        return self.params.max_speed

    @property
    def center_height(self) -> float:
        return self.params.center_height

    def attach_environment(self, environment) -> None:
        """Walk on ``environment`` (its layers resolve ``ground_layers``)."""
        self.environment = environment
        self.mask = environment.mask(self.params.ground_layers)

    def _grow(self, n: int) -> None:
        cap = max(n, int(self._cap * 1.5))
        self._origins = np.zeros((cap, 3), np.float32)
        self._down = np.zeros((cap, 3), np.float32)
        self._down[:, 1] = -1.0
        self._maxd = np.zeros(cap, np.float32)
        self._hits = RayHits.allocate(cap)
        #: state of each animal after the last move: GROUNDED, FALLING or SWIMMING
        previous = getattr(self, "state_array", np.zeros(0, np.int8))
        self.state_array = np.zeros(cap, np.int8)
        self.state_array[: previous.size] = previous
        self._cap = cap

    def state(self) -> dict:
        """Each animal's walking state (grounded, falling, swimming), by row, for snapshots."""
        return {"state": self.state_array[: self._cap].copy() if self._cap else np.zeros(0, np.int8)}

    def load_state(self, saved: dict) -> None:
        rows = np.asarray(saved["state"], np.int8)
        if rows.size:
            self._grow(rows.size)
            self.state_array[: rows.size] = rows

    def move(self, position, velocity, forward, up, desired, dt, *, wrap=None, parallel=False,
             speed_scale=None, accel_scale=None, drawn=None) -> None:
        """Advance velocity, orientation and position of the animals by one step of ``dt`` (see the module)."""
        if self.environment is None:
            raise RuntimeError("the ground mover needs an environment: add an [environment] section to the scenario")
        n = position.shape[0]
        if n == 0:
            return
        if n > self._cap:
            self._grow(n)
        sscale = _NO_SCALE if speed_scale is None else np.ascontiguousarray(speed_scale, np.float32)
        ascale = _NO_SCALE if accel_scale is None else np.ascontiguousarray(accel_scale, np.float32)
        if wrap is None:
            bmin = size = np.zeros(3)
            do_wrap = False
        else:
            bmin, size = (np.asarray(a, np.float64) for a in wrap)
            do_wrap = True
        env = self.environment
        wf, wi, poly = env.arrays.w_f, env.arrays.w_i, env.arrays.w_poly
        p = self.table.rows(n, drawn)
        origins = self._origins[:n]
        down = self._down[:n]
        maxd = self._maxd[:n]
        state = self.state_array[:n]
        _probe_before(position, p, origins, maxd)
        h = cast_rays(env, origins, down, maxd, self.mask, out=self._hits, parallel=parallel)
        args = (position, velocity, desired, h.hit, h.distance, h.normal, origins, maxd, wf, wi, poly, p,
                float(dt), sscale, ascale, state, do_wrap, bmin, size)
        if parallel:
            _walk_parallel(*args)
        else:
            _walk_range(0, n, *args)
        h = cast_rays(env, origins, down, maxd, self.mask, out=self._hits, parallel=parallel)
        args = (position, velocity, forward, up, h.hit, h.distance, h.normal, origins, wf, wi, poly, p, float(dt),
                state)
        if parallel:
            _settle_parallel(*args)
        else:
            _settle_range(0, n, *args)


@mover("ground", params=GroundMoverParams)
def ground_mover(params: GroundMoverParams) -> GroundMover:
    """2.5D walking on the environment's surface: slopes, falling, steps, surface alignment, swimming."""
    return GroundMover(params)
