"""Kernel calls that skip Numba's per-call argument typing where a step repeats the same call.

Calling a compiled kernel from Python costs more than unboxing its arguments: Numba's
dispatcher first works out the Numba type of every argument, on every call, to pick the
compiled version. For a plain contiguous array that is a table lookup (a read-only one
takes a slower path, a few tenths of a microsecond); a named tuple costs microseconds
(its class name and every field name are read and encoded again each time). A step
hands named tuples of arrays (agent views, neighbour views, parameters, the
environment's geometry) to about a hundred kernels: in
the lagoon that typing was about a tenth of the step, the largest single cost outside
the kernels (``docs/performance.md``).

A :class:`CallSite` is one place in a step that calls kernels with arguments it builds
the same way every time. The first call of a kernel there goes through the dispatcher as
usual (compiling, or loading from the cache); the site then asks Numba which compiled
version those arguments select and keeps its entry point, the compiled function that
unboxes the arguments and runs the kernel. Later calls go to that entry point directly.

The entry point does not check types, so what a site remembers is keyed by everything
that can change them between two calls at one place:

* the kernel (a site may call the serial or the threaded compilation);
* whether the rows number 0, 1 or more: a slice ``a[:n, :k]`` of a wider table is
  non-contiguous, except that NumPy calls it contiguous when it has one row or none,
  and Numba types the two layouts apart;
* the generation, which :func:`invalidate` advances whenever a simulation is rebuilt in
  place (a live edit through ``Simulation.reconfigure``, which keeps kernels and buffers
  that did not change), so that nothing typed for the old configuration is reused.

Everything else (dtypes, dimensions, named tuple classes, Python scalar types) is fixed
by the code that builds a site's arguments; an owner whose arguments could change in
another way keeps one site per kind of call, calls :meth:`CallSite.clear`, or hands the
arrays a caller may vary to :meth:`CallSite.watch` before each call. That
contract is checked, not trusted: with ``STARLING_CHECK_KERNEL_CALLS=1`` (or
:func:`checking`) every direct call is typed again and compared with what the site
remembered, and a difference raises :class:`KernelCallMismatch`; the tests step every
built-in scene that way. ``STARLING_KERNEL_CALLS=dispatch`` turns the direct calls off.
"""
from __future__ import annotations

import contextlib
import os

__all__ = ["CallSite", "KernelCallMismatch", "checking", "dispatching", "invalidate", "observing"]

_generation = 0
#: called as ``_observer(entry, args)`` in place of each direct call while set (:func:`observing`)
_observer = None
_check = os.environ.get("STARLING_CHECK_KERNEL_CALLS", "") == "1"
_direct = os.environ.get("STARLING_KERNEL_CALLS", "direct") != "dispatch"
#: the generation while calls go straight to their entry points (direct, unchecked, unobserved),
#: else -1: what a site's last call must match for its fast path (see CallSite.__call__)
_plain = 0
#: a site's ``_last`` before its first plain direct call, and after anything that forgets its entries
_NO_LAST = (None, -1, None, -1)


def _update_plain() -> None:
    """Recompute :data:`_plain` after a change of the generation or of the modes."""
    global _plain
    _plain = _generation if (_direct and not _check and _observer is None) else -1


_update_plain()


class KernelCallMismatch(AssertionError):
    """A call site was about to run a compiled version typed for other arguments (check mode only)."""


def invalidate() -> None:
    """Forget every site's entry points (a simulation was rebuilt in place: its arguments may differ)."""
    global _generation
    _generation += 1
    _update_plain()


@contextlib.contextmanager
def checking(enabled: bool = True):
    """Type every direct call again and compare (for tests: slow, but catches a site reusing a stale entry)."""
    global _check
    before, _check = _check, enabled
    _update_plain()
    try:
        yield
    finally:
        _check = before
        _update_plain()


@contextlib.contextmanager
def observing(observer):
    """Hand every direct call to ``observer(entry, args)``, which must return ``entry(*args)``.

    For the bench's kernel clock: it times the compiled call alone, not the site's own Python
    around it (which is the step's orchestration, not kernel time).
    """
    global _observer
    before, _observer = _observer, observer
    _update_plain()
    try:
        yield
    finally:
        _observer = before
        _update_plain()


