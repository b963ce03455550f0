"""Starling's own helper processes: ``starling warm``'s workers, and the processes that
compile kernels beside a cold start (:mod:`starling.parallel_compile`, the environment's
placement checks). How they start, so that Ctrl-C in the terminal is the command's alone
and a user's script is never run twice."""
from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Optional

try:
    import fcntl
except ImportError:  # not on Windows: no helper processes there
    fcntl = None


@contextmanager
def ctrl_c_ignored_by_new_processes():
    """Ctrl-C ignored while the block starts processes, so they start ignoring it.

    A process inherits an ignored SIGINT, and Python then leaves it ignored. Ignoring it in
    a worker's own start-up code alone left the second or so in which a new worker imports
    Starling: a Ctrl-C then printed that worker's ``KeyboardInterrupt`` traceback beside the
    command's one line. Only the main thread may set a handler; elsewhere the processes
    start as before."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


#: the environment variable that turns Starling's compiling helper processes off (``0``)
HELPERS_ENV = "STARLING_COMPILE_HELPER"

_running: list = []  # helpers started and not yet seen finished (kept, so none is dropped while it runs)

_START = ("import pickle, sys; job = pickle.load(sys.stdin.buffer); sys.path[:0] = job['path']; "
          "from starling.processes import _run_job; _run_job(job)")


def usable_cores() -> int:
    """The cores this process may run on (a container's or ``taskset``'s limit counts)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextmanager
def locked_open(path: str, mode: str):
    """``open(path, mode)`` held under an exclusive ``flock`` while the block runs (closing the
    file releases it); yields None where the file cannot be opened. Without ``fcntl`` (Windows)
    the file is open but not locked."""
    try:
        handle = open(path, mode)
    except OSError:
        yield None
        return
    with handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield handle


def helpers_wanted() -> bool:
    """Whether a helper process may compile beside this one: a second core, claims this
    platform can lock (``fcntl``), and not turned off by ``STARLING_COMPILE_HELPER=0``."""
    if fcntl is None or os.environ.get(HELPERS_ENV, "1").strip() == "0":
        return False
    return usable_cores() >= 2


def run_elsewhere(job: Callable[[], Any]) -> Optional[subprocess.Popen]:
    """Call the picklable ``job`` in a new Python process, quiet, with this one's ``sys.path``;
    returns the process, or None if it could not start. A job that needs the ``--plugin``
    modules loads them itself (it is unpickled before anything else runs: pass the data that
    needs them as bytes to unpickle after).

    The process is a plain ``python -c``, not a ``multiprocessing`` child: a ``spawn`` child
    re-runs the parent's main script, which a user's script need not guard. It starts helpers
    of its own no more (``STARLING_COMPILE_HELPER=0``), and ignores Ctrl-C: the command's own
    process answers it and ends its helpers."""
    if not sys.executable:  # an embedded interpreter: no Python to start
        return None
    payload = {"path": list(sys.path), "job": pickle.dumps(job, pickle.HIGHEST_PROTOCOL)}
    try:
        with ctrl_c_ignored_by_new_processes():
            process = subprocess.Popen([sys.executable, "-c", _START], stdin=subprocess.PIPE,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       env={**os.environ, HELPERS_ENV: "0"})
    except OSError:
        return None
    try:
        pickle.dump(payload, process.stdin, pickle.HIGHEST_PROTOCOL)
        process.stdin.close()
    except OSError:  # it died at once
        pass
    _running[:] = [p for p in _running if p.poll() is None] + [process]
    return process


def _run_job(payload: dict) -> None:
    """A helper process: run the job (unpickling it imports Starling, which sets up the kernel
    cache before any kernel is defined). Quiet: a helper only saves time, the process it helps
    does the work whatever becomes of it."""
    try:
        pickle.loads(payload["job"])()
    except Exception:  # noqa: BLE001
        return
