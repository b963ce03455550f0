"""Where a sweep's runs execute: local worker processes, or Ray (one machine or a cluster).

Both call ``on_result(row)`` in the calling process as each run finishes, so results
are written as they come. A run that raises is a row with its error (the worker
catches it); a *worker that dies* (killed, out of memory, a crash in native code) is
retried up to ``retries`` times — by respawning the process locally, by Ray's task
retries on Ray — and only then recorded as failed.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import pickle
import socket
import tempfile
from collections import deque
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Optional

from . import worker

OnResult = Callable[[dict], None]


def _died(task: dict, attempts: int, why: str) -> dict:
    row = {"run": task["id"], "index": task["index"], "seed": task["seed"], **task["params"],
           "status": "failed", "error": f"the worker died {attempts} times running it ({why})",
           "worker": None, "wall_s": None}
    for column, *_ in task["metrics"]:
        row[column] = None
    return row


class LocalBackend:
    """A pool of ``workers`` processes on this machine (nothing to start or install).

    With :attr:`fork_from_driver` (the ``sweep`` and ``experiment`` commands set it) the
    workers are forked from this process, which has imported Starling already, so a new
    or respawned worker starts in milliseconds. That needs Numba's fork-safe
    ``workqueue`` threading layer: it is selected here if no parallel kernel has run in
    this process yet (GNU OpenMP, the default, refuses to fork once its threads run), and
    the process keeps it afterwards — fine for a command that only sweeps, not for a
    program that goes on to step simulations from several threads, so it is opt-in.
    Otherwise the workers come from a fork server that imports Starling once (and warms
    the sweep's kernels). At most ``workers`` runs are in flight: when a worker dies, only
    those runs are suspects (and retried).
    """

    #: fork the workers from this process (see the class); the CLI's sweeps set it
    fork_from_driver = False

    name = "local"

    def __init__(self, workers: int = 1, retries: int = 3):
        self.workers = max(1, int(workers))
        self.retries = retries
        self._warmup_file: Optional[str] = None
        self._fork = False

    @staticmethod
    def _may_fork_here() -> bool:
        """Whether workers may be forked from this process, selecting ``workqueue`` if Numba's
        threads have not started yet (a sweep's driver never runs a parallel kernel itself)."""
        import numba
        from numba.np.ufunc import parallel

        if not parallel._is_initialized:
            numba.config.THREADING_LAYER = "workqueue"
            return True
        return parallel._threading_layer == "workqueue"

    def start(self, warmup: Optional[dict] = None) -> None:
        """Start the fork server now, while the driver checks the sweep and prepares its output.

        The server imports Starling and runs ``warmup`` (the sweep's first run) for a few
        steps, so every worker forked from it starts with the scenario's kernels loaded.
        Called again (another sweep in this process), it finds the server running. Nothing
        to start when the workers can be forked from this process.
        """
        from multiprocessing import forkserver

        if self.fork_from_driver and self._may_fork_here():
            self._fork = True
            return
        self._context()
        env = {"NUMBA_THREADING_LAYER": "workqueue", "NUMBA_NUM_THREADS": "1"}
        path = None
        # a server already running (this process ran a sweep before) stays: it is warm for that sweep
        if warmup is not None and getattr(forkserver._forkserver, "_forkserver_pid", None) is None:
            fd, path = tempfile.mkstemp(prefix="starling-warmup-", suffix=".pickle")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(warmup, fh)
            env[worker.WARMUP_ENV] = path
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            forkserver.ensure_running()  # the server takes its environment from here, now
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        if path is not None:
            self._warmup_file = path

    def check(self) -> None:
        """Start the fork server (if :meth:`start` did not)."""
        self.start()

    def _cleanup(self) -> None:
        path = self._warmup_file
        if path:
            try:
                os.unlink(path)
            except OSError:
                pass
            self._warmup_file = None

    def _context(self):
        if self._fork:
            return multiprocessing.get_context("fork")
        ctx = multiprocessing.get_context("forkserver")
        # the fork server imports the simulation once (and warms the sweep's kernels);
        # every worker forked from it starts with them loaded
        ctx.set_forkserver_preload(["starling.experiments.preload"])
        return ctx

    def run(self, tasks: list[dict], on_result: OnResult) -> None:
        ctx = self._context()
        pending = deque(tasks)
        attempts: dict[str, int] = {}
        while pending:
            with ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=worker.init_worker) as pool:
                running: dict = {}
                try:
                    while pending or running:
                        while pending and len(running) < self.workers:
                            # submit before taking the task off the queue: a pool that broke
                            # meanwhile refuses the submission, and the task must stay pending
                            future = pool.submit(worker.execute, pending[0])
                            running[future] = pending.popleft()
                        done, _ = wait(running, return_when=FIRST_COMPLETED)
                        for future in done:
                            row = future.result()  # BrokenProcessPool surfaces here, the task still in running
                            del running[future]
                            on_result(row)
                except BrokenProcessPool as exc:
                    for future, task in running.items():
                        if future.done() and not future.exception():
                            on_result(future.result())
                            continue
                        attempts[task["id"]] = attempts.get(task["id"], 0) + 1
                        if attempts[task["id"]] > self.retries:
                            on_result(_died(task, attempts[task["id"]], str(exc) or "process pool broken"))
                        else:
                            pending.appendleft(task)
                    # the pool is broken: leave the with-block and start a fresh one
        self._cleanup()


#: ``ray.init`` options of a sweep (also used by ``scripts/ray_floor.py``). No ``runtime_env``:
#: one makes Ray start its workers one by one (about a second later); each task sets its own
#: Numba threads to one instead (``worker.execute``).
RAY_INIT_OPTIONS = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}


