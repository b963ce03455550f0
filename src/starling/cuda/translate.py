"""One kernel source, two targets: a CPU kernel's animal loop becomes a CUDA kernel.

Every per-animal kernel in Starling — a behaviour (the shipped ones and a plugin's), the
merger, the mover — is a Python function written for Numba's CPU target: some set-up
(unpacking arrays into locals), then one loop over the animals, ``for i in prange(n):``
or ``for i in range(lo, hi):``. Each animal's row depends only on its own inputs (the
extension API's rule), so the loop's iterations are independent: exactly what a CUDA
thread grid runs.

:func:`device_kernel` rewrites the function's syntax tree: the set-up stays (every thread
runs it), ``i`` becomes the thread's index, a ``continue`` at the loop's own level ends
the thread, and a scratch array made with ``np.empty(m, dtype)`` before the
loop becomes a per-thread ``cuda.local.array`` of at most :data:`LOCAL_MAX` entries. The
``@njit`` helpers the kernel calls (the shaping functions, ``fast_acos``, a user's own)
are compiled for the device from their own source (:func:`device_function`). So a
behaviour is written once, as ``docs/extending.md`` teaches, and runs on both targets.

What the device compiler takes differently from the CPU one gets a stand-in
(:mod:`starling.cuda.device_api`: ``at``/``emit``/``no_opinion``, NumPy's scalar
functions), and a named tuple's field named like a tuple method (``neighbors.index``) is
read by position.

What cannot be translated is refused with a :class:`DeviceUnsupported` that says why
(code after the animal loop, a ``break`` out of it, a stepped range, a nested ``prange``,
a helper that recurses); what translates but does not compile for the device (NumPy
allocation inside the loop, object arithmetic) is refused when the scenario loads, with
Numba's reason (see ``starling.cuda.stepper``).
"""
from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import textwrap
import types
from typing import Callable

import numpy as np
from numba import prange
from numba.core.dispatcher import Dispatcher

from .runtime import cuda_module, simulated

__all__ = ["DeviceUnsupported", "LOCAL_MAX", "device_function", "device_kernel"]

#: the most entries a per-thread scratch array (``np.empty`` before the loop) may hold
LOCAL_MAX = 16

_LOOP_NAMES = {"prange", "range"}


class DeviceUnsupported(ValueError):
    """A kernel whose source cannot become a CUDA kernel; the message says why."""


# ---------------------------------------------------------------------------------------------- helpers

_device_twins: dict = {}
_translating: set = set()  # helpers whose twins are being made (a cycle means recursion)


def device_function(dispatcher: Dispatcher):
    """The device version of an ``@njit`` helper: its own Python source compiled by
    ``cuda.jit(device=True)``, with the ``@njit`` helpers it calls replaced the same way
    (so no CPU-only target option travels to the device compiler)."""
    twin = _device_twins.get(dispatcher)
    if twin is None:
        py = dispatcher.py_func
        if dispatcher in _translating:
            raise DeviceUnsupported(f"helper {py.__qualname__} calls itself (directly or through another "
                                    "helper); device functions cannot recurse")
        _translating.add(dispatcher)
        try:
            g = _device_globals(py)
        finally:
            _translating.discard(dispatcher)
        fn = types.FunctionType(py.__code__, g, py.__name__, py.__defaults__, py.__closure__)
        fn.__qualname__ = py.__qualname__
        fn.__module__ = py.__module__
        fn.__doc__ = py.__doc__
        twin = fn if simulated() else cuda_module().jit(device=True)(fn)
        _device_twins[dispatcher] = twin
    return twin


def _device_globals(func: Callable) -> dict:
    """``func``'s globals, with every ``@njit`` function it names swapped for its device twin."""
    names = set(func.__code__.co_names)
    for const in func.__code__.co_consts:  # names used in nested code (generator expressions, lambdas)
        if isinstance(const, types.CodeType):
            names |= set(const.co_names)
    g = dict(func.__globals__)
    stand_ins = _stand_ins()
    for name in names:
        value = g.get(name)
        if _hashable(value) and value in stand_ins:
            g[name] = stand_ins[value]
        elif isinstance(value, Dispatcher):
            g[name] = device_function(value)
    return g


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _simulated_at(value, i):
    """``at`` on the simulator, where a kernel's arrays are the simulator's array wrappers."""
    return value[i] if getattr(value, "ndim", 0) == 1 else value


