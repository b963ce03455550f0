"""The recorder: an observer that writes a run into a Zarr store as it goes.

Frames are buffered in memory and written a block at a time (one chunk of every
array), so the cost per step is a few array copies and the compression happens once a
block. A block's ``frames/step`` entries are written after all its arrays: a reader
trusts only frames whose step is set, so a process killed at any moment leaves a
recording holding every block it finished. ``flush()`` also writes a part block (the
live server calls it every few seconds, so a crash loses seconds, not a block).

Positions at ``float16`` are stored relative to the population's centre in that frame
(kept as float64): float16 has 11 significant bits, which is 0.25 m at 500 m from the
origin but 2 cm across a 50 m flock.
"""
from __future__ import annotations

import datetime
import json
import math
import time
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import zarr
from zarr.codecs import BloscCodec

from .. import __version__
from ..frames import pack_orientations
from .layout import ATTRS, FILL, FORMAT, PRECISIONS, counter_column, series_column

BLOCK_BYTES = 4 << 20
"""Aim for blocks of about this many bytes of positions (a chunk size Zarr and the OS handle well)."""
MAX_BLOCK_FRAMES = 128
SERIES_CHUNK = 1024
EVENTS_CHUNK = 1 << 16
STRUCTURAL = ("death", "despawn", "spawn")


def _compressor(itemsize: int) -> BloscCodec:
    # Byte shuffle groups the high bytes of neighbouring values, which is what makes
    # positions and uids compress (zstd alone barely touches float16 noise).
    return BloscCodec(cname="zstd", clevel=3, shuffle="shuffle", typesize=itemsize)


class _Population:
    """One population's block buffer and its arrays in the store."""

    def __init__(self, group: zarr.Group, name: str, capacity: int, block: int, dtype: np.dtype):
        self.name = name
        self.dtype = dtype
        self.capacity = capacity
        self.block = block
        g = group.require_group(name)
        # uids fit 32 bits (two billion animals a run): half the bytes to write, compress and read back
        shapes = {"uid": ((capacity,), np.int32), "origin": ((3,), np.float64),
                  "position": ((capacity, 3), dtype), "velocity": ((capacity, 3), dtype),
                  "orientation": ((capacity,), np.uint32), "state": ((capacity,), np.int16)}
        self.arrays = {
            field: g.create_array(field, shape=(0, *shape), chunks=(block, *shape), dtype=dt,
                                  fill_value=FILL[field], compressors=_compressor(np.dtype(dt).itemsize))
            for field, (shape, dt) in shapes.items()
        }
        self.buffers = {field: np.full((block, *a.shape[1:]), FILL[field], a.dtype) for field, a in self.arrays.items()}

    def grow(self, n: int) -> None:
        """Room for ``n`` animals: the buffers keep their rows, the arrays widen at the next flush."""
        capacity = max(n, int(math.ceil(self.capacity * 1.5)))
        for field, buf in self.buffers.items():
            if field == "origin":  # one row a frame, not one a slot
                continue
            wider = np.full((buf.shape[0], capacity, *buf.shape[2:]), FILL[field], buf.dtype)
            wider[:, : self.capacity] = buf
            self.buffers[field] = wider
        self.capacity = capacity

    def put(self, j: int, pop) -> None:
        n = pop.n
        if n == 0:
            for field, buf in self.buffers.items():
                buf[j] = FILL[field]
            return
        if n > self.capacity:
            self.grow(n)
        b = self.buffers
        b["uid"][j, :n] = pop.uid
        b["uid"][j, n:] = -1
        position = pop.position
        if self.dtype == np.float16 and n:
            origin = position.mean(axis=0, dtype=np.float64)
            b["origin"][j] = origin
            b["position"][j, :n] = position - origin
        else:
            b["origin"][j] = 0.0
            b["position"][j, :n] = position
        b["velocity"][j, :n] = pop.velocity
        pack_orientations(pop.forward, pop.up, out=b["orientation"][j, :n])
        if "state" in pop.component_names:
            b["state"][j, :n] = pop.component("state")
        else:
            b["state"][j, :n] = -1
        for field in ("position", "velocity", "orientation", "state"):
            b[field][j, n:] = FILL[field]

    def write(self, start: int, count: int) -> None:
        """Write buffer rows ``0..count`` to frames ``start..start+count`` (widening the arrays first)."""
        for field, array in self.arrays.items():
            buf = self.buffers[field]
            shape = (start + count, *buf.shape[1:])
            if array.shape != shape:
                array.resize(shape)
            array[start : start + count] = buf[:count]


class _Gone:
    n = 0


