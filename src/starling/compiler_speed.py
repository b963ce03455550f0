"""Two pieces of bookkeeping Numba's compiler repeats needlessly, done faster or not at all.

A cold start is Numba compiling about 190 kernels (``docs/performance.md``, "Start-up").
Timed across a cold ``lagoon`` (build and one step, one process), two costs there were
neither typing nor code generation:

* **Comparing compiler flags: 4.2 s of 88 s.** Numba looks up each typed overload of a
  function in a cache keyed by, among others, the compiler flags in force (a
  ``TargetConfig``), about 75,000 times. The flags' ``__eq__`` builds a dict of all 40-odd
  options, each read through a property, for both sides; their ``__hash__`` builds that
  dict too, sorts it, which sorts its *keys*, and hashes the option names, which are the
  same for every instance of a class. :func:`install` gives both a shortcut with the
  same results: the hash is computed once per class, and two flags of one class are
  compared only on the options either has set (an option set on neither has its default
  on both). Flags of two classes are compared as before.
* **Timing LLVM's lock: about 1.5 s.** Numba registers callbacks that fire an event
  every time llvmlite takes its lock, that is on every call into LLVM (143,000 in that
  cold start), to report how long each compilation held the lock in its metadata
  (``timers["llvm_lock"]``). Nothing in Starling reads it. :func:`install` removes those
  two callbacks; the figure then reads 0.

Both are patches to a pinned Numba: :func:`install` checks that what it replaces is what
it expects and otherwise leaves Numba as it is, so a newer Numba loses the time saved, not
correctness. ``tests/test_compiler_speed.py`` checks the flags' answers against Numba's own
definition on many pairs. ``STARLING_COMPILER_SPEED=0`` leaves Numba unpatched (to compare).
"""
from __future__ import annotations

import os

__all__ = ["install", "numba_lock_timers"]

_installed = False


def _fast_flags() -> None:
    """Give ``TargetConfig`` an equality and hash with Numba's results, computed from what is set."""
    from numba.core.targetconfig import TargetConfig

    if not (hasattr(TargetConfig, "options") and "_values" in getattr(TargetConfig, "__slots__", ())):
        return  # not the TargetConfig these shortcuts were written against
    numba_eq = TargetConfig.__eq__
    hashes: dict[type, int] = {}

    def __eq__(self, other):
        if type(self) is not type(other):
            return numba_eq(self, other)  # another class (or not flags at all): Numba's own answer
        mine, theirs = self._values, other._values
        if mine is theirs or mine == theirs:
            return True
        options = self.options
        for name in mine.keys() | theirs.keys():
            default = options[name].default
            a = mine.get(name, default)
            b = theirs.get(name, default)
            if not (a is b or a == b):  # (a dict's comparison: identity, then ==)
                return False
        return True

    def __hash__(self):
        # Numba's hash(tuple(sorted(self.values()))) sorts a dict, that is its keys: the option names
        cls = type(self)
        value = hashes.get(cls)
        if value is None:
            value = hashes[cls] = hash(tuple(sorted(cls.options)))
        return value

    TargetConfig.__eq__ = __eq__
    TargetConfig.__hash__ = __hash__


def numba_lock_timers() -> list:
    """The ``(acquire, release)`` callbacks on llvmlite's lock through which Numba times its hold on
    LLVM (registered when ``numba.core.base`` is imported); empty once :func:`install` removed them,
    or where llvmlite keeps its callbacks elsewhere."""
    from llvmlite.binding import ffi

    callbacks = getattr(getattr(ffi.lib, "_lock", None), "_cblist", ())
    return [(acquire, release) for acquire, release in callbacks
            if getattr(acquire, "__module__", "") == "numba.core.base"
            and "_initialize_llvm_lock_event" in getattr(acquire, "__qualname__", "")]


def _untimed_llvm_lock() -> None:
    """Remove the callbacks through which Numba times its hold on LLVM's lock (see the module)."""
    from llvmlite.binding import ffi

    for acquire, release in numba_lock_timers():
        ffi.unregister_lock_callback(acquire, release)


def install() -> None:
    """Apply both changes, once per process (before kernels compile; see the module)."""
    global _installed
    if _installed or os.environ.get("STARLING_COMPILER_SPEED", "1") == "0":
        return
    _installed = True
    import numba.core.base  # noqa: F401  (registers the lock callbacks that are removed)

    _fast_flags()
    _untimed_llvm_lock()