def _stand_ins() -> dict:
    """What kernels call that the device (or the simulator) needs in another form.

    On the simulator, ``at`` as Python that reads the simulator's array wrappers; on a
    GPU, the ``cuda``-target versions of ``at``/``emit``/``no_opinion`` and NumPy with
    device scalar functions (:mod:`starling.cuda.device_api`).
    """
    from ..steering.per_animal import at

    if simulated():
        return {at: _simulated_at}
    from ..steering.results import emit, no_opinion
    from .device_api import at_device, emit_device, no_opinion_device, numpy_on_device

    return {at: at_device, emit: emit_device, no_opinion: no_opinion_device, np: numpy_on_device}


# ---------------------------------------------------------------------------------------------- kernels

class _EndThread(ast.NodeTransformer):
    """``continue`` of the animal loop ends the thread (``break`` is refused); nested loops keep theirs."""

    def visit_For(self, node):  # a nested loop: its continue/break are its own
        return node

    visit_While = visit_For
    visit_AsyncFor = visit_For

    def visit_FunctionDef(self, node):
        return node

    visit_Lambda = visit_FunctionDef

    def visit_Continue(self, node):
        return ast.copy_location(ast.Return(value=None), node)

    def visit_Break(self, node):
        raise DeviceUnsupported("its animal loop has a `break`, which on the CPU skips the animals after it; "
                                "a GPU thread can only end itself (use `continue`)")


#: tuple methods a named tuple's field may shadow: the CPU compiler reads the field, numba-cuda the method
TUPLE_METHODS = {"index", "count"}


class _FieldsByPosition(ast.NodeTransformer):
    """``arg.index`` becomes ``arg[0]`` where ``arg`` is a named tuple whose field ``index`` is first."""

    def __init__(self, fields: dict):
        self.fields = fields  # argument name -> its named tuple's field names

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if (isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load) and node.attr in TUPLE_METHODS
                and node.attr in self.fields.get(node.value.id, ())):
            position = self.fields[node.value.id].index(node.attr)
            return ast.copy_location(ast.Subscript(value=node.value, slice=ast.Constant(position), ctx=ast.Load()),
                                     node)
        return node


class _LocalScratch(ast.NodeTransformer):
    """``np.empty(m, dtype)`` in the set-up becomes ``cuda.local.array(LOCAL_MAX, dtype)``."""

    def __init__(self, numpy_names: set[str]):
        self.numpy_names = numpy_names
        self.count = 0

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr in ("empty", "zeros") and isinstance(f.value, ast.Name)
                and f.value.id in self.numpy_names and len(node.args) == 2 and not node.keywords):
            self.count += 1
            local = ast.Attribute(value=ast.Attribute(value=ast.Name("_cuda", ast.Load()), attr="local", ctx=ast.Load()),
                                  attr="array", ctx=ast.Load())
            return ast.copy_location(ast.Call(func=local, args=[ast.Name("_LOCAL_MAX", ast.Load()), node.args[1]],
                                              keywords=[]), node)
        return node


def _is_loop(node: ast.stmt, env: dict) -> bool:
    if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Name)):
        return False
    name = node.iter.func.id
    value = env.get(name, getattr(builtins, name, None))
    return name in _LOOP_NAMES and (value is prange or value is range)


def _uses_prange(tree: ast.AST, env: dict) -> bool:
    return any(isinstance(n, ast.Name) and n.id in env and env[n.id] is prange for n in ast.walk(tree))


def _function_tree(func: Callable) -> tuple[ast.FunctionDef, str]:
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as exc:
        raise DeviceUnsupported(f"its source is not available ({exc})") from None
    tree = ast.parse(source)
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef):
        raise DeviceUnsupported("it is not a plain function definition")
    fn.decorator_list = []
    return fn, source


