"""Reading a behaviour parameter that may differ from animal to animal, inside a kernel.

A behaviour parameter written as a distribution (:mod:`starling.steering.distributions`)
reaches the kernel as a per-animal array instead of a number. Kernels read every
numeric parameter through :func:`at`, so one kernel source serves both: Numba compiles
a specialisation per argument type, and for a plain number ``at`` compiles away to the
number itself (no cost for the common case).
"""
import math

import numpy as np
from numba import njit, types
from numba.extending import overload

from .distributions import bounds_of


def at(value, i):
    """``value[i]`` when the parameter is drawn per animal, else ``value`` itself."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return value[i]
    return value


# compiled as a call, not inlined into the kernel's IR (LLVM still inlines it: no cost): Numba's
# parfor pass refused a threaded kernel in which several drawn parameters were read through an
# inlined ``at`` ("Overwrite of parallel loop index": each inlined copy assigns the loop index to
# the helper's own ``i``)
@overload(at)
def _at(value, i):
    if isinstance(value, types.Array) and value.ndim == 1:
        return lambda value, i: value[i]
    return lambda value, i: value


@njit(cache=True, no_cfunc_wrapper=True, inline="always")
def vision(p, row):
    """Animal ``row``'s vision in a neighbour behaviour's parameters ``p``: the radius (m), the
    full field of view in radians, and the distance and angle powers, which are
    :func:`~starling.steering.shaping.observability`'s last four arguments."""
    return at(p.max_distance, row), math.radians(at(p.fov_deg, row)), at(p.distance_power, row), \
        at(p.angle_power, row)


def bind_draws(population, params, prefix: str, rng: np.random.Generator, old: dict) -> tuple:
    """Keep one drawn component per parameter of ``params`` given as a distribution.

    Components are named ``<prefix><field>``; each animal draws its value when it enters
    (and everyone draws now when the distribution is new or changed, compared with
    ``old``, the previous ``varied``). Fields no longer drawn stop drawing. Returns the
    ``(field, component)`` pairs in use.
    """
    fields = type(params).model_fields
    pairs = []
    for name, dist in params.varied.items():
        comp = f"{prefix}{name}"
        b = bounds_of(fields[name])
        draw = (lambda k, d=dist, b=b: d.sample(rng, k, b.lo, b.hi))
        if old.get(name) != dist or not population.has_component(comp):
            population.add_drawn_component(comp, draw, dist.mean())
        else:  # unchanged: the animals keep what they drew, newcomers draw the same way
            population.set_draw(comp, draw, dist.mean())
        pairs.append((name, comp))
    for name in old.keys() - params.varied.keys():
        population.drop_draw(f"{prefix}{name}")
    return tuple(pairs)
