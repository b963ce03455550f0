"""The on-disk layout of a recording, shared by the writer and the reader.

A recording is a Zarr v3 directory store (``docs/recording.md`` says why Zarr and not
HDF5: every chunk and every metadata file is written whole and atomically, so a killed
writer leaves a store that opens)::

    run.zarr/
      zarr.json                  attributes["starling_recording"]: FORMAT, scenario, config, seed, dt, …
      frames/step  (F,)          int64, -1 until the frame's block is complete (written last)
      frames/time  (F,)          float64
      pop/<name>/uid          (F, cap)     int64, -1 on empty slots (alive = uid >= 0)
      pop/<name>/origin       (F, 3)       float64, subtracted from the stored positions
      pop/<name>/position     (F, cap, 3)  float16 | float32, relative to origin
      pop/<name>/velocity     (F, cap, 3)  float16 | float32
      pop/<name>/orientation  (F, cap)     uint32, smallest-three quaternion (the frame codec's)
      pop/<name>/state        (F, cap)     int16 brain-state index, -1: none
      series       (M, C)        float64 metric and counter samples; attributes["columns"]
      events       (B,)          uint8, JSON lines (one event a line)

Rows are the population's rows at that frame (they move when animals die or the world
re-sorts them for locality); an animal is followed by its ``uid``.
"""
from __future__ import annotations

FORMAT = "starling-recording/1"
ATTRS = "starling_recording"
PRECISIONS = ("float32", "float16")
FIELDS = ("uid", "origin", "position", "velocity", "orientation", "state")
FILL = {"uid": -1, "origin": 0.0, "position": 0.0, "velocity": 0.0, "orientation": 0, "state": -1}


def series_column(population: str, name: str) -> str:
    """``bird.polarization``: the column of one population's metric in ``series``."""
    return f"{population}.{name}"


def counter_column(species: str, name: str) -> str:
    """``counter:fish.deaths``: one species' counter in ``series``."""
    return f"counter:{species}.{name}"
