"""When kernels use threads: one policy for every kernel family.

Each kernel family (queries, behaviours, merger, mover, ray casts) is compiled twice,
serially and with ``prange``. On an idle 2-core machine a parallel region starts in a
few microseconds and pays from about 50 animals. But Starling's main job shares the
cores — the simulation thread, the web server, the frame encoder and often the browser
itself — and then every parallel region waits for its second thread's time slice:
4–8 ms stalls per region were measured with the machine busy, turning a 0.5 ms step
into 30 ms. Below these sizes a serial kernel is at most ~2× slower on an idle machine
and never stalls, so the app stays smooth; above them the work itself dominates.

A run that has the machine to itself (a benchmark, one batch run on an idle workstation)
can start the threads sooner: :func:`set_threads_from` (``--threads-from`` on ``starling
run`` and ``starling bench``). The results do not depend on it: every kernel gives the
same numbers serially and threaded. A sweep that runs one simulation per core should not.
"""

#: populations at least this large run the threaded compilation of every per-animal kernel
#: (the default of :func:`threads_from`)
PARALLEL_MIN_ANIMALS = 20_000
#: ray batches at least this large are cast with threads
PARALLEL_MIN_RAYS = 32_768

_threads_from = PARALLEL_MIN_ANIMALS


def threads_from() -> int:
    """Populations at least this large run their per-animal kernels with threads (read at every step)."""
    return _threads_from


def set_threads_from(animals) -> None:
    """Run per-animal kernels with threads from ``animals`` animals (None: the default,
    :data:`PARALLEL_MIN_ANIMALS`). Raises ValueError for anything but a whole number ≥ 0."""
    global _threads_from
    if animals is None:
        animals = PARALLEL_MIN_ANIMALS
    if isinstance(animals, bool) or not isinstance(animals, int) or animals < 0:
        raise ValueError(f"threads_from must be a whole number of animals, 0 or more, got {animals!r}")
    _threads_from = animals