class RayBackend:
    """Ray tasks: ``ray.init()`` on this machine (``workers`` CPUs), or the cluster at ``address``.

    Each task asks for one CPU and runs with one Numba thread; Ray re-runs a task whose
    worker died up to ``retries`` times. Nodes of a cluster need Starling installed
    (the same version) — the tasks carry the scenario's config, not its files.

    Runs travel in chunks of ``chunk`` runs per Ray task (default: about
    :data:`CHUNKS_PER_CPU` tasks per CPU, at most :data:`MAX_CHUNK` runs each), which
    saves Ray's per-task cost on short runs; each run is still built from its own seed,
    so the numbers do not depend on the chunking. A chunk's rows arrive together.
    """

    name = "ray"
    CHUNKS_PER_CPU = 4
    MAX_CHUNK = 16

    def __init__(self, workers: Optional[int] = None, address: Optional[str] = None, retries: int = 3,
                 chunk: Optional[int] = None):
        self.workers = workers
        self.address = address
        self.retries = retries
        self.chunk = chunk

    def check(self) -> None:
        """Refuse an unreachable ``address`` before anything is written."""
        if self.address:
            _reachable(self.address)

    def chunk_size(self, runs: int, cpus: int) -> int:
        if self.chunk is not None:
            return max(1, int(self.chunk))
        return max(1, min(self.MAX_CHUNK, math.ceil(runs / (max(1, cpus) * self.CHUNKS_PER_CPU))))

    def run(self, tasks: list[dict], on_result: OnResult) -> None:
        import ray

        started_here = not ray.is_initialized()
        if started_here:
            if self.address:
                ray.init(address=self.address, **RAY_INIT_OPTIONS)
            else:
                ray.init(num_cpus=self.workers, **RAY_INIT_OPTIONS)
        try:
            cpus = int(ray.cluster_resources().get("CPU", 1))
            size = self.chunk_size(len(tasks), cpus)
            remote = ray.remote(num_cpus=1, max_retries=self.retries, retry_exceptions=False)(worker.execute_many)
            refs = {}
            for i in range(0, len(tasks), size):
                chunk = tasks[i:i + size]
                refs[remote.remote(chunk)] = chunk
            while refs:
                done, _ = ray.wait(list(refs), num_returns=1)
                for ref in done:
                    chunk = refs.pop(ref)
                    try:
                        rows = ray.get(ref)
                    except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                            ray.exceptions.RayTaskError) as exc:
                        rows = [_died(task, self.retries + 1, type(exc).__name__) for task in chunk]
                    for row in rows:
                        on_result(row)
        finally:
            if started_here:
                ray.shutdown()


def _reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse an address nothing listens on at once (Ray itself retries for minutes)."""
    if address == "auto":
        return
    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ConnectionError(f"{address!r} is not HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {host}:{port} ({exc.strerror or exc})") from None


def make_backend(name: str, workers: Optional[int], address: Optional[str], chunk: Optional[int] = None):
    if name == "local":
        return LocalBackend(workers or os.cpu_count() or 1)
    if name == "ray":
        return RayBackend(workers, address, chunk=chunk)
    raise ValueError(f"backend must be local or ray, not {name!r}")
