"""What every command shares: the app, the consoles, one-line errors, plugins, stopping between steps.

Every error a user can cause (a bad scenario, a bad ``--set``, a bad option) ends in
one clear message and exit status 2, never a traceback.
"""
from __future__ import annotations

import contextlib
import re
import signal
from typing import List

import typer
from rich.console import Console

from ..config import ConfigError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Starling: realtime simulation of animal flocking and small ecosystems.",
    pretty_exceptions_enable=False,
)
err = Console(stderr=True)
out = Console()


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


#: ``--plugin`` on every command: modules whose behaviours, movers, … the scenario may name
PLUGIN_HELP = "Load a module first (dotted name from the working directory, or a .py file); repeatable."
#: ``--threads-from`` on the commands that run a simulation with the machine to themselves
THREADS_FROM_HELP = ("Run a population's kernels with threads from this many animals (default 20000: below it "
                     "the live app's shared cores make threads stall; an idle machine gains from about 1000). "
                     "The results are the same either way.")


def _apply_threads_from(animals) -> None:
    """Apply ``--threads-from`` (None: leave the default; typer has checked it is a count)."""
    if animals is not None:
        from ..parallel import set_threads_from

        set_threads_from(animals)


class _StopRequest:
    """Ctrl-C or SIGTERM asks a run to stop after the step it is in; a second one stops it at once."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True


@contextlib.contextmanager
def _stop_between_steps():
    """Install :class:`_StopRequest` for SIGINT and SIGTERM (a scheduler's stop) while a run goes."""
    stop = _StopRequest()
    try:
        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread (a test runner's worker): Ctrl-C stays an exception
        yield stop
        return
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _load_plugins(specs: List[str]) -> None:
    from ..plugins import PluginError, load_plugin

    for spec in specs:
        try:
            load_plugin(spec)
        except PluginError as e:
            _fail(str(e))


def _config_fail(e: ConfigError) -> None:
    for line in e.format().splitlines():
        err.print(line, highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(2)



def _int_list(text: str, name: str) -> list[int]:
    try:
        values = [int(float(x)) for x in text.split(",") if x.strip()]
    except ValueError:
        _fail(f"{name}: expected comma-separated numbers, got {text!r}")
    if not values or min(values) < 1:
        _fail(f"{name}: expected positive numbers, got {text!r}")
    return values


def _number_list(text: str, name: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values:
        _fail(f"{name}: expected comma-separated numbers, got {text!r}")
    return values


def _float_list(text: str, name: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        _fail(f"{name}: expected comma-separated numbers, got {text!r}")
    if not values or min(values) <= 0:
        _fail(f"{name}: expected positive numbers, got {text!r}")
    return values


class LoadingDisplay:
    """The loading stages of a scenario (``on_progress(stage, fraction)`` of :mod:`starling.prepare`)
    on stderr: a progress bar on a terminal, one plain line per stage otherwise.

    Nothing is shown until ``delay`` seconds after the first stage (``starling run`` waits a
    second, so a scenario whose kernels are cached loads silently); "ready" closes the bar.
    A new load after "ready" (the app switching scenes) starts a new bar.
    """

    def __init__(self, console: Console = err, delay: float = 0.0) -> None:
        self.console = console
        self.delay = delay
        self._t0: float | None = None
        self._progress = None
        self._task = None
        self._last_line = ""

    def __call__(self, stage: str, fraction: float) -> None:
        import time

        now = time.perf_counter()
        if self._t0 is None:
            self._t0 = now
        if stage == "ready":
            if self._progress is not None:
                self._progress.update(self._task, completed=1.0, description="ready")
                self._progress.stop()
            elif not self.console.is_terminal and self._last_line:
                self.console.print("loading: ready", highlight=False, markup=False)
            self._t0, self._progress, self._task, self._last_line = None, None, None, ""
            return
        if now - self._t0 < self.delay:
            return
        if self.console.is_terminal:
            if self._progress is None:
                from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

                self._progress = Progress(TextColumn("loading"), BarColumn(), TaskProgressColumn(),
                                          TimeElapsedColumn(), TextColumn("{task.description}", markup=False),
                                          console=self.console, transient=True)
                self._progress.start()
                self._task = self._progress.add_task(stage, total=1.0)
            self._progress.update(self._task, completed=fraction, description=stage)
            return
        line = re.sub(r" — [^(]*(?= \(\d+/\d+\)$)", "", stage)  # one line per stage, not one per kernel
        if line != self._last_line:
            self.console.print(f"loading: {line}", highlight=False, markup=False)
            self._last_line = line
