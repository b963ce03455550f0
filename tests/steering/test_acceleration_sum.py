"""The acceleration_sum merger (seed 002): a = acceleration · Σ desire · direction, handed on as v + a · 1 s."""
import numpy as np
import pytest

from starling.steering.mergers import STEERING_HORIZON
from starling.steering.registry import get_merger


def _stacked(direction, desire):
    direction = np.asarray(direction, np.float32)
    desire = np.asarray(desire, np.float32)
    m, n = desire.shape
    return (direction, desire, np.zeros((m, n), np.float32), np.zeros((m, n), np.float32), np.zeros((m, n), np.int16))


@pytest.mark.parametrize("parallel", [False, True])
def test_the_weighted_unit_vectors_add_up_to_one_acceleration(parallel):
    spec = get_merger("acceleration_sum")
    p = spec.params(kind="acceleration_sum", acceleration=10.0)
    # fish 0: (1, 0, 0) with desire 0.5 and (0, 0, 1) with 0.2 -> a = 10 (0.5, 0, 0.2) = (5, 0, 2)
    # fish 1: (0, 1, 0) with 0.3 and (0, -1, 0) with 0.3 -> a = 0
    # fish 2: no opinion anywhere -> a = 0, it keeps its velocity
    stacked = _stacked([[[1, 0, 0], [0, 1, 0], [0, 0, 0]], [[0, 0, 1], [0, -1, 0], [0, 0, 0]]],
                       [[0.5, 0.3, 0.0], [0.2, 0.3, 0.0]])
    velocity = np.array([[1, 2, 3], [0, 0, 4], [-1, 0, 0]], np.float32)
    desired = np.zeros((3, 3), np.float32)
    spec.run(stacked, velocity, np.zeros((3, 3), np.float32), desired, p, parallel)
    assert STEERING_HORIZON == 1.0
    np.testing.assert_allclose(desired, [[6, 2, 5], [0, 0, 4], [-1, 0, 0]], atol=1e-6)


def test_priorities_and_speeds_play_no_part():
    spec = get_merger("acceleration_sum")
    p = spec.params(kind="acceleration_sum", acceleration=4.0)
    direction, desire, speed, sdes, prio = _stacked([[[0, 0, 1]], [[1, 0, 0]]], [[0.25], [1.0]])
    speed[:] = 9.0
    sdes[:] = 1.0
    prio[0] = 7
    desired = np.zeros((1, 3), np.float32)
    spec.run((direction, desire, speed, sdes, prio), np.zeros((1, 3), np.float32), np.zeros((1, 3), np.float32),
             desired, p, False)
    np.testing.assert_allclose(desired, [[4.0, 0.0, 1.0]], atol=1e-6)
