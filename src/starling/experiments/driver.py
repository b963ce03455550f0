"""Running a sweep file: plan the runs, skip those already done, hand the rest to a backend."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Optional

from .results import SweepOutput
from .sweep_file import Sweep, check_metric_names
from .worker import available_metrics, build


def check_metrics(sweep: Sweep) -> None:
    """Build the first run (without stepping) and refuse metrics its species do not report."""
    runs = sweep.runs()
    sim = build(sweep.task(runs[0]))
    check_metric_names(sweep, available_metrics(sim))


def run_sweep_file(sweep: Sweep, backend, out_dir: Path, *, resume: bool = False,
                   on_start: Optional[Callable[[int, int], None]] = None,
                   on_row: Optional[Callable[[dict], None]] = None,
                   plots: bool = False) -> tuple[SweepOutput, list[dict]]:
    """Run what is missing from ``out_dir``; returns the output and its summary.

    ``output.timing`` says where the time went: checking, the runs (from handing the
    first to the backend to the last result, workers' start included), and writing the
    table, summary and (with ``plots``) the plots.

    ``on_start(total, already_done)`` is called once before the runs, ``on_row(row)`` as
    each finishes (after it is on disk).
    """
    t0 = time.perf_counter()
    runs = sweep.runs()
    if hasattr(backend, "start"):
        # the workers' start (imports, the scenario's kernels) overlaps the checks and the output's preparation
        backend.start(sweep.task(runs[0]) if runs else None)
    check_metrics(sweep)
    backend.check()
    output = SweepOutput(out_dir, sweep, resume=resume)
    # what writing the table and the summary imports, loaded now (while the workers start) rather
    # than after the last run
    import polars  # noqa: F401
    done = output.done
    todo = [r for r in runs if r.id not in done]
    if on_start is not None:
        on_start(len(runs), len(runs) - len(todo))

    def keep(row: dict) -> None:
        output.add(row)
        if on_row is not None:
            on_row(row)

    t1 = time.perf_counter()
    try:
        if todo:
            backend.run([sweep.task(r) for r in todo], keep)
    finally:
        t2 = time.perf_counter()
        summary = output.finish(plots=plots)
        output.timing = {"check_s": t1 - t0, "runs_s": t2 - t1, "finish_s": time.perf_counter() - t2}
    return output, summary
