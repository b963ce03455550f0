"""What the live runner and the replay runner share: a thread of their own, fed by a queue.

Both stream to a :class:`~starling.server.runner.Sink` from a background thread, so
the event loop never waits for a step, a frame or a file, and both take validated
control messages through :meth:`submit` without blocking. Subclasses give the thread's
``_run`` and ``_apply`` (what one command does).
"""
from __future__ import annotations

import abc
import logging
import queue
import threading
from typing import Any, Optional

from . import protocol as P

log = logging.getLogger("starling.server")


class ThreadedRunner(abc.ABC):
    """The thread, the command queue and the sink of a runner (see the module)."""

    thread_name = "starling-runner"

    def _init_thread(self) -> None:
        self._commands: "queue.SimpleQueue[tuple[Optional[int], Any]]" = queue.SimpleQueue()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._sink: Any = None

    # ---- life cycle (called from the event loop's thread) ---------------------------

    def start(self, sink: Any) -> None:
        """Start the thread; the work starts there, so the server answers at once."""
        self._sink = sink
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the thread to finish what it is doing and exit."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def submit(self, client_id: Optional[int], command: Any) -> None:
        """Queue a validated control message (thread-safe, never blocks)."""
        self._commands.put((client_id, command))
        self._wake.set()

    # ---- in the thread ----------------------------------------------------------------

    @abc.abstractmethod
    def _run(self) -> None:
        """The thread's body: set up, then drain commands and stream until ``_stop`` is set."""

    @abc.abstractmethod
    def _apply(self, client_id: Optional[int], cmd: Any) -> None:
        """Carry out one validated command (called by :meth:`_drain` in the thread)."""

    def _drain(self) -> None:
        """Apply every queued command; a failing one is answered with an error, never fatal."""
        while True:
            try:
                client_id, command = self._commands.get_nowait()
            except queue.Empty:
                return
            try:
                self._apply(client_id, command)
            except Exception as exc:  # a bad request must never end the thread
                log.exception("command %r failed", command)
                self._reply(client_id, {"type": "error", "message": f"{type(command).__name__}: {exc}"})

    def _reply(self, client_id: Optional[int], message: dict[str, Any]) -> None:
        self._sink_call("post_event", P.dumps(message), client_id)

    def _sink_call(self, method: str, *args: Any) -> None:
        if self._sink is not None:
            try:
                getattr(self._sink, method)(*args)
            except RuntimeError:  # the event loop closed during shutdown
                pass
