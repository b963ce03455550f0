"""The priority_blend merger (seed 003, "Behaviour blending: priorities") against hand-computed values."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from starling.steering.blending import priority_blend_merge
from starling.steering.mergers import merge
from starling.steering.registry import get_merger

X = (1.0, 0.0, 0.0)
Y = (0.0, 1.0, 0.0)
Z = (0.0, 0.0, 1.0)
MX = (-1.0, 0.0, 0.0)


def stack(results):
    """(direction, direction_desire, speed, speed_desire, priority) per behaviour, for one animal."""
    m = len(results)
    direction = np.zeros((m, 1, 3), np.float32)
    ddes = np.zeros((m, 1), np.float32)
    speed = np.zeros((m, 1), np.float32)
    sdes = np.zeros((m, 1), np.float32)
    prio = np.zeros((m, 1), np.int16)
    for j, (d, a, s, b, p) in enumerate(results):
        direction[j, 0] = d
        ddes[j, 0] = a
        speed[j, 0] = s
        sdes[j, 0] = b
        prio[j, 0] = p
    return direction, ddes, speed, sdes, prio


def blend(results, velocity=(2.0, 0.0, 0.0), epsilon=1e-3):
    v = np.array([velocity], np.float32)
    out = np.zeros((1, 3), np.float32)
    priority_blend_merge(stack(results), v, out, epsilon=epsilon)
    return out[0]


def test_the_highest_non_zero_group_decides_alone_as_a_weighted_sum():
    # group 3: 0.3 · x at the current speed 2 → (0.6, 0, 0); group 1 (large desires) is ignored
    out = blend([(X, 0.3, 0.0, 0.0, 3), (Z, 0.9, 5.0, 0.9, 1), (Y, 0.8, 5.0, 0.8, 1)])
    np.testing.assert_allclose(out, [0.6, 0, 0], atol=1e-6)


def test_a_group_that_cancels_out_passes_to_the_next_group():
    # group 2: 0.5 · x and 0.5 · (−x) sum to zero → skipped; group 1: 0.2 · x at the current
    # speed 2 plus 0.4 · z at its own speed 3, summed without normalising: (0.4, 0, 1.2)
    out = blend([(X, 0.5, 0.0, 0.0, 2), (MX, 0.5, 0.0, 0.0, 2), (X, 0.2, 0.0, 0.0, 1), (Z, 0.4, 3.0, 0.5, 1)])
    np.testing.assert_allclose(out, [0.4, 0, 1.2], atol=1e-6)


def test_first_non_zero_differs_on_a_cancelling_group():
    # the older merger tests the summed desires (1.0 > 0), so the cancelling group wins and
    # leaves the current heading; priority_blend tests the blended vector and moves on
    results = [(X, 0.5, 0.0, 0.0, 2), (MX, 0.5, 0.0, 0.0, 2), (Z, 0.4, 3.0, 0.5, 1)]
    v = np.array([[2.0, 0.0, 0.0]], np.float32)
    old = np.zeros((1, 3), np.float32)
    merge("first_non_zero", stack(results), v, np.array([[0, 0, 1]], np.float32), old)
    np.testing.assert_allclose(old[0], [2.0, 0, 0], atol=1e-6)
    np.testing.assert_allclose(blend(results), [0, 0, 1.2], atol=1e-6)


def test_epsilon_sets_what_counts_as_zero():
    results = [(X, 0.05, 0.0, 0.0, 2), (Z, 0.5, 0.0, 0.0, 1)]
    np.testing.assert_allclose(blend(results, epsilon=0.1), [0, 0, 1.0], atol=1e-6)   # |0.05| ≤ 0.1: skipped
    np.testing.assert_allclose(blend(results, epsilon=0.01), [0.1, 0, 0], atol=1e-6)  # 0.05 > 0.01: it decides


def test_no_opinion_anywhere_keeps_the_current_velocity():
    np.testing.assert_allclose(blend([(X, 0.0, 0.0, 0.0, 2), (Z, 0.0, 9.0, 0.0, 1)], velocity=(1, 2, 2)), [1, 2, 2])
    np.testing.assert_allclose(blend([], velocity=(1, 2, 2)), [1, 2, 2])


def test_registered_with_its_parameters():
    spec = get_merger("priority_blend")
    assert spec.accepts == ("velocity",)
    assert spec.params().epsilon == pytest.approx(1e-3)
    with pytest.raises(Exception):
        spec.params(epsilon=-1.0)


results_strategy = st.lists(
    st.tuples(st.tuples(*[st.floats(-1, 1)] * 3), st.floats(0, 1), st.floats(0, 50), st.floats(0, 1),
              st.integers(0, 6)),
    min_size=0, max_size=8)


@settings(max_examples=100, deadline=None)
@given(results_strategy, st.tuples(*[st.floats(-10, 10)] * 3))
def test_never_produces_nan(results, velocity):
    fixed = []
    for d, a, s, b, p in results:
        v = np.array(d)
        n = np.linalg.norm(v)
        fixed.append((tuple(v / n) if n > 1e-3 else (0.0, 0.0, 0.0), a, s, b, p))
    assert np.isfinite(blend(fixed, velocity=velocity)).all()


def test_parallel_and_serial_agree(rng):
    m, n = 5, 3000
    direction = rng.normal(size=(m, n, 3)).astype(np.float32)
    direction /= np.linalg.norm(direction, axis=2, keepdims=True)
    stacked = (direction, rng.random((m, n), dtype=np.float32), (rng.random((m, n)) * 5).astype(np.float32),
               rng.random((m, n), dtype=np.float32), rng.integers(0, 4, (m, n)).astype(np.int16))
    vel = rng.normal(size=(n, 3)).astype(np.float32)
    a = np.zeros((n, 3), np.float32)
    b = np.zeros((n, 3), np.float32)
    priority_blend_merge(stacked, vel, a)
    priority_blend_merge(stacked, vel, b, parallel=True)
    np.testing.assert_array_equal(a, b)
