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


def drawn_float64(draws: np.ndarray, refresh: Optional[list] = None, *, times: Optional[np.ndarray] = None) -> np.ndarray:
    """The float32 ``draws`` as a new float64 array: what ``draws.astype(np.float64)`` gives, or, with
    ``times``, that multiplied by ``times`` in float64 (never rounded through float32).

    A system's kernel takes a drawn parameter as such a copy, beside the plain numbers it takes
    as one-element float64 arrays. With ``refresh``, the operation that fills the copy is appended
    to it: the owner keeps the kernel's arguments while the population's layout holds and runs
    ``refresh`` before each call, so that the copy follows the draws' values without a new array a step.
    """
    out = np.empty(draws.shape, np.float64)
    if times is None:
        fill = functools.partial(np.copyto, out, draws)
    else:
        fill = functools.partial(np.multiply, draws, times, out=out, dtype=np.float64)
    fill()
    if refresh is not None:
        refresh.append(fill)
    return out
