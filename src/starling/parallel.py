"""When kernels use threads: one policy for every kernel family.

Each kernel family (queries, behaviours, merger, mover, ray casts) is compiled twice,
serially and with ``prange``. On an idle 2-core machine a parallel region starts in a
few microseconds and pays from about 50 animals. But Starling's main job shares the
cores — the simulation thread, the web server, the frame encoder and often the browser
itself — and then every parallel region waits for its second thread's time slice:
4–8 ms stalls per region were measured with the machine busy, turning a 0.5 ms step
into 30 ms. Below these sizes a serial kernel is at most ~2× slower on an idle machine
and never stalls, so the app stays smooth; above them the work itself dominates.
"""

#: populations at least this large run the threaded compilation of every per-animal kernel
PARALLEL_MIN_ANIMALS = 20_000
#: ray batches at least this large are cast with threads
PARALLEL_MIN_RAYS = 32_768
