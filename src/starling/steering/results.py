"""Behaviour results: the desire contract (seed 000, 4.4.2, 6.4.1, 9.4.3).

Every velocity behaviour writes, per animal, the tuple
``(direction, direction_desire, speed, speed_desire, priority)``:

* ``direction``: unit vector (or zero when the behaviour has no opinion),
* ``direction_desire``: how much the behaviour wants that direction, in [0, weight],
* ``speed``: desired speed in m/s (>= 0),
* ``speed_desire``: how much it wants that speed, in [0, weight],
* ``priority``: small integer used by the priority allocation of the merger.

A species' results live in one stacked buffer of shape ``(behaviours, capacity, ...)``
so the merger reads every behaviour of an animal from neighbouring memory.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

ResultView = namedtuple(
    "ResultView", ["direction", "direction_desire", "speed", "speed_desire", "priority"]
)
ResultView.__doc__ = """One behaviour's results for the first ``n`` animals (views, no copies).

direction (n,3) float32, direction_desire (n,) float32, speed (n,) float32,
speed_desire (n,) float32, priority (n,) int16.
"""


class VelocityResults:
    """Stacked per-behaviour result arrays of one species, grown by capacity."""

    def __init__(self, behaviours: int, capacity: int = 0):
        self.behaviours = behaviours
        self.capacity = 0
        self._allocate(max(capacity, 16))

    def _allocate(self, capacity: int) -> None:
        m = self.behaviours
        self.direction = np.zeros((m, capacity, 3), np.float32)
        self.direction_desire = np.zeros((m, capacity), np.float32)
        self.speed = np.zeros((m, capacity), np.float32)
        self.speed_desire = np.zeros((m, capacity), np.float32)
        self.priority = np.zeros((m, capacity), np.int16)
        self.capacity = capacity

    def ensure(self, n: int) -> None:
        """Make room for ``n`` animals; grows geometrically so steps never reallocate."""
        if n > self.capacity:
            self._allocate(max(n, int(self.capacity * 1.5) + 1))

    def view(self, j: int, n: int) -> ResultView:
        return ResultView(
            self.direction[j, :n],
            self.direction_desire[j, :n],
            self.speed[j, :n],
            self.speed_desire[j, :n],
            self.priority[j, :n],
        )

    def stacked(self, n: int):
        """All behaviours' arrays for the first ``n`` animals, for the merger."""
        return (
            self.direction[:, :n],
            self.direction_desire[:, :n],
            self.speed[:, :n],
            self.speed_desire[:, :n],
            self.priority[:, :n],
        )

    def clear(self, j: int, n: int) -> None:
        """Reset behaviour ``j`` to "no opinion" (a disabled behaviour)."""
        self.direction[j, :n] = 0.0
        self.direction_desire[j, :n] = 0.0
        self.speed[j, :n] = 0.0
        self.speed_desire[j, :n] = 0.0
