"""Starting Starling's own helper processes (``starling warm``'s workers, :mod:`starling.prepare`'s
second compiler) so that Ctrl-C in the terminal is the command's alone."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


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
