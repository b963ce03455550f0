"""Seeded 1D gradient (Perlin) noise made uniform (seed 000, 6.4.6).

Wandering turns noise into world-space angles, so the noise must not prefer values
near zero the way raw Perlin noise does, or every animal would drift toward the same
world direction. The raw noise is pushed through its own cumulative distribution
(histogram equalisation), approximated by an odd polynomial of degree 5 so a kernel
would need no lookup table. A quintic leaves a visibly uneven histogram (about ±40 %
per tenth of the range, KS distance 0.035), so Starling uses the exact remedy at tiny
cost instead: a 257-entry table of the raw noise's quantiles, interpolated linearly
(KS distance below 0.01). The table is computed once per process from 2^18 samples
of the noise itself, deterministically.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import register_jitable

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53



# _hash and _perlin are written once for two callers: compiled into the kernels (scalars),
# and run by NumPy on arrays for the quantile table at import, which then needs no compiled
# code (loading a first kernel sets up Numba's code generator, about 0.2 s that a command
# without a simulation never needs). The same operations give the same bits;
# tests/steering/test_noise.py checks the table's samples against the kernel.


@register_jitable
def _hash(i, seed):
    """SplitMix64 of a lattice index and a seed → uniform float in [-1, 1)."""
    z = np.uint64(i) * _GOLDEN + np.uint64(seed) * _MIX2 + _GOLDEN
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    z = z ^ (z >> _S31)
    return (z >> _S11) * _TO_UNIT * 2.0 - 1.0  # the top 53 bits, converted exactly


@register_jitable
def _perlin(seed, x):
    x = x + 512.0 * (_hash(seed, 7) + 1.0)
    i0 = np.int64(np.floor(x))
    t = x - i0
    g0 = _hash(i0, seed)
    g1 = _hash(i0 + 1, seed)
    a = g0 * t
    b = g1 * (t - 1.0)
    fade = t * t * t * (t * (t * 6.0 - 15.0) + 10.0)
    return 2.0 * (a + (b - a) * fade)


@njit(cache=True, no_cfunc_wrapper=True)
def perlin1d(seed, x):
    """Raw 1D gradient noise in [-1, 1], smooth in ``x``, independent per ``seed``.

    Each seed also shifts ``x`` by its own offset in [0, 1024): gradient noise is zero
    at every lattice point, so without the shift all animals would share the same
    value (and wander the same way) whenever ``x`` crosses an integer.
    """
    return _perlin(seed, x)


def _raw_samples(count: int) -> np.ndarray:
    """``perlin1d`` at ``count`` sample points spread over many seeds and non-integer positions (NumPy)."""
    k = np.arange(count, dtype=np.int64)
    with np.errstate(over="ignore"):  # SplitMix64 multiplies modulo 2**64 by design
        return _perlin(k % 997, 0.37 + k * 0.618034)


def _quantile_table(size: int = 257) -> np.ndarray:
    raw = _raw_samples(1 << 18)
    raw = np.concatenate([raw, -raw])  # the noise is symmetric; make the table exactly so
    table = np.quantile(raw, np.linspace(0.0, 1.0, size))
    table[0], table[-1] = -1.0, 1.0
    return table


_HALVINGS = 8
QUANTILES = _quantile_table((1 << _HALVINGS) + 1)


@njit(cache=True, no_cfunc_wrapper=True)
def equalise(r):
    """Map raw noise ``r`` through its CDF (the ``QUANTILES`` table) to uniform [-1, 1].

    The table is a module constant that Numba freezes into the compiled code, so
    callers pass no array (array arguments cost reference counting per call).
    """
    table = QUANTILES
    last = table.shape[0] - 1
    if r <= table[0]:
        return -1.0
    if r >= table[last]:
        return 1.0
    # the last entry at or below r, found without branches (the halving steps are fixed:
    # _HALVINGS of them for the table's 2**_HALVINGS + 1 entries), so a wandering animal's
    # three samples do not each mispredict eight branches
    lo = 0
    step = 1 << (_HALVINGS - 1)
    for _ in range(_HALVINGS):
        lo += step * (table[lo + step] <= r)
        step >>= 1
    hi = lo + 1
    span = table[hi] - table[lo]
    frac = (r - table[lo]) / span if span > 0.0 else 0.5
    return -1.0 + 2.0 * (lo + frac) / (table.shape[0] - 1)


@njit(cache=True, no_cfunc_wrapper=True)
def uniform_noise(seed, x):
    """Smooth noise in [-1, 1] with a uniform distribution."""
    return equalise(perlin1d(seed, x))
