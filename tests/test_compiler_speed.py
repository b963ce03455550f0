"""The compiler-flag shortcuts give Numba's own answers, and LLVM's lock is no longer timed."""
from __future__ import annotations

import collections
import functools
import itertools
import random

import pytest

import starling  # noqa: F401  (installs starling.compiler_speed)
from numba import literal_unroll, njit
from starling import compiler_speed


def _numba_eq(a, b):
    """Numba's definition: every option's value, set or default, compared as dicts compare."""
    return a.values() == b.values()


def _numba_hash(a):
    return hash(tuple(sorted(a.values())))


def _settable(cls):
    """Options whose values can be set from plain values drawn here, with a few values each."""
    out = {}
    for name, option in cls.options.items():
        if option.type is bool:
            out[name] = [True, False]
        elif option.type is int:
            out[name] = [0, 1, 3]
        elif option.type is str:
            out[name] = ["", "x", str(option.default)]
    return out


def _random_flags(cls, rng, choices):
    flags = cls()
    for name in rng.sample(sorted(choices), k=rng.randint(0, min(6, len(choices)))):
        # half the time set an option to its own default: set, yet equal to an unset one
        value = cls.options[name].default if rng.random() < 0.5 else rng.choice(choices[name])
        setattr(flags, name, value)
    return flags


def test_installed_by_importing_starling():
    from numba.core.targetconfig import TargetConfig

    assert compiler_speed._installed
    assert TargetConfig.__eq__.__module__ == "starling.compiler_speed"


def test_flags_compare_and_hash_as_numba_defines_them():
    from numba.core.compiler import Flags

    rng = random.Random(7)
    choices = _settable(Flags)
    assert len(choices) > 10
    flags = [_random_flags(Flags, rng, choices) for _ in range(150)]
    flags += [Flags(), Flags()]
    equal_pairs = 0
    for a, b in itertools.product(flags, repeat=2):
        assert (a == b) is _numba_eq(a, b)
        assert (a != b) is (not _numba_eq(a, b))
        if a == b:
            equal_pairs += 1
            assert hash(a) == hash(b)
    assert equal_pairs > len(flags)  # not only each with itself: the set-to-default case is met
    for a in flags:
        assert hash(a) == _numba_hash(a)


def test_a_set_default_equals_an_unset_option_and_a_difference_is_seen():
    from numba.core.compiler import Flags

    a, b = Flags(), Flags()
    b.nrt = Flags.options["nrt"].default
    assert a == b and a._values != b._values
    b.nrt = not Flags.options["nrt"].default
    assert a != b
    assert {a: 1}.get(b) is None and {a: 1}.get(Flags()) == 1


def test_flags_of_another_class_compare_as_before():
    from numba.core.compiler import Flags
    from numba.core.targetconfig import TargetConfig

    a, b = Flags(), type("OtherFlags", (TargetConfig,), {})()
    assert (a == b) is _numba_eq(a, b)
    assert hash(b) == _numba_hash(b)


def test_llvm_lock_is_not_timed_and_kernels_still_compile():

    assert not compiler_speed.numba_lock_timers()

    @njit
    def add(x, y):
        return x + y

    assert add(2, 3) == 5 and add(2.5, 1.0) == pytest.approx(3.5)


def _operator_rules():
    """Numba's rules for operators on arrays, one per operator (made by ``install_operations``)."""
    from numba.core.typing.npydecl import NumpyRulesArrayOperator

    return [cls for cls in NumpyRulesArrayOperator.__subclasses__() if "generic" not in cls.__dict__]


def test_operators_on_numbers_give_numbas_answers():
    from numba.core import types
    from numba.core.registry import cpu_target
    from numba.core.typing.npydecl import NumpyRulesArrayOperator

    numba_generic = compiler_speed._numba_own["operator_generic"]
    assert NumpyRulesArrayOperator.generic is not numba_generic
    context = cpu_target.typing_context
    vector = types.Array(types.float32, 1, "C")
    grid = types.Array(types.int64, 2, "A")
    kinds = [types.float64, types.float32, types.int64, types.int32, types.uint32, types.boolean,
             types.Optional(types.float64), types.Optional(vector), vector, grid,
             types.UniTuple(types.float64, 3), types.complex128]
    rules = _operator_rules()
    assert len(rules) >= 15
    answered = declined = 0
    for cls in rules:
        rule = cls(context)
        for a, b in itertools.product(kinds, repeat=2):
            try:
                expected = numba_generic(rule, (a, b), {})
            except Exception as error:  # (Numba's own rule may raise; the shortcut must raise alike)
                with pytest.raises(type(error)):
                    rule.generic((a, b), {})
                continue
            got = rule.generic((a, b), {})
            assert got == expected, (cls.__name__, a, b)
            answered += got is not None
            declined += got is None
    assert answered > 100 and declined > 100  # both an array's answer and a number's "not mine"


