"""The ecology's neighbour questions: the brute-force kernels against the grid, and by hand.

``Perception.count`` (how many an animal sees, and the nearest) and
``Perception.nearest_in_reach`` (what a mouth reaches) answer small questions with
brute-force kernels and large ones with the grid; both paths must agree bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest

from starling.ecology import perception as P
from starling.ecology.perception import Perception


def _cloud(rng, n, side):
    pos = (rng.random((n, 3)) * side).astype(np.float32)
    fwd = rng.normal(size=(n, 3)).astype(np.float32)
    fwd /= np.linalg.norm(fwd, axis=1, keepdims=True)
    fwd[rng.random(n) < 0.1] = 0.0  # a few see all around
    pos[:5] = pos[5]  # coincident animals: ties at distance 0
    return pos, fwd


@pytest.fixture
def grid_always(monkeypatch):
    """Every question goes through the grid, however small."""
    monkeypatch.setattr(P, "BRUTE_MAX_PAIRS", -1)


def test_a_count_by_hand():
    # A at the origin looking along +x; B 1 m ahead, C 2 m behind, D 3 m ahead (out of reach)
    pos = np.array([[0, 0, 0], [1, 0, 0], [-2, 0, 0], [3, 0, 0]], np.float32)
    fwd = np.array([[1, 0, 0]] * 4, np.float32)
    total, nearest, distance = Perception().count(pos[:1], fwd[:1], pos, np.array([0]), 2.5, 360.0)
    assert total.tolist() == [2] and nearest.tolist() == [1] and distance.tolist() == [1.0]
    total, nearest, distance = Perception().count(pos[:1], fwd[:1], pos, np.array([0]), 2.5, 180.0)
    assert total.tolist() == [1] and nearest.tolist() == [1]  # C is behind: outside a 180° view
    total, nearest, distance = Perception().count(pos[2:3], fwd[2:3], pos, np.array([2]), 1.5, 360.0)
    assert total.tolist() == [0] and nearest.tolist() == [-1] and np.isinf(distance[0])


@pytest.mark.parametrize("fov", [360.0, 240.0])
def test_counts_and_nearest_are_the_same_through_the_grid(fov, monkeypatch):
    rng = np.random.default_rng(2)
    pos, fwd = _cloud(rng, 400, 20.0)
    others, _ = _cloud(rng, 300, 20.0)
    answers = []
    for limit in (1 << 30, -1):  # brute force, then the grid
        monkeypatch.setattr(P, "BRUTE_MAX_PAIRS", limit)
        per = Perception()
        same = [a.copy() for a in per.count(pos, fwd, pos, np.arange(400), 3.0, fov)]
        cross = [a.copy() for a in per.count(pos, fwd, others, np.full(400, -1), 3.0, fov)]
        answers.append((same, cross))
    for brute, grid in zip(answers[0], answers[1]):
        for a, b in zip(brute, grid):
            np.testing.assert_array_equal(a, b)
    assert answers[0][0][0].max() > 3 and (answers[0][0][1] >= 0).mean() > 0.5  # crowded enough to mean something


def test_the_nearest_in_reach_is_the_same_through_the_grid_call_after_call(monkeypatch):
    """The grid's question stops early (it reads only the nearest): across calls on moving
    mouths, with rows left by the last call as hints, it still answers as brute force does."""
    rng = np.random.default_rng(4)
    mouths, _ = _cloud(rng, 500, 15.0)
    food, _ = _cloud(rng, 400, 15.0)
    use = rng.random(500) < 0.8
    grid_per = Perception()
    for call in range(4):
        monkeypatch.setattr(P, "BRUTE_MAX_PAIRS", 1 << 30)
        *want, want_found = Perception().nearest_in_reach(mouths, use, food, 2.0)
        want = [a.copy() for a in want]
        monkeypatch.setattr(P, "BRUTE_MAX_PAIRS", -1)
        got = grid_per.nearest_in_reach(mouths, use, food, 2.0)
        np.testing.assert_array_equal(got[0], want[0], err_msg=f"nearest, call {call}")
        np.testing.assert_array_equal(got[1], want[1], err_msg=f"distance, call {call}")
        assert got[2] == want_found == (want[0] >= 0).sum() > 200, f"points that found one, call {call}"
        mouths = mouths + rng.normal(scale=0.05, size=mouths.shape).astype(np.float32)


def test_nobody_in_reach_and_no_targets(grid_always):
    per = Perception()
    pts = np.zeros((3, 3), np.float32)
    nearest, distance, found = per.nearest_in_reach(pts, np.ones(3, bool), np.zeros((0, 3), np.float32), 1.0)
    assert nearest.tolist() == [-1, -1, -1] and np.isinf(distance).all() and found == 0
    far = np.full((2, 3), 50.0, np.float32)
    nearest, distance, found = per.nearest_in_reach(pts, np.array([True, False, True]), far, 1.0)
    assert nearest.tolist() == [-1, -1, -1] and np.isinf(distance).all() and found == 0
