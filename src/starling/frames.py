"""Binary frames: every population's positions, orientations, speeds and uids at one step.

The one codec of Starling's streams: the browser server sends these frames, the
recorder stores them and replay reads them back. They are the bulk of the traffic (a
100,000-bird flock is streamed tens of times a second), so they are packed, quantised
and built by one Numba pass without Python objects per animal. The byte layout is in
``docs/protocol.md``; :class:`FrameEncoder` writes it and :func:`decode_frame` reads it.

Quantisation choices, and why they are invisible:

* Positions are ``uint16`` relative to the population's own bounding box in that
  frame. A 500 m wide flock gets 7.6 mm steps, far below a pixel at any useful
  camera distance, and no animal is ever clamped because the box follows them.
* Orientations are unit quaternions in "smallest three" form packed in 32 bits
  (2 bits for which component was dropped, 3 × 10 bits). The worst rotation
  error is about 0.2°.
* Speeds are ``uint16`` centimetres per second (0–655 m/s), used by the viewer
  to pace wing beats and gaits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange


MAGIC = b"STRL"
VERSION = 1
FRAME_HEADER_BYTES = 32
SPECIES_HEADER_BYTES = 32
BYTES_PER_ANIMAL = 16  # uid u32 + orientation u32 + position 3×u16 + speed u16
FLAG_PAUSED = 1

_HALF_SQRT2 = 0.7071067811865476
_Q10 = 1023.0
_SPEED_UNIT = 0.01  # metres per second per speed step


def frame_size(counts: list[int]) -> int:
    """Bytes of a frame holding ``counts[i]`` animals of species ``i``."""
    return FRAME_HEADER_BYTES + sum(SPECIES_HEADER_BYTES + BYTES_PER_ANIMAL * int(n) for n in counts)


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy")
def _bounds(position, lo, hi):
    """Per-axis min/max over the finite coordinates of ``position`` (n,3) into ``lo``/``hi`` (3,)."""
    for k in range(3):
        lo[k] = np.inf
        hi[k] = -np.inf
    for i in range(position.shape[0]):
        for k in range(3):
            v = float(position[i, k])
            if v == v and v != np.inf and v != -np.inf:
                if v < lo[k]:
                    lo[k] = v
                if v > hi[k]:
                    hi[k] = v
    for k in range(3):
        if lo[k] > hi[k]:  # no finite value at all
            lo[k] = 0.0
            hi[k] = 0.0


@njit(cache=True, no_cfunc_wrapper=True, inline="always", error_model="numpy")
def _orientation(forward, up, i):
    """Animal ``i``'s rotation (local +Z = ``forward``, +Y = ``up``) packed in 32 bits (smallest three)."""
    # Orthonormal basis: z = forward, x = up × forward, y = z × x.
    fz0 = float(forward[i, 0])
    fz1 = float(forward[i, 1])
    fz2 = float(forward[i, 2])
    fn = math.sqrt(fz0 * fz0 + fz1 * fz1 + fz2 * fz2)
    if not (fn > 1e-12):
        fz0, fz1, fz2, fn = 0.0, 0.0, 1.0, 1.0
    fz0 /= fn
    fz1 /= fn
    fz2 /= fn
    u0 = float(up[i, 0])
    u1 = float(up[i, 1])
    u2 = float(up[i, 2])
    x0 = u1 * fz2 - u2 * fz1
    x1 = u2 * fz0 - u0 * fz2
    x2 = u0 * fz1 - u1 * fz0
    xn = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
    if not (xn > 1e-6):  # up parallel to forward (or missing): pick world-y, then world-x
        if abs(fz1) < 0.9:
            x0, x1, x2 = fz2, 0.0, -fz0  # (0,1,0) × f
        else:
            x0, x1, x2 = 0.0, -fz2, fz1  # (1,0,0) × f
        xn = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
    x0 /= xn
    x1 /= xn
    x2 /= xn
    y0 = fz1 * x2 - fz2 * x1
    y1 = fz2 * x0 - fz0 * x2
    y2 = fz0 * x1 - fz1 * x0
    # Rotation matrix columns (x, y, z) → quaternion, branching on the largest term
    # so that no component is found from a small difference (Shepperd's method).
    m00, m10, m20 = x0, x1, x2
    m01, m11, m21 = y0, y1, y2
    m02, m12, m22 = fz0, fz1, fz2
    tr = m00 + m11 + m22
    if tr > 0.0:
        t = 2.0 * math.sqrt(tr + 1.0)
        qw = 0.25 * t
        qx = (m21 - m12) / t
        qy = (m02 - m20) / t
        qz = (m10 - m01) / t
    elif m00 > m11 and m00 > m22:
        t = 2.0 * math.sqrt(1.0 + m00 - m11 - m22)
        qw = (m21 - m12) / t
        qx = 0.25 * t
        qy = (m01 + m10) / t
        qz = (m02 + m20) / t
    elif m11 > m22:
        t = 2.0 * math.sqrt(1.0 + m11 - m00 - m22)
        qw = (m02 - m20) / t
        qx = (m01 + m10) / t
        qy = 0.25 * t
        qz = (m12 + m21) / t
    else:
        t = 2.0 * math.sqrt(1.0 + m22 - m00 - m11)
        qw = (m10 - m01) / t
        qx = (m02 + m20) / t
        qy = (m12 + m21) / t
        qz = 0.25 * t
    return _smallest_three(qx, qy, qz, qw)


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy")
def _pack_orientations(forward, up, out):
    for i in range(forward.shape[0]):
        out[i] = _orientation(forward, up, i)