def test_operators_still_work_on_arrays_and_numbers():
    import numpy as np

    @njit
    def mixed(a, b, x, i):
        return a + b * x, x - 1.5, a < x, i // 2, np.float32(2.0) * x, -a, (a * 2.0).sum() + i

    a, b = np.ones(3), np.arange(3.0)
    out = mixed(a, b, 2.0, 7)
    assert np.array_equal(out[0], [1.0, 3.0, 5.0]) and out[1] == 0.5 and out[2].all()
    assert out[3] == 3 and out[4] == 4.0 and np.array_equal(out[5], -a) and out[6] == 13.0


def test_a_call_type_is_given_again_as_numba_gives_it():
    import operator

    import numpy as np
    from numba.core import types
    from numba.core.registry import cpu_target

    numba_get = compiler_speed._numba_own["get_call_type"]
    context = cpu_target.typing_context
    kinds = [types.float64, types.float32, types.int64, types.int32, types.uint8, types.boolean,
             types.Optional(types.float64), types.Array(types.float32, 1, "C"), types.Array(types.int64, 2, "A"),
             types.Array(types.float64, 2, "C", readonly=True), types.UniTuple(types.float64, 3),
             types.Tuple((types.int64, types.float32)), types.IntegerLiteral(2), types.slice2_type]
    functions = [operator.add, operator.mul, operator.truediv, operator.lt, operator.getitem, operator.neg,
                 bool, min, np.sqrt]
    kept = answered = overloads = 0
    for function in functions:
        fnty = context.resolve_value_type(function)
        for args in [(a,) for a in kinds] + list(itertools.product(kinds, repeat=2)):
            try:
                expected = numba_get(fnty, context, args, {})
            except Exception as error:  # (no rule answers, or one raises: asked again, it must fail alike)
                for _ in range(2):
                    with pytest.raises(type(error)):
                        fnty.get_call_type(context, args, {})
                continue
            if expected is None:
                continue
            impl = fnty._impl_keys[expected.args]
            for _ in range(2):  # the first answer, then the kept one
                got = fnty.get_call_type(context, args, {})
                assert got == expected, (function, args)  # (a signature's == compares its return type too)
                assert fnty._impl_keys[got.args] == impl
            plain = impl is fnty.typing_key
            key = compiler_speed._call_type_key(fnty, context, args, {})
            assert (key in compiler_speed._kept_call_types) == plain, (function, args)
            kept += plain
            overloads += not plain
            answered += 1
            # an answer given again restores the implementation key that an @overload's answer for
            # the same argument types may have replaced in between
            fnty._impl_keys[expected.args] = "replaced"
            fnty.get_call_type(context, args, {})
            assert fnty._impl_keys[expected.args] == impl
    assert kept > 150 and overloads > 10 and answered > kept  # plain rules kept, overloads asked each time


@pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")  # (parallel callers with no loop)
def test_an_inlined_function_is_read_once_and_inlined_everywhere(monkeypatch):
    import numpy as np
    from numba import float64
    from numba.core.inline_closurecall import InlineWorker

    @njit(inline="always")
    def half_sum(x, y):
        return 0.5 * (x + y)

    @njit(inline="always")
    def mean_of_three(x, y, z):  # an inlined function that inlines another: (x + y) / 4 + z / 2
        return half_sum(half_sum(x, y), z)

    @njit
    def first(x):
        return half_sum(x, 1.0) + half_sum(x, 3.0)

    @njit
    def second(a):
        out = np.empty(a.shape[0])
        for i in range(a.shape[0]):
            out[i] = mean_of_three(a[i], 2.0, 4.0) + half_sum(a[i], a[i])
        return out

    @njit(locals={"t": float64})  # declared locals reach the callee's passes: read each time
    def third(x):
        t = half_sum(x, x)
        return t

    readings = collections.Counter()
    numba_read = InlineWorker.run_untyped_passes

    def counted(self, func, enable_ssa=False):
        readings[func.__name__] += 1
        return numba_read(self, func, enable_ssa)

    monkeypatch.setattr(InlineWorker, "run_untyped_passes", counted)
    assert first(1.0) == 1.0 + 2.0
    assert np.array_equal(second(np.array([0.0, 4.0])), [1.25 + 1.25 + 0.0, 1.25 + 2.25 + 4.0])
    assert readings == {"half_sum": 1, "mean_of_three": 1}  # five call sites
    assert third(2.0) == 2.0
    assert readings["half_sum"] == 2

    @njit(parallel=True)  # parallel options reach the callee's passes: read once per set of options
    def fourth(x):
        return half_sum(x, 1.0)

    @njit(parallel={"comprehension": False})
    def fifth(x):
        return half_sum(x, 1.0)

    @njit(parallel=True)
    def sixth(x):
        return half_sum(x, 5.0)

    assert fourth(3.0) == 2.0 and fifth(3.0) == 2.0 and sixth(3.0) == 4.0
    assert readings["half_sum"] == 4


