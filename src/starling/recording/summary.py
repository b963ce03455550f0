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
from typing import Any, Iterator, Optional

import numpy as np

from ..metrics import first_time, occupancy, occupancy_series, predation
from .reader import RecordingError

#: the sample axes of the metric and counter tables (not series to summarise)
_AXES = ("step", "time")
#: units of the metric series (``docs/metrics.md``); the rest are counts or shares
UNITS = {"nn_distance": "m", "nn_median": "m", "nn_sd": "m", "nn_min": "m", "nn_p5": "m", "nn_p95": "m",
         "mean_speed": "m/s", "speed_sd": "m/s", "speed_min": "m/s", "speed_max": "m/s",
         "density": "1/m² or 1/m³"}


def density_unit(config: dict, species: str) -> str:
    """``1/m²`` for a species on a plane or the ground (as ``Simulation.metrics`` counts it), else ``1/m³``."""
    for sp in (config or {}).get("species", ()):
        if sp.get("name") == species:
            mover = sp.get("mover") or {}
            flat = mover.get("kind") in ("planar", "ground") or mover.get("planar") is True
            return "1/m²" if flat else "1/m³"
    return UNITS["density"]


def metric_unit(summary: dict, key: str) -> str:
    """The unit of a metric row; density's when every species shares one."""
    if key == "density":
        units = {s.get("density_unit", UNITS["density"]) for s in summary["species"].values()}
        return units.pop() if len(units) == 1 else UNITS["density"]
    return UNITS.get(key, "")


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
                result = value(*args, **kwargs)
            except RecordingError:
                raise
            except Exception as exc:
                raise self._damaged(exc) from None
            return self._iterated(result) if isinstance(result, Iterator) else result
        return guarded

    def _iterated(self, items: Iterator):
        """A generator's items, read under the same guard (``blocks`` reads as it goes)."""
        while True:
            try:
                item = next(items)
            except StopIteration:
                return
            except RecordingError:
                raise
            except Exception as exc:
                raise self._damaged(exc) from None
            yield item


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


def alive_counts(rec, population: str) -> np.ndarray:
    """Animals alive in each frame, read one block at a time (a long recording's uids need not fit in memory)."""
    parts = [np.count_nonzero(block["uid"] >= 0, axis=1) for _, block in rec.blocks(population)]
    return np.concatenate(parts)[: rec.n_frames] if parts else np.zeros(0, np.int64)


def occupancy_over_time(rec, species: str) -> np.ndarray:
    """``(F, states)``: the share of the living in each brain state per frame (NaN with nobody alive)."""
    n = len(rec.state_names(species))
    parts = [occupancy_series(block["state"], block["uid"] >= 0, n) for _, block in rec.blocks(species)]
    return np.concatenate(parts)[: rec.n_frames] if parts else np.zeros((0, n))


def frames_seen(rec, species: str) -> tuple[np.ndarray, np.ndarray]:
    """Every uid of ``species`` and in how many frames it is alive (uids ascending)."""
    counts: Counter = Counter()
    for _, block in rec.blocks(species):
        ids, n = np.unique(block["uid"][block["uid"] >= 0], return_counts=True)
        counts.update(dict(zip(ids.tolist(), n.tolist())))
    ids = np.array(sorted(counts), np.int64)
    return ids, np.array([counts[i] for i in ids.tolist()], np.int64)


def population_summary(counts) -> dict:
    """First, final, min and max of the alive count per frame."""
    counts = np.asarray(counts).reshape(-1)
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
        "population": population_summary(alive_counts(rec, name)),
        "metrics": {k: series_summary(v) for k, v in series.items() if k not in _AXES},
        "counters": {k: _count(v) for k, v in counters.items() if k not in _AXES},
        "deaths_by_cause": deaths_by_cause(rec.events, name),
        "occupancy": final_occupancy(rec, name),
        "density_unit": density_unit(rec.config, name),
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
        "entities": {name: population_summary(alive_counts(rec, name))
                     for name in rec.populations if name not in rec.species},
        "events": dict(sorted(Counter(e.get("kind", "?") for e in rec.events).items())),
    }


# ------------------------------------------------------------------------------------------------ text
def number_text(value, digits: int = 3) -> str:
    """A summary value as table text: ``–`` for None, floats to ``digits`` significant digits."""
    if value is None:
        return "–"
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def run_text(summary: dict) -> str:
    """One line about the run: file, scenario, seed, steps, simulated time, dt, frames."""
    return (f"{summary['file']}: {summary['scenario']}, seed {summary['seed']}, {summary['steps']} steps "
            f"({summary['duration_s']:.4g} s at dt {summary['dt']:.4g} s), {summary['frames']} frames every "
            f"{summary['every']} steps ({summary['precision']})"
            + ("" if summary["complete"] else "; incomplete: the writer stopped early"))


def states_text(species: dict) -> str:
    """``normal 61%, afraid 39%``: a species' state shares at the end ('' without a brain)."""
    return ", ".join(f"{k} {v:.0%}" if v is not None else f"{k} –" for k, v in species["occupancy"].items())


def species_table(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the per-species table (population, deaths, predation) as text."""
    header = ["species", "alive first → final", "min–max", "deaths by cause", "catches", "bites", "first catch"]
    rows = []
    for name, s in summary["species"].items():
        pop, pred = s["population"], s.get("predation") or {}
        first = pred.get("time_to_first_catch")
        rows.append([name, f"{number_text(pop['first'])} → {number_text(pop['final'])}",
                     f"{number_text(pop['min'])}–{number_text(pop['max'])}",
                     ", ".join(f"{c} {n}" for c, n in s["deaths_by_cause"].items()) or "none",
                     number_text(pred.get("catches")), number_text(pred.get("bites")),
                     f"{first:.4g} s" if first is not None else "–"])
    return header, rows


def metrics_table(summary: dict) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the metric table: per metric its unit, then final and mean per species.

    Both are empty when the recording has no metric samples.
    """
    names = list(summary["species"])
    keys: list[str] = []
    for s in summary["species"].values():
        keys += [k for k in s["metrics"] if k not in keys]
    if not keys:
        return [], []
    header = ["metric", "unit", *[f"{n} {what}" for n in names for what in ("final", "mean")]]
    rows = []
    for key in keys:
        cells = [key, metric_unit(summary, key)]
        for n in names:
            m = summary["species"][n]["metrics"].get(key, {})
            cells += [number_text(m.get("final")), number_text(m.get("mean"))]
        rows.append(cells)
    return header, rows
