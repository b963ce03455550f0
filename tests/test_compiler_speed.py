"""The compiler-flag shortcuts give Numba's own answers, and LLVM's lock is no longer timed."""
from __future__ import annotations

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


def test_turned_off_leaves_numba_as_it_is():
    import os
    import subprocess
    import sys

    code = ("import starling\n"
            "from numba.core.targetconfig import TargetConfig\n"
            "from starling.compiler_speed import numba_lock_timers\n"
            "print(TargetConfig.__eq__.__module__, len(numba_lock_timers()))\n")
    env = dict(os.environ, STARLING_COMPILER_SPEED="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["numba.core.targetconfig", "1"]
