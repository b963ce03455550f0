"""Follow path (seed 000, 9.5.1): travel along a polyline at a set speed.

Each animal finds the closest point on the path (stateless, so spawning, killing and
reordering animals never desynchronises anything), then steers toward the point
``lookahead`` metres further along it. An open path ends at its last point: the
desired speed ramps down within ``arrival_radius`` of it; a looped path wraps around.
"""
import math
from typing import Literal

from numba import njit, prange
from pydantic import Field, field_validator

from ...params import BehaviorParams
from ...per_animal import at
from ...registry import behavior
from ...results import emit


class FollowPathParams(BehaviorParams):
    """Steer along a polyline of points."""

    kind: Literal["follow_path"] = "follow_path"
    weight_direction: float = Field(0.6, ge=0, le=1)
    weight_speed: float = Field(0.3, ge=0, le=1)
    points: list[tuple[float, float, float]] = Field(
        default_factory=lambda: [(0.0, 0.0, 0.0), (10.0, 0.0, 0.0)],
        description="Path vertices, m (at least two).",
    )
    loop: bool = Field(False, description="Join the last point back to the first.")
    speed: float = Field(3.0, ge=0, description="Desired speed along the path, m/s.")
    lookahead: float = Field(3.0, gt=0, description="How far ahead on the path to aim, m.")
    arrival_radius: float = Field(2.0, gt=0, description="Slow down within this distance of an open path's end, m.")

    @field_validator("points")
    @classmethod
    def _at_least_two(cls, points):
        if len(points) < 2:
            raise ValueError("a path needs at least two points")
        return points


@njit(cache=True, no_cfunc_wrapper=True)
def _segment_count(points, loop):
    return points.shape[0] if loop else points.shape[0] - 1


@njit(cache=True, no_cfunc_wrapper=True)
def _point_at(points, loop, seg, t):
    a = points[seg]
    b = points[(seg + 1) % points.shape[0]]
    return a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t


@njit(cache=True, no_cfunc_wrapper=True)
def _closest_on_path(points, loop, x, y, z):
    """Segment index and parameter of the point of the path closest to (x, y, z)."""
    best = 1e300
    best_seg = 0
    best_t = 0.0
    for s in range(_segment_count(points, loop)):
        a = points[s]
        b = points[(s + 1) % points.shape[0]]
        ex = b[0] - a[0]
        ey = b[1] - a[1]
        ez = b[2] - a[2]
        ll = ex * ex + ey * ey + ez * ez
        t = 0.0
        if ll > 0.0:
            t = ((x - a[0]) * ex + (y - a[1]) * ey + (z - a[2]) * ez) / ll
            t = min(1.0, max(0.0, t))
        px = a[0] + ex * t - x
        py = a[1] + ey * t - y
        pz = a[2] + ez * t - z
        d = px * px + py * py + pz * pz
        if d < best:
            best = d
            best_seg = s
            best_t = t
    return best_seg, best_t


@njit(cache=True, no_cfunc_wrapper=True)
def _advance(points, loop, seg, t, distance):
    """Walk ``distance`` metres along the path from (seg, t); stops at an open end."""
    nseg = _segment_count(points, loop)
    while True:
        a = points[seg]
        b = points[(seg + 1) % points.shape[0]]
        length = math.sqrt((b[0] - a[0]) ** 2 + (b[1] - a[1]) ** 2 + (b[2] - a[2]) ** 2)
        remaining = (1.0 - t) * length
        if distance <= remaining or length == 0.0 and seg == nseg - 1 and not loop:
            if length > 0.0:
                t += distance / length
            return seg, min(t, 1.0), False
        distance -= remaining
        seg += 1
        t = 0.0
        if seg >= nseg:
            if not loop:
                return nseg - 1, 1.0, True
            seg = 0


@behavior("follow_path", kind="simple", params=FollowPathParams)
def follow_path(agents, p, time, dt, out):
    """Aim at the point ``lookahead`` ahead of the closest point on the path."""
    pos = agents.position
    pts = p.points
    last = pts[pts.shape[0] - 1]
    for i in prange(pos.shape[0]):
        x = pos[i, 0]
        y = pos[i, 1]
        z = pos[i, 2]
        seg, t = _closest_on_path(pts, p.loop, x, y, z)
        seg, t, ended = _advance(pts, p.loop, seg, t, at(p.lookahead, i))
        tx, ty, tz = _point_at(pts, p.loop, seg, t)
        dx = tx - x
        dy = ty - y
        dz = tz - z
        d = math.sqrt(dx * dx + dy * dy + dz * dz)
        speed = at(p.speed, i)
        if not p.loop:
            to_end = math.sqrt((last[0] - x) ** 2 + (last[1] - y) ** 2 + (last[2] - z) ** 2)
            if to_end < at(p.arrival_radius, i):
                speed = at(p.speed, i) * to_end / at(p.arrival_radius, i)
        if d < 1e-9:  # on the aim point: no opinion on direction, still one on speed
            emit(out, i, 0.0, 0.0, 0.0, 0.0, speed, at(p.weight_speed, i))
        else:
            emit(out, i, dx / d, dy / d, dz / d, at(p.weight_direction, i), speed, at(p.weight_speed, i))