_GONE = _Gone()


class Recorder:
    """Record a simulation into a Zarr v3 store at ``path`` (a directory, conventionally ``*.zarr``).

    ``every``: keep every ``every``-th step; ``metrics_every``: sample the metrics and
    counters every so many steps (0: never); ``block_frames``: frames a chunk holds (default:
    about 4 MB of positions, at most 128). Use as a context manager or call
    :meth:`close`; a recording that was not closed (the process died) still opens.
    """

    def __init__(self, sim, path: Union[str, Path], *, every: int = 1, precision: str = "float32",
                 metrics_every: Optional[int] = None, scenario_name: Optional[str] = None,
                 overwrite: bool = False, flush_seconds: Optional[float] = None,
                 block_frames: Optional[int] = None):
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        if every < 1:
            raise ValueError(f"every must be at least 1, not {every}")
        self.path = Path(path)
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"{self.path} already exists; choose another path or remove it")
        self.sim = sim
        self.every = int(every)
        self.metrics_every = int(max(10, every) if metrics_every is None else metrics_every)
        self.precision = precision
        self.flush_seconds = flush_seconds
        dtype = np.dtype(precision)
        names = list(sim.world.populations)
        biggest = max([sim.world.population(n).n for n in names] + [1])
        self.block = int(block_frames or min(MAX_BLOCK_FRAMES, max(4, BLOCK_BYTES // (biggest * 3 * dtype.itemsize))))
        store = zarr.storage.LocalStore(str(self.path))
        self.root = zarr.create_group(store, overwrite=overwrite, zarr_format=3)
        frames = self.root.require_group("frames")
        self._step_array = frames.create_array("step", shape=(0,), chunks=(self.block,), dtype=np.int64,
                                               fill_value=-1)
        self._time_array = frames.create_array("time", shape=(0,), chunks=(self.block,), dtype=np.float64,
                                               fill_value=math.nan)
        pops = self.root.require_group("pop")
        self._pops = {name: _Population(pops, name, max(16, int(math.ceil(sim.world.population(name).n * 1.25))),
                                        self.block, dtype) for name in names}
        self._species = list(sim.species)
        self._state_names = {name: self._states_of(name) for name in self._species}
        self._columns = self._series_columns()
        self._series = self.root.create_array("series", shape=(0, len(self._columns)),
                                              chunks=(SERIES_CHUNK, len(self._columns)), dtype=np.float64,
                                              fill_value=math.nan, compressors=_compressor(8))
        self._series.attrs["columns"] = self._columns
        self._events = self.root.create_array("events", shape=(0,), chunks=(EVENTS_CHUNK,), dtype=np.uint8,
                                              fill_value=0)
        self._steps: list[int] = []
        self._times: list[float] = []
        self._frames_written = 0
        self._rows: list[list[float]] = []
        self._last_sample = -1
        self._series_written = 0
        self._event_lines: list[bytes] = []
        self._events_written = 0
        self._journal_seq = sim.world.journal.next_seq
        self.events_lost = 0
        self.closed = False
        self._last_flush = time.monotonic()
        self.root.attrs[ATTRS] = self._header(sim, scenario_name)
        self._frame_observer = sim.observe(self._on_frame, every=self.every)
        self._metrics_observer = sim.observe(self._on_metrics, every=self.metrics_every) if self.metrics_every else None
        if sim.step_count % self.every == 0:  # the starting state is the first frame
            self._on_frame(None)
        if self.metrics_every and sim.step_count % self.metrics_every == 0:
            self._on_metrics(None)

    # ------------------------------------------------------------------ header
    def _header(self, sim, scenario_name: Optional[str]) -> dict:
        scenario = sim.scenario
        return {
            "format": FORMAT,
            "scenario": scenario_name or scenario.name,
            "config": sim.config_data(),
            "base_dir": None if scenario.base_dir is None else str(scenario.base_dir),
            "seed": int(scenario.seed),
            "dt": float(sim.dt),
            "start_step": int(sim.step_count),
            "every": self.every,
            "metrics_every": self.metrics_every,
            "precision": self.precision,
            "block_frames": self.block,
            "species": self._species,
            "populations": list(self._pops),
            "state_names": self._state_names,
            "box": None if sim.world.box is None else np.broadcast_to(sim.world.box, (3,)).tolist(),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "starling": __version__,
            "complete": False,
        }

    def _states_of(self, species: str) -> list[str]:
        states = self.sim.species_summary(species).get("states")
        return [str(name) for name in states] if isinstance(states, dict) else []

    def _counter_names(self, species: str) -> list[str]:
        summary = self.sim.species_summary(species)
        return [k for k, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]

    def _series_columns(self) -> list[str]:
        metrics = self.sim.metrics()
        columns = ["step", "time"]
        for name in self._species:
            columns += [series_column(name, k) for k, v in metrics[name].items()
                        if v is None or isinstance(v, (int, float, np.number))]
        for name in self._species:
            columns += [counter_column(name, k) for k in self._counter_names(name)]
        return columns

    # ------------------------------------------------------------------ observers
    def _on_frame(self, _view) -> None:
        j = len(self._steps)
        populations = self.sim.world.populations
        for name, pop in self._pops.items():
            pop.put(j, populations.get(name, _GONE))  # a species an edit removed records as empty
        self._steps.append(int(self.sim.step_count))
        self._times.append(float(self.sim.time))
        self._collect_events()
        if len(self._steps) == self.block or (
                self.flush_seconds is not None and time.monotonic() - self._last_flush >= self.flush_seconds):
            self.flush()

    def _on_metrics(self, _view) -> None:
        sim = self.sim
        self._last_sample = sim.step_count
        metrics = sim.metrics()
        summaries = {name: sim.species_summary(name) for name in self._species}
        row = []
        for column in self._columns:
            if column == "step":
                value = sim.step_count
            elif column == "time":
                value = sim.time
            elif column.startswith("counter:"):
                species, key = column[len("counter:"):].split(".", 1)
                value = summaries[species].get(key)
            else:
                species, key = column.split(".", 1)
                value = metrics.get(species, {}).get(key)
            row.append(math.nan if value is None else float(value))
        self._rows.append(row)

    def _collect_events(self) -> None:
        entries, self._journal_seq, lost = self.sim.world.journal.since(self._journal_seq)
        self.events_lost += lost
        species = set(self._species)
        for entry in entries:
            if entry["kind"] in STRUCTURAL and entry["species"] not in species:
                continue  # sounds fading, apples eaten: the arrays show them, the timeline need not
            entry = {k: v for k, v in entry.items() if k != "seq"}
            self._event_lines.append(json.dumps(entry, default=_jsonable).encode() + b"\n")

    # ------------------------------------------------------------------ writing
    def flush(self) -> None:
        """Write everything buffered (frames, samples, events); the frames' steps go last."""
        count = len(self._steps)
        if count:
            start = self._frames_written
            for pop in self._pops.values():
                pop.write(start, count)
            self._time_array.resize((start + count,))
            self._time_array[start:] = np.asarray(self._times)
            if self._rows:
                self._write_series()
            if self._event_lines:
                self._write_events()
            self._step_array.resize((start + count,))
            self._step_array[start:] = np.asarray(self._steps, np.int64)  # the commit
            if count == self.block:
                self._frames_written = start + count
                self._steps.clear()
                self._times.clear()
            # else a part block stays buffered: the next flush rewrites its chunk whole
        else:
            if self._rows:
                self._write_series()
            if self._event_lines:
                self._write_events()
        self._last_flush = time.monotonic()

    def _write_series(self) -> None:
        rows = np.asarray(self._rows, np.float64)
        start = self._series_written
        self._series.resize((start + len(rows), rows.shape[1]))
        self._series[start:] = rows
        self._series_written += len(rows)
        self._rows.clear()

    def _write_events(self) -> None:
        data = np.frombuffer(b"".join(self._event_lines), np.uint8)
        start = self._events_written
        self._events.resize((start + data.size,))
        self._events[start:] = data
        self._events_written += data.size
        self._event_lines.clear()

    def close(self) -> None:
        """Detach, write what is buffered and mark the recording complete (idempotent)."""
        if self.closed:
            return
        self.closed = True
        self._frame_observer.close()
        if self._metrics_observer is not None:
            self._metrics_observer.close()
        if self.metrics_every and self._last_sample != self.sim.step_count:
            self._on_metrics(None)  # the series ends where the run ended
        self._collect_events()
        self.flush()
        header = dict(self.root.attrs[ATTRS])
        header.update(complete=True, end_step=int(self.sim.step_count), events_lost=self.events_lost)
        self.root.attrs[ATTRS] = header

    @property
    def frames(self) -> int:
        """Frames taken so far (written or buffered)."""
        return self._frames_written + len(self._steps)

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def record(sim, path: Union[str, Path], steps: int, **options: Any) -> Path:
    """Run ``steps`` steps of ``sim`` while recording them to ``path``; returns the path."""
    with Recorder(sim, path, **options) as recorder:
        sim.step(steps)
    return recorder.path
