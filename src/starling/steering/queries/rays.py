"""Ray queries: per-animal ray patterns cast into the environment (seed 000, 2.1.1, 7.1.1, 9.5.5).

A ray query turns each animal's position and orientation into ``count`` rays; the environment's batched
cast (:func:`starling.environment.raycast.cast_rays`) then finds their hits for a ray behaviour.  Three
patterns are provided, as in the thesis' defaults:

``cone2d``
    ``count`` rays spread evenly over ``fov_deg`` in the horizontal x–z plane around the animal's heading
    (its forward projected on the ground plane), for 2D and ground-bound simulations (9.5.5, fig. 9.13).
``cone3d``
    ``count`` rays spread evenly over a cone of full opening angle ``fov_deg`` around an axis (9.5.5,
    fig. 9.12; 7.1.3's pattern after Lague).  The directions follow a Fibonacci spiral whose k-th ray sits
    at polar angle ``theta_k`` with ``1 - cos(theta_k)`` proportional to ``k`` — equal solid angle per
    ray — and azimuth ``k`` times the golden angle; the first ray lies on the axis and the last on the
    rim.  The axis defaults to forward; ``direction = (0, -1, 0)`` with ``world_space = true`` gives the
    "straight down in world space" cone the avoid-ground behaviour uses.
``single``
    One ray along ``direction``.
``eight_way``
    Seed 004's obstacle probe (Ménard, 1.4): ray 0 along the axis (the *detection* ray), then ``K =
    (count - 1) / 8`` rings of eight *selection* rays, ring ``k`` (1..K) deflected from the axis by
    ``90° · k / K``, ray ``j`` (0..7) of a ring toward azimuth ``45° · j`` about the axis, measured from
    local +x (j = 0 and 4 are the horizontal escapes left and right, 2 and 6 up and down, the odd ones the
    diagonals). Animal ``i``'s ray ``1 + 8 (k - 1) + j`` is ring ``k``'s direction ``j``
    (:func:`eight_way_index`).

Frames
------
The animal's local frame maps local +z to its forward, +y to its up and +x to ``up x forward`` (so it is
the world frame when the animal faces +z with y up; right-handed).  ``direction`` and ``origin_offset``
are local unless ``world_space`` is set (the offset is always local: it is where the eyes are).  For
``cone2d`` the frame is reduced to a yaw: forward projected on x–z and world up, so banking or pitching
never tilts the fan out of the ground plane.  A heading that is undefined (forward vertical or zero)
falls back to world +z.

Output layout: animal ``i``'s rays are rows ``i * count .. i * count + count - 1``, in pattern order
(for ``cone2d``: from ``-fov/2`` to ``+fov/2``, i.e. turning from forward towards local -x to local +x).
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import numpy as np
from numba import njit, prange

from ...parallel import PARALLEL_MIN_RAYS
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...world.layers import DEFAULT_LAYERS, LayerRegistry

Vec3 = tuple[float, float, float]

GOLDEN_ANGLE = math.pi * (3.0 - math.sqrt(5.0))
"""Azimuth step of the Fibonacci spiral, radians."""

MODE_LOCAL = 0
MODE_YAW = 1
MODE_WORLD = 2

_PARALLEL_THRESHOLD = PARALLEL_MIN_RAYS  # see starling.parallel


class RayQuerySpec(BaseModel):
    """Parameters of a ray query (one per ray behaviour, seed 000, 2.1.1)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    shape: Literal["cone2d", "cone3d", "single", "eight_way"] = Field("cone2d", description="Ray pattern.")
    count: int = Field(8, ge=1, le=4096, description="Rays per animal (1 for `single`).")
    fov_deg: float = Field(
        120.0, gt=0, le=360, description="Full opening angle of the cone in degrees (ignored for `single`)."
    )
    max_distance: float = Field(10.0, gt=0, description="Length of every ray, metres.")
    direction: Vec3 = Field(
        (0.0, 0.0, 1.0),
        description="Cone axis or single-ray direction: in the animal's local frame (+z forward, +y up) or, "
        "with `world_space`, in world coordinates. For `cone2d` only its heading (x–z part) matters.",
    )
    world_space: bool = Field(False, description="Interpret `direction` in world coordinates.")
    origin_offset: Vec3 = Field(
        (0.0, 0.0, 0.0), description="Ray origin relative to the animal's position, local frame, metres."
    )
    layers: list[str] = Field(
        default_factory=lambda: ["terrain", "ground", "environment", "fake_walls"],
        description="Layers the rays can hit.",
    )

    @field_validator("direction")
    @classmethod
    def _direction_nonzero(cls, d: Vec3) -> Vec3:
        if math.sqrt(sum(c * c for c in d)) <= 1e-12:
            raise ValueError("direction must be a non-zero vector")
        return d

    @model_validator(mode="after")
    def _single_is_one_ray(self):
        if self.shape == "single":
            if "count" in self.model_fields_set and self.count != 1:
                raise ValueError(f"a `single` ray query has exactly one ray, got count = {self.count}")
            self.count = 1
        if self.shape == "eight_way" and (self.count < 9 or (self.count - 1) % 8):
            raise ValueError(f"an `eight_way` ray query has 1 + 8·K rays (9, 17, 25, …), got count = {self.count}")
        if self.shape == "cone2d" and math.hypot(self.direction[0], self.direction[2]) <= 1e-12:
            raise ValueError("a `cone2d` query needs a direction with a horizontal (x, z) part")
        return self

    def mask(self, registry: LayerRegistry | None = None) -> int:
        """The ``uint32`` layer mask of :attr:`layers` (unknown names raise an error listing known ones)."""
        return (registry or DEFAULT_LAYERS).mask(self.layers)

    def pattern(self) -> np.ndarray:
        """``(count, 3) float64`` unit ray directions in the pattern's frame (local, yaw or world)."""
        if self.shape == "cone2d":
            yaw = math.atan2(self.direction[0], self.direction[2])
            return cone_2d_pattern(self.count, self.fov_deg, math.degrees(yaw))
        d = np.asarray(self.direction, dtype=np.float64)
        d = d / np.linalg.norm(d)
        if self.shape == "single":
            return d[None, :].copy()
        if self.shape == "eight_way":
            return rotate_pattern_to_axis(eight_way_pattern(self.count), d)
        return rotate_pattern_to_axis(cone_3d_pattern(self.count, self.fov_deg), d)

    @property
    def mode(self) -> int:
        """How the pattern is attached to each animal: local frame, yaw-only frame, or world."""
        if self.shape == "cone2d":
            return MODE_WORLD if self.world_space else MODE_YAW
        return MODE_WORLD if self.world_space else MODE_LOCAL


