"""Reading a recording back: NumPy arrays, one animal's track as a data frame, the events.

:func:`open_recording` checks what it is given before anything else reads it, so a
missing path, an empty file, an HDF5 file, a foreign Zarr store or a damaged one each
get one :class:`RecordingError` that names the file and the reason. A recording whose
writer died opens too: it holds the frames of every block the writer finished
(``complete`` is False).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Union

import numpy as np

from ..frames import orientation_vectors
from .layout import ATTRS, FIELDS, FORMAT

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


class RecordingError(ValueError):
    """The path is not a readable Starling recording (the message says which and why)."""


@dataclass
class PopulationFrame:
    """One population at one frame: the alive animals' arrays (rows in recorded order)."""

    uid: np.ndarray  # (n,) int64
    position: np.ndarray  # (n,3) float32
    velocity: np.ndarray  # (n,3) float32
    forward: np.ndarray  # (n,3) float32
    up: np.ndarray  # (n,3) float32
    state: np.ndarray  # (n,) int16, -1 where the species has no brain

    @property
    def n(self) -> int:
        return int(self.uid.shape[0])


def _check_path(path: Path) -> None:
    """Reject what is plainly not a recording, naming what it is instead."""
    if not path.exists():
        raise RecordingError(f"{path}: no such file or directory")
    if path.is_file():
        with open(path, "rb") as f:
            head = f.read(8)
        if not head:
            raise RecordingError(f"{path}: an empty file, not a Starling recording")
        if head == HDF5_SIGNATURE:
            raise RecordingError(f"{path}: an HDF5 file, not a Starling recording "
                                 "(recordings are Zarr v3 directories written by `starling run --record`)")
        raise RecordingError(f"{path}: not a Starling recording "
                             "(recordings are Zarr v3 directories written by `starling run --record`)")
    if not any(path.iterdir()):
        raise RecordingError(f"{path}: an empty directory, not a Starling recording")
    meta = path / "zarr.json"
    if not meta.is_file():
        if (path / ".zgroup").exists() or (path / ".zarray").exists():
            raise RecordingError(f"{path}: a Zarr v2 store, not a Starling recording")
        raise RecordingError(f"{path}: not a Zarr store (no zarr.json), so not a Starling recording")
    try:
        data = json.loads(meta.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordingError(f"{path}: damaged: zarr.json cannot be read ({exc})") from None
    header = data.get("attributes", {}).get(ATTRS) if isinstance(data, dict) else None
    if not isinstance(header, dict):
        raise RecordingError(f"{path}: a Zarr store, but not a Starling recording (it has no '{ATTRS}' attributes)")
    if header.get("format") != FORMAT:
        raise RecordingError(f"{path}: recording format {header.get('format')!r} is not supported "
                             f"(this Starling reads {FORMAT!r})")


def open_recording(path: Union[str, Path], *, allow_empty: bool = False) -> "Recording":
    """Open the recording at ``path`` for reading.

    Raises :class:`RecordingError` when ``path`` is not a readable recording, or holds no
    complete frame (unless ``allow_empty``).
    """
    path = Path(path)
    _check_path(path)
    import zarr  # after the checks: a wrong path is refused without loading Zarr

    try:
        root = zarr.open_group(str(path), mode="r", zarr_format=3)
        rec = Recording(path, root)
    except RecordingError:
        raise
    except Exception as exc:  # a damaged store fails in many ways; all mean the same to the user
        raise RecordingError(f"{path}: damaged or truncated recording ({type(exc).__name__}: {exc})") from None
    if rec.n_frames == 0 and not allow_empty:
        raise RecordingError(f"{path}: the recording holds no complete frame "
                             "(the writer stopped before its first block was written)")
    return rec


class Recording:
    """A recording opened for reading (see :func:`open_recording`)."""

    def __init__(self, path: Path, root):
        self.path = path
        self._root = root
        h = dict(root.attrs[ATTRS])
        self.header = h
        self.scenario: str = h["scenario"]
        self.config: dict = h["config"]
        self.seed: int = int(h["seed"])
        self.dt: float = float(h["dt"])
        self.every: int = int(h["every"])
        self.metrics_every: int = int(h["metrics_every"])
        self.precision: str = h["precision"]
        self.species: list[str] = list(h["species"])
        self.populations: list[str] = list(h["populations"])
        self.complete: bool = bool(h.get("complete", False))
        self.box = h.get("box")
        self.block = int(h["block_frames"])
        self._arrays = {}
        for name in self.populations:
            for field in FIELDS:
                key = f"pop/{name}/{field}"
                try:
                    self._arrays[(name, field)] = root[key]
                except KeyError:
                    raise RecordingError(f"{path}: truncated or damaged: the array {key!r} is missing") from None
        try:
            steps = root["frames/step"][:]
            times = root["frames/time"][:]
        except KeyError as exc:
            raise RecordingError(f"{path}: truncated or damaged: {exc} is missing") from None
        unset = np.flatnonzero(steps < 0)
        n = int(unset[0]) if unset.size else int(steps.shape[0])
        n = min(n, *(a.shape[0] for a in self._arrays.values())) if self._arrays else n
        self.n_frames = n
        self.steps: np.ndarray = steps[:n].astype(np.int64)
        self.times: np.ndarray = times[:n].astype(np.float64)
        self._cache: dict[str, tuple[int, dict]] = {}
        self._ahead: dict[str, tuple[int, Any]] = {}  # per population: (block, future) being read ahead
        self._reader: Any = None

    def __len__(self) -> int:
        return self.n_frames

    def __repr__(self) -> str:
        span = f"steps {self.steps[0]}–{self.steps[-1]}" if self.n_frames else "no frames"
        return f"<Recording {self.path} {self.scenario!r}: {self.n_frames} frames, {span}>"

    # ------------------------------------------------------------------ frames
    def state_names(self, species: str) -> list[str]:
        """Brain-state index → name (empty when the species has no brain)."""
        return list(self.header.get("state_names", {}).get(species, []))

    def _block(self, population: str, b: int) -> dict:
        cached = self._cache.get(population)
        if cached is not None and cached[0] == b:
            return cached[1]
        ahead = self._ahead.pop(population, None)
        data = ahead[1].result() if ahead is not None and ahead[0] == b else self._read_block(population, b)
        self._cache[population] = (b, data)
        return data

    def _read_ahead(self, b: int) -> None:
        """Start reading block ``b`` of every population in the background (playback reaches it next).

        Reading and decompressing a block of 10,000 animals takes tens of milliseconds: read
        when it is needed, it would stall one frame in every block of a smooth replay.
        """
        if b * self.block >= self.n_frames:
            return
        if self._reader is None:
            from concurrent.futures import ThreadPoolExecutor

            self._reader = ThreadPoolExecutor(1, thread_name_prefix="starling-read-ahead")
        for name in self.populations:
            if self._ahead.get(name, (None,))[0] != b:
                self._ahead[name] = (b, self._reader.submit(self._read_block, name, b))

    def _read_block(self, population: str, b: int) -> dict:
        lo, hi = b * self.block, min((b + 1) * self.block, self.n_frames)
        data = {}
        for field in FIELDS:
            try:
                data[field] = self._arrays[(population, field)][lo:hi]
            except Exception as exc:
                raise RecordingError(f"{self.path}: damaged chunk in pop/{population}/{field} "
                                     f"(frames {lo}–{hi - 1}): {exc}") from None
        return data

    def frame(self, i: int) -> dict[str, PopulationFrame]:
        """Every population at frame ``i`` (0-based; negative counts from the end)."""
        if i < 0:
            i += self.n_frames
        if not 0 <= i < self.n_frames:
            raise IndexError(f"frame {i} is outside 0–{self.n_frames - 1}")
        b, j = divmod(i, self.block)
        out = {}
        if j == self.block // 2:  # half-way through a block: the next one is read meanwhile
            self._read_ahead(b + 1)
        for name in self.populations:
            d = self._block(name, b)
            uid = d["uid"][j]
            n = int(np.count_nonzero(uid >= 0))
            position = (d["position"][j, :n].astype(np.float64) + d["origin"][j]).astype(np.float32)
            forward, up = orientation_vectors(d["orientation"][j, :n])
            out[name] = PopulationFrame(uid[:n].astype(np.int64), position,
                                        d["velocity"][j, :n].astype(np.float32), forward, up,
                                        d["state"][j, :n].astype(np.int16))
        return out

    def frame_at_step(self, step: int) -> int:
        """The index of the last frame at or before ``step`` (0 before the first)."""
        return max(0, int(np.searchsorted(self.steps, step, side="right")) - 1)

    def array(self, population: str, name: str) -> np.ndarray:
        """The whole series of one field: (F, capacity[, 3]); ``alive`` is ``uid >= 0``.

        Positions come back absolute (the stored origin added) as float32.
        """
        if population not in self.populations:
            raise KeyError(f"no population {population!r} in this recording; it has {', '.join(self.populations)}")
        if name == "alive":
            return self.array(population, "uid") >= 0
        if name not in FIELDS:
            raise KeyError(f"no field {name!r}; fields: {', '.join(FIELDS + ('alive',))}")
        data = self._arrays[(population, name)][: self.n_frames]
        if name == "position":
            origin = self._arrays[(population, "origin")][: self.n_frames]
            data = (data.astype(np.float64) + origin[:, None, :]).astype(np.float32)
        elif name == "velocity":
            data = data.astype(np.float32)
        elif name == "uid":
            data = data.astype(np.int64)
        return data

    def blocks(self, population: str) -> Iterator[tuple[int, dict]]:
        """``(first frame, block arrays)`` over the recording, one chunk in memory at a time."""
        for b in range(math.ceil(self.n_frames / self.block)):
            yield b * self.block, self._block(population, b)

    def track(self, species: str, uid: int):
        """One animal across the frames where it is alive, as a polars DataFrame."""
        import polars as pl

        cols: dict[str, list] = {k: [] for k in ("frame", "x", "y", "z", "vx", "vy", "vz", "state")}
        for first, d in self.blocks(species):
            f, r = np.nonzero(d["uid"] == uid)
            if f.size == 0:
                continue
            p = d["position"][f, r].astype(np.float64) + d["origin"][f]
            v = d["velocity"][f, r].astype(np.float64)
            cols["frame"].append(first + f)
            for k, a in zip(("x", "y", "z"), p.T):
                cols[k].append(a)
            for k, a in zip(("vx", "vy", "vz"), v.T):
                cols[k].append(a)
            cols["state"].append(d["state"][f, r])
        joined = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in cols.items()}
        frames = joined.pop("frame").astype(np.int64)
        speed = np.sqrt(joined["vx"] ** 2 + joined["vy"] ** 2 + joined["vz"] ** 2)
        return pl.DataFrame({"step": self.steps[frames], "time": self.times[frames],
                             **{k: joined[k] for k in ("x", "y", "z", "vx", "vy", "vz")}, "speed": speed,
                             "state": joined["state"].astype(np.int16)})

    # ------------------------------------------------------------------ events and series
    @property
    def last_step(self) -> int:
        return int(self.steps[-1]) if self.n_frames else -1

    @property
    def events(self) -> list[dict]:
        """Deaths, births, the player's actions, edits and scripted events, in order."""
        raw = self._root["events"][:].tobytes().rstrip(b"\x00")
        out = []
        for line in raw.split(b"\n"):
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut by a dying writer
            if self.complete or event.get("step", 0) <= self.last_step:
                out.append(event)
        return out

    def _series(self) -> tuple[list[str], np.ndarray]:
        array = self._root["series"]
        columns = list(array.attrs["columns"])
        data = array[:]
        if data.size:
            keep = np.isfinite(data[:, 0])
            if not self.complete:
                keep &= data[:, 0] <= self.last_step
            data = data[keep]
        return columns, data

    @property
    def metrics(self) -> dict[str, dict[str, np.ndarray]]:
        """Per species ``{"step", "time", <metric>: …}`` sampled every ``metrics_every`` steps (NaN: none)."""
        return self._table(counters=False)

    @property
    def counters(self) -> dict[str, dict[str, np.ndarray]]:
        """Per species ``{"step", "time", "deaths", "eaten", "caught", …}`` sampled with the metrics."""
        return self._table(counters=True)

    def _table(self, counters: bool) -> dict[str, dict[str, np.ndarray]]:
        columns, data = self._series()
        out: dict[str, dict[str, np.ndarray]] = {}
        step = data[:, 0].astype(np.int64) if data.size else np.zeros(0, np.int64)
        time = data[:, 1] if data.size else np.zeros(0)
        for c, column in enumerate(columns[2:], start=2):
            is_counter = column.startswith("counter:")
            if is_counter != counters:
                continue
            name = column[len("counter:"):] if is_counter else column
            species, key = name.split(".", 1)
            table = out.setdefault(species, {"step": step, "time": time})
            table[key] = data[:, c] if data.size else np.zeros(0)
        return out

    def summary_header(self) -> dict[str, Any]:
        """What a report's first lines say: scenario, seed, steps, dt, frames, completeness."""
        return {"scenario": self.scenario, "seed": self.seed, "dt": self.dt, "frames": self.n_frames,
                "first_step": int(self.steps[0]) if self.n_frames else None, "last_step": self.last_step,
                "every": self.every, "precision": self.precision, "complete": self.complete}
