"""Predation from counter time series: catches, bites and when the first one happened.

The ecology keeps cumulative per-species counters since the start of the run —
``caught`` (prey this species caught), ``eaten`` (bites it took, catches included) and
``deaths`` — and a recording samples them at ``times``. The functions here read such
sampled series; they are pure, so a recording, a sweep and a test feed them alike.
A first time is the first sample at which the count is positive, so it is known to
the sampling interval: the event happened in ``(times[k-1], times[k]]``.
"""
from __future__ import annotations

from typing import Optional

import numpy as np


def _series(times, cumulative) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(times, np.float64).reshape(-1)
    c = np.asarray(cumulative, np.float64).reshape(-1)
    if t.shape != c.shape:
        raise ValueError(f"predation: times {t.shape} and counts {c.shape} differ in length")
    return t, c


def total(cumulative) -> int:
    """The count at the last sample (0 for an empty series)."""
    c = np.asarray(cumulative, np.float64).reshape(-1)
    return int(c[-1]) if c.size else 0


def first_time(times, cumulative) -> Optional[float]:
    """Time of the first sample with a positive count; None when it never rises above 0."""
    t, c = _series(times, cumulative)
    hit = np.flatnonzero(c > 0)
    return float(t[hit[0]]) if hit.size else None


def increments(cumulative) -> np.ndarray:
    """Counts per sampling interval (the first sample's count is its own interval's, from 0)."""
    c = np.asarray(cumulative, np.float64).reshape(-1)
    return np.diff(c, prepend=0.0)


def predation(times, caught, eaten) -> dict:
    """Catches, bites, the times of the first of each, and catches per minute over the sampled span.

    ``caught`` and ``eaten`` are one species' cumulative counters sampled at ``times``
    (seconds since the start of the run); the rate divides by the last sample's time.
    """
    t, c = _series(times, caught)
    _, b = _series(times, eaten)
    catches = total(c)
    span = float(t[-1]) if t.size else 0.0
    return {
        "catches": catches,
        "bites": total(b),
        "time_to_first_catch": first_time(t, c),
        "time_to_first_bite": first_time(t, b),
        "catches_per_min": catches * 60.0 / span if span > 0 else None,
    }
