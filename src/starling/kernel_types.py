"""Named tuple types for kernel arguments that Numba's on-disk cache can find again.

Numba keys its cache by the argument types, named tuple classes included, and stores
the key with pickle. A class made at run time by ``namedtuple(...)`` is pickled by
reference to its module and name; if the module has no attribute of that name the key
cannot be stored or matched, and every new process compiles the kernel again (and the
cache folder grows on each run). Every named tuple type built at run time goes
through :func:`importable_namedtuple`, which publishes it on its module.
"""
from __future__ import annotations

import sys
from collections import namedtuple
from typing import Iterable


def importable_namedtuple(module: str, name: str, fields: Iterable[str]) -> type:
    """The named tuple ``module.name`` with ``fields``, created once and importable by pickle."""
    fields = tuple(fields)
    mod = sys.modules[module]
    existing = getattr(mod, name, None)
    if existing is not None:
        if getattr(existing, "_fields", None) != fields:
            raise TypeError(f"{module}.{name} already exists with other fields")
        return existing
    t = namedtuple(name, fields)
    t.__module__ = module
    t.__qualname__ = name
    setattr(mod, name, t)
    return t
