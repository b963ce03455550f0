"""A CPU kernel's animal loop becomes a CUDA kernel (starling.cuda.translate), run here on Numba's simulator."""
import math

import numpy as np
import pytest
from numba import cuda, njit, prange

from starling.cuda.translate import LOCAL_MAX, DeviceUnsupported, device_kernel


@njit(cache=False)
def _halve(x):
    return 0.5 * x


def skip_and_stop(values, limit, out):
    """Exercises what the rewrite must keep apart: the loop's own continue, a nested loop's continue and break."""
    n = values.shape[0]
    for i in prange(n):
        if values[i] < 0.0:
            out[i] = -1.0
            continue  # this animal is done: the thread ends
        total = 0.0
        for j in range(n):
            if j == i:
                continue  # the inner loop's: skips one term only
            total += _halve(values[j])
            if total > 1e6:
                break  # the inner loop's too
        if total > limit:
            out[i] = limit
            continue
        out[i] = total


def scratch_sort(lo, hi, keys, out):
    """A per-animal scratch array made before the loop (the merger's ``order``)."""
    m = keys.shape[1]
    order = np.empty(m, np.int64)
    for i in range(lo, hi):
        for j in range(m):
            order[j] = j
        for j in range(1, m):
            key = order[j]
            k = j - 1
            while k >= 0 and keys[i, order[k]] > keys[i, key]:
                order[k + 1] = order[k]
                k -= 1
            order[k + 1] = key
        for j in range(m):
            out[i, j] = order[j]


def test_loop_level_continue_ends_the_thread_and_an_inner_continue_stays_in_its_loop():
    values = np.array([1.0, -2.0, 3.0, 0.5, -1.0, 2.0], np.float64)
    kernel = device_kernel(skip_and_stop)
    sums = [0.5 * (values.sum() - v) for v in values]  # 1.25, 2.75, 0.25, 1.5, 2.25, 0.75
    for limit in (100.0, 1.0):
        out = np.zeros(6)
        kernel[1, 8](values, limit, out)
        # each animal on its own: the negative ones are skipped, the others capped
        expected = [-1.0 if v < 0 else min(s, limit) for v, s in zip(values, sums)]
        np.testing.assert_allclose(out, expected)
    assert list(out) == [1.0, -1.0, 0.25, 1.0, -1.0, 0.75]


def test_a_scratch_array_before_the_loop_becomes_per_thread_memory():
    rng = np.random.default_rng(3)
    keys = rng.uniform(size=(20, 7))
    out = np.zeros((20, 7), np.int64)
    device_kernel(scratch_sort)[1, 32](0, 20, keys, out)
    np.testing.assert_array_equal(out, np.argsort(keys, axis=1, kind="stable"))
    assert LOCAL_MAX >= 7


def after_the_loop(x, out):
    for i in prange(x.shape[0]):
        out[i] = x[i]
    out[0] = 1.0


def breaks(x, out):
    for i in range(x.shape[0]):
        if x[i] < 0:
            break
        out[i] = x[i]


def two_loops(x, out):
    for i in prange(x.shape[0]):
        out[i] = x[i]
    for i in prange(x.shape[0]):
        out[i] += x[i]


def stepped(x, out):
    for i in range(0, x.shape[0], 2):
        out[i] = x[i]


def no_loop(x, out):
    out[0] = math.sqrt(x[0])


def nested_prange(x, out):
    for i in prange(x.shape[0]):
        for j in prange(3):
            out[i] += x[j]


@pytest.mark.parametrize("func, reason", [
    (after_the_loop, "code after the animal loop"),
    (two_loops, "not one loop over the animals"),
    (breaks, "a GPU thread can only end itself"),
    (stepped, r"not `range\(n\)`, `range\(lo, hi\)` or `prange\(n\)`"),
    (no_loop, "not one loop over the animals"),
    (nested_prange, "uses `prange` other than as its animal loop"),
])
def test_a_kernel_that_is_not_one_animal_loop_is_refused_with_the_reason(func, reason):
    with pytest.raises(DeviceUnsupported, match=reason):
        device_kernel(func)


def test_the_simulator_is_what_the_tests_run_on():
    # tests/conftest.py sets NUMBA_ENABLE_CUDASIM=1 unless STARLING_TEST_GPU=1 asks for the real device
    from starling.cuda import device_name, simulated, unavailable_reason

    assert unavailable_reason() is None
    assert simulated() == (device_name() == "simulator")
    assert cuda.is_available()


@njit(cache=False)
def _countdown(x):
    return 0.0 if x <= 0 else _countdown(x - 1.0)


def recursive_helper(x, out):
    for i in prange(x.shape[0]):
        out[i] = _countdown(x[i])


def test_a_recursive_helper_is_refused_by_name():
    with pytest.raises(DeviceUnsupported, match="helper _countdown calls itself"):
        device_kernel(recursive_helper)
