"""The compiler-flag shortcuts give Numba's own answers, and LLVM's lock is no longer timed."""
from __future__ import annotations

import collections
import itertools
import random

import pytest

import starling  # noqa: F401  (installs starling.compiler_speed)
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
    from numba import njit

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
    from numba import njit

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
    from numba import float64, njit
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


def test_turned_off_leaves_numba_as_it_is():
    import os
    import subprocess
    import sys

    code = ("import starling\n"
            "from numba.core.targetconfig import TargetConfig\n"
            "from numba.core.typing.npydecl import NumpyRulesArrayOperator\n"
            "from numba.core.inline_closurecall import InlineWorker\n"
            "from numba.core.types.functions import BaseFunction\n"

            "from starling.compiler_speed import numba_lock_timers\n"
            "print(TargetConfig.__eq__.__module__, len(numba_lock_timers()),\n"
            "      NumpyRulesArrayOperator.generic.__module__, InlineWorker.inline_function.__module__,\n"
            "      BaseFunction.get_call_type.__module__)\n")
    env = dict(os.environ, STARLING_COMPILER_SPEED="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["numba.core.targetconfig", "1", "numba.core.typing.npydecl",
                                  "numba.core.inline_closurecall", "numba.core.types.functions"]
