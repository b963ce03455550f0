"""A second process that compiles a step's last parts while this one compiles its first.

Numba compiles on one core, so a cold start leaves the second core idle.
:func:`starling.prepare.prepare` starts a :class:`SecondCompiler` when kernels are being
compiled: the other process gets a pickled copy of the simulation and runs the step's
parts from the last one back, each alone (:meth:`Simulation._step_parts` skips the
others), while this process runs the real step from the first part on. A part belongs to
whichever process claims it first. This process waits for a part the other one is
compiling, then runs it with the kernels loaded from the cache both processes share.
:mod:`starling.kernel_cache` keeps two processes' saves into one cache safe.

The claims are one byte per part in a small file, changed under an ``flock``. A file
suits here because the other process is a plain ``python -c``, not a ``multiprocessing``
child. A ``spawn`` child re-runs the parent's main script, and a user's script that calls
:func:`~starling.prepare.prepare` need not guard against that. The other process is only an
accelerator: it prints nothing, and if it fails or dies this process runs, and compiles,
what it had claimed. ``STARLING_COMPILE_HELPER=0`` turns it off.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import tempfile
import time
from functools import partial
from typing import Any, Callable

from .plugins import loaded, load_plugin
from .processes import helpers_wanted, locked_open, run_elsewhere

FREE, HERE, THERE, DONE = 0, 1, 2, 3  # a part's claim: nobody's, this process's, the other's, the other's and done


def wanted(sim: Any) -> bool:
    """Helper processes allowed here (:func:`~starling.processes.helpers_wanted`) and a CPU
    step (a GPU step is one part)."""
    return helpers_wanted() and getattr(sim, "device", None) is None


class Claims:
    """One byte per part in a file both processes open; each change is a locked compare-and-set."""

    def __init__(self, path: str) -> None:
        self.path = path

    @classmethod
    def new(cls, parts: int, mine: int = 0) -> "Claims":
        """Claims for ``parts`` parts, the first ``mine`` already this process's."""
        handle, path = tempfile.mkstemp(prefix="starling-claims-")
        os.write(handle, bytes([HERE]) * mine + bytes(parts - mine))
        os.close(handle)
        return cls(path)

    def swap(self, index: int, expected: int, new: int) -> int:
        """Set part ``index`` to ``new`` if it is ``expected``; returns what it was."""
        with locked_open(self.path, "r+b") as f:
            f.seek(index)
            old = f.read(1)[0]
            if old == expected:
                f.seek(index)
                f.write(bytes([new]))
            return old

    def read(self) -> bytes:
        with open(self.path, "rb") as f:
            return f.read()

    def remove(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass


class SecondCompiler:
    """The other process, started with a pickled copy of ``sim`` and the number of the step's
    parts, the first ``mine`` of which this process has taken already."""

    def __init__(self, sim: Any, parts: int, mine: int = 0) -> None:
        self.claims = Claims.new(parts, mine)
        plugins = tuple(spec for spec, source in loaded().items() if source == "--plugin")
        self.process = run_elsewhere(partial(compile_from_the_end, pickle.dumps(sim, pickle.HIGHEST_PROTOCOL),
                                             self.claims.path, plugins))

    def take(self, index: int, waiting: Callable[[], None]) -> None:
        """Claim part ``index`` for this process, or wait while the other one compiles it."""
        if self.claims.swap(index, FREE, HERE) != THERE:
            return
        waiting()
        while self.claims.read()[index] == THERE and self.process is not None and self.process.poll() is None:
            time.sleep(0.01)

    def close(self, at_once: bool = False) -> int:
        """End the other process and count the parts it compiled. After a whole preparation it
        has finished every part it claimed and is leaving; ``at_once`` (an error or Ctrl-C
        here) ends it mid-compilation."""
        for index in range(len(self.claims.read())):
            self.claims.swap(index, FREE, HERE)  # none left for it: it stops at its next claim
        if self.process is not None:
            if not at_once:
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        done = sum(1 for claim in self.claims.read() if claim == DONE)
        self.claims.remove()
        return done


def compile_from_the_end(simulation: bytes, claims_path: str, plugins: tuple) -> None:
    """The other process: take the free parts from the last one back, each run alone on the
    copy, until one is already claimed. A failure leaves the rest to the first process (a part
    it claimed stays THERE, and the first process sees this one gone)."""
    for spec in plugins:
        load_plugin(spec)
    sim = pickle.loads(simulation)
    claims = Claims(claims_path)
    for index in reversed(range(sim.step_part_count())):
        if claims.swap(index, FREE, THERE) != FREE:
            return
        run_part(sim, index)
        claims.swap(index, THERE, DONE)


def run_part(sim: Any, index: int) -> None:
    """Step part ``index`` of ``sim`` alone: the step's generator is told to skip every other part."""
    steps = sim._step_parts()
    try:
        next(steps)
        for i in range(sim.step_part_count()):
            steps.send(i != index)
    except StopIteration:
        pass