@contextlib.contextmanager
def dispatching():
    """Send every call through Numba's dispatcher, as without call sites (for comparisons)."""
    global _direct
    before, _direct = _direct, False
    _update_plain()
    try:
        yield
    finally:
        _direct = before
        _update_plain()


def _resolve(kernel, args):
    """The entry point of ``kernel``'s compiled version for exactly these arguments' types, or None."""
    typeof = getattr(kernel, "typeof_pyval", None)
    if typeof is None:  # not a Numba dispatcher (NUMBA_DISABLE_JIT, a plain function): call it as it is
        return None, None
    try:
        signature = tuple(typeof(a) for a in args)
    except Exception:  # noqa: BLE001 - an argument Numba cannot type: leave the call to the dispatcher
        return None, None
    compiled = kernel.overloads.get(signature)
    return (None if compiled is None else compiled.entry_point), signature


class CallSite:
    """One place in a step that calls kernels; see the module docstring for what it may assume."""

    __slots__ = ("_entries", "_generation", "_watched", "_watched_types", "_last")

    def __init__(self):
        self._entries: dict = {}
        self._generation = _generation
        self._watched: tuple = ()
        self._watched_types: tuple = ()
        # (kernel, rows bucket, entry point, generation) of the last plain direct call: a site
        # mostly calls one kernel, so its next call skips the key and the table (0.3 µs a call)
        self._last: tuple = _NO_LAST

    def watch(self, *arrays) -> None:
        """Forget the entry points when these arrays differ in dtype or layout from the last ones watched.

        For arguments the owner does not build itself (a caller's output rows): the same array
        objects as last time cost a few identity tests; new ones are compared by dtype,
        dimensions and contiguity, which is what Numba types an array by.
        """
        last = self._watched
        if len(last) == len(arrays):
            for a, b in zip(arrays, last):
                if a is not b:
                    break
            else:
                return
        types = tuple((a.dtype.str, a.ndim, a.flags.c_contiguous, a.flags.f_contiguous) for a in arrays)
        if types != self._watched_types:
            self._entries.clear()
            self._last = _NO_LAST
            self._watched_types = types
        self._watched = arrays

    def __call__(self, kernel, rows: int, *args):
        """``kernel(*args)`` for ``rows`` animals (or rays, or whatever the arguments' first axis counts)."""
        last = self._last
        if last[0] is kernel and last[1] == (rows if rows < 2 else 2) and last[3] == _plain:
            return last[2](*args)
        if not _direct:
            return kernel(*args)
        if self._generation != _generation:  # a simulation was rebuilt in place since: type again
            self._entries.clear()
            self._generation = _generation
        key = (kernel, rows if rows < 2 else 2)
        entry = self._entries.get(key)
        if entry is None:
            result = kernel(*args)  # typed, and compiled or loaded if need be, by Numba as usual
            entry, _ = _resolve(kernel, args)
            # a call whose types matched no exact compiled version (Numba converted an argument)
            # keeps going through the dispatcher
            self._entries[key] = kernel if entry is None else entry
            return result
        if _check and entry is not kernel:
            self._verify(kernel, entry, args)
        if _observer is not None:
            return _observer(entry, args)
        if _plain >= 0:
            self._last = (kernel, key[1], entry, _plain)
        return entry(*args)

    @staticmethod
    def _verify(kernel, entry, args) -> None:
        actual, signature = _resolve(kernel, args)
        if actual is not entry:
            name = getattr(getattr(kernel, "py_func", None), "__qualname__", repr(kernel))
            raise KernelCallMismatch(f"call site reused a compiled version of {name} typed for other arguments; "
                                     f"these are typed {signature}")

    def clear(self) -> None:
        """Forget the entry points (the owner's arguments are about to change in type)."""
        self._entries.clear()
        self._last = _NO_LAST

    def __len__(self) -> int:
        return len(self._entries)

    # entry points are compiled functions: a copy or a pickle starts empty and types its first calls again
    def __reduce__(self):
        return (CallSite, ())

    def __deepcopy__(self, memo):
        return CallSite()

    def __repr__(self) -> str:
        return f"CallSite({len(self._entries)} entries)"
