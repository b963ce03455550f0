"""Named tuple types for kernel arguments that Numba's on-disk cache can find again.

Numba keys its cache by the argument types, named tuple classes included, and stores
the keys with pickle, which refers to a class by module and name. Two things must
hold for a run-time ``namedtuple`` class:

* the module must have an attribute of that name, or the key cannot be stored and
  every process compiles the kernel again (the cache folder grows on each run);
* a later process must be able to resolve *every* name in a kernel's cache index,
  including types it has not built yet (an index lists all signatures ever compiled,
  e.g. the agent view of a species another scenario had).

So the class name spells out its fields (``Agents__energy__hunger``), and each module
that makes such types installs a module ``__getattr__`` (PEP 562) that rebuilds any
of them from the name alone.
"""
from __future__ import annotations

import sys
from collections import namedtuple
from typing import Callable, Iterable

SEPARATOR = "__"


def type_name(prefix: str, fields: Iterable[str]) -> str:
    """The class name that encodes ``fields`` after ``prefix``."""
    fields = tuple(fields)
    for f in fields:
        if SEPARATOR in f or not f.isidentifier() or f.startswith("_"):
            raise ValueError(f"{f!r} cannot be a kernel field name (use an identifier without '__')")
    return prefix + "".join(SEPARATOR + f for f in fields)


def importable_namedtuple(module: str, name: str, fields: Iterable[str]) -> type:
    """The named tuple ``module.name`` with ``fields``, created once and published on the module."""
    fields = tuple(fields)
    mod = sys.modules[module]
    existing = mod.__dict__.get(name)
    if existing is not None:
        if getattr(existing, "_fields", None) != fields:
            raise TypeError(f"{module}.{name} already exists with other fields")
        return existing
    t = namedtuple(name, fields)
    t.__module__ = module
    t.__qualname__ = name
    setattr(mod, name, t)
    return t


def field_encoded_namedtuple(module: str, prefix: str, fields: Iterable[str], leading: tuple = ()) -> type:
    """The type ``prefix__f1__f2…`` of ``module`` with fields ``leading + fields``."""
    fields = tuple(fields)
    return importable_namedtuple(module, type_name(prefix, fields), leading + fields)


def module_getattr(module: str, prefix: str, leading: tuple = ()) -> Callable[[str], type]:
    """A PEP 562 ``__getattr__`` that rebuilds ``prefix__…`` types from their names."""

    def __getattr__(name: str):
        if name == prefix or name.startswith(prefix + SEPARATOR):
            fields = tuple(name[len(prefix):].split(SEPARATOR)[1:])
            return importable_namedtuple(module, name, leading + fields)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
