"""Rotations of oriented shapes (boxes, capsules, cylinders, meshes) from their config: yaw, pitch and
roll in degrees, or a quaternion.

Python, used when a scene is built: the kernels take the matrix, row-major, as nine floats.
"""

from __future__ import annotations

import numpy as np


def rotation_from_ypr(yaw_deg: float, pitch_deg: float, roll_deg: float) -> np.ndarray:
    """``R = Ry(yaw) @ Rx(pitch) @ Rz(roll)`` from degrees (right-hand rule about each axis)."""
    y, p, r = np.radians([yaw_deg, pitch_deg, roll_deg])
    cy, sy, cp, sp, cr, sr = np.cos(y), np.sin(y), np.cos(p), np.sin(p), np.cos(r), np.sin(r)
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rx = np.array([[1, 0, 0], [0, cp, -sp], [0, sp, cp]])
    rz = np.array([[cr, -sr, 0], [sr, cr, 0], [0, 0, 1]])
    return ry @ rx @ rz


def rotation_from_quaternion(w: float, x: float, y: float, z: float) -> np.ndarray:
    """The rotation matrix of the quaternion ``(w, x, y, z)`` (normalised first)."""
    q = np.array([w, x, y, z], dtype=np.float64)
    n = np.linalg.norm(q)
    if n <= 1e-12:
        raise ValueError("quaternion has zero length")
    w, x, y, z = q / n
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def rotation_matrix(yaw_pitch_roll_deg=(0.0, 0.0, 0.0), quaternion=None) -> np.ndarray:
    """The 3x3 rotation of an oriented config (quaternion wins when given)."""
    if quaternion is not None:
        return rotation_from_quaternion(*quaternion)
    return rotation_from_ypr(*yaw_pitch_roll_deg)


def rot9(rot: np.ndarray) -> tuple:
    """The 9-tuple (row-major) form of a 3x3 rotation that the box kernels take."""
    return tuple(float(v) for v in np.asarray(rot, dtype=np.float64).ravel())
