"""Shared test helpers."""
import os

# The CUDA backend's device kernels run on Numba's CUDA simulator (every thread as Python on the
# CPU) unless STARLING_TEST_GPU=1 asks for a real GPU; this must be set before numba.cuda is imported.
if os.environ.get("STARLING_TEST_GPU") != "1":
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numpy as np  # noqa: E402
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def _references_outside_entry(kernel, *args):
    """Reference-count increments in ``kernel``'s compiled body for these arguments, outside its
    entry block.

    The entry's increments of the arguments (and their decrements on return) are once per
    call; an increment anywhere else runs per animal or per row, as an atomic operation,
    which is what the hot kernels must not do.
    """
    from numba import njit

    fresh = njit(kernel.py_func)  # uncached: a kernel loaded from the cache cannot be inspected
    fresh(*args)
    ir = fresh.inspect_llvm(fresh.signatures[0])
    start = ir.index("define")
    body = ir[start:ir.index("\n}\n", start)]
    blocks = body.split("\n\n")  # LLVM prints a blank line before each block after the entry
    rest = "\n".join(blocks[1:])
    return rest.count("call void @NRT_incref(")


@pytest.fixture
def references_outside_entry():
    return _references_outside_entry


def _scenes_using(behaviours):
    """The built-in scenes (name, config) whose species use any of these behaviour kinds: a
    behaviour's claim about itself is checked on every scene that relies on it."""
    from starling.config import load_scenario_config, scenario_names

    for name in scenario_names():
        config = load_scenario_config(name)
        if any(b.kind in behaviours for s in config.species for g in s.groups for b in g.behaviors):
            yield name, config


@pytest.fixture
def scenes_using():
    return _scenes_using


# `make test` runs the suite on two pytest-xdist workers. Tests that share something
# machine-wide run on one worker, in order: the browser tests (one live server and one
# Chromium, whose software rasteriser takes a core of its own) and the Ray tests (a local
# Ray cluster, its ports and ~/.ray). Every other test is scheduled on its own.
# (xdist's `--dist loadgroup` does not group under pytest 9, whose node ids it cannot rename.)
SERIAL_SCOPES = {"tests/browser/": "browser", "tests/experiments/test_sweep_backends.py": "ray"}


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class SharedResourceScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            for prefix, scope in SERIAL_SCOPES.items():
                if nodeid.startswith(prefix):
                    return scope
            return nodeid

    return SharedResourceScheduling(config, log)


@pytest.fixture(autouse=True)
def _quiet_machine_lock(request, tmp_path_factory):
    """Under xdist, a test marked ``quiet_machine`` (one that compares rates measured over a few
    seconds) runs while no other worker runs a test: every test holds a shared lock on one file,
    a quiet one an exclusive lock. A turnstile lock, held by the quiet test while it waits, keeps
    the other worker's next tests from starving it."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    import fcntl

    folder = tmp_path_factory.getbasetemp().parent  # shared by the workers of one run
    quiet = request.node.get_closest_marker("quiet_machine") is not None
    with open(folder / "machine.turnstile", "a") as turnstile, open(folder / "machine.lock", "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if quiet else fcntl.LOCK_SH)
        finally:
            if not quiet:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            if quiet:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