def cone_2d_pattern(count: int, fov_deg: float, yaw_offset_deg: float = 0.0) -> np.ndarray:
    """``(count, 3)`` horizontal unit directions spread evenly over ``fov_deg`` around the heading rotated by
    ``yaw_offset_deg`` about +y (0 = local +z).  A full circle (360°) does not repeat its first ray."""
    fov = math.radians(fov_deg)
    if count == 1:
        angles = np.zeros(1)
    elif fov_deg >= 360.0:
        angles = -math.pi + fov * np.arange(count) / count
    else:
        angles = -fov / 2 + fov * np.arange(count) / (count - 1)
    angles = angles + math.radians(yaw_offset_deg)
    return np.stack([np.sin(angles), np.zeros(count), np.cos(angles)], axis=1)


def cone_3d_pattern(count: int, fov_deg: float) -> np.ndarray:
    """``(count, 3)`` unit directions around +z over a cone of full angle ``fov_deg`` (Fibonacci spiral with
    equal solid angle per ray; the first ray on the axis, the last on the rim)."""
    half = math.radians(fov_deg) / 2
    if count == 1:
        return np.array([[0.0, 0.0, 1.0]])
    k = np.arange(count)
    cos_t = 1.0 - (1.0 - math.cos(half)) * k / (count - 1)
    sin_t = np.sqrt(np.clip(1.0 - cos_t * cos_t, 0.0, 1.0))
    phi = k * GOLDEN_ANGLE
    return np.stack([sin_t * np.cos(phi), sin_t * np.sin(phi), cos_t], axis=1)


def eight_way_index(ring: int, j: int) -> int:
    """Row of ring ``ring`` (1..K)'s direction ``j`` (0..7) in an ``eight_way`` pattern."""
    return 1 + 8 * (ring - 1) + j