@functools.cache
def _starling_kernels() -> dict:
    """The Python function of every kernel Starling defines at module level, by name."""
    import importlib
    import pkgutil

    from numba.core.dispatcher import Dispatcher

    found = {}
    for module in pkgutil.walk_packages(starling.__path__, "starling."):
        if not module.name.endswith("__main__"):
            for value in vars(importlib.import_module(module.name)).values():
                if isinstance(value, Dispatcher) and value.py_func.__module__.startswith("starling"):
                    found[f"{value.py_func.__module__}.{value.py_func.__qualname__}"] = value.py_func
    return found


def _statements(blocks: dict) -> list:
    return [(label, [str(stmt) for stmt in block.body]) for label, block in blocks.items()]


def test_ssa_is_rebuilt_as_numba_rebuilds_it():
    """Every Starling kernel's IR, as read from its bytecode, through Numba's SSA construction and
    through the one that visits only where each variable occurs: the same statements, names and
    phis, and new blocks exactly where Numba gives new ones."""
    import copy

    from numba.core import ir, ssa
    from numba.core.compiler import run_frontend

    assert ssa._run_ssa.__module__ == "starling.compiler_speed"
    kernels = _starling_kernels()
    phis = 0
    for name, function in sorted(kernels.items()):
        mine_in = run_frontend(function).blocks
        numbas_in = copy.deepcopy(mine_in)
        mine, numbas = ssa._run_ssa(mine_in), compiler_speed._numba_own["run_ssa"](numbas_in)
        assert _statements(mine) == _statements(numbas), name
        assert (mine is mine_in) == (numbas is numbas_in), name
        assert [mine[label] is mine_in[label] for label in mine] == \
            [numbas[label] is numbas_in[label] for label in numbas], name
        phis += sum(isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "phi"
                    for block in mine.values() for stmt in block.body)
    assert len(kernels) > 250 and phis > 1000  # (299 kernels and 1,424 phis when written)


_ANALYSES = {"usedefs", "livemap", "deadmaps"}  # a VariableLifetime's cached analyses


def _entry_vars(func_ir) -> dict:
    """A post-processed IR's variables live on entry to each block, by block label."""
    return {label: func_ir.block_entry_vars[block] for label, block in func_ir.blocks.items()}


def _lifetimes(func_ir) -> tuple:
    """A post-processed IR's variable lifetimes and block entry variables (read both ways), by block label."""
    lifetime = func_ir.variable_lifetime
    dead = lifetime.deadmaps
    return (lifetime.usedefs, lifetime.livemap, dead.internal, dead.escaping, dead.combined, _entry_vars(func_ir),
            {label: func_ir.block_entry_vars.get(block) for label, block in func_ir.blocks.items()})


def _literal_sum(values):
    total = 0.0
    for value in literal_unroll(values):
        total += value
    return total


def _counting(n):
    for i in range(n):
        yield i


