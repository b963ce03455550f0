"""``starling bench --scenario NAME --record PRECISION``: what recording adds to a step.

Rounds alternate between stepping plain and stepping with a :class:`Recorder`
attached (a fresh store each round, in a temporary directory), after a shared
warm-up, so both sides see the same machine load. The cost is compared by the
*mean* step (total time / steps), not the median: the recorder compresses and writes
once a block, and a median would hide exactly that step.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from ..simulation import load_scenario
from .writer import Recorder


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def bench_recording(name: str, *, steps: int = 300, warmup: int = 60, rounds: int = 3, precision: str = "float16",
                    every: int = 1, metrics_every: int = 0, overrides: tuple[str, ...] = ()) -> dict:
    """Step time with and without a recorder; bytes written per frame and per animal."""
    sim = load_scenario(name, overrides=list(overrides), record_debug=False)
    animals = {s: int(sim.population(s).n) for s in sim.species}
    work = Path(tempfile.mkdtemp(prefix="starling-bench-record-"))
    plain: list[float] = []
    recorded: list[float] = []
    frames = 0
    written = 0
    try:
        with Recorder(sim, work / "warm.zarr", every=every, precision=precision, metrics_every=metrics_every):
            sim.step(warmup)  # compiles the orientation packer and warms the writer too
        for r in range(rounds):
            t0 = time.perf_counter()
            sim.step(steps)
            plain.append((time.perf_counter() - t0) / steps)
            path = work / f"round{r}.zarr"
            t0 = time.perf_counter()
            with Recorder(sim, path, every=every, precision=precision, metrics_every=metrics_every) as rec:
                sim.step(steps)
            recorded.append((time.perf_counter() - t0) / steps)
            frames += rec.frames
            written += _dir_bytes(path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    plain_ms = float(np.median(plain)) * 1e3
    recorded_ms = float(np.median(recorded)) * 1e3
    total = sum(animals.values())
    return {
        "scenario": name, "animals": animals, "precision": precision, "every": every,
        "metrics_every": metrics_every, "steps": steps, "rounds": rounds,
        "step_ms": round(plain_ms, 4), "recorded_step_ms": round(recorded_ms, 4),
        "overhead": round(recorded_ms / plain_ms - 1.0, 4),
        "bytes_per_frame": round(written / max(frames, 1), 1),
        "bytes_per_animal_frame": round(written / max(frames, 1) / max(total, 1), 3),
    }
