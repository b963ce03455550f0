"""Numba's on-disk kernel cache: where it lives, and healing it when a file is damaged.

Every kernel is ``@njit(cache=True)``: Numba keeps an index (``*.nbi``) and one data
file per signature (``*.nbc``) in ``__pycache__`` beside the sources, or under
``NUMBA_CACHE_DIR``. Numba writes them through a temporary file and a rename, but a
crash or power loss before the data reaches the disk, a full disk or a bad copy can
still leave a truncated or garbled file, and Numba 0.68 then raises the unpickling
error from every later run: one bad file and Starling never starts again.

:func:`install` wraps Numba's three loading steps (index, data file, rebuilding the
compiled code from the data) so that a failure drops the damaged file, answers "not
cached" — Numba compiles the kernel and saves a good entry — and prints one line per
kernel to stderr. A cache is only a copy of what the compiler makes, so recompiling is
always correct; only the time is lost. Missing files and I/O errors keep Numba's own
handling.

Numba keys a kernel's cache entries by its own source file only, so a kernel that calls
or inlines a helper from another file (a mover's ``move_along``, a behaviour's ``emit`` or
shaping function, a plugin's own helper module) would keep running the helper's old code
from the cache after the helper changed. :func:`install` therefore adds to each kernel's
key the contents of the files of every helper its code names (compiled, or overloaded like
``emit``), followed through the compiled helpers' own code (:func:`dependency_stamp`):
change a helper and every kernel that reaches it compiles again, and only those.

Two processes may compile kernels into one cache at once (``starling warm --jobs 2``, the
second process of :mod:`starling.parallel_compile`). Numba saves an entry by reading the
kernel's index, picking a free data file name and writing both back, so two saves at once
could lose an entry or, worse, give one signature's index entry the other's data file.
:func:`install` makes a process hold a lock on the kernel (an ``flock`` on ``*.nbi.lock``)
while it looks the kernel up in the cache, compiles it and saves it. A process that wants a
kernel another one is compiling waits, then loads the other's result instead of compiling
it again. A call graph has no cycles, so two processes cannot wait on each other. A loaded
entry whose signature is not the one asked for is treated as not cached.

The cache folder: ``STARLING_CACHE_DIR`` (applied here, before any kernel is defined,
and passed on to child processes as ``NUMBA_CACHE_DIR``) wins over ``NUMBA_CACHE_DIR``;
with neither, each source folder's ``__pycache__`` is used.
"""
from __future__ import annotations

import functools
import os
import sys
import types
from contextlib import contextmanager
from typing import Callable, Optional

from .processes import locked_open

ENV = "STARLING_CACHE_DIR"

_noticed: set[str] = set()
_compiled = 0  # kernels Numba compiled (not loaded) in this process, counted once install() ran


def compilations() -> int:
    """How many kernels Numba has compiled in this process so far (cache loads not counted)."""
    return _compiled


class DamagedEntry(OSError):
    """A cache data file that could not be read back (an ``OSError`` so Numba treats it as missing)."""


def cache_dir() -> Optional[str]:
    """The folder kernels are cached in, or None for ``__pycache__`` beside each source."""
    from numba.core import config

    return config.CACHE_DIR or None


def apply_cache_dir() -> Optional[str]:
    """Point Numba's cache at ``STARLING_CACHE_DIR`` when it is set; returns the folder.

    Sets ``NUMBA_CACHE_DIR`` in the environment (child processes, and Numba's own
    re-reading of the environment before each compilation) and Numba's live config
    value (in case Numba was imported first). It must run before any cached kernel is
    defined: Numba picks a kernel's cache folder when it is decorated.
    """
    folder = os.environ.get(ENV)
    if not folder:
        return None
    folder = os.path.abspath(os.path.expanduser(folder))
    os.environ["NUMBA_CACHE_DIR"] = folder
    config = sys.modules.get("numba.core.config")
    if config is not None:
        config.CACHE_DIR = folder
    return folder


