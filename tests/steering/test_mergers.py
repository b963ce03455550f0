"""The mergers against hand-computed values and the constraints of seed 000, 4.2."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from starling.steering.mergers import MERGERS, merge

X = (1.0, 0.0, 0.0)
Y = (0.0, 1.0, 0.0)
Z = (0.0, 0.0, 1.0)


def stack(results):
    """results: list of (direction, direction_desire, speed, speed_desire, priority) for one animal."""
    m = len(results)
    direction = np.zeros((m, 1, 3), np.float32)
    dd = np.zeros((m, 1), np.float32)
    sp = np.zeros((m, 1), np.float32)
    sd = np.zeros((m, 1), np.float32)
    pr = np.zeros((m, 1), np.int16)
    for j, (d, a, s, b, p) in enumerate(results):
        direction[j, 0] = d
        dd[j, 0] = a
        sp[j, 0] = s
        sd[j, 0] = b
        pr[j, 0] = p
    return direction, dd, sp, sd, pr


def run(results, kind="priority_desire", velocity=(0.0, 0.0, 2.0), max_desire=1.0, parallel=False):
    vel = np.array([velocity], np.float32)
    fwd = np.array([[0, 0, 1]], np.float32)
    out = np.zeros((1, 3), np.float32)
    merge(kind, stack(results), vel, fwd, out, max_desire=max_desire, parallel=parallel)
    return out[0]


@pytest.mark.parametrize("kind", ["priority_desire", "weighted_mean", "first_non_zero"])
def test_a_single_result_passes_through_unchanged(kind):
    out = run([(Z, 0.3, 4.0, 0.2, 0)], kind)
    np.testing.assert_allclose(out, [0, 0, 4.0], atol=1e-6)


def test_a_top_priority_result_with_desire_one_takes_full_lead():
    out = run([(X, 1.0, 2.0, 1.0, 5), (Z, 0.9, 9.0, 0.9, 1), (Y, 0.5, 1.0, 0.5, 0)])
    np.testing.assert_allclose(out, [2.0, 0, 0], atol=1e-6)


def test_the_last_admitted_result_is_trimmed_to_the_remaining_budget():
    # priorities 3, 2, 1 with desires 0.5, 0.7, 0.4: the second is trimmed to 0.5, the third is out
    out = run([(X, 0.5, 2.0, 0.5, 3), (Z, 0.7, 4.0, 0.7, 2), (Y, 0.4, 10.0, 0.4, 1)])
    # direction (0.5 x + 0.5 z) normalised; speed (2*0.5 + 4*0.5) / 1 = 3
    h = math.sqrt(0.5)
    np.testing.assert_allclose(out, [3 * h, 0, 3 * h], atol=1e-5)


def test_results_of_equal_priority_are_merged_before_the_allocation():
    # two results at priority 2 sum to 1.2 > 1: both are scaled to 0.5, priority 1 gets nothing
    out = run([(X, 0.6, 1.0, 0.6, 2), (Z, 0.6, 3.0, 0.6, 2), (Y, 0.5, 50.0, 0.5, 1)])
    h = math.sqrt(0.5)
    np.testing.assert_allclose(out, [2 * h, 0, 2 * h], atol=1e-5)


def test_direction_and_speed_use_separate_budgets():
    # the first result spends the whole direction budget but has no opinion on speed
    out = run([(X, 1.0, 0.0, 0.0, 3), (Z, 0.5, 5.0, 0.5, 1)])
    np.testing.assert_allclose(out, [5.0, 0, 0], atol=1e-6)


@pytest.mark.parametrize("kind", MERGERS)
def test_no_desire_at_all_keeps_the_current_velocity(kind):
    out = run([(X, 0.0, 0.0, 0.0, 3), (Z, 0.0, 9.0, 0.0, 1)], kind, velocity=(1.0, 2.0, 2.0))
    np.testing.assert_allclose(out, [1.0, 2.0, 2.0], atol=1e-6)
    assert np.isfinite(out).all()


def test_opposite_equal_desires_keep_the_current_heading():
    out = run([(X, 0.4, 3.0, 0.4, 1), ((-1.0, 0.0, 0.0), 0.4, 3.0, 0.4, 1)], velocity=(0.0, 0.0, 2.0))
    np.testing.assert_allclose(out, [0, 0, 3.0], atol=1e-6)


def test_weighted_mean_ignores_priorities():
    out = run([(X, 0.2, 2.0, 0.2, 9), (Z, 0.6, 6.0, 0.2, 0)], "weighted_mean")
    d = np.array([0.2, 0, 0.6])
    d /= np.linalg.norm(d)
    np.testing.assert_allclose(out, d * 4.0, atol=1e-5)  # speed (2*.2 + 6*.2) / .4 = 4


def test_weighted_sum_adds_scaled_velocities_without_normalising():
    # Reynolds' weighted sum: 0.5 * (x * 2) + 0.25 * (z * 4); the speed of a result without
    # speed opinion is the current speed (2 here)
    out = run([(X, 0.5, 2.0, 0.5, 0), (Z, 0.25, 4.0, 0.5, 0), (Y, 0.5, 0.0, 0.0, 0)], "weighted_sum")
    np.testing.assert_allclose(out, [1.0, 1.0, 1.0], atol=1e-6)


def test_first_non_zero_lets_the_highest_active_level_decide_alone():
    out = run([(X, 0.0, 1.0, 0.0, 9), (Z, 0.1, 3.0, 0.1, 5), (Y, 0.9, 8.0, 0.9, 1)], "first_non_zero")
    np.testing.assert_allclose(out, [0, 0, 3.0], atol=1e-6)


def test_a_larger_budget_admits_more_results():
    out = run([(X, 0.5, 2.0, 0.5, 3), (Z, 0.7, 4.0, 0.7, 2), (Y, 0.4, 10.0, 0.4, 1)], max_desire=2.0)
    d = np.array([0.5, 0.4, 0.7])
    d /= np.linalg.norm(d)
    np.testing.assert_allclose(out, d * (1 + 2.8 + 4) / 1.6, atol=1e-5)


results_strategy = st.lists(
    st.tuples(
        st.tuples(*[st.floats(-1, 1)] * 3),
        st.floats(0, 1), st.floats(0, 50), st.floats(0, 1), st.integers(0, 6),
    ),
    min_size=0, max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(results_strategy, st.sampled_from(MERGERS), st.tuples(*[st.floats(-10, 10)] * 3))
def test_no_merger_ever_produces_nan(results, kind, velocity):
    fixed = []
    for d, a, s, b, p in results:
        v = np.array(d)
        n = np.linalg.norm(v)
        fixed.append((tuple(v / n) if n > 1e-3 else (0.0, 0.0, 0.0), a, s, b, p))
    out = run(fixed, kind, velocity=velocity)
    assert np.isfinite(out).all()


def test_parallel_and_serial_mergers_agree(rng):
    m, n = 5, 3000
    direction = rng.normal(size=(m, n, 3)).astype(np.float32)
    direction /= np.linalg.norm(direction, axis=2, keepdims=True)
    stacked = (direction, rng.random((m, n), dtype=np.float32), (rng.random((m, n)) * 5).astype(np.float32),
               rng.random((m, n), dtype=np.float32), rng.integers(0, 4, (m, n)).astype(np.int16))
    vel = rng.normal(size=(n, 3)).astype(np.float32)
    fwd = np.tile(np.array([0, 0, 1], np.float32), (n, 1))
    a = np.zeros((n, 3), np.float32)
    b = np.zeros((n, 3), np.float32)
    merge("priority_desire", stacked, vel, fwd, a, parallel=False)
    merge("priority_desire", stacked, vel, fwd, b, parallel=True)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["priority_desire", "first_non_zero"])
def test_animals_merged_together_equal_each_merged_alone(rng, kind):
    # the merger keeps an animal's priority order for the next animal while its priorities are the
    # same: runs of equal priorities, changes between neighbours and ties must not leak between animals
    m, n = 6, 400
    direction = rng.normal(size=(m, n, 3)).astype(np.float32)
    direction /= np.linalg.norm(direction, axis=2, keepdims=True)
    dd = rng.random((m, n), dtype=np.float32)
    sd = rng.random((m, n), dtype=np.float32) * (rng.random((m, n)) < 0.7)
    speed = (rng.random((m, n)) * 5).astype(np.float32)
    patterns = rng.integers(0, 3, (4, m)).astype(np.int16)  # a few patterns, each with ties
    prio = patterns[np.repeat(rng.integers(0, 4, n // 8), 8)].T.copy()  # runs of 8 animals share one
    vel = rng.normal(size=(n, 3)).astype(np.float32)
    fwd = np.tile(np.array([0, 0, 1], np.float32), (n, 1))
    together = np.zeros((n, 3), np.float32)
    merge(kind, (direction, dd, speed, sd, prio), vel, fwd, together)
    for i in range(n):
        alone = np.zeros((1, 3), np.float32)
        merge(kind, (direction[:, i:i + 1].copy(), dd[:, i:i + 1].copy(), speed[:, i:i + 1].copy(),
                     sd[:, i:i + 1].copy(), prio[:, i:i + 1].copy()), vel[i:i + 1], fwd[i:i + 1], alone)
        np.testing.assert_array_equal(together[i], alone[0])


@pytest.mark.parametrize("uniform", [True, False])
def test_the_block_merger_is_the_one_animal_merger_bit_for_bit(rng, uniform):
    # priority_desire runs a block of animals at a time (_allocate_blocks); the oracle is the
    # one-animal loop (_merge_range): zero and large desires, budgets spent part-way, ties, animals at
    # rest, counts either side of a block; priorities a behaviour's (uniform) or drawn per animal
    from starling.steering.mergers import BLOCK, _PRIORITY_DESIRE, _allocate_blocks, _merge_range

    for trial in range(150):
        m = int(rng.integers(1, 7))
        n = int(rng.choice([1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 5, int(rng.integers(2, 300))]))
        direction = rng.normal(size=(m, n, 3)).astype(np.float32)
        direction /= np.linalg.norm(direction, axis=2, keepdims=True)
        silent = rng.random((m, n)) < 0.3
        direction[silent] = 0.0
        dd = (rng.random((m, n)) * rng.choice([0.3, 1.0, 2.0])).astype(np.float32)
        dd[silent] = 0.0
        sd = (rng.random((m, n)) * 0.8).astype(np.float32) * (rng.random((m, n)) < 0.5)
        speed = (rng.random((m, n)) * 8).astype(np.float32)
        if uniform:
            prio = np.repeat(rng.integers(0, 3, m).astype(np.int16)[:, None], n, axis=1)
        else:
            prio = rng.integers(0, 3, (m, n)).astype(np.int16)
            prio[:, : n // 2] = prio[:, :1]  # some blocks uniform, the rest not
        vel = (rng.normal(size=(n, 3)) * 3).astype(np.float32)
        vel[rng.random(n) < 0.1] = 0.0
        fwd = rng.normal(size=(n, 3)).astype(np.float32)
        fwd /= np.linalg.norm(fwd, axis=1, keepdims=True)
        max_desire = float(rng.choice([1.0, 0.5, 1.7]))
        one = np.zeros((n, 3), np.float32)
        blocks = np.zeros((n, 3), np.float32)
        _merge_range(0, n, _PRIORITY_DESIRE, max_desire, direction, dd, speed, sd, prio, vel, fwd, one)
        _allocate_blocks(0, n, max_desire, direction, dd, speed, sd, prio, vel, fwd, blocks)
        assert one.tobytes() == blocks.tobytes(), (trial, m, n)