def _environment(func: Callable) -> dict:
    env = dict(func.__globals__)
    if func.__closure__:
        env.update(zip(func.__code__.co_freevars, (c.cell_contents for c in func.__closure__)))
    return env


def device_kernel(func: Callable, *, tuple_fields: dict | None = None):
    """The CUDA kernel made from ``func``'s animal loop (one thread per animal).

    The kernel takes ``func``'s arguments and is launched with at least as many threads
    as the loop has animals. ``tuple_fields`` names the fields of the arguments that are
    named tuples (argument name -> field names), so that a field called like a tuple
    method (``neighbors.index``, ``neighbors.count``) is read by position.
    Raises :class:`DeviceUnsupported` when the source has no single animal loop.
    """
    py = getattr(func, "py_func", func)
    env = _environment(py)
    fn, source = _function_tree(py)
    if tuple_fields:
        fn = _FieldsByPosition(tuple_fields).visit(fn)
    loops = [k for k, stmt in enumerate(fn.body) if _is_loop(stmt, env)]
    if len(loops) != 1:
        raise DeviceUnsupported("its body is not one loop over the animals (`for i in prange(n):` "
                                "or `for i in range(lo, hi):`) after the set-up")
    at = loops[0]
    loop = fn.body[at]
    setup, after = fn.body[:at], fn.body[at + 1:]
    if after and not all(isinstance(s, ast.Return) and s.value is None for s in after):
        raise DeviceUnsupported("it runs code after the animal loop; each thread runs one animal, "
                                "so nothing can follow the loop")
    if not isinstance(loop.target, ast.Name):
        raise DeviceUnsupported("its animal loop does not count with a single name (`for i in ...`)")
    if loop.orelse:
        raise DeviceUnsupported("its animal loop has an `else` clause")
    args = loop.iter.args
    if loop.iter.keywords or not 1 <= len(args) <= 2:
        raise DeviceUnsupported("its animal loop is not `range(n)`, `range(lo, hi)` or `prange(n)`")
    if any(_uses_prange(s, env) for s in setup + loop.body):
        raise DeviceUnsupported("it uses `prange` other than as its animal loop")
    lo = args[0] if len(args) == 2 else ast.Constant(0)
    hi = args[-1]
    body = [_EndThread().visit(s) for s in loop.body]
    numpy_names = {name for name, value in env.items() if value is np}
    scratch = _LocalScratch(numpy_names)
    setup = [scratch.visit(s) for s in setup]
    i = loop.target.id
    grid = ast.parse(f"{i} = __lo + _cuda.grid(1)").body[0]
    new_body = setup + [
        ast.Assign(targets=[ast.Name("__lo", ast.Store())], value=lo),
        ast.Assign(targets=[ast.Name("__hi", ast.Store())], value=hi),
        grid,
        ast.If(test=ast.Compare(left=ast.Name(i, ast.Load()), ops=[ast.Lt()], comparators=[ast.Name("__hi", ast.Load())]),
               body=body, orelse=[]),
    ]
    fn.body = new_body
    module = ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[]))
    filename = f"<starling.cuda {py.__module__}.{py.__qualname__}>"
    text = ast.unparse(module)
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)  # errors can quote it
    g = _device_globals(py)
    if py.__closure__:
        g.update({k: (device_function(v) if isinstance(v, Dispatcher) else v)
                  for k, v in zip(py.__code__.co_freevars, (c.cell_contents for c in py.__closure__))})
    cuda = cuda_module()
    g.update({"_cuda": cuda, "_LOCAL_MAX": LOCAL_MAX})
    namespace: dict = {}
    exec(compile(module, filename, "exec"), g, namespace)
    kernel_fn = namespace[fn.name]
    kernel_fn.__module__ = py.__module__
    kernel_fn.__qualname__ = py.__qualname__ + "[cuda]"
    return cuda.jit(kernel_fn)