def pack_orientations(forward: np.ndarray, up: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Orientations as the frames carry them: (n,) uint32, smallest-three quaternions (~0.2° worst error).

    The recorder stores these instead of two vectors: 4 bytes an animal instead of 12 or 24.
    """
    forward = _f32(forward)
    if out is None:
        out = np.empty(forward.shape[0], np.uint32)
    if forward.shape[0]:
        _pack_orientations(forward, _f32(up), out)
    return out


def orientation_vectors(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(forward, up)`` (n,3) float32 back from :func:`pack_orientations` (local +Z and +Y rotated)."""
    q = unpack_quaternions(np.asarray(packed))
    n = q.shape[0]
    forward = rotate(q, np.broadcast_to(np.array([0.0, 0.0, 1.0]), (n, 3)))
    up = rotate(q, np.broadcast_to(np.array([0.0, 1.0, 0.0]), (n, 3)))
    return forward.astype(np.float32), up.astype(np.float32)


@njit(cache=True, no_cfunc_wrapper=True, inline="always", error_model="numpy")
def _pack_one(i, position, velocity, forward, up, uid, lo, scale, out_uid, out_rot, out_pos, out_speed):
    """Quantise animal ``i`` (see :func:`_pack_serial` for the arrays)."""
    out_uid[i] = np.uint32(uid[i] & 0xFFFFFFFF)
    for k in range(3):
        v = float(position[i, k])
        q = (v - lo[k]) * scale[k] + 0.5
        if not (q > 0.0):  # also catches NaN
            q = 0.0
        elif q > 65535.0:
            q = 65535.0
        out_pos[3 * i + k] = np.uint16(q)
    vx = velocity[i, 0]
    vy = velocity[i, 1]
    vz = velocity[i, 2]
    s = math.sqrt(vx * vx + vy * vy + vz * vz) / 0.01 + 0.5
    if not (s > 0.0):
        s = 0.0
    elif s > 65535.0:
        s = 65535.0
    out_speed[i] = np.uint16(s)

    out_rot[i] = _orientation(forward, up, i)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _scales(lo, hi):
    scale = np.empty(3)
    for k in range(3):
        extent = hi[k] - lo[k]
        scale[k] = 65535.0 / extent if extent > 0.0 else 0.0
    return scale


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy")
def _pack_serial(position, velocity, forward, up, uid, lo, hi, out_uid, out_rot, out_pos, out_speed):
    """Quantise one species into the four output arrays of its frame block.

    ``position``/``velocity``/``forward``/``up`` are (n,3) float32, ``uid`` (n,) int64;
    ``out_uid``/``out_rot`` are (n,) uint32, ``out_pos`` (3n,) and ``out_speed`` (n,) uint16.
    Orientation: the rotation whose local +Z is ``forward`` and local +Y is ``up``
    (re-orthogonalised here, so a slightly skewed ``up`` is harmless).
    """
    scale = _scales(lo, hi)
    for i in range(position.shape[0]):
        _pack_one(i, position, velocity, forward, up, uid, lo, scale, out_uid, out_rot, out_pos, out_speed)


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy", parallel=True)
def _pack_parallel(position, velocity, forward, up, uid, lo, hi, out_uid, out_rot, out_pos, out_speed):
    """:func:`_pack_serial` over all cores, for populations where that pays for the thread start."""
    scale = _scales(lo, hi)
    for i in prange(position.shape[0]):
        _pack_one(i, position, velocity, forward, up, uid, lo, scale, out_uid, out_rot, out_pos, out_speed)


PARALLEL_FROM = 32_768 if numba.config.NUMBA_NUM_THREADS >= 4 else 2**62
"""Populations at least this large are packed with :func:`_pack_parallel`.

With only two or three cores the threads compete with the simulation's own and,
measured on a 2-core machine, the parallel pack was slower (8 ms against 5 ms for
100,000 animals), so there it is never used."""


@njit(cache=True, no_cfunc_wrapper=True, inline="always", error_model="numpy")
def _q10(a):
    """Map a component in [-1/√2, 1/√2] to 0..1023."""
    v = (a / 0.7071067811865476 + 1.0) * 0.5 * 1023.0 + 0.5
    if not (v > 0.0):
        return 0
    if v > 1023.0:
        return 1023
    return int(v)


@njit(cache=True, no_cfunc_wrapper=True, error_model="numpy")
def _smallest_three(qx, qy, qz, qw):
    """Pack a unit quaternion (x, y, z, w) into 32 bits: 2-bit dropped index, 3 × 10 bits."""
    ax, ay, az, aw = abs(qx), abs(qy), abs(qz), abs(qw)
    idx = 0
    big = ax
    if ay > big:
        idx, big = 1, ay
    if az > big:
        idx, big = 2, az
    if aw > big:
        idx, big = 3, aw
    sign = 1.0
    if (idx == 0 and qx < 0) or (idx == 1 and qy < 0) or (idx == 2 and qz < 0) or (idx == 3 and qw < 0):
        sign = -1.0  # q and -q are the same rotation; make the dropped one positive
    if idx == 0:
        a, b, c = qy, qz, qw
    elif idx == 1:
        a, b, c = qx, qz, qw
    elif idx == 2:
        a, b, c = qx, qy, qw
    else:
        a, b, c = qx, qy, qz
    packed = (idx << 30) | (_q10(sign * a) << 20) | (_q10(sign * b) << 10) | _q10(sign * c)
    return np.uint32(packed)


@dataclass
class SpeciesState:
    """The arrays of one species as the encoder needs them (copied or viewed, any float dtype)."""

    position: np.ndarray  # (n,3)
    velocity: np.ndarray  # (n,3)
    forward: np.ndarray  # (n,3) unit
    up: np.ndarray  # (n,3) unit
    uid: np.ndarray  # (n,) int


class FrameEncoder:
    """Builds binary frames into one reusable buffer (grown by capacity, never per call).

    The buffer is reused across calls so that a 1.6 MB frame costs no allocation
    beyond the final ``bytes`` copy that is handed to the sockets.
    """

    def __init__(self) -> None:
        self._buffer = np.zeros(0, dtype=np.uint8)
        self._lo = np.zeros(3)
        self._hi = np.zeros(3)
        self.last_bytes = 0

    def encode(
        self,
        species: list[SpeciesState],
        *,
        step: int,
        time: float,
        dt: float,
        sequence: int,
        paused: bool = False,
    ) -> bytes:
        """Encode the given species (in scenario order) into one frame."""
        counts = [int(s.position.shape[0]) for s in species]
        size = frame_size(counts)
        if self._buffer.size < size:
            self._buffer = np.zeros(max(size, int(self._buffer.size * 1.5)), dtype=np.uint8)
        buf = self._buffer
        buf[0:4] = np.frombuffer(MAGIC, dtype=np.uint8)
        buf[4:6].view("<u2")[0] = VERSION
        buf[6:8].view("<u2")[0] = len(species)
        buf[8:12].view("<u4")[0] = int(step) & 0xFFFFFFFF
        buf[12:16].view("<u4")[0] = FLAG_PAUSED if paused else 0
        buf[16:24].view("<f8")[0] = float(time)
        buf[24:28].view("<f4")[0] = float(dt)
        buf[28:32].view("<u4")[0] = int(sequence) & 0xFFFFFFFF
        offset = FRAME_HEADER_BYTES
        for index, (state, n) in enumerate(zip(species, counts)):
            head = buf[offset : offset + SPECIES_HEADER_BYTES]
            head[0:4].view("<u4")[0] = n
            head[4:6].view("<u2")[0] = index
            head[6:8].view("<u2")[0] = 0
            if n:
                _bounds(_f32(state.position), self._lo, self._hi)
            else:
                self._lo[:] = 0.0
                self._hi[:] = 0.0
            # Round the box to float32 first: the decoder only knows the float32 values.
            lo32 = self._lo.astype(np.float32)
            hi32 = self._hi.astype(np.float32)
            head[8:20].view("<f4")[:] = lo32
            head[20:32].view("<f4")[:] = hi32
            offset += SPECIES_HEADER_BYTES
            if n:
                out_uid = buf[offset : offset + 4 * n].view("<u4")
                out_rot = buf[offset + 4 * n : offset + 8 * n].view("<u4")
                out_pos = buf[offset + 8 * n : offset + 14 * n].view("<u2")
                out_speed = buf[offset + 14 * n : offset + 16 * n].view("<u2")
                pack = _pack_parallel if n >= PARALLEL_FROM else _pack_serial
                pack(
                    _f32(state.position),
                    _f32(state.velocity),
                    _f32(state.forward),
                    _f32(state.up),
                    np.ascontiguousarray(state.uid, dtype=np.int64),
                    lo32.astype(np.float64),
                    hi32.astype(np.float64),
                    out_uid,
                    out_rot,
                    out_pos,
                    out_speed,
                )
            offset += BYTES_PER_ANIMAL * n
        self.last_bytes = size
        return bytes(buf[:size])


def _f32(a: np.ndarray) -> np.ndarray:
    """A C-contiguous float32 (n,3) view or copy, so one compiled kernel signature serves all."""
    return np.ascontiguousarray(a, dtype=np.float32).reshape(-1, 3)


@dataclass
class DecodedSpecies:
    """One species of a decoded frame (dequantised; quaternions as (n,4) x, y, z, w)."""

    index: int
    uid: np.ndarray
    position: np.ndarray
    quaternion: np.ndarray
    speed: np.ndarray
    bounds_min: np.ndarray
    bounds_max: np.ndarray


@dataclass
class DecodedFrame:
    version: int
    step: int
    time: float
    dt: float
    sequence: int
    paused: bool
    species: list[DecodedSpecies]


class FrameFormatError(ValueError):
    """The bytes are not a frame of a version this code understands."""


def frame_sequence(data: bytes) -> int:
    """A frame's sequence number, read from its header alone (to count frames cheaply)."""
    return int(np.frombuffer(data, "<u4", count=1, offset=28)[0])


def decode_frame(data: bytes) -> DecodedFrame:
    """Read a frame written by :class:`FrameEncoder` (the reference decoder for tests and tools)."""
    if len(data) < FRAME_HEADER_BYTES or data[:4] != MAGIC:
        raise FrameFormatError("not a Starling frame (bad magic or too short)")
    raw = np.frombuffer(data, dtype=np.uint8)
    version = int(raw[4:6].view("<u2")[0])
    if version != VERSION:
        raise FrameFormatError(f"frame version {version} is not supported (expected {VERSION})")
    n_species = int(raw[6:8].view("<u2")[0])
    step = int(raw[8:12].view("<u4")[0])
    flags = int(raw[12:16].view("<u4")[0])
    time = float(raw[16:24].view("<f8")[0])
    dt = float(raw[24:28].view("<f4")[0])
    sequence = int(raw[28:32].view("<u4")[0])
    offset = FRAME_HEADER_BYTES
    out: list[DecodedSpecies] = []
    for _ in range(n_species):
        if offset + SPECIES_HEADER_BYTES > len(data):
            raise FrameFormatError("frame truncated inside a species header")
        head = raw[offset : offset + SPECIES_HEADER_BYTES]
        n = int(head[0:4].view("<u4")[0])
        index = int(head[4:6].view("<u2")[0])
        lo = head[8:20].view("<f4").astype(np.float64)
        hi = head[20:32].view("<f4").astype(np.float64)
        offset += SPECIES_HEADER_BYTES
        if offset + BYTES_PER_ANIMAL * n > len(data):
            raise FrameFormatError("frame truncated inside a species block")
        uid = raw[offset : offset + 4 * n].view("<u4").copy()
        rot = raw[offset + 4 * n : offset + 8 * n].view("<u4")
        pos = raw[offset + 8 * n : offset + 14 * n].view("<u2").reshape(n, 3).astype(np.float64)
        speed = raw[offset + 14 * n : offset + 16 * n].view("<u2").astype(np.float64) * _SPEED_UNIT
        offset += BYTES_PER_ANIMAL * n
        position = lo + pos / 65535.0 * (hi - lo)
        out.append(
            DecodedSpecies(index, uid, position, unpack_quaternions(rot), speed, lo, hi)
        )
    return DecodedFrame(VERSION, step, time, dt, sequence, bool(flags & FLAG_PAUSED), out)


def unpack_quaternions(packed: np.ndarray) -> np.ndarray:
    """Smallest-three uint32 (n,) → unit quaternions (n,4) in (x, y, z, w) order."""
    packed = packed.astype(np.uint32)
    idx = (packed >> 30).astype(np.int64)
    parts = np.stack([(packed >> 20) & 1023, (packed >> 10) & 1023, packed & 1023], axis=1)
    small = (parts.astype(np.float64) / _Q10 * 2.0 - 1.0) * _HALF_SQRT2
    big = np.sqrt(np.maximum(0.0, 1.0 - np.sum(small * small, axis=1)))
    q = np.empty((packed.shape[0], 4))
    for dropped in range(4):
        rows = idx == dropped
        others = [c for c in range(4) if c != dropped]
        q[rows, dropped] = big[rows]
        q[np.ix_(rows, others)] = small[rows]
    return q


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v`` (n,3) by quaternions ``q`` (n,4, x y z w)."""
    u = q[:, :3]
    w = q[:, 3:4]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)
