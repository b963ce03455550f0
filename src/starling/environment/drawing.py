"""What a viewer draws of an environment, in the browser protocol's ``Environment`` shape.

The static scene, turned into the terrain's height grid, the largest water surface, the
primitives as obstacles and the mesh triangles (``docs/protocol.md``); the environment
system sends it once with the scene.
"""
from __future__ import annotations

import math

import numpy as np

from .config import BoxConfig, CapsuleConfig, CylinderConfig, PlaneConfig, SphereConfig
from .rotations import rotation_matrix


def _euler_xyz(rot: np.ndarray) -> list[float]:
    """Degrees ``(x, y, z)`` of a rotation matrix in three.js' default ``XYZ`` Euler order (R = Rx Ry Rz)."""
    m = np.asarray(rot, np.float64)
    y = math.asin(max(-1.0, min(1.0, m[0, 2])))
    if abs(m[0, 2]) < 0.9999999:
        x = math.atan2(-m[1, 2], m[2, 2])
        z = math.atan2(-m[0, 1], m[0, 0])
    else:
        x = math.atan2(m[2, 1], m[1, 1])
        z = 0.0
    return [round(math.degrees(v), 4) for v in (x, y, z)]


def _y_to(axis) -> np.ndarray:
    """The smallest rotation taking +y to the unit ``axis``."""
    a = np.asarray(axis, np.float64)
    a = a / np.linalg.norm(a)
    y = np.array([0.0, 1.0, 0.0])
    c = float(a @ y)
    if c > 1 - 1e-12:
        return np.eye(3)
    if c < -1 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    v = np.cross(y, a)
    vx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + vx + vx @ vx / (1 + c)


def _r(values, digits: int = 4) -> list[float]:
    return [round(float(v), digits) for v in values]


def describe(env) -> dict:
    """What a viewer draws, in the browser protocol's ``Environment`` shape (``docs/protocol.md``):
    the terrain's height grid and extents, the (largest) water surface, the primitives as obstacles
    (capsules as a cylinder and two spheres) and the mesh triangles."""
    out: dict = {"obstacles": []}
    t = env.terrain
    if t is not None:
        nz, nx = t.heights.shape
        out["terrain"] = {
            "origin": [float(t.x0), float(t.z0)],
            "size": [float(t.dx * (nx - 1)), float(t.dz * (nz - 1))],
            "resolution": [int(nx), int(nz)],
            "heights": _r(t.heights.ravel(), 3),
        }
    w = env.water
    if len(w):
        box = w.box
        big = int(np.argmax((box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])))
        out["water"] = {"level": float(w.surface[big]), "bounds_min": _r(box[big, :2]), "bounds_max": _r(box[big, 2:])}
    obstacles = out["obstacles"]
    # No colours: the viewer colours obstacles by their shape (trunk, canopy, rock).
    for s in env.shapes:
        if getattr(s, "layer", "environment") == "fake_walls":
            continue  # invisible barriers are not drawn
        if isinstance(s, SphereConfig):
            obstacles.append({"shape": "sphere", "center": _r(s.center), "radius": float(s.radius)})
        elif isinstance(s, BoxConfig):
            center, half = s.resolved()
            rot = rotation_matrix(s.yaw_pitch_roll_deg, s.quaternion)
            obstacles.append({"shape": "box", "center": _r(center), "size": _r(2 * np.asarray(half)),
                              "rotation_deg": _euler_xyz(rot)})
        elif isinstance(s, (CylinderConfig, CapsuleConfig)):
            a = np.asarray(s.base, np.float64)
            u = np.asarray(s.axis, np.float64) / np.linalg.norm(s.axis)
            b = a + u * s.height
            if s.height > 0:
                obstacles.append({"shape": "cylinder", "center": _r((a + b) / 2), "radius": float(s.radius),
                                  "height": float(s.height), "rotation_deg": _euler_xyz(_y_to(u))})
            if isinstance(s, CapsuleConfig):
                for end in (a, b) if s.height > 0 else (a,):
                    obstacles.append({"shape": "sphere", "center": _r(end), "radius": float(s.radius)})
        elif isinstance(s, PlaneConfig):
            continue  # unbounded; the world box's floor shows it
    tri = env.arrays.tri_f
    if tri.shape[0]:
        v0 = tri[:, 0:3]
        corners = np.concatenate([v0, v0 + tri[:, 3:6], v0 + tri[:, 6:9]], axis=1)
        out["meshes"] = [{"positions": _r(corners.ravel(), 3)}]
    return out
