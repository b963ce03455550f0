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
