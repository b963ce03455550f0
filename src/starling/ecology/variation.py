"""Individual variation in the ecology's tables.

A numeric ecology parameter may be a plain number or a distribution drawn per animal
at spawn (``drain = { uniform = [0.08, 0.12] }``); the types and draws are the core's
(:mod:`starling.steering.distributions`), shared with every behaviour parameter.
``[species.variation]`` adds factors on the mover's top speed and accelerations and on
whole behaviours' desires, and the start values of components.
"""
from __future__ import annotations

import functools
from typing import Optional

import numpy as np

from ..steering.distributions import Bounds, Distribution, bounds_of, num, parse_distribution

__all__ = ["Bounds", "Distribution", "bounds_of", "drawn_float64", "num", "parse_distribution"]


def drawn_float64(refresh: Optional[list], op, *sources) -> np.ndarray:
    """``op`` (``np.copyto`` or ``np.multiply``) of float32 draws into a new float64 array: what
    ``sources[0].astype(np.float64)`` gives (times ``sources[1]``, in float64).

    A system's kernel takes a drawn parameter as such a copy, beside the plain numbers it takes
    as one-element float64 arrays. With ``refresh``, the operation is appended to it: the owner
    keeps the kernel's arguments while the population's layout holds and runs ``refresh``
    before each call, so that the copy follows the draws' values without a new array a step.
    """
    out = np.empty(sources[0].shape, np.float64)
    if op is np.copyto:
        run = functools.partial(np.copyto, out, sources[0])
    else:
        run = functools.partial(op, *sources, out=out, dtype=np.float64)
    run()
    if refresh is not None:
        refresh.append(run)
    return out
