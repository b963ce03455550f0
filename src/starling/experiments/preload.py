"""What the local backend's fork server runs once, before it forks any worker.

Importing this module imports Starling and, when the driver left a warm-up task in
``STARLING_SWEEP_WARMUP`` (a pickle file), runs it for a few steps: every kernel the
sweep's scenario uses is then loaded from Numba's cache (or compiled) *once*, in the
fork server, and each worker forked from it starts warm instead of loading them again.

The fork server runs with Numba's ``workqueue`` threading layer and one thread (the
backend sets both in its environment): GNU OpenMP, Numba's default here, refuses to
fork once it has run, and the workers use one thread anyway.

Nothing here may raise: an exception in a fork server's preload would stop the server.
"""
from __future__ import annotations

import os
import pickle

WARMUP_STEPS = 2


def warm_up(path: str) -> None:
    from . import worker

    try:
        with open(path, "rb") as fh:
            task = pickle.load(fh)
        os.unlink(path)
    except Exception:  # a run that cannot build fails again in its worker, with its error in the row
        return
    # the server already runs one Numba thread (its environment): execute leaves its threads alone
    worker._threads_set = True
    try:
        worker.execute({**task, "steps": min(int(task["steps"]), WARMUP_STEPS)})
    except Exception:
        pass


from .. import simulation as _simulation  # noqa: E402,F401  (the point: imported once, in the server)
from .worker import WARMUP_ENV  # noqa: E402

if os.environ.get(WARMUP_ENV):
    warm_up(os.environ[WARMUP_ENV])