def _kernel_name(filename: str) -> str:
    """``flocking.cohesion-42.py311.nbi`` → ``cohesion`` (Numba names files ``module.qualname-line.pyXY``)."""
    full = os.path.basename(filename).rsplit("-", 1)[0]
    return full.split(".", 1)[1] if "." in full else full


def _notice(name: str) -> None:
    if name in _noticed:
        return
    _noticed.add(name)
    print(f"starling: kernel cache for {name!r} was damaged; rebuilding it", file=sys.stderr, flush=True)


def _drop(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass  # another process healed it first, or it is read-only: Numba will overwrite or skip it


@functools.lru_cache(maxsize=None)
def _code_names(code) -> frozenset[str]:
    """The global names a function's code (and the code nested in it) refers to.

    Memoised per code object: every kernel's stamp walks the shared helpers (``emit``,
    the shaping curves…) again, over a thousand walks when Starling is imported.
    """
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return frozenset(names)


def _helper_files(py_func, seen: set) -> set[str]:
    """Source files of the helpers ``py_func`` names, their helpers', and so on.

    A helper is a compiled function (followed into its own code) or a plain function,
    which compiled code can only call through an ``@overload`` (``emit``, ``at``): its
    file holds that overload. A module's attributes named in the code count too
    (``shaping.f_q1``).
    """
    from numba.core.dispatcher import Dispatcher

    files = set()
    namespace = getattr(py_func, "__globals__", {})
    names = _code_names(py_func.__code__)
    values = [namespace.get(name) for name in names]
    for module in [v for v in values if isinstance(v, types.ModuleType)]:
        values += [getattr(module, name, None) for name in names]
    for value in values:
        if id(value) in seen:
            continue
        if isinstance(value, Dispatcher):
            seen.add(id(value))
            helper = value.py_func
        elif isinstance(value, types.FunctionType):
            seen.add(id(value))
            helper = None
        else:
            continue
        path = getattr((helper or value).__code__, "co_filename", "")
        if os.path.isfile(path):
            files.add(path)
        if helper is not None:
            files |= _helper_files(helper, seen)
    return files


def dependency_stamp(py_func) -> tuple:
    """The contents of the other source files whose helpers ``py_func`` reaches (see
    :func:`_helper_files`), as ``((file name, sha256), …)``: part of the kernel's cache key.

    Names are resolved when the kernel's cache is set up (its decoration): helpers imported
    from other modules are there by then; a helper defined later in the kernel's own file is
    covered by that file's own stamp. A plain constant imported from another file (not a
    function) is not followed.
    """
    from numba.core import caching

    own = os.path.abspath(py_func.__code__.co_filename)
    stamp = []
    for path in sorted(_helper_files(py_func, set())):
        if os.path.abspath(path) == own:
            continue
        st = os.stat(path)
        stamp.append((os.path.basename(path), caching._hash_source_file(path, st.st_mtime, st.st_size)))
    return tuple(stamp)


def _key_by_helpers(caching) -> None:
    """Make every cache (created from now on) key its entries by its helpers' files too."""
    cache_init = caching.Cache.__init__

    def __init__(self, py_func):
        cache_init(self, py_func)
        try:
            helpers = dependency_stamp(py_func)
        except OSError:  # a helper's file vanished: key by the kernel's own file alone
            return
        if helpers:
            files = self._cache_file
            files._source_stamp = (files._source_stamp, helpers)

    caching.Cache.__init__ = __init__


_held: set[str] = set()  # the kernel locks this process holds (taken again inside: no wait)


@contextmanager
def kernel_lock(index_path: str):
    """Hold the kernel's exclusive lock (``<index>.lock``, made if need be) while the block runs.

    Reentrant in a process: a save inside a compilation, or a kernel that needs another
    signature of itself, does not wait on itself. No lock where the file cannot be made (a
    read-only cache: Numba's own save fails there anyway)."""
    path = index_path + ".lock"
    if path in _held:
        yield
        return
    with locked_open(path, "a+b") as handle:
        if handle is None:
            yield
            return
        _held.add(path)
        try:
            yield
        finally:
            _held.discard(path)


def _lock_compilations(dispatcher_class, sigutils) -> None:
    """Look up, compile and save a cached kernel under its lock (see the module)."""
    from numba.core.compiler_lock import global_compiler_lock

    compile_ = dispatcher_class.compile

    def compile(self, sig):
        files = getattr(self._cache, "_cache_file", None)  # None: a kernel without cache=True
        if files is None:
            return compile_(self, sig)
        # this process's compilations run one at a time, under Numba's own lock: taken first, so
        # that two threads here cannot each hold one lock the other waits for
        with global_compiler_lock:
            if tuple(sigutils.normalize_signature(sig)[0]) in self.overloads:
                return compile_(self, sig)
            with kernel_lock(files._index_path):
                return compile_(self, sig)

    dispatcher_class.compile = compile


def kernel_name(ev) -> str:
    """The name of the kernel a ``numba:compile`` event is about; "" for Numba's own overloads
    (all called ``impl``) and lambdas, which a progress display cannot name usefully."""
    dispatcher = (ev.data or {}).get("dispatcher")
    name = getattr(getattr(dispatcher, "py_func", None), "__name__", "")
    return name if name and name != "impl" and not name.startswith("<") else ""


@contextmanager
def watching(on_start: Callable[[str], None]):
    """Call ``on_start(name)`` (:func:`kernel_name`) as Numba starts each compilation while the
    block runs: what a progress display shows. :func:`compilations` counts them."""
    from numba.core import event

    class Watch(event.Listener):
        def on_start(self, ev):
            on_start(kernel_name(ev))

        def on_end(self, ev):
            pass

    with event.install_listener("numba:compile", Watch()):
        yield


def _count_compilations() -> None:
    from numba.core import event

    class Count(event.Listener):
        def on_start(self, ev):
            global _compiled
            _compiled += 1

        def on_end(self, ev):
            pass

    event.register("numba:compile", Count())


def install() -> None:
    """Apply ``STARLING_CACHE_DIR`` and patch Numba's cache, once per process: damaged files heal,
    a kernel is looked up, compiled and saved under its lock, an entry holding another signature's
    code counts as not cached, and :func:`compilations` counts what Numba compiles (see the module)."""
    apply_cache_dir()
    from numba.core import caching, sigutils
    from numba.core.dispatcher import Dispatcher

    files = caching.IndexDataCacheFile
    if getattr(files, "_starling_heals", False):
        return
    load_index, load_data, save = files._load_index, files._load_data, files.save
    load_overload = caching.Cache._load_overload

    def _load_index(self):
        try:
            return load_index(self)
        except OSError:
            raise
        except Exception:  # truncated or garbled: UnpicklingError, EOFError, ValueError, …
            _drop(self._index_path)
            _notice(_kernel_name(self._index_name))
            return {}

    def _load_data(self, name):
        try:
            return load_data(self, name)
        except OSError:
            raise
        except Exception as exc:
            _drop(self._data_path(name))
            _notice(_kernel_name(name))
            raise DamagedEntry(f"damaged kernel cache file {name}") from exc

    def _save(self, key, data):
        with kernel_lock(self._index_path):  # held already when the save is a compilation's
            return save(self, key, data)

    def _load_overload(self, sig, target_context):
        try:
            cres = load_overload(self, sig, target_context)
            if cres is not None and tuple(cres.signature.args) != tuple(sigutils.normalize_signature(sig)[0]):
                return None  # another signature's code under this one's entry: compile instead
            return cres
        except OSError:
            raise
        except Exception:  # the data unpickled but is no compiled code Numba can load
            key = self._index_key(sig, target_context.codegen())
            name = self._cache_file._load_index().get(key)
            if name is not None:
                _drop(self._cache_file._data_path(name))
            _notice(_kernel_name(self._cache_file._index_name))
            return None

    files._load_index = _load_index
    files._load_data = _load_data
    files.save = _save
    caching.Cache._load_overload = _load_overload
    _key_by_helpers(caching)
    _count_compilations()
    _lock_compilations(Dispatcher, sigutils)
    files._starling_heals = True
