"""What a recording amounts to: one dict per species that ``starling metrics`` prints and reports show.

Per species: the final value and the run's mean of every recorded metric series, the
population (first, final, min, max over the frames), deaths by cause (from the death
events), catches and bites (from the counters, with the time of the first of each),
and the share of the animals in each brain state at the last frame. Entity populations
(apples, sounds, the player, …) get their counts only. Everything is plain JSON: numbers,
None where a value does not exist (no sample, no animal), never NaN.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Optional

import numpy as np

from ..metrics import first_time, occupancy, predation
from .reader import RecordingError

#: counter series that are not counts
_AXES = ("step", "time")


class Checked:
    """A recording whose every read turns a failure of the store into one :class:`RecordingError`.

    A chunk cut short or corrupted surfaces deep inside Zarr's codecs as whatever error
    the codec raises; reports read many arrays, and each such failure means the same to
    the user: this file is damaged. The message names the file and the codec's reason.
    """

    def __init__(self, rec):
        self._rec = rec

    def _damaged(self, exc: Exception) -> RecordingError:
        return RecordingError(f"{getattr(self._rec, 'path', 'recording')}: damaged or truncated recording "
                              f"({type(exc).__name__}: {exc})")

    def __getattr__(self, name: str):
        try:
            value = getattr(self._rec, name)
        except RecordingError:
            raise
        except Exception as exc:
            raise self._damaged(exc) from None
        if not callable(value):
            return value

        def guarded(*args, **kwargs):
            try:
                return value(*args, **kwargs)
            except RecordingError:
                raise
            except Exception as exc:
                raise self._damaged(exc) from None
        return guarded


def checked(rec):
    """``rec`` wrapped in :class:`Checked` (once)."""
    return rec if isinstance(rec, Checked) else Checked(rec)


def _number(x) -> Optional[float]:
    """A float, or None for NaN / missing (JSON has no NaN)."""
    if x is None:
        return None
    x = float(x)
    return None if np.isnan(x) else x


def _count(series) -> Optional[int]:
    """A counter's last sample as an int (None when it was not sampled)."""
    last = _number(np.asarray(series, np.float64)[-1])
    return None if last is None else int(last)


def series_summary(values) -> dict:
    """``{"final", "mean"}`` of one metric series: the last sample and the mean over the samples that exist."""
    v = np.asarray(values, np.float64).reshape(-1)
    known = v[~np.isnan(v)]
    return {"final": _number(v[-1]) if v.size else None,
            "mean": float(known.mean()) if known.size else None}


def population_summary(alive: np.ndarray) -> dict:
    """First, final, min and max of the alive count per frame (``alive``: (F, capacity) booleans)."""
    counts = np.asarray(alive, bool).reshape(len(alive), -1).sum(axis=1)
    if counts.size == 0:
        return {"first": None, "final": None, "min": None, "max": None}
    return {"first": int(counts[0]), "final": int(counts[-1]), "min": int(counts.min()), "max": int(counts.max())}


def deaths_by_cause(events: list[dict], species: str) -> dict[str, int]:
    """Counts of the death events of ``species`` by ``detail.cause`` (``unknown`` when the event names none)."""
    causes = Counter((e.get("detail") or {}).get("cause", "unknown") for e in events
                     if e.get("kind") == "death" and e.get("species") == species)
    return dict(sorted(causes.items(), key=lambda kv: (-kv[1], kv[0])))


def final_occupancy(rec, species: str) -> dict[str, Optional[float]]:
    """Share of the animals alive in the last frame in each brain state ({} without a brain or frames)."""
    names = rec.state_names(species)
    if not names or rec.n_frames == 0:
        return {}
    frame = rec.frame(rec.n_frames - 1)[species]
    return {k: _number(v) for k, v in occupancy(frame.state, names).items()}


def _species(rec, name: str) -> dict:
    series = rec.metrics.get(name, {})
    counters = rec.counters.get(name, {})
    if not len(series.get("time", ())):  # recorded with --metrics-every 0: no samples, no series
        series = {}
    if not len(counters.get("time", ())):
        counters = {}
    out: dict[str, Any] = {
        "population": population_summary(rec.array(name, "alive")),
        "metrics": {k: series_summary(v) for k, v in series.items() if k not in _AXES},
        "counters": {k: _count(v) for k, v in counters.items() if k not in _AXES},
        "deaths_by_cause": deaths_by_cause(rec.events, name),
        "occupancy": final_occupancy(rec, name),
    }
    if "time" in counters and ("caught" in counters or "eaten" in counters):
        zeros = np.zeros(len(counters["time"]))
        out["predation"] = predation(counters["time"], counters.get("caught", zeros), counters.get("eaten", zeros))
        out["predation"]["time_to_first_catch"] = first_catch_time(
            counters["time"], counters.get("caught", zeros), rec.events)
    return out


def first_catch_time(times, caught, events: list[dict]) -> Optional[float]:
    """When a species first caught prey, to the step where the journal allows.

    The counter says in which sampling interval ``(t[k-1], t[k]]`` the first catch fell;
    the earliest death by ``caught`` in that interval is that catch (the counter and
    the death are written in the same step). Without such an event, ``t[k]``.
    """
    t = np.asarray(times, np.float64)
    at = first_time(t, caught)
    if at is None:
        return None
    k = int(np.searchsorted(t, at))
    lo = t[k - 1] if k > 0 else -np.inf
    inside = [float(e["time"]) for e in events if e.get("kind") == "death"
              and (e.get("detail") or {}).get("cause") == "caught" and lo < float(e.get("time", np.nan)) <= at]
    return min(inside) if inside else at


def summarize(rec) -> dict:
    """The summary of a recording (see the module); ``rec`` is what ``open_recording`` returns.

    Raises :class:`RecordingError` when a part of the store cannot be read.
    """
    rec = checked(rec)
    steps = np.asarray(rec.steps)
    times = np.asarray(rec.times)
    return {
        "file": str(getattr(rec, "path", "")),
        "complete": bool(getattr(rec, "complete", True)),
        "scenario": rec.scenario,
        "seed": int(rec.seed),
        "dt": float(rec.dt),
        "every": int(rec.every),
        "precision": rec.precision,
        "frames": int(rec.n_frames),
        "steps": int(steps[-1]) if steps.size else 0,
        "duration_s": float(times[-1]) if times.size else 0.0,
        "species": {name: _species(rec, name) for name in rec.species},
        "entities": {name: population_summary(rec.array(name, "alive"))
                     for name in rec.populations if name not in rec.species},
        "events": dict(sorted(Counter(e.get("kind", "?") for e in rec.events).items())),
    }
