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