def eight_way_pattern(count: int) -> np.ndarray:
    """``(count, 3)`` unit directions around +z: the axis, then ``(count - 1) / 8`` rings of eight (see the
    module docstring: ring ``k`` at ``90° · k / K`` from the axis, direction ``j`` at azimuth ``45° · j``)."""
    rings = (count - 1) // 8
    out = [np.array([0.0, 0.0, 1.0])]
    for k in range(1, rings + 1):
        theta = 0.5 * math.pi * k / rings
        for j in range(8):
            phi = 0.25 * math.pi * j
            out.append(np.array([math.sin(theta) * math.cos(phi), math.sin(theta) * math.sin(phi), math.cos(theta)]))
    pattern = np.stack(out)
    pattern[np.abs(pattern) < 1e-15] = 0.0
    return pattern


def rotate_pattern_to_axis(pattern: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """Rotate a pattern built around +z so that +z maps to the unit ``axis`` (minimal rotation)."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    z = np.array([0.0, 0.0, 1.0])
    c = float(np.dot(z, a))
    if c > 1.0 - 1e-12:
        return pattern.copy()
    if c < -1.0 + 1e-12:
        return pattern * np.array([1.0, -1.0, -1.0])  # half turn about x
    v = np.cross(z, a)
    vx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    rot = np.eye(3) + vx + vx @ vx * (1.0 / (1.0 + c))
    return pattern @ rot.T


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True, _nrt=False)
def _frame(fx, fy, fz, ux, uy, uz, mode):
    """Orthonormal ``(lateral, up, forward)`` of an animal (see the module docstring)."""
    if mode == MODE_YAW:
        fy = 0.0
        ux, uy, uz = 0.0, 1.0, 0.0
    n = math.sqrt(fx * fx + fy * fy + fz * fz)
    if n <= 1e-12:
        fx, fy, fz = 0.0, 0.0, 1.0
    else:
        fx, fy, fz = fx / n, fy / n, fz / n
    # lateral = up x forward
    lx = uy * fz - uz * fy
    ly = uz * fx - ux * fz
    lz = ux * fy - uy * fx
    n = math.sqrt(lx * lx + ly * ly + lz * lz)
    if n <= 1e-9:
        # up parallel to forward (or zero): pick the lateral from world up, else world x
        lx, ly, lz = fz, 0.0, -fx
        n = math.sqrt(lx * lx + lz * lz)
        if n <= 1e-9:
            lx, ly, lz, n = 1.0, 0.0, 0.0, 1.0
    lx, ly, lz = lx / n, ly / n, lz / n
    # up' = forward x lateral
    vx = fy * lz - fz * ly
    vy = fz * lx - fx * lz
    vz = fx * ly - fy * lx
    return lx, ly, lz, vx, vy, vz, fx, fy, fz


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", nogil=True, _nrt=False)
def _fill(k, pos, fwd, up, pattern, offset, mode, out_o, out_d):
    count = pattern.shape[0]
    k = np.int64(k)
    ui = k if up.shape[0] > 1 else np.int64(0)
    lx, ly, lz, vx, vy, vz, fx, fy, fz = _frame(
        np.float64(fwd[k, 0]), np.float64(fwd[k, 1]), np.float64(fwd[k, 2]),
        np.float64(up[ui, 0]), np.float64(up[ui, 1]), np.float64(up[ui, 2]), mode,
    )
    ox = pos[k, 0] + offset[0] * lx + offset[1] * vx + offset[2] * fx
    oy = pos[k, 1] + offset[0] * ly + offset[1] * vy + offset[2] * fy
    oz = pos[k, 2] + offset[0] * lz + offset[1] * vz + offset[2] * fz
    for j in range(count):
        row = k * count + j
        out_o[row, 0] = ox
        out_o[row, 1] = oy
        out_o[row, 2] = oz
        px, py, pz = pattern[j, 0], pattern[j, 1], pattern[j, 2]
        if mode == MODE_WORLD:
            out_d[row, 0] = px
            out_d[row, 1] = py
            out_d[row, 2] = pz
        else:
            out_d[row, 0] = px * lx + py * vx + pz * fx
            out_d[row, 1] = px * ly + py * vy + pz * fy
            out_d[row, 2] = px * lz + py * vz + pz * fz


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", parallel=True)
def _rays_parallel(pos, fwd, up, pattern, offset, mode, out_o, out_d):
    for k in prange(pos.shape[0]):
        _fill(k, pos, fwd, up, pattern, offset, mode, out_o, out_d)


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy")
def _rays_serial(pos, fwd, up, pattern, offset, mode, out_o, out_d):
    for k in range(pos.shape[0]):
        _fill(k, pos, fwd, up, pattern, offset, mode, out_o, out_d)


class Rays(NamedTuple):
    """Rays of a query: ``origins (n * count, 3) float32``, ``directions (n * count, 3) float32`` (unit),
    ``max_distance`` (metres, the same for every ray) and ``count`` rays per animal."""

    origins: np.ndarray
    directions: np.ndarray
    max_distance: float
    count: int


def generate_rays(spec: RayQuerySpec, positions: np.ndarray, forwards: np.ndarray, ups: np.ndarray | None = None,
                  out: Rays | None = None, pattern: np.ndarray | None = None) -> Rays:
    """Generate every animal's rays for ``spec``.

    Parameters
    ----------
    spec: the query.
    positions, forwards: ``(n, 3)`` float arrays (forwards need not be unit).
    ups: ``(n, 3)`` up vectors or None for world up (ignored by ``cone2d``).
    out: optional preallocated :class:`Rays` with ``n * spec.count`` rows, written in place.
    pattern: optional precomputed ``spec.pattern()`` (saves recomputing it every step).
    """
    pos = np.ascontiguousarray(positions, dtype=np.float32)
    fwd = np.ascontiguousarray(forwards, dtype=np.float32)
    if pos.ndim != 2 or pos.shape[1] != 3 or fwd.shape != pos.shape:
        raise ValueError(f"positions and forwards must both have shape (n, 3), got {pos.shape} and {fwd.shape}")
    n = pos.shape[0]
    if ups is None:
        up = np.array([[0.0, 1.0, 0.0]], np.float32)
    else:
        up = np.ascontiguousarray(ups, dtype=np.float32)
        if up.shape != pos.shape:
            raise ValueError(f"ups must have shape {pos.shape}, got {up.shape}")
    pat = np.ascontiguousarray(spec.pattern() if pattern is None else pattern, dtype=np.float64)
    count = pat.shape[0]
    rows = n * count
    if out is None:
        out = Rays(np.empty((rows, 3), np.float32), np.empty((rows, 3), np.float32), spec.max_distance, count)
    elif out.origins.shape != (rows, 3) or out.directions.shape != (rows, 3):
        raise ValueError(f"out must hold ({rows}, 3) origins and directions")
    else:
        out = out._replace(max_distance=spec.max_distance, count=count)
    if n == 0:
        return out
    fill_rays(spec, pos, fwd, up, pat, np.asarray(spec.origin_offset, dtype=np.float64), out)
    return out


def fill_rays(spec: RayQuerySpec, positions: np.ndarray, forwards: np.ndarray, ups: np.ndarray, pattern: np.ndarray,
              offset: np.ndarray, out: Rays) -> None:
    """:func:`generate_rays` for a caller whose arguments already have the kernel's types, checked by nobody:
    C-ordered float32 ``(n, 3)`` positions, forwards and ups (or one ``(1, 3)`` up), the float64 pattern and
    ``origin_offset``, and ``out`` of exactly ``n * count`` rows (the steering pipeline, every step)."""
    kernel, args = ray_filling(spec, positions, forwards, ups, pattern, offset, out)
    kernel(*args)


def ray_filling(spec: RayQuerySpec, positions: np.ndarray, forwards: np.ndarray, ups: np.ndarray,
                pattern: np.ndarray, offset: np.ndarray, out: Rays):
    """``(kernel, args)``: what :func:`fill_rays` calls, for a caller that keeps them while its arrays
    are the same (the steering pipeline's ray groups: a step then builds none)."""
    kernel = _rays_parallel if positions.shape[0] >= _PARALLEL_THRESHOLD else _rays_serial
    return kernel, (positions, forwards, ups, pattern, offset, spec.mode, out.origins, out.directions)
