"""The journal: what happened, step by step — deaths, births, the player's actions, edits.

Arrays say where every animal is; they cannot say that animal 412 was caught at
step 930 or that the user doubled the cohesion weight at step 1200. Whoever changes
the world structurally writes one entry here (the command buffer for deaths and
births, the ecology for causes and scripted events, the simulation for the player and
for edits), and watchers such as the recorder read what is new with :meth:`since`.

It is bounded (a run that nobody watches must not grow without end): a reader that
falls more than ``maxlen`` entries behind loses the oldest and is told how many.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Optional, Sequence

import numpy as np


class Journal:
    """Entries ``{"seq", "step", "time", "kind", "species", "uid", "position", "detail"}`` in order."""

    def __init__(self, clock, maxlen: int = 200_000):
        self._clock = clock
        self._entries: deque = deque(maxlen=maxlen)
        self._next = 0

    @property
    def next_seq(self) -> int:
        """The sequence number the next entry will get (a reader starts from here)."""
        return self._next

    def log(self, kind: str, species: Optional[str] = None, uid: Optional[int] = None,
            position: Optional[Sequence[float]] = None, **detail: Any) -> None:
        """Add one entry, stamped with the current step and time."""
        self._entries.append({
            "seq": self._next, "step": int(self._clock.step), "time": float(self._clock.time), "kind": kind,
            "species": species, "uid": None if uid is None else int(uid),
            "position": None if position is None else [float(x) for x in position],
            "detail": detail,
        })
        self._next += 1

    def log_many(self, kind: str, species: str, uids: np.ndarray, positions: np.ndarray, **detail: Any) -> None:
        """One entry per animal (deaths and births come in batches)."""
        for uid, position in zip(uids.tolist(), np.asarray(positions, np.float64).tolist()):
            self.log(kind, species, uid, position, **detail)

    def since(self, seq: int) -> tuple[list[dict], int, int]:
        """``(entries from seq on, the next seq to ask for, how many were lost to the bound)``."""
        if not self._entries or seq >= self._next:
            return [], self._next, 0
        first = self._entries[0]["seq"]
        lost = max(0, first - seq)
        start = max(seq, first) - first
        entries = [self._entries[i] for i in range(start, len(self._entries))]
        return entries, self._next, lost