def test_post_processing_leaves_lifetimes_to_be_read_and_they_read_as_numbas():
    from numba.core import postproc
    from numba.core.compiler import Flags, run_frontend
    from numba.core.targetconfig import ConfigStack

    assert postproc.PostProcessor.run.__module__ == "starling.compiler_speed"
    numba_run = compiler_speed._numba_own["postprocess"]
    kernels = sorted(_starling_kernels().items())[::5]
    for name, function in kernels:
        mine, numbas = run_frontend(function), run_frontend(function)
        with ConfigStack().enter(Flags()):  # as inside a nopython compilation
            postproc.PostProcessor(mine).run()
            numba_run(postproc.PostProcessor(numbas))
        assert not _ANALYSES & mine.variable_lifetime.__dict__.keys(), name
        assert mine.block_entry_vars._pending is not None, name  # nothing computed until read
        assert _lifetimes(mine) == _lifetimes(numbas), name
        assert _entry_vars(mine.copy()) == _entry_vars(numbas), name  # as Numba copies an IR: they come along
    assert len(kernels) > 50

    def computed_at_once(func_ir, flags, **run):
        with ConfigStack().enter(flags):
            postproc.PostProcessor(func_ir).run(**run)
        return _ANALYSES <= func_ir.variable_lifetime.__dict__.keys()

    kernel = kernels[0][1]
    object_mode = Flags()
    object_mode.force_pyobject = True
    assert computed_at_once(run_frontend(kernel), object_mode)
    assert computed_at_once(run_frontend(kernel), Flags(), emit_dels=True)  # the dels read them
    assert computed_at_once(run_frontend(_counting), Flags())  # a generator's state is read from them
    assert computed_at_once(run_frontend(_literal_sum), Flags())  # literal_unroll reads them later
    assert not computed_at_once(run_frontend(kernel), Flags())
    bare = run_frontend(kernel)
    postproc.PostProcessor(bare).run()  # outside a compilation: Numba's own
    assert _ANALYSES <= bare.variable_lifetime.__dict__.keys()


def test_kernels_unrolling_literally_generating_or_in_object_mode_still_compile():
    from numba import objmode

    literal_sum = njit(_literal_sum)
    assert literal_sum((1, 2.5, 3)) == 6.5
    counting = njit(_counting)

    @njit
    def total(n):
        out = 0
        for i in counting(n):
            out += i
        return out

    @njit
    def doubled_outside(x):
        with objmode(y="float64"):
            y = float(x) * 2.0
        return y + 1.0

    assert total(4) == 6 and doubled_outside(3.0) == 7.0


@njit(inline="always")
def _clamped(x, low, high):
    if x < low:
        x = low
    elif x > high:
        x = high
    return x


def _walk(a, limit):
    best, at = -1.0, -1
    total = 0.0
    for i in range(a.shape[0]):
        v = a[i]
        if v < 0.0:
            continue
        j = 0
        while j < i:
            if a[j] == v:
                break
            v = _clamped(v + a[j], 0.0, limit)
            j += 1
        total += v
        if v > best:
            best, at = v, i
    return total, at


def test_kernels_compile_to_the_same_code_as_with_numbas_ssa_and_post_processing(monkeypatch):
    import re

    import numpy as np
    from numba.core import ir_utils, postproc, ssa

    a = np.array([1.0, -2.0, 3.0, 1.0, 5.0, 3.0])
    counters = ir_utils._unique_var_count, ir_utils._the_max_label._value

    def code():  # each compilation from the same names for inlined blocks and variables
        ir_utils._unique_var_count, ir_utils._the_max_label._value = counters
        kernel = njit(_walk)
        assert kernel(a, 4.0) == _walk(a, 4.0)
        return re.sub(r"B\d+v\d+B", "B_B", kernel.inspect_llvm(kernel.signatures[0]))  # less the unique id

    mine = code()
    monkeypatch.setattr(ssa, "_run_ssa", compiler_speed._numba_own["run_ssa"])
    monkeypatch.setattr(postproc.PostProcessor, "run", compiler_speed._numba_own["postprocess"])
    assert code() == mine


def test_turned_off_leaves_numba_as_it_is():
    import os
    import subprocess
    import sys

    code = ("import starling\n"
            "from numba.core.targetconfig import TargetConfig\n"
            "from numba.core.typing.npydecl import NumpyRulesArrayOperator\n"
            "from numba.core.inline_closurecall import InlineWorker\n"
            "from numba.core.types.functions import BaseFunction\n"
            "from numba.core import postproc, ssa\n"

            "from starling.compiler_speed import numba_lock_timers\n"
            "print(TargetConfig.__eq__.__module__, len(numba_lock_timers()),\n"
            "      NumpyRulesArrayOperator.generic.__module__, InlineWorker.inline_function.__module__,\n"
            "      BaseFunction.get_call_type.__module__, ssa._run_ssa.__module__,\n"
            "      postproc.PostProcessor.run.__module__)\n")
    env = dict(os.environ, STARLING_COMPILER_SPEED="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["numba.core.targetconfig", "1", "numba.core.typing.npydecl",
                                  "numba.core.inline_closurecall", "numba.core.types.functions", "numba.core.ssa",
                                  "numba.core.postproc"]
