"""Call sites: kernels called through the entry point Numba's dispatcher chose, typed apart where types can differ."""
import copy
import pickle
from collections import namedtuple

import numpy as np
import pytest
from numba import njit

import starling
from starling import kernel_calls
from starling.kernel_calls import CallSite, KernelCallMismatch

Pair = namedtuple("Pair", ["a", "b"])


@njit(cache=False)
def _sum_rows(pair, table, scale):
    """Row sums of ``pair.a + pair.b`` and of ``table``, scaled: reads every argument."""
    n = table.shape[0]
    out = np.zeros(n)
    for i in range(n):
        out[i] = scale * (pair.a[i] + pair.b[i])
        for j in range(table.shape[1]):
            out[i] += table[i, j]
    return out


def _expected(pair, table, scale):
    return scale * (pair.a[: table.shape[0]] + pair.b[: table.shape[0]]) + table.sum(axis=1)


def _args(n, wide=False):
    rng = np.random.default_rng(n)
    pair = Pair(rng.random(8).astype(np.float32)[:n], rng.random(8).astype(np.float32)[:n])
    table = rng.random((8, 4)).astype(np.float32)
    return pair, (table[:n, :3] if wide else table[:n]), 2.0


def test_later_calls_go_to_the_entry_point_the_first_call_selected():
    site = CallSite()
    args = _args(5)
    assert np.allclose(site(_sum_rows, 5, *args), _expected(*args))
    signature = tuple(_sum_rows.typeof_pyval(a) for a in args)
    assert list(site._entries.values()) == [_sum_rows.overloads[signature].entry_point]
    again = _args(6)
    with kernel_calls.checking():
        assert np.allclose(site(_sum_rows, 6, *again), _expected(*again))
    assert len(site) == 1


def test_a_one_row_slice_of_a_wider_table_is_typed_apart_from_a_many_row_one():
    # table[:n, :3] is non-contiguous for n >= 2 but NumPy calls it contiguous for n <= 1, and Numba
    # compiles the two layouts apart: the site must not run the one compiled version with the other
    site = CallSite()
    with kernel_calls.checking():
        for n in (1, 5, 0, 1, 3, 2):
            args = _args(n, wide=True)
            assert np.allclose(site(_sum_rows, n, *args), _expected(*args)), n
    layouts = {sig[1].layout for sig in _sum_rows.signatures if sig[1].ndim == 2 and sig[1].dtype.bitwidth == 32}
    assert {"A", "C"} <= layouts
    assert len(site) == 3  # no rows, one row, more


def test_the_check_catches_a_site_reused_for_arguments_of_other_types():
    site = CallSite()
    pair, table, scale = _args(4)
    site(_sum_rows, 4, pair, table, scale)
    wrong = Pair(pair.a.view(np.int32), pair.b)  # the same size of item: only the check can tell
    with kernel_calls.checking(), pytest.raises(KernelCallMismatch, match="_sum_rows"):
        site(_sum_rows, 4, wrong, table, scale)


def test_a_watched_array_of_another_layout_makes_the_site_type_again():
    # the table stands for a caller's output rows: the same array again, or a new one of the same
    # layout, keeps the entry point; a wider table's columns (non-contiguous) and the return to a
    # contiguous table each make the site type its call again (the check would stop a stale one)
    site = CallSite()
    first = _args(5)
    calls = [first, first, _args(5), _args(5, wide=True), _args(5)]
    with kernel_calls.checking():
        for i, args in enumerate(calls):
            site.watch(args[1])
            assert np.allclose(site(_sum_rows, 5, *args), _expected(*args)), i
            assert len(site) == 1


def test_invalidating_forgets_what_every_site_remembered():
    site = CallSite()
    args = _args(4)
    site(_sum_rows, 4, *args)
    assert len(site) == 1
    kernel_calls.invalidate()
    assert np.allclose(site(_sum_rows, 4, *args), _expected(*args))
    assert len(site) == 1  # typed again after the invalidation, the old entry dropped


def test_dispatching_leaves_every_call_to_numba():
    site = CallSite()
    with kernel_calls.dispatching():
        args = _args(3)
        assert np.allclose(site(_sum_rows, 3, *args), _expected(*args))
    assert len(site) == 0


def test_a_copied_or_pickled_site_starts_empty():
    site = CallSite()
    site(_sum_rows, 4, *_args(4))
    assert len(copy.deepcopy(site)) == 0
    assert len(pickle.loads(pickle.dumps(site))) == 0


def _state(sim) -> dict:
    return {(name, f): np.array(getattr(pop, f), copy=True)
            for name, pop in sim.world.populations.items()
            for f in ("position", "velocity", "forward", "up", "uid")}


@pytest.mark.parametrize("name", starling.scenario_names())
def test_every_scene_steps_the_same_through_checked_call_sites_as_through_the_dispatcher(name):
    """Each site's contract — nothing but the row count changes its arguments' types — holds in every scene."""
    direct = starling.load_scenario(name, seed=5, record_debug=False)
    direct.step(2)
    through_numba = starling.Simulation.restore(direct.snapshot())
    for _ in range(6):
        with kernel_calls.checking():
            direct.step()
        with kernel_calls.dispatching():
            through_numba.step()
    a, b = _state(direct), _state(through_numba)
    for key in a:
        assert np.array_equal(a[key], b[key], equal_nan=True), key


def test_a_live_edit_retypes_the_sites_of_kernels_the_new_build_reuses():
    sim = starling.load_scenario("lagoon", seed=3, record_debug=False)
    sim.step(2)
    with kernel_calls.checking():
        sim.set("species.fish.count=1", "species.shark.count=0")  # one row: a slice's layout changes
        sim.step(3)
        sim.set("species.fish.count=40", "species.shark.count=2")
        sim.step(3)
    assert sim.population("fish").n == 40


def test_a_plain_function_is_called_as_it_is():
    site = CallSite()
    assert site(lambda a, b: a + b, 3, 2, 5) == 7
    assert site(lambda a, b: a + b, 3, 2, 5) == 7


def test_a_sites_repeated_call_still_meets_the_checks_the_observer_and_a_new_generation():
    # the fast path (the site's last kernel, again) must step aside whenever a plain direct call would
    site = CallSite()
    args = _args(5)
    for _ in range(3):
        site(_sum_rows, 5, *args)
    assert site._last[0] is _sum_rows
    seen = []

    def observer(entry, call_args):
        seen.append(entry)
        return entry(*call_args)

    with kernel_calls.observing(observer):
        site(_sum_rows, 5, *args)
    assert len(seen) == 1
    wrong = (Pair(args[0].a.astype(np.float64), args[0].b.astype(np.float64)), args[1], args[2])
    with kernel_calls.checking(), pytest.raises(KernelCallMismatch):
        site(_sum_rows, 5, *wrong)  # checked: the remembered entry was typed for float32 pairs
    one = _args(1, wide=True)  # one row: another layout, so another entry, never the last one
    assert np.allclose(site(_sum_rows, 1, *one), _expected(*one))
    before = dict(site._entries)
    kernel_calls.invalidate()
    site(_sum_rows, 5, *args)
    assert site._entries != before and len(site) == 1  # typed again after the rebuild
