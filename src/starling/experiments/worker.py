"""One run of a sweep, as a worker process (local or on a Ray node) executes it.

:func:`execute` takes plain data only (the scenario's config data, the overrides, the
seed, the metrics to keep), so the same call works in a local process pool and on
another machine. A run that raises comes back as a row with ``status = "failed"`` and
the error; only a worker that dies loses its run, and the backends retry those.
"""
from __future__ import annotations

import copy
import os
import socket
import time
import traceback

import numpy as np

# the local backend's fork server runs the task pickled at this path for a few steps (preload.py)
WARMUP_ENV = "STARLING_SWEEP_WARMUP"


def init_worker() -> None:
    """One Numba thread per worker: the sweep's parallelism is its workers."""
    import numba

    numba.set_num_threads(1)


_threads_set = False


def _values(sim) -> dict:
    """Every metric and counter of every species at this step: ``{species: {name: value}}``."""
    metrics = sim.metrics()
    out = {}
    for name in sim.species:
        values = {k: v for k, v in metrics[name].items() if v is None or isinstance(v, (int, float, np.number))}
        for k, v in sim.species_summary(name).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                values[k] = v
        out[name] = values
    return out


def available_metrics(sim) -> dict[str, set]:
    """Per species, the names a sweep may keep (what :func:`execute` can read)."""
    return {s: set(v) for s, v in _values(sim).items()}


def build(task: dict):
    """The task's simulation: the base config, its overrides and seed, validated and built."""
    from ..config.io import apply_override, validate_scenario
    from ..simulation import Simulation

    data = copy.deepcopy(task["data"])
    for text in task["overrides"]:
        apply_override(data, text)
    data["seed"] = task["seed"]
    if task.get("dt") is not None:
        data["dt"] = task["dt"]
    scenario = validate_scenario(data, task.get("label", ""), base_dir=task.get("base_dir"))
    return Simulation(scenario, record_debug=False)


def execute(task: dict) -> dict:
    """Run one task; the row of results (metrics, wall time, status, error)."""
    global _threads_set
    if not _threads_set:  # a Ray worker: no initializer ran (a module flag, not the environment, which
        init_worker()     # a process started from this one would inherit)
        _threads_set = True
    t0 = time.perf_counter()
    row = {"run": task["id"], "index": task["index"], "seed": task["seed"], **task["params"],
           "status": "ok", "error": None, "worker": f"{socket.gethostname()}:{os.getpid()}"}
    try:
        sim = build(task)
        steps = int(task["steps"])
        metrics = task["metrics"]
        longest = max([w for *_, how, w in metrics if how == "mean"] or [0])
        sums: dict[str, list] = {column: [] for column, _, _, how, _ in metrics if how == "mean"}
        for i in range(steps):
            sim.step()
            if sim.outcome is not None:  # the scenario's [[stop]] decided the run: it ends here
                break
            left = steps - 1 - i
            if left < longest:
                values = _values(sim)
                for column, species, name, how, window in metrics:
                    if how == "mean" and left < window:
                        v = values[species].get(name)
                        if v is not None:
                            sums[column].append(float(v))
        if sim.scenario.stop:
            row["outcome"] = None if sim.outcome is None else sim.outcome["outcome"]
            row["stopped_at_s"] = None if sim.outcome is None else sim.outcome["time"]
        final = _values(sim)
        for column, species, name, how, _ in metrics:
            if how == "final":
                v = final[species].get(name)
                row[column] = None if v is None else float(v)
            else:
                row[column] = float(np.mean(sums[column])) if sums[column] else None
    except Exception as exc:
        row["status"] = "failed"
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["traceback"] = traceback.format_exc(limit=8)
        for column, *_ in task["metrics"]:
            row.setdefault(column, None)
    import numba

    row["threads"] = numba.get_num_threads()
    row["wall_s"] = time.perf_counter() - t0
    return row


def execute_many(tasks: list[dict]) -> list[dict]:
    """Run several tasks one after the other (a chunk of a sweep: one Ray task, fewer round trips)."""
    return [execute(task) for task in tasks]
