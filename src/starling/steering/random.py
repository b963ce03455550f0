"""A counter-based random stream for kernels: Philox4x32-10 (Salmon et al. 2011, Random123).

A kernel that draws random numbers must give the same numbers whatever thread runs
which animal, and different numbers for different scenario seeds. A stateful generator
cannot do that inside ``prange``; a counter-based one can: each draw is a pure function
``philox(counter, key)`` of where it is used, so there is no state to share or advance.

* **key** (64 bits): one per (scenario seed, species, behaviour row), made once by
  :func:`stream_key` and handed to the kernel as ``p.key``;
* **counter** (128 bits): ``(lane, step, uid)`` — ``lane`` numbers the independent draws
  one animal makes in one step (32 bits), ``step`` is the clock's step (32 bits, so it
  wraps after 2^32 steps, 2.3 years at 60 Hz), ``uid`` the animal's stable identity
  (64 bits). Lane ``0xFFFFFFFF`` at step 0 is reserved for :func:`noise_seed`.

Everything is plain integer arithmetic on uint64 values holding 32-bit words, so the
functions allocate nothing and inline into a kernel's loop.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

_M0 = np.uint64(0xD2511F53)  # Philox4x32 multipliers (Random123 philox.h)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)  # key schedule increments (golden ratio, sqrt(3) - 1)
_W1 = np.uint64(0xBB67AE85)
_LO = np.uint64(0xFFFFFFFF)
_S11 = np.uint64(11)
_S32 = np.uint64(32)
_S1 = np.uint64(1)
_NOISE_LANE = 0xFFFFFFFF
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53
_TWO_PI = 2.0 * math.pi
#: separates these keys from the world's NumPy generators, which use the same seed sequence
_DOMAIN = 0x5354524D  # "STRM"


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _round(c0, c1, c2, c3, k0, k1):
    """One Philox S-box round: two 32×32→64 products, their halves crossed and keyed."""
    p0 = _M0 * c0
    p1 = _M1 * c2
    return ((p1 >> _S32) ^ c1 ^ k0, p1 & _LO, (p0 >> _S32) ^ c3 ^ k1, p0 & _LO)


@njit(cache=True, no_cfunc_wrapper=True)
def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of the counter words ``c0..c3`` under the key words ``k0, k1``.

    Every argument is a 32-bit word held in any integer type; the result is four
    uint64 values below 2^32, in Random123's word order (its ``kat_vectors`` file
    lists counter, key and result in this order).
    """
    c0 = np.uint64(c0) & _LO
    c1 = np.uint64(c1) & _LO
    c2 = np.uint64(c2) & _LO
    c3 = np.uint64(c3) & _LO
    k0 = np.uint64(k0) & _LO
    k1 = np.uint64(k1) & _LO
    for r in range(10):
        if r > 0:  # the key is bumped before every round but the first
            k0 = (k0 + _W0) & _LO
            k1 = (k1 + _W1) & _LO
        c0, c1, c2, c3 = _round(c0, c1, c2, c3, k0, k1)
    return c0, c1, c2, c3


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _block(key, uid, step, lane):
    k = np.uint64(key)
    u = np.uint64(uid)
    return philox4x32(np.uint64(lane), np.uint64(step), u & _LO, u >> _S32, k & _LO, k >> _S32)


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def _unit53(hi, lo):
    """Two 32-bit words → a double in [0, 1) with 53 random bits (every value k·2^-53)."""
    return float(((hi << _S32) | lo) >> _S11) * _TO_UNIT


@njit(cache=True, no_cfunc_wrapper=True)
def uniform(key, uid, step, lane):
    """A uniform double in [0, 1), 53 random bits, for animal ``uid`` at ``step``, draw ``lane``."""
    w0, w1, _, _ = _block(key, uid, step, lane)
    return _unit53(w0, w1)


@njit(cache=True, no_cfunc_wrapper=True)
def normal(key, uid, step, lane):
    """A standard normal double (Box–Muller on the two 53-bit uniforms of one Philox block).

    The radius uses ``1 − u`` ∈ (0, 1], so the logarithm is finite: the largest value
    is ``sqrt(2 · 53 ln 2) ≈ 8.57``. ``normal`` and ``uniform`` of the same lane share
    bits; give them different lanes.
    """
    w0, w1, w2, w3 = _block(key, uid, step, lane)
    u1 = _unit53(w0, w1)
    u2 = _unit53(w2, w3)
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(_TWO_PI * u2)


@njit(cache=True, no_cfunc_wrapper=True)
def noise_seed(key, uid):
    """A non-negative int64 seed for :mod:`starling.steering.noise`, mixing ``key`` and ``uid``.

    63 bits so callers can derive per-channel seeds with ordinary int64 arithmetic
    (mixing uint64 with int64 would make Numba compute in float64).
    """
    w0, w1, _, _ = _block(key, uid, 0, _NOISE_LANE)
    return np.int64(((w0 << _S32) | w1) >> _S1)


@njit(cache=True, no_cfunc_wrapper=True)
def step_index(time, dt):
    """The clock's step from a kernel's ``time`` and ``dt`` (the clock keeps ``time = step · dt``)."""
    return np.int64(round(time / dt)) if dt > 0.0 else np.int64(0)


def stream_key(seed: int, species: int, stream: int) -> np.uint64:
    """The 64-bit Philox key of one behaviour row of one species under one scenario seed.

    Derived through NumPy's ``SeedSequence`` (hashing every input into every output
    bit), so neighbouring seeds, species or rows give unrelated streams.
    """
    seq = np.random.SeedSequence([int(seed), _DOMAIN], spawn_key=(int(species), int(stream)))
    return seq.generate_state(1, np.uint64)[0]
