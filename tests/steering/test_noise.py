"""The wandering noise's equaliser: raw gradient noise mapped through its CDF table to uniform [-1, 1]."""
import numpy as np
from numba import njit

from starling.steering.noise import QUANTILES, _raw_samples, equalise, perlin1d, uniform_noise


@njit
def _raw_samples_by_kernel(count):
    out = np.empty(count)
    for k in range(count):
        out[k] = perlin1d(k % 997, 0.37 + k * 0.618034)
    return out


def test_the_table_samples_computed_in_numpy_are_the_kernel_noise_bit_for_bit():
    """The quantile table is built from NumPy samples; they must be perlin1d's own values, or the
    equaliser would flatten a distribution slightly different from the one wandering draws from."""
    count = 1 << 18
    numpy_samples = _raw_samples(count)
    assert np.array_equal(numpy_samples.view(np.int64), _raw_samples_by_kernel(count).view(np.int64))
    # and the samples cover the noise's range, over many seeds
    assert numpy_samples.min() < -0.9 and numpy_samples.max() > 0.9


def _equalise_by_bisection(r: float) -> float:
    """The equaliser as plainly written: bisect the table for table[lo] <= r < table[lo + 1]."""
    table = QUANTILES
    lo, hi = 0, table.shape[0] - 1
    if r <= table[0]:
        return -1.0
    if r >= table[hi]:
        return 1.0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if table[mid] <= r:
            lo = mid
        else:
            hi = mid
    span = table[hi] - table[lo]
    frac = (r - table[lo]) / span if span > 0.0 else 0.5
    return -1.0 + 2.0 * (lo + frac) / (table.shape[0] - 1)


def test_the_branch_free_search_equals_bisection_bit_for_bit():
    rng = np.random.default_rng(3)
    values = np.concatenate([
        rng.uniform(-1.2, 1.2, 20_000),
        QUANTILES,  # exactly on every entry
        np.nextafter(QUANTILES, np.inf), np.nextafter(QUANTILES, -np.inf),
    ])
    for r in values.tolist():
        assert equalise(r) == _equalise_by_bisection(r), r


def test_hand_computed_ends_and_middle():
    assert equalise(-5.0) == -1.0 and equalise(QUANTILES[0]) == -1.0
    assert equalise(5.0) == 1.0 and equalise(QUANTILES[-1]) == 1.0
    # the table is symmetric, so the middle entry is raw 0 and maps to 0
    assert QUANTILES.shape[0] == 257 and equalise(QUANTILES[128]) == 0.0
    # a quarter of the way along the table is -0.5
    assert equalise(QUANTILES[64]) == -0.5


def test_uniform_noise_is_uniform_and_smooth():
    seeds = np.arange(400)
    samples = np.array([uniform_noise(int(s), 0.37 + 13.1 * k) for s in seeds for k in range(25)])
    hist, _ = np.histogram(samples, bins=10, range=(-1, 1))
    assert hist.min() > 0.8 * samples.size / 10 and hist.max() < 1.2 * samples.size / 10
    x = np.linspace(0.0, 3.0, 3001)
    path = np.array([perlin1d(7, v) for v in x.tolist()])
    assert np.max(np.abs(np.diff(path))) < 0.01  # steps of 0.001 move the raw noise by little
