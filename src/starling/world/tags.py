"""Selecting a population's rows by their tag bits (``Population.tags``, bits named by the world).

One kernel for every filter by tag: a neighbour group's targets (``steering.targets``) and the
food an eater looks for (``ecology.feeding``) both ask which rows carry some tags and not others.
"""
from __future__ import annotations

from numba import njit


@njit(cache=True, no_cfunc_wrapper=True)
def rows_with_tags(tags, include, exclude, rows):
    """The rows whose tags carry one of ``include`` (any row when it is 0) and none of ``exclude``,
    in row order, written into ``rows``; returns how many. ``tags``: uint32 per row; ``include`` and
    ``exclude``: ``np.uint32`` bit sets."""
    k = 0
    for j in range(tags.shape[0]):
        t = tags[j]
        if (include == 0 or (t & include) != 0) and (t & exclude) == 0:
            rows[k] = j
            k += 1
    return k
